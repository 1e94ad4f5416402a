//! A minimal glTF material renderer (`shaders/mesh.wgsl`): base colour
//! (texture times factor), a tangent-space normal map in any of mipstream's
//! channel layouts, a sun and a hemisphere ambient. Draws whatever vertex and
//! index buffers it is given, so the streamed scene ([`crate::gltf_scene`])
//! and the uncooked reference ([`crate::reference`]) go through the
//! same shader and differ only in their data.
//!
//! A draw may carry a dither `fade`: the new and the old LOD of a mesh drawn
//! with complementary 4x4 ordered-dither masks over a few frames hide the
//! pop of a LOD swap (a cross-fade without blending or sorting).
//!
//! It reports GPU feedback ([`MeshRenderer::set_feedback`]): each
//! material's streamed base colour and normal map, sampled where the
//! fragment shader samples them. Opaque draws run the fragment stage after
//! the depth test where the device can (`SHADER_EARLY_DEPTH_TEST`), so
//! hidden fragments do not report; alpha-masked materials and dithered
//! cross-fades discard, so they cannot force it: their hidden fragments
//! report, which errs towards more detail.

use super::pipeline::{
    depth_tested, sampler_entry, texture_entry, trilinear_sampler, uniform_entry, with_feedback,
    FeedbackBinding, PipelineDesc,
};
use bytemuck::{Pod, Zeroable};
use glam::{Mat3, Mat4, UVec2, Vec3};
use mipstream::plan::View;
use mipstream::transcode::ChannelLayout;

/// The background behind a mesh scene.
pub const BACKGROUND: wgpu::Color = wgpu::Color {
    r: 0.18,
    g: 0.20,
    b: 0.24,
    a: 1.0,
};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Globals {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    sun: [f32; 4],
    flags: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct DrawUniform {
    model: [[f32; 4]; 4],
    normal: [[f32; 4]; 3],
    fade: [f32; 4],
}

/// Bytes between two draws' uniforms (the dynamic-offset alignment wgpu
/// guarantees on every backend).
const DRAW_STRIDE: u64 = 256;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MaterialUniform {
    base_color: [f32; 4],
    params: [f32; 4],
    feedback: [f32; 4],
    feedback_normal: [f32; 4],
}

/// A streamed texture a material samples, for GPU feedback: its slot
/// (`TextureId::index()`) and its full-resolution size in texels (the
/// whole chain's level 0, not the resident copy's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedbackTexture {
    /// The texture's slot in the streamer.
    pub slot: u32,
    /// Width and height of its level 0.
    pub size: [f32; 2],
}

impl FeedbackTexture {
    /// `id`'s slot and full size in `streamer` (`None` when it is gone).
    pub fn of(streamer: &mipstream::Streamer, id: mipstream::TextureId) -> Option<Self> {
        let r = streamer.resident(id).ok()?;
        let s = r.texture.size();
        Some(Self {
            slot: id.index() as u32,
            size: [
                (s.width << r.first_level) as f32,
                (s.height << r.first_level) as f32,
            ],
        })
    }
}

/// A material's constant part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialFactors {
    /// Linear RGBA multiplier of the base colour texture.
    pub base_color: [f32; 4],
    /// The normal map's XY scale.
    pub normal_scale: f32,
    /// Alpha below which a pixel is discarded (`MASK` mode); 0: opaque.
    pub alpha_cutoff: f32,
}

impl Default for MaterialFactors {
    fn default() -> Self {
        Self {
            base_color: [1.0; 4],
            normal_scale: 1.0,
            alpha_cutoff: 0.0,
        }
    }
}

/// A material's bind group.
#[derive(Debug)]
pub struct MaterialBinding {
    bind: wgpu::BindGroup,
    _uniform: wgpu::Buffer,
    /// Alpha-tested: drawn with the pipeline that may discard.
    masked: bool,
}

