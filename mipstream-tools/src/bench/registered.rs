//! A scene registered with one strategy's streamer, and its renderer:
//! boxes (the built-in scene, a texture folder) or glTF meshes.

use super::BenchError;
use crate::gltf_scene::StreamedScene;
use crate::render::{DrawBox, SceneRenderer, ViewMode};
use crate::render_mesh::{MaterialTexture, MeshRenderer, BACKGROUND};
use crate::source::PreparedScene;
use glam::UVec2;
use mipstream::{gpu, streamer::Streamer, TextureId};
use std::time::Instant;

/// A scene registered with one strategy's streamer.
pub(super) enum Registered {
    Boxes(Vec<DrawBox>, SceneRenderer),
    Meshes(Box<StreamedScene>, MeshRenderer),
}

impl Registered {
    /// Registers `scene` with a strategy's streamer, with its renderer.
    pub(super) fn new(
        scene: &PreparedScene,
        g: &gpu::HeadlessGpu,
        streamer: &mut Streamer,
    ) -> Result<Registered, BenchError> {
        let format = wgpu::TextureFormat::Rgba8UnormSrgb;
        Ok(match scene {
            PreparedScene::Boxes(scene) => {
                let ids = scene.register(streamer)?;
                let boxes = scene
                    .objects
                    .iter()
                    .map(|o| DrawBox {
                        center: o.center,
                        size: o.size,
                        tile: o.tile,
                        texture: ids[o.texture],
                        highlight: false,
                    })
                    .collect();
                Registered::Boxes(boxes, SceneRenderer::new(&g.device, format))
            }
            PreparedScene::Meshes { json, .. } => Registered::Meshes(
                Box::new(StreamedScene::load(streamer, json)?),
                MeshRenderer::new(&g.device, &g.queue, format),
            ),
        })
    }
}

impl Registered {
    /// Bytes at full detail: every texture level, every mesh at LOD 0
    /// (with its always-resident coarsest LOD).
    pub(super) fn full_bytes(&self, streamer: &Streamer) -> u64 {
        self.bytes_at(streamer, 0)
    }

    /// Bytes with every texture `bias` mips and every mesh `bias` LODs
    /// below its finest.
    pub(super) fn bytes_at(&self, streamer: &Streamer, bias: u32) -> u64 {
        let textures = streamer
            .texture_ids()
            .into_iter()
            .filter_map(|id| streamer.bytes_from_level(id, bias).ok())
            .sum::<u64>();
        let meshes = match self {
            Registered::Boxes(..) => 0,
            Registered::Meshes(scene, _) => scene
                .meshes
                .iter()
                .filter_map(|&id| streamer.mesh_bytes_at(id, bias).ok())
                .sum(),
        };
        textures + meshes
    }

    pub(super) fn sync(
        &mut self,
        g: &gpu::HeadlessGpu,
        streamer: &Streamer,
        changed: &[TextureId],
    ) {
        match self {
            Registered::Boxes(_, r) => r.sync(&g.device, streamer, changed),
            Registered::Meshes(scene, r) => scene.sync(&g.device, r, streamer, changed),
        }
    }

    pub(super) fn render(
        &mut self,
        g: &gpu::HeadlessGpu,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &mipstream::plan::View,
        streamer: &Streamer,
    ) {
        match self {
            Registered::Boxes(boxes, r) => r.render(
                &g.device,
                &g.queue,
                target,
                size,
                view,
                boxes,
                streamer,
                ViewMode::Normal,
            ),
            Registered::Meshes(scene, r) => {
                r.set_feedback(&g.device, streamer.feedback_buffer());
                let draws = scene.draws(streamer);
                r.render(&g.device, &g.queue, target, size, view, &draws, BACKGROUND)
            }
        }
    }

    /// Draws a frame as [`render`](Self::render) does, timed from the start
    /// of its recording to the GPU going idle (which it waits for first),
    /// with or without the GPU feedback call's work (`feedback`: the same
    /// pipeline, the call's branch taken or not); ms.
    pub(super) fn render_timed(
        &mut self,
        g: &gpu::HeadlessGpu,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &mipstream::plan::View,
        streamer: &Streamer,
        feedback: bool,
    ) -> f64 {
        let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
        self.report_feedback(feedback);
        let start = Instant::now();
        self.render(g, target, size, view, streamer);
        let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
        let ms = start.elapsed().as_secs_f64() * 1e3;
        self.report_feedback(true);
        ms
    }

    /// Whether the renderer's draws report GPU feedback.
    fn report_feedback(&mut self, on: bool) {
        match self {
            Registered::Boxes(_, r) => r.report_feedback = on,
            Registered::Meshes(_, r) => r.report_feedback = on,
        }
    }

    /// Draws each pixel's `which` material texture, by slot, and its lod
    /// of the full chain ([`MeshRenderer::render_ids`]) into `target`;
    /// false for box scenes (their id pass is
    /// [`render_texture_ids`](Self::render_texture_ids)).
    pub(super) fn render_material_ids(
        &mut self,
        g: &gpu::HeadlessGpu,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &mipstream::plan::View,
        streamer: &Streamer,
        which: MaterialTexture,
    ) -> bool {
        let Registered::Meshes(scene, r) = self else {
            return false;
        };
        let draws = scene.draws(streamer);
        r.render_ids(&g.device, &g.queue, target, size, view, &draws, which);
        true
    }

    /// Draws each pixel's texture and lod ([`ViewMode::TextureIds`]) into
    /// `target`; false for glTF scenes (their id pass is
    /// [`render_material_ids`](Self::render_material_ids)).
    pub(super) fn render_texture_ids(
        &mut self,
        g: &gpu::HeadlessGpu,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &mipstream::plan::View,
        streamer: &Streamer,
    ) -> bool {
        let Registered::Boxes(boxes, r) = self else {
            return false;
        };
        r.render(
            &g.device,
            &g.queue,
            target,
            size,
            view,
            boxes,
            streamer,
            ViewMode::TextureIds,
        );
        true
    }
}
