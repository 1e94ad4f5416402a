//! Twenty Sponza textures on spheres along the view axis, and the views
//! that fly through them: the memory tests' scene.

use glam::{UVec2, Vec3};
use mipstream::gpu::HeadlessGpu;
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{Streamer, TextureFile, View};

/// The scene on `g` at `budget`, with `options` otherwise.
pub fn scene(g: &HeadlessGpu, budget: u64, options: StreamerOptions) -> Streamer {
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(budget),
            ..options
        },
    );
    let dir = super::shared_data().join("sponza-textures");
    for (i, path) in super::files_with(&dir, &[".ktx2"])
        .into_iter()
        .take(20)
        .enumerate()
    {
        let t = s
            .register_texture(TextureDesc::new(TextureFile::open_path(&path).unwrap()))
            .unwrap();
        let x = (i % 5) as f32 * 3.0 - 6.0;
        let z = -4.0 - (i / 5) as f32 * 6.0;
        s.register_object(ObjectDesc::sphere(Vec3::new(x, 0.0, z), 1.5).with_texture(t, 3.0))
            .unwrap();
    }
    s
}

/// A 1280x720 view from `z` down the axis.
pub fn view(z: f32) -> View {
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