/// One mesh to draw.
#[derive(Debug, Clone, Copy)]
pub struct MeshDraw<'a> {
    /// Vertices ([`mipstream::mesh::Vertex`]).
    pub vertex: &'a wgpu::Buffer,
    /// `u32` indices.
    pub index: &'a wgpu::Buffer,
    /// Indices to draw.
    pub index_count: u32,
    /// Mesh to world.
    pub model: Mat4,
    /// Its material.
    pub material: &'a MaterialBinding,
    /// Dither fade: 0 draws every pixel; `a` in (0, 1] the share `a` of them,
    /// `-a` the complementary share (the old LOD in a cross-fade).
    pub fade: f32,
}

/// Draws meshes with glTF-style materials.
#[derive(Debug)]
pub struct MeshRenderer {
    /// Opaque draws (early depth tests forced where the device can).
    pipeline: wgpu::RenderPipeline,
    /// Draws that may discard: masked materials, dithered cross-fades.
    discarding: wgpu::RenderPipeline,
    globals: wgpu::Buffer,
    globals_bind: wgpu::BindGroup,
    draw_layout: wgpu::BindGroupLayout,
    material_layout: wgpu::BindGroupLayout,
    draws: Option<(u64, wgpu::Buffer, wgpu::BindGroup)>,
    depth: Option<(UVec2, wgpu::TextureView)>,
    white: wgpu::TextureView,
    format: wgpu::TextureFormat,
    /// GPU feedback's bind group (group 3) and the one of the streamer's
    /// buffer set for the next frames.
    feedback: FeedbackBinding,
    feedback_bind: Option<wgpu::BindGroup>,
    /// Whether draws report GPU feedback when a buffer is set (default
    /// true; false measures the frame without the call's work).
    pub report_feedback: bool,
    /// The id pass [`render_ids`](Self::render_ids) draws (0: shade).
    ids: u32,
}

/// Which streamed texture of each material an id pass
/// ([`MeshRenderer::render_ids`]) shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaterialTexture {
    /// The base colour texture.
    BaseColor,
    /// The normal map.
    Normal,
}

