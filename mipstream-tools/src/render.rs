//! A minimal renderer for the built-in scene (feature `scene`): textured,
//! lit boxes drawn from the streamer's views, and a mip heatmap debug mode
//! (`shaders/scene.wgsl`). Used by the tests, the benchmark and the viewer.
//!
//! Bind groups are rebuilt only for the textures the streamer lists as
//! changed, which is what a real renderer should do too.

use super::pipeline::{
    depth_tested, sampler_entry, texture_entry, trilinear_sampler, uniform_entry, with_feedback,
    FeedbackBinding, PipelineDesc,
};
use bytemuck::{Pod, Zeroable};
use glam::{UVec2, Vec3};
use mipstream::plan::View;
use mipstream::streamer::{Streamer, TextureId};
use std::collections::HashMap;

/// What the renderer shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ViewMode {
    /// Textured and lit.
    #[default]
    Normal,
    /// Tinted by resident mip versus wanted mip.
    MipHeatmap,
    /// Diagnostics (the benchmark's `--trace`): each pixel's texture and
    /// the lod the sampler picks, see [`TexturePixel::decode`].
    TextureIds,
}

/// One pixel of a [`ViewMode::TextureIds`] picture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TexturePixel {
    /// The texture's index in [`Streamer::texture_ids`].
    pub index: usize,
    /// The lod the sampler picks there from the texture's level 0 view
    /// (to 1/8 of a level, clamped to -8..24).
    pub lod: f32,
}

impl TexturePixel {
    /// The pixel's texture and lod; `None` where no box was drawn.
    pub fn decode(rgba: [u8; 4]) -> Option<Self> {
        let id = rgba[0] as usize | (rgba[1] as usize) << 8;
        (rgba[2] == 0 && id > 0).then(|| TexturePixel {
            index: id - 1,
            lod: rgba[3] as f32 / 255.0 * 32.0 - 8.0,
        })
    }
}

