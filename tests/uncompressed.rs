//! A device without compressed formats (every texture RGBA8): a budget cut
//! holds in the same update, like on any other device. Its own test binary:
//! its device asks for no compression features.

mod common;

use glam::{UVec2, Vec3};
use mipstream::gpu;
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{Streamer, TextureFile, View};
use std::time::Duration;

fn view(z: f32) -> View {
    View::look_at(
        Vec3::new(0.0, 1.0, z),
        Vec3::new(0.0, 0.0, z - 10.0),
        Vec3::Y,
        1.0,
        UVec2::new(1280, 720),
        0.1,
        1e4,
    )
}

#[test]
fn a_budget_cut_holds_in_the_same_update_without_compressed_formats() {
    let g = gpu::headless_with_features(None, wgpu::Features::empty())
        .unwrap_or_else(|e| panic!("no GPU adapter: {e} ({})", gpu::INSTALL_HINT));
    assert!(!g
        .device
        .features()
        .contains(wgpu::Features::TEXTURE_COMPRESSION_BC));
    eprintln!("on {}", g.describe());
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(256 << 20),
            ..Default::default()
        },
    );
    let dir = common::shared_data().join("sponza-textures");
    for (i, path) in common::files_with(&dir, &[".ktx2"])
        .into_iter()
        .take(20)
        .enumerate()
    {
        let t = s
            .register_texture(TextureDesc::new(TextureFile::open_path(&path).unwrap()))
            .unwrap();
        assert_eq!(
            s.resident(t).unwrap().format.block_dimensions(),
            (1, 1),
            "uncompressed"
        );
        let x = (i % 5) as f32 * 3.0 - 6.0;
        let z = -4.0 - (i / 5) as f32 * 6.0;
        s.register_object(ObjectDesc::sphere(Vec3::new(x, 0.0, z), 1.5).with_texture(t, 3.0))
            .unwrap();
    }
    // the report says why the bytes are large
    let warnings = s.report().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("20 texture(s) held as uncompressed RGBA8")),
        "{warnings:?}"
    );
    for mib in [48u64, 12, 8, 6, 20, 12, 8] {
        s.settle(&[view(2.0)], Duration::from_secs(120)).unwrap();
        s.set_budget(Budget::Bytes(mib << 20));
        for frame in 0..3 {
            s.update(&[view(2.0)]);
            if let Err(e) = s.check_invariants() {
                panic!(
                    "{mib} MiB, update {frame} after the cut: {e}\n{}",
                    s.report()
                );
            }
        }
    }
}
