//! What the GPU actually samples: draws one mip and layer of a texture into an
//! RGBA8 target with `textureLoad` (no filtering) and reads it back, so tests
//! compare uploaded texels with the CPU's decode of the same data.

use image::RgbaImage;
use mipstream::gpu::HeadlessGpu;

const CUBE_DIR: &str = r#"
// Direction through the centre of texel `px` of cube face p.x % 6.
fn cube_dir(px: vec2<f32>) -> vec3<f32> {
    let st = px / f32(p.y) * 2.0 - 1.0;
    let sc = st.x;
    let tc = st.y;
    switch (p.x % 6u) {
        case 0u: { return vec3<f32>(1.0, -tc, -sc); }
        case 1u: { return vec3<f32>(-1.0, -tc, sc); }
        case 2u: { return vec3<f32>(sc, 1.0, tc); }
        case 3u: { return vec3<f32>(sc, -1.0, -tc); }
        case 4u: { return vec3<f32>(sc, -tc, 1.0); }
        default: { return vec3<f32>(-sc, -tc, -1.0); }
    }
}

"#;

/// `textureLoad` for 2D and 2D-array views; nearest sampling along cube
/// directions through texel centres for cube views (WGSL cannot load from cubes).
fn shader(dim: wgpu::TextureViewDimension) -> String {
    let (decl, fetch) = match dim {
        wgpu::TextureViewDimension::D2 => (
            "var t: texture_2d<f32>;",
            "return textureLoad(t, vec2<i32>(pos.xy), 0);",
        ),
        wgpu::TextureViewDimension::D2Array => (
            "var t: texture_2d_array<f32>;",
            "return textureLoad(t, vec2<i32>(pos.xy), i32(p.x), 0);",
        ),
        wgpu::TextureViewDimension::Cube | wgpu::TextureViewDimension::CubeArray => (
            if dim == wgpu::TextureViewDimension::Cube {
                "var t: texture_cube<f32>;"
            } else {
                "var t: texture_cube_array<f32>;"
            },
            if dim == wgpu::TextureViewDimension::Cube {
                "return textureSampleLevel(t, s, cube_dir(pos.xy), 0.0);"
            } else {
                "return textureSampleLevel(t, s, cube_dir(pos.xy), i32(p.x / 6u), 0.0);"
            },
        ),
        other => panic!("no sampler for {other:?}"),
    };
    let cube = matches!(
        dim,
        wgpu::TextureViewDimension::Cube | wgpu::TextureViewDimension::CubeArray
    );
    let sampler_decl = if cube {
        "@group(0) @binding(2) var s: sampler;"
    } else {
        ""
    };
    let cube_fn = if cube { CUBE_DIR } else { "" };
    format!(
        r#"
@group(0) @binding(0) {decl}
@group(0) @binding(1) var<uniform> p: vec4<u32>;
{sampler_decl}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {{
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}}

{cube_fn}
@fragment
fn fs(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {{
    {fetch}
}}
"#
    )
}

/// Renders mip `mip`, image `layer` (for cubes: layer * 6 + face) of a texture
/// viewed as `dim` into an RGBA8 image of the mip's size; sRGB textures render
/// into an sRGB target so the stored bytes come back unchanged.
pub fn sample(
    gpu: &HeadlessGpu,
    texture: &wgpu::Texture,
    dim: wgpu::TextureViewDimension,
    mip: u32,
    layer: u32,
) -> RgbaImage {
    let device = &gpu.device;
    let w = (texture.width() >> mip).max(1);
    let h = (texture.height() >> mip).max(1);
    let target_format = if texture.format().is_srgb() {
        wgpu::TextureFormat::Rgba8UnormSrgb
    } else {
        wgpu::TextureFormat::Rgba8Unorm
    };
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("sample"),
        source: wgpu::ShaderSource::Wgsl(shader(dim).into()),
    });
    let cube = matches!(
        dim,
        wgpu::TextureViewDimension::Cube | wgpu::TextureViewDimension::CubeArray
    );
    let mut layout_entries = vec![
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Texture {
                sample_type: wgpu::TextureSampleType::Float { filterable: true },
                view_dimension: dim,
                multisampled: false,
            },
            count: None,
        },
        wgpu::BindGroupLayoutEntry {
            binding: 1,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        },
    ];
    if cube {
        layout_entries.push(wgpu::BindGroupLayoutEntry {
            binding: 2,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
            count: None,
        });
    }
    let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("sample"),
        entries: &layout_entries,
    });
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("sample"),
        bind_group_layouts: &[Some(&bgl)],
        immediate_size: 0,
    });
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("sample"),
        layout: Some(&layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: Default::default(),
        depth_stencil: None,
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(target_format.into())],
        }),
        multiview_mask: None,
        cache: None,
    });
    let view = texture.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(dim),
        base_mip_level: mip,
        mip_level_count: Some(1),
        ..Default::default()
    });
    let uniform = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("layer"),
        size: 16,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    gpu.queue
        .write_buffer(&uniform, 0, bytemuck_u32x4([layer, w, 0, 0]).as_slice());
    let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("nearest"),
        ..Default::default()
    });
    let mut entries = vec![
        wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::TextureView(&view),
        },
        wgpu::BindGroupEntry {
            binding: 1,
            resource: uniform.as_entire_binding(),
        },
    ];
    if cube {
        entries.push(wgpu::BindGroupEntry {
            binding: 2,
            resource: wgpu::BindingResource::Sampler(&sampler),
        });
    }
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sample"),
        layout: &bgl,
        entries: &entries,
    });
    let target =
        mipstream::gpu::readback::render_target(device, "sample target", (w, h), target_format);
    let target_view = target.create_view(&Default::default());
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("sample"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &target_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..3, 0..1);
    }
    gpu.queue.submit([enc.finish()]);
    let pixels = mipstream::gpu::read_rgba8(device, &gpu.queue, &target, 0, 0).expect("readback");
    RgbaImage::from_raw(w, h, pixels).unwrap()
}

fn bytemuck_u32x4(v: [u32; 4]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