/// One box to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawBox {
    /// Centre.
    pub center: Vec3,
    /// Full size.
    pub size: Vec3,
    /// World units per texture repeat.
    pub tile: f32,
    /// Its texture.
    pub texture: TextureId,
    /// Draw it highlighted (magenta).
    pub highlight: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Vertex {
    pos: [f32; 3],
    normal: [f32; 3],
    uv: [f32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Instance {
    center: [f32; 3],
    size: [f32; 3],
    extra: [f32; 3],
    feedback: [f32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Globals {
    view_proj: [[f32; 4]; 4],
    light: [f32; 4],
    mode: [u32; 4],
}

/// The unit cube: 6 faces of 4 vertices, centred on the origin.
fn cube() -> (Vec<Vertex>, Vec<u16>) {
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    ];
    let (mut v, mut i) = (Vec::new(), Vec::new());
    for (n, u, w) in faces {
        let (n, u, w) = (Vec3::from(n), Vec3::from(u), Vec3::from(w));
        let base = v.len() as u16;
        for (su, sv) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let p = (n + u * su + w * sv) * 0.5;
            v.push(Vertex {
                pos: p.into(),
                normal: n.into(),
                uv: [(su + 1.0) * 0.5, (1.0 - sv) * 0.5],
            });
        }
        i.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    (v, i)
}

/// Draws boxes textured with streamed textures.
#[derive(Debug)]
pub struct SceneRenderer {
    pipeline: wgpu::RenderPipeline,
    globals: wgpu::Buffer,
    globals_bind: wgpu::BindGroup,
    texture_layout: wgpu::BindGroupLayout,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    instances: Option<wgpu::Buffer>,
    bind_groups: HashMap<TextureId, wgpu::BindGroup>,
    /// GPU feedback's bind group (group 2): the streamer's buffer when it
    /// has one, else a buffer of one slot nobody reads.
    feedback: FeedbackBinding,
    depth: Option<(UVec2, wgpu::TextureView)>,
    format: wgpu::TextureFormat,
    /// Bind groups rebuilt by the last `sync`.
    pub last_rebinds: u32,
    /// Whether the draws report GPU feedback when the streamer has a
    /// feedback buffer (default true; false measures the frame without
    /// the call's work: the same pipeline, its branch not taken).
    pub report_feedback: bool,
}

/// The part of a target a [`SceneRenderer::render_region`] call draws into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Top-left pixel.
    pub origin: UVec2,
    /// Width and height in pixels (clipped to the target).
    pub size: UVec2,
    /// Clear the whole target to the sky first.
    pub clear: bool,
}

/// The sky colour behind the scene.
pub const SKY: wgpu::Color = wgpu::Color {
    r: 0.55,
    g: 0.70,
    b: 0.90,
    a: 1.0,
};

impl SceneRenderer {
    /// A renderer drawing into targets of `format`.
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        use wgpu::util::DeviceExt;
        let globals_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mipstream scene globals"),
            entries: &[uniform_entry(0, false), sampler_entry(1)],
        });
        let texture_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mipstream scene texture"),
            entries: &[texture_entry(0)],
        });
        let feedback = FeedbackBinding::new(device, "mipstream scene feedback");
        let vertex_layouts = [
            Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x2],
            }),
            Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Instance>() as u64,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &wgpu::vertex_attr_array![3 => Float32x3, 4 => Float32x3, 5 => Float32x3, 6 => Float32x3],
            }),
        ];
        // GPU feedback's module appended; hidden fragments must not report,
        // so the fragment stage runs after the depth test where the device
        // can (the shader never discards)
        let wgsl = with_feedback(device, include_str!("../../shaders/scene.wgsl"), true, 2);
        let pipeline = depth_tested(
            device,
            &PipelineDesc {
                label: "mipstream scene",
                wgsl: &wgsl,
                fragment: "fs",
                bind_groups: &[&globals_layout, &texture_layout, &feedback.layout],
                buffers: &vertex_layouts,
                cull_mode: Some(wgpu::Face::Back),
                format,
            },
        );
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mipstream scene globals"),
            size: std::mem::size_of::<Globals>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let sampler = trilinear_sampler(device, "mipstream scene trilinear");
        let globals_bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("mipstream scene globals"),
            layout: &globals_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: globals.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Sampler(&sampler),
                },
            ],
        });
        let (v, i) = cube();
        let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mipstream cube vertices"),
            contents: bytemuck::cast_slice(&v),
            usage: wgpu::BufferUsages::VERTEX,
        });
        let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mipstream cube indices"),
            contents: bytemuck::cast_slice(&i),
            usage: wgpu::BufferUsages::INDEX,
        });
        Self {
            pipeline,
            globals,
            globals_bind,
            texture_layout,
            vertices,
            indices,
            instances: None,
            bind_groups: HashMap::new(),
            feedback,
            depth: None,
            format,
            last_rebinds: 0,
            report_feedback: true,
        }
    }

    /// The target format.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// Rebuilds the bind groups of textures whose views changed (and creates
    /// missing ones); drops those of removed textures.
    pub fn sync(&mut self, device: &wgpu::Device, streamer: &Streamer, changed: &[TextureId]) {
        let mut rebinds = 0;
        let live: std::collections::HashSet<TextureId> =
            streamer.texture_ids().into_iter().collect();
        self.bind_groups.retain(|id, _| live.contains(id));
        for &id in live.iter() {
            if self.bind_groups.contains_key(&id) && !changed.contains(&id) {
                continue;
            }
            let Ok(view) = streamer.texture_view(id) else {
                continue;
            };
            let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("mipstream scene texture"),
                layout: &self.texture_layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(view),
                }],
            });
            self.bind_groups.insert(id, bg);
            rebinds += 1;
        }
        self.last_rebinds = rebinds;
    }

    /// Draws `boxes` from `view` into `target` (of `size` pixels), clearing it
    /// to the sky first.
    #[allow(clippy::too_many_arguments)]
    pub fn render(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &View,
        boxes: &[DrawBox],
        streamer: &Streamer,
        mode: ViewMode,
    ) {
        let region = Region {
            origin: UVec2::ZERO,
            size,
            clear: true,
        };
        self.render_region(
            device, queue, target, size, view, boxes, streamer, mode, region,
        );
    }

    /// Like [`render`](Self::render), drawing only inside `region` of the
    /// target (the rest keeps its pixels unless `region.clear`): for split
    /// views that show two streamers side by side.
    #[allow(clippy::too_many_arguments)]
    pub fn render_region(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &View,
        boxes: &[DrawBox],
        streamer: &Streamer,
        mode: ViewMode,
        region: Region,
    ) {
        use wgpu::util::DeviceExt;
        let feedback = streamer
            .feedback_buffer()
            .filter(|_| self.report_feedback)
            .map(|b| self.feedback.bind(device, b));
        let globals = Globals {
            view_proj: view.view_proj.to_cols_array_2d(),
            light: [0.4, 0.8, 0.3, 0.0],
            mode: [
                match mode {
                    ViewMode::Normal => 0,
                    ViewMode::MipHeatmap => 1,
                    ViewMode::TextureIds => 2,
                },
                feedback.is_some() as u32,
                0,
                0,
            ],
        };
        queue.write_buffer(&self.globals, 0, bytemuck::bytes_of(&globals));
        // instances grouped by texture, one draw per texture
        let mut order: Vec<&DrawBox> = boxes.iter().collect();
        order.sort_by_key(|b| b.texture);
        let index: HashMap<TextureId, usize> = if mode == ViewMode::TextureIds {
            let ids = streamer.texture_ids();
            ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect()
        } else {
            HashMap::new()
        };
        let instances: Vec<Instance> = order
            .iter()
            .map(|b| {
                let delta = streamer
                    .texture_status(b.texture)
                    .map_or(0.0, |s| s.resident as f32 - s.wanted as f32);
                let third = match index.get(&b.texture) {
                    Some(&i) => (i + 1) as f32,
                    None => b.highlight as u32 as f32,
                };
                // the full chain's level 0 from the resident copy's
                let full = streamer.resident(b.texture).map_or([0.0; 2], |r| {
                    let s = r.texture.size();
                    [
                        (s.width << r.first_level) as f32,
                        (s.height << r.first_level) as f32,
                    ]
                });
                Instance {
                    center: b.center.into(),
                    size: b.size.into(),
                    extra: [b.tile.max(1e-3), delta, third],
                    feedback: [b.texture.index() as f32, full[0], full[1]],
                }
            })
            .collect();
        let instance_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mipstream scene instances"),
            contents: bytemuck::cast_slice(&instances),
            usage: wgpu::BufferUsages::VERTEX,
        });
        if self.depth.as_ref().is_none_or(|(s, _)| *s != size) {
            let depth = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("mipstream scene depth"),
                size: wgpu::Extent3d {
                    width: size.x,
                    height: size.y,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Depth32Float,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            });
            self.depth = Some((size, depth.create_view(&Default::default())));
        }
        let depth_view = &self.depth.as_ref().expect("created above").1;
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("mipstream scene"),
        });
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("mipstream scene"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: if region.clear {
                            wgpu::LoadOp::Clear(SKY)
                        } else {
                            wgpu::LoadOp::Load
                        },
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: depth_view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            let origin = region.origin.min(size);
            let extent = region.size.min(size - origin);
            // an empty region still clears, but draws nothing
            let order = if extent.x == 0 || extent.y == 0 {
                &order[..0]
            } else {
                pass.set_scissor_rect(origin.x, origin.y, extent.x, extent.y);
                &order[..]
            };
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.globals_bind, &[]);
            pass.set_bind_group(2, feedback.as_ref().unwrap_or(&self.feedback.none), &[]);
            pass.set_vertex_buffer(0, self.vertices.slice(..));
            pass.set_vertex_buffer(1, instance_buf.slice(..));
            pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint16);
            let mut start = 0;
            while start < order.len() {
                let tex = order[start].texture;
                let end = start
                    + order[start..]
                        .iter()
                        .take_while(|b| b.texture == tex)
                        .count();
                if let Some(bg) = self.bind_groups.get(&tex) {
                    pass.set_bind_group(1, bg, &[]);
                    pass.draw_indexed(0..36, 0, start as u32..end as u32);
                }
                start = end;
            }
        }
        queue.submit([enc.finish()]);
        self.instances = Some(instance_buf);
    }
}
