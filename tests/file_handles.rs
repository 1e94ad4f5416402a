//! A world of 3,000 textures under a 256-descriptor limit (`ulimit -n 256`,
//! macOS's default): every texture registers and streams, because files are
//! opened on demand through a bounded set of handles. Its own test binary:
//! the test re-runs itself in a child process whose descriptor limit is 256.

mod common;

use glam::{UVec2, Vec3};
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{FileHandles, Streamer, TextureFile, View};
use std::process::Command;
use std::time::Duration;

const TEXTURES: usize = 3000;
const CHILD: &str = "MIPSTREAM_FD_LIMIT_CHILD";

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
fn three_thousand_textures_stream_under_a_256_descriptor_limit() {
    if std::env::var_os(CHILD).is_none() {
        let exe = std::env::current_exe().unwrap();
        let out = Command::new("bash")
            .arg("-c")
            .arg(r#"ulimit -n 256 && exec "$0" "$@""#)
            .arg(exe)
            .args([
                "--exact",
                "three_thousand_textures_stream_under_a_256_descriptor_limit",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .expect("bash runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{log}");
        assert!(out.status.success(), "the child failed: {}", out.status);
        assert!(log.contains("1 passed"), "the child ran no test");
        return;
    }
    // the child: really limited
    let limit = Command::new("bash")
        .args(["-c", "ulimit -n"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&limit.stdout).trim(), "256");

    // 3,000 distinct paths (hard links: each open is its own descriptor)
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.ktx2");
    std::fs::copy(
        common::shared_data().join("sponza-textures/chain_texture_mask.ktx2"),
        &original,
    )
    .unwrap();
    let paths: Vec<_> = (0..TEXTURES)
        .map(|i| {
            let p = dir.path().join(format!("t{i:04}.ktx2"));
            std::fs::hard_link(&original, &p).unwrap();
            p
        })
        .collect();

    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(512 << 20),
            ..Default::default()
        },
    );
    let baseline = open_descriptors();
    let capacity = FileHandles::global().capacity();
    assert_eq!(capacity, 64, "the default");
    let mut ids = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let file = TextureFile::open_path(p).unwrap_or_else(|e| panic!("texture {i}: {e}"));
        let id = s
            .register_texture(TextureDesc::new(file))
            .unwrap_or_else(|e| panic!("texture {i}: {e}"));
        // a row of quads along -z, 3 units apart: the first ones fill the view
        let z = -2.0 - 3.0 * i as f32;
        s.register_object(
            ObjectDesc::aabb(Vec3::new(-0.5, -2.0, z), Vec3::new(0.5, 2.0, z))
                .with_texture(id, 1.0),
        )
        .unwrap();
        ids.push(id);
        assert!(
            open_descriptors() <= baseline + capacity,
            "texture {i}: {} descriptors open",
            open_descriptors()
        );
    }
    assert!(FileHandles::global().open_count() <= capacity);

    let view = View::look_at(
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        1.0,
        UVec2::new(1280, 720),
        0.1,
        1e4,
    );
    let frames = s.settle(&[view], Duration::from_secs(120)).unwrap();
    s.check_invariants().unwrap();
    let r = s.report();
    // at its wanted level or finer (spare budget is spent on a floor), none held back
    let short: Vec<_> = r
        .textures
        .iter()
        .filter(|t| t.resident > t.wanted || t.below.is_some())
        .map(|t| {
            format!(
                "{}: wanted {} resident {} {:?}",
                t.label, t.wanted, t.resident, t.below
            )
        })
        .collect();
    assert!(
        short.is_empty(),
        "{} short: {:?}",
        short.len(),
        &short[..short.len().min(5)]
    );
    assert_eq!(r.frame.failed_loads, 0);
    let finer = r.textures.iter().filter(|t| t.resident == 0).count();
    assert!(
        finer >= 1,
        "the nearest textures stream their finest level (read through reopened handles)"
    );
    let streamed = r.textures.iter().filter(|t| t.resident < 4).count();
    assert!(
        open_descriptors() <= baseline + capacity + 4,
        "{} descriptors open after streaming",
        open_descriptors()
    );
    eprintln!(
        "{TEXTURES} textures registered, settled in {frames} frames, {streamed} streamed below the tail, {} files opened in all, {} descriptors open at the end (limit 256)",
        FileHandles::global().opens(),
        open_descriptors()
    );
}
