//! Rendering cooked glTF scenes to images for the mesh tests (included by
//! the test binaries that draw them).

use glam::UVec2;
use mipstream::{Streamer, View};
use mipstream_tools::gltf_scene::StreamedScene;
use mipstream_tools::render_mesh::{MeshDraw, MeshRenderer, BACKGROUND};

/// `draws` from `view` into a new `size` target, read back.
pub(crate) fn render(
    renderer: &mut MeshRenderer,
    view: &View,
    draws: &[MeshDraw<'_>],
    size: UVec2,
) -> image::RgbaImage {
    let g = super::common::gpu();
    let target = mipstream::gpu::readback::render_target(
        &g.device,
        "scene target",
        (size.x, size.y),
        wgpu::TextureFormat::Rgba8UnormSrgb,
    );
    let tv = target.create_view(&Default::default());
    renderer.render(&g.device, &g.queue, &tv, size, view, draws, BACKGROUND);
    let px = mipstream::gpu::read_rgba8(&g.device, &g.queue, &target, 0, 0).unwrap();
    image::RgbaImage::from_raw(size.x, size.y, px).unwrap()
}

/// The streamed scene as `s` holds it now (bind groups synced first).
pub(crate) fn render_streamed(
    renderer: &mut MeshRenderer,
    s: &mut Streamer,
    scene: &mut StreamedScene,
    view: &View,
    size: UVec2,
) -> image::RgbaImage {
    let g = super::common::gpu();
    let changed = s.take_changed();
    scene.sync(&g.device, renderer, s, &changed);
    let draws = scene.draws(s);
    render(renderer, view, &draws, size)
}
