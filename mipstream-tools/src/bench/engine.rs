//! An engine as docs/embedding.md's example writes one, for the
//! benchmarks and tests that look at mipstream from outside: its own render
//! target, a bind group per streamed texture rebuilt from
//! [`Streamer::take_changed`] before its next submit (the old one dropped,
//! no clone of a replaced view kept), and a frame that samples every
//! texture once, each over its own cell of a grid that tiles the target
//! (so the frame's GPU cost follows the target's pixels).

use crate::pipeline::{sampler_entry, texture_entry};
use mipstream::streamer::Streamer;
use mipstream::streamer::TextureId;
use std::collections::BTreeMap;

/// The engine (see the module docs).
#[derive(Debug)]
pub struct Engine {
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    sampler: wgpu::Sampler,
    pipeline: wgpu::RenderPipeline,
    target: wgpu::TextureView,
    size: (u32, u32),
    bind_groups: BTreeMap<TextureId, wgpu::BindGroup>,
}

const SHADER: &str = "@group(0) @binding(0) var t: texture_2d<f32>;
@group(0) @binding(1) var s: sampler;
struct Out { @builtin(position) pos: vec4f, @location(0) uv: vec2f };
@vertex fn vs(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return Out(vec4f(uv * 2.0 - 1.0, 0.0, 1.0), uv);
}
@fragment fn fs(v: Out) -> @location(0) vec4f { return textureSample(t, s, v.uv); }";

impl Engine {
    /// An engine on `device` drawing into a `width` x `height` RGBA8 target.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, width: u32, height: u32) -> Self {
        let device = device.clone();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("engine material"),
            entries: &[texture_entry(0), sampler_entry(1)],
        });
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            mipmap_filter: wgpu::MipmapFilterMode::Linear,
            ..Default::default()
        });
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("engine quad"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("engine quad"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let format = wgpu::TextureFormat::Rgba8Unorm;
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("engine quad"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &shader,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &shader,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(format.into())],
            }),
            multiview_mask: None,
            cache: None,
        });
        let target = device
            .create_texture(&wgpu::TextureDescriptor {
                label: Some("engine frame"),
                size: wgpu::Extent3d {
                    width: width.max(1),
                    height: height.max(1),
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            })
            .create_view(&Default::default());
        Self {
            device,
            queue: queue.clone(),
            layout,
            sampler,
            pipeline,
            target,
            size: (width.max(1), height.max(1)),
            bind_groups: BTreeMap::new(),
        }
    }

    /// Rebuilds the bind groups of what changed (dropping the old ones, and
    /// the group of a texture that left).
    pub fn rebind(&mut self, s: &mut Streamer) {
        for id in s.take_changed() {
            let Ok(view) = s.texture_view(id) else {
                self.bind_groups.remove(&id);
                continue;
            };
            let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("engine material"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Sampler(&self.sampler),
                    },
                ],
            });
            self.bind_groups.insert(id, group);
        }
    }

    /// Bind groups held.
    pub fn bound(&self) -> usize {
        self.bind_groups.len()
    }

    /// One frame sampling every bound texture, submitted.
    pub fn frame(&self) -> wgpu::SubmissionIndex {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("engine frame"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &self.target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                ..Default::default()
            });
            pass.set_pipeline(&self.pipeline);
            let columns = (self.bind_groups.len() as f32).sqrt().ceil().max(1.0) as u32;
            let rows = (self.bind_groups.len() as u32).div_ceil(columns).max(1);
            let (w, h) = (self.size.0 as f32, self.size.1 as f32);
            let (cw, ch) = (w / columns as f32, h / rows as f32);
            for (i, group) in self.bind_groups.values().enumerate() {
                let (c, r) = (i as u32 % columns, i as u32 / columns);
                pass.set_viewport(c as f32 * cw, r as f32 * ch, cw, ch, 0.0, 1.0);
                pass.set_bind_group(0, group, &[]);
                pass.draw(0..3, 0..1);
            }
        }
        self.queue.submit([encoder.finish()])
    }
}
