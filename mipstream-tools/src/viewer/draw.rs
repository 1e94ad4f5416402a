//! Drawing a frame: the full-resolution reference of the split view
//! updated, the scene (boxes or glTF, normal, heat-map or split) rendered
//! into its target, composited into the frame, and the egui panel drawn
//! over it.

use super::*;

impl Viewer {
    pub(super) fn update_reference(&mut self, view: &View) -> Result<(), ViewerError> {
        if self.reference.is_none() {
            // everything fits: budget twice full residency, a large upload cap
            let options = StreamerOptions {
                budget: Budget::Bytes(self.full_bytes * 2 + (16 << 20)),
                upload_bytes_per_frame: 64 << 20,
                uploads_per_frame: 256,
                ..Default::default()
            };
            let (mut streamer, boxes, _, _) =
                Self::new_streamer(&self.device, &self.queue, &self.scene, None, options)?;
            streamer.settle(&[*view], Duration::from_secs(10))?;
            self.reference = Some(Reference {
                streamer,
                renderer: SceneRenderer::new(&self.device, TARGET_FORMAT),
                boxes,
            });
        }
        let r = self.reference.as_mut().expect("created above");
        r.streamer.update(&[*view]);
        let changed = r.streamer.take_changed();
        r.renderer.sync(&self.device, &r.streamer, &changed);
        Ok(())
    }

    pub(super) fn draw_scene(&mut self, view: &View) {
        if let Some(m) = &mut self.meshes {
            // a glTF scene: materials and streamed LODs (the split view and
            // the heat-map are for the built-in boxes)
            let draws = m.scene.draws(&self.streamer);
            m.renderer.render(
                &self.device,
                &self.queue,
                &self.scene_target.view,
                self.scene_target.size,
                view,
                &draws,
                crate::render_mesh::BACKGROUND,
            );
            return;
        }
        let selected = self.settings.selected;
        for b in &mut self.boxes {
            b.highlight = Some(b.texture) == selected;
        }
        let size = self.scene_target.size;
        let mode = self.settings.mode;
        let split = mode.is_split();
        let half = UVec2::new(size.x / 2, size.y);
        let left = Region {
            origin: UVec2::ZERO,
            size: if split { half } else { size },
            clear: true,
        };
        self.renderer.render_region(
            &self.device,
            &self.queue,
            &self.scene_target.view,
            size,
            view,
            &self.boxes,
            &self.streamer,
            if mode == Mode::Heatmap {
                ViewMode::MipHeatmap
            } else {
                ViewMode::Normal
            },
            left,
        );
        if split {
            let right = Region {
                origin: UVec2::new(half.x, 0),
                size: UVec2::new(size.x - half.x, size.y),
                clear: false,
            };
            // the engine rule's streamer, or the full-resolution one
            let other = match (&mut self.rival, &mut self.reference) {
                (Some(r), _) => Some((&mut r.renderer, &r.boxes, &r.streamer)),
                (None, Some(r)) if mode == Mode::SplitFull => {
                    Some((&mut r.renderer, &r.boxes, &r.streamer))
                }
                _ => None,
            };
            if let Some((renderer, boxes, streamer)) = other {
                renderer.render_region(
                    &self.device,
                    &self.queue,
                    &self.scene_target.view,
                    size,
                    view,
                    boxes,
                    streamer,
                    ViewMode::Normal,
                    right,
                );
            }
        }
        if let (Mode::Error, Some(map)) = (mode, &self.error_map) {
            // the last FLIP map over the whole scene (it follows the camera
            // every few frames)
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("mipstream viewer error map"),
                });
            self.compose.draw(
                &self.device,
                &mut enc,
                &map.view,
                &self.scene_target.view,
                None,
            );
            self.queue.submit([enc.finish()]);
        }
    }

    /// Puts the scene into its place in the frame.
    pub(super) fn composite(&mut self) {
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("mipstream viewer composite"),
            });
        let [x, y, w, h] = self.scene_rect;
        self.compose.draw(
            &self.device,
            &mut enc,
            &self.scene_target.view,
            &self.target.view,
            Some([x as f32, y as f32, w as f32, h as f32]),
        );
        self.queue.submit([enc.finish()]);
    }

    pub(super) fn draw_ui(&mut self, mut input: egui::RawInput) -> egui::PlatformOutput {
        let size = self.target.size;
        let ppp = self.pixels_per_point;
        input.screen_rect = Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(size.x as f32 / ppp, size.y as f32 / ppp),
        ));
        let ctx = self.egui.clone();
        ctx.set_pixels_per_point(ppp);
        let mut free = egui::Rect::NOTHING;
        let mut output = ctx.run_ui(input, |ui| free = ui::panel(ui, self));
        // the scene goes where the panels leave room, from the next frame on
        let px = |v: f32, max: u32| ((v * ppp).round().max(0.0) as u32).min(max);
        let (x0, y0) = (px(free.min.x, size.x), px(free.min.y, size.y));
        let (x1, y1) = (px(free.max.x, size.x), px(free.max.y, size.y));
        self.scene_rect = if x1 > x0 + 16 && y1 > y0 + 16 {
            [x0, y0, x1 - x0, y1 - y0]
        } else {
            [0, 0, size.x, size.y]
        };
        let mut textures = std::mem::take(&mut output.textures_delta);
        let jobs = ctx.tessellate(std::mem::take(&mut output.shapes), output.pixels_per_point);
        for (id, deltas) in textures.set.drain() {
            for delta in &deltas {
                self.egui_renderer
                    .update_texture(&self.device, &self.queue, id, delta);
            }
        }
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [size.x, size.y],
            pixels_per_point: output.pixels_per_point,
        };
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("mipstream viewer panel"),
            });
        let extra =
            self.egui_renderer
                .update_buffers(&self.device, &self.queue, &mut enc, &jobs, &screen);
        {
            let pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("mipstream viewer panel"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &self.target.view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Load,
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            self.egui_renderer
                .render(&mut pass.forget_lifetime(), &jobs, &screen);
        }
        self.queue.submit(extra.into_iter().chain([enc.finish()]));
        for id in textures.free.drain() {
            self.egui_renderer.free_texture(&id);
        }
        output.platform_output
    }
}
