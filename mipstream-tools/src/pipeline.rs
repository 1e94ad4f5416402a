//! The set-up the demo's renderers share (the built-in scene's boxes,
//! `render.rs`, glTF materials, `render_mesh.rs`; the entries also for the
//! viewer's blit and the benchmark's engine): bind group entries, a
//! depth-tested pipeline with `vs` and `fs` entry points, the trilinear
//! repeating sampler every streamed texture is drawn with.

/// A uniform buffer seen by both stages.
pub(crate) fn uniform_entry(binding: u32, dynamic: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: dynamic,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A filterable 2D texture the fragment stage samples.
pub(crate) fn texture_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: true },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

/// A read-write storage buffer the fragment stage writes (GPU feedback).
pub(crate) fn storage_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: false },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A filtering sampler for the fragment stage.
pub(crate) fn sampler_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
        count: None,
    }
}

/// Trilinear filtering, repeating in both directions.
pub(crate) fn trilinear_sampler(device: &wgpu::Device, label: &str) -> wgpu::Sampler {
    device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some(label),
        address_mode_u: wgpu::AddressMode::Repeat,
        address_mode_v: wgpu::AddressMode::Repeat,
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        mipmap_filter: wgpu::MipmapFilterMode::Linear,
        ..Default::default()
    })
}

/// What a renderer's pipeline is made of.
pub(crate) struct PipelineDesc<'a> {
    pub(crate) label: &'a str,
    /// WGSL with a `vs` entry point and the fragment one.
    pub(crate) wgsl: &'a str,
    /// The fragment entry point's name.
    pub(crate) fragment: &'a str,
    pub(crate) bind_groups: &'a [&'a wgpu::BindGroupLayout],
    pub(crate) buffers: &'a [Option<wgpu::VertexBufferLayout<'a>>],
    pub(crate) cull_mode: Option<wgpu::Face>,
    /// The colour target's format (depth is `Depth32Float`, nearer wins).
    pub(crate) format: wgpu::TextureFormat,
}

/// The pipeline `desc` describes.
pub(crate) fn depth_tested(device: &wgpu::Device, desc: &PipelineDesc<'_>) -> wgpu::RenderPipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(desc.label),
        source: wgpu::ShaderSource::Wgsl(desc.wgsl.into()),
    });
    let bind_group_layouts: Vec<Option<&wgpu::BindGroupLayout>> =
        desc.bind_groups.iter().map(|l| Some(*l)).collect();
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(desc.label),
        bind_group_layouts: &bind_group_layouts,
        immediate_size: 0,
    });
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(desc.label),
        layout: Some(&layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: desc.buffers,
        },
        primitive: wgpu::PrimitiveState {
            cull_mode: desc.cull_mode,
            ..Default::default()
        },
        depth_stencil: Some(wgpu::DepthStencilState {
            format: wgpu::TextureFormat::Depth32Float,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some(desc.fragment),
            compilation_options: Default::default(),
            targets: &[Some(desc.format.into())],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// GPU feedback's bind group layout (one storage buffer the fragment stage
/// writes) and a stand-in of one slot, bound when the streamer has no
/// feedback buffer (the shader's call is then not taken).
#[derive(Debug)]
pub(crate) struct FeedbackBinding {
    pub(crate) layout: wgpu::BindGroupLayout,
    pub(crate) none: wgpu::BindGroup,
    label: String,
}

impl FeedbackBinding {
    pub(crate) fn new(device: &wgpu::Device, label: &str) -> Self {
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &[storage_entry(0)],
        });
        let unused = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        Self {
            none: bind(device, &layout, &unused, label),
            layout,
            label: label.to_owned(),
        }
    }

    /// The bind group over the streamer's `buffer`.
    pub(crate) fn bind(&self, device: &wgpu::Device, buffer: &wgpu::Buffer) -> wgpu::BindGroup {
        bind(device, &self.layout, buffer, &self.label)
    }
}

fn bind(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    buffer: &wgpu::Buffer,
    label: &str,
) -> wgpu::BindGroup {
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    })
}

/// `wgsl` with its fragment entry point's `MIPSTREAM_EARLY_DEPTH` marker
/// made `@early_depth_test(force)` where `early` and the device has the
/// feature, removed otherwise, and GPU feedback's module appended at
/// `group`, binding 0. Writing a storage buffer turns early depth testing
/// off, so hidden fragments would report; forcing it back on is right only
/// for a shader that never discards (a discarded fragment would still
/// write depth).
pub(crate) fn with_feedback(device: &wgpu::Device, wgsl: &str, early: bool, group: u32) -> String {
    let early = early
        && device
            .features()
            .contains(wgpu::Features::SHADER_EARLY_DEPTH_TEST);
    format!(
        "{}\n{}",
        wgsl.replace(
            "MIPSTREAM_EARLY_DEPTH",
            if early {
                "@early_depth_test(force)"
            } else {
                ""
            }
        ),
        mipstream::gpu::feedback::wgsl(group, 0)
    )
}