impl MeshRenderer {
    /// A renderer drawing into targets of `format`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, format: wgpu::TextureFormat) -> Self {
        let globals_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mipstream mesh globals"),
            entries: &[uniform_entry(0, false), sampler_entry(1)],
        });
        let draw_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mipstream mesh draw"),
            entries: &[uniform_entry(0, true)],
        });
        let material_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("mipstream mesh material"),
            entries: &[uniform_entry(0, false), texture_entry(1), texture_entry(2)],
        });
        let buffers = [Some(wgpu::VertexBufferLayout {
            array_stride: mipstream::mesh::VERTEX_STRIDE as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &wgpu::vertex_attr_array![
                0 => Float32x3, 1 => Float32x3, 2 => Float32x2, 3 => Float32x4
            ],
        })];
        let feedback = FeedbackBinding::new(device, "mipstream mesh feedback");
        // one module, two fragment entry points (see the shader)
        let wgsl = with_feedback(device, include_str!("../../shaders/mesh.wgsl"), true, 3);
        let pipeline_with = |label: &str, fragment: &str| {
            depth_tested(
                device,
                &PipelineDesc {
                    label,
                    wgsl: &wgsl,
                    fragment,
                    bind_groups: &[
                        &globals_layout,
                        &draw_layout,
                        &material_layout,
                        &feedback.layout,
                    ],
                    buffers: &buffers,
                    // glTF materials may be double-sided and mirrored
                    // transforms flip winding: no culling keeps both right
                    cull_mode: None,
                    format,
                },
            )
        };
        let pipeline = pipeline_with("mipstream mesh", "fs_opaque");
        let discarding = pipeline_with("mipstream mesh (discarding)", "fs");
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mipstream mesh globals"),
            size: std::mem::size_of::<Globals>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let sampler = trilinear_sampler(device, "mipstream mesh trilinear");
        let globals_bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("mipstream mesh globals"),
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
        let white = {
            use wgpu::util::DeviceExt;
            device
                .create_texture_with_data(
                    queue,
                    &wgpu::TextureDescriptor {
                        label: Some("mipstream white"),
                        size: wgpu::Extent3d {
                            width: 1,
                            height: 1,
                            depth_or_array_layers: 1,
                        },
                        mip_level_count: 1,
                        sample_count: 1,
                        dimension: wgpu::TextureDimension::D2,
                        format: wgpu::TextureFormat::Rgba8Unorm,
                        usage: wgpu::TextureUsages::TEXTURE_BINDING,
                        view_formats: &[],
                    },
                    wgpu::util::TextureDataOrder::LayerMajor,
                    &[255; 4],
                )
                .create_view(&Default::default())
        };
        Self {
            pipeline,
            discarding,
            globals,
            globals_bind,
            draw_layout,
            material_layout,
            draws: None,
            depth: None,
            white,
            format,
            feedback,
            feedback_bind: None,
            report_feedback: true,
            ids: 0,
        }
    }

    /// Draws, instead of the shaded picture, each pixel's streamed `which`
    /// texture and the lod the trilinear sampler picks of its
    /// full-resolution level 0, as [`crate::render::TexturePixel`] decodes
    /// it, except that its `index` is the texture's slot
    /// (`TextureId::index()`) and its lod is of the full chain; transparent
    /// black where no streamed texture is sampled. Depth-tested, masks and
    /// cross-fades applied: what the picture shows. Reports no feedback.
    #[allow(clippy::too_many_arguments)]
    pub fn render_ids(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &View,
        draws: &[MeshDraw<'_>],
        which: MaterialTexture,
    ) {
        let report = std::mem::replace(&mut self.report_feedback, false);
        self.ids = match which {
            MaterialTexture::BaseColor => 1,
            MaterialTexture::Normal => 2,
        };
        let clear = wgpu::Color::TRANSPARENT;
        self.render(device, queue, target, size, view, draws, clear);
        self.ids = 0;
        self.report_feedback = report;
    }

    /// Draws report GPU feedback into `buffer`
    /// ([`Streamer::feedback_buffer`](mipstream::Streamer::feedback_buffer))
    /// from the next [`render`](Self::render) on; `None`: they do not.
    pub fn set_feedback(&mut self, device: &wgpu::Device, buffer: Option<&wgpu::Buffer>) {
        self.feedback_bind = buffer.map(|b| self.feedback.bind(device, b));
    }

    /// The target format.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// A material's bind group: its base colour texture (white when none),
    /// its normal map with the channel layout it is stored in (none: the
    /// vertex normal), and its factors. Rebuild it when a streamed texture's
    /// view changes. It reports no GPU feedback (see
    /// [`material_reporting`](Self::material_reporting)).
    pub fn material(
        &self,
        device: &wgpu::Device,
        base_color: Option<&wgpu::TextureView>,
        normal: Option<(&wgpu::TextureView, ChannelLayout)>,
        factors: &MaterialFactors,
    ) -> MaterialBinding {
        self.material_reporting(device, base_color, normal, factors, [None, None])
    }

    /// [`material`](Self::material) whose draws report GPU feedback for
    /// `streamed`: the base colour texture's and the normal map's slots
    /// and sizes, where they are streamed textures.
    pub fn material_reporting(
        &self,
        device: &wgpu::Device,
        base_color: Option<&wgpu::TextureView>,
        normal: Option<(&wgpu::TextureView, ChannelLayout)>,
        factors: &MaterialFactors,
        streamed: [Option<FeedbackTexture>; 2],
    ) -> MaterialBinding {
        use wgpu::util::DeviceExt;
        let layout = normal.map_or(0.0, |(_, l)| match l {
            ChannelLayout::NormalRg | ChannelLayout::RedGreenInRedAlpha => 2.0,
            ChannelLayout::NormalRa => 3.0,
            _ => 1.0,
        });
        let slot = |t: Option<FeedbackTexture>| t.map_or(0.0, |t| t.slot as f32 + 1.0);
        let size = |t: Option<FeedbackTexture>| t.map_or([0.0; 2], |t| t.size);
        let [base, normal_map] = streamed;
        let uniform = MaterialUniform {
            base_color: factors.base_color,
            params: [factors.normal_scale, layout, factors.alpha_cutoff, 0.0],
            feedback: [slot(base), size(base)[0], size(base)[1], slot(normal_map)],
            feedback_normal: [size(normal_map)[0], size(normal_map)[1], 0.0, 0.0],
        };
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mipstream mesh material"),
            contents: bytemuck::bytes_of(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("mipstream mesh material"),
            layout: &self.material_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(base_color.unwrap_or(&self.white)),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(
                        normal.map_or(&self.white, |(v, _)| v),
                    ),
                },
            ],
        });
        MaterialBinding {
            bind,
            _uniform: buffer,
            masked: factors.alpha_cutoff > 0.0,
        }
    }

    /// Draws `draws` seen from `view` into `target` (of `size` pixels),
    /// cleared to `clear` first.
    #[allow(clippy::too_many_arguments)]
    pub fn render(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &View,
        draws: &[MeshDraw<'_>],
        clear: wgpu::Color,
    ) {
        let globals = Globals {
            view_proj: view.view_proj.to_cols_array_2d(),
            eye: view.position.extend(1.0).into(),
            sun: Vec3::new(0.35, 0.8, 0.5).normalize().extend(0.0).into(),
            flags: [
                (self.report_feedback && self.feedback_bind.is_some()) as u32,
                self.ids,
                0,
                0,
            ],
        };
        queue.write_buffer(&self.globals, 0, bytemuck::bytes_of(&globals));
        let needed = (draws.len().max(1) as u64) * DRAW_STRIDE;
        if self.draws.as_ref().is_none_or(|(n, _, _)| *n < needed) {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("mipstream mesh draws"),
                size: needed.next_power_of_two(),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("mipstream mesh draws"),
                layout: &self.draw_layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &buffer,
                        offset: 0,
                        size: wgpu::BufferSize::new(std::mem::size_of::<DrawUniform>() as u64),
                    }),
                }],
            });
            self.draws = Some((needed.next_power_of_two(), buffer, bind));
        }
        let (_, draw_buffer, draw_bind) = self.draws.as_ref().expect("made above");
        let mut bytes = vec![0u8; draws.len() * DRAW_STRIDE as usize];
        for (i, d) in draws.iter().enumerate() {
            let n = Mat3::from_mat4(d.model).inverse().transpose();
            let u = DrawUniform {
                model: d.model.to_cols_array_2d(),
                normal: [
                    n.x_axis.extend(0.0).into(),
                    n.y_axis.extend(0.0).into(),
                    n.z_axis.extend(0.0).into(),
                ],
                fade: [d.fade, 0.0, 0.0, 0.0],
            };
            let at = i * DRAW_STRIDE as usize;
            bytes[at..at + std::mem::size_of::<DrawUniform>()]
                .copy_from_slice(bytemuck::bytes_of(&u));
        }
        if !bytes.is_empty() {
            queue.write_buffer(draw_buffer, 0, &bytes);
        }
        if self.depth.as_ref().is_none_or(|(s, _)| *s != size) {
            let depth = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("mipstream mesh depth"),
                size: wgpu::Extent3d {
                    width: size.x.max(1),
                    height: size.y.max(1),
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
            label: Some("mipstream mesh"),
        });
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("mipstream mesh"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(clear),
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
            pass.set_bind_group(0, &self.globals_bind, &[]);
            let feedback = self.feedback_bind.as_ref().unwrap_or(&self.feedback.none);
            pass.set_bind_group(3, feedback, &[]);
            let mut bound = None;
            for (i, d) in draws.iter().enumerate() {
                if d.index_count == 0 {
                    continue;
                }
                let discards = d.material.masked || d.fade != 0.0;
                if bound != Some(discards) {
                    pass.set_pipeline(if discards {
                        &self.discarding
                    } else {
                        &self.pipeline
                    });
                    bound = Some(discards);
                }
                pass.set_bind_group(1, draw_bind, &[(i as u64 * DRAW_STRIDE) as u32]);
                pass.set_bind_group(2, &d.material.bind, &[]);
                pass.set_vertex_buffer(0, d.vertex.slice(..));
                pass.set_index_buffer(d.index.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..d.index_count, 0, 0..1);
            }
        }
        queue.submit([enc.finish()]);
    }
}
