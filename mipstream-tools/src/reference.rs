//! The uncooked reference for render tests: a glTF scene drawn straight from
//! its source (full geometry from the `gltf` crate, PNG/JPEG textures decoded
//! and mipmapped on the CPU, every node's transform) through the same
//! [`MeshRenderer`] as the streamed scene, so a comparison measures what
//! cooking and streaming cost the picture and nothing else.

use crate::render_mesh::{MaterialBinding, MaterialFactors, MeshDraw, MeshRenderer};
use glam::Mat4;
use mipstream::cook::gltf::{image_bytes, parse, read_primitives, GltfCookError};
use mipstream::cook::mips::{self, MipSpace};
use mipstream::transcode::ChannelLayout;
use std::path::Path;

/// A glTF scene uploaded as it is, for reference pictures.
#[derive(Debug)]
pub struct ReferenceScene {
    meshes: Vec<(wgpu::Buffer, wgpu::Buffer, u32, usize)>,
    /// (mesh index into `meshes`, world transform)
    instances: Vec<(usize, Mat4)>,
    materials: Vec<MaterialBinding>,
    _textures: Vec<wgpu::Texture>,
}

fn upload(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    image: &image::RgbaImage,
    space: MipSpace,
) -> wgpu::Texture {
    use wgpu::util::DeviceExt;
    let levels = mips::generate(image, space);
    let data: Vec<u8> = levels
        .iter()
        .flat_map(|l| l.as_raw().iter().copied())
        .collect();
    device.create_texture_with_data(
        queue,
        &wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: image.width(),
                height: image.height(),
                depth_or_array_layers: 1,
            },
            mip_level_count: levels.len() as u32,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: if space == MipSpace::Srgb {
                wgpu::TextureFormat::Rgba8UnormSrgb
            } else {
                wgpu::TextureFormat::Rgba8Unorm
            },
            usage: wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        },
        wgpu::util::TextureDataOrder::LayerMajor,
        &data,
    )
}

impl ReferenceScene {
    /// Loads `path` (glTF or GLB with PNG/JPEG images) onto the GPU.
    pub fn load(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        renderer: &MeshRenderer,
        path: &Path,
    ) -> Result<Self, GltfCookError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| GltfCookError::Parse {
            path: name.clone(),
            reason: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let (document, buffers) = parse(&name, &bytes, Some(base))?;
        let mut warnings = Vec::new();
        let prims = read_primitives(&name, &document, &buffers, &mut warnings)?;
        let mut textures = Vec::new();
        let mut decode = |tex: Option<gltf::Texture<'_>>, space| -> Result<_, GltfCookError> {
            let Some(tex) = tex else { return Ok(None) };
            let Some(image) = tex.source() else {
                return Ok(None);
            };
            let encoded = image_bytes(&name, &image, base, &buffers)?;
            let rgba = image::load_from_memory(&encoded)
                .map_err(|e| GltfCookError::Image {
                    path: name.clone(),
                    image: format!("#{}", image.index()),
                    reason: e.to_string(),
                })?
                .to_rgba8();
            let t = upload(
                device,
                queue,
                &format!("reference #{}", image.index()),
                &rgba,
                space,
            );
            let view = t.create_view(&Default::default());
            textures.push(t);
            Ok(Some(view))
        };
        let mut materials = Vec::new();
        for m in document.materials() {
            let pbr = m.pbr_metallic_roughness();
            let base_view = decode(
                pbr.base_color_texture().map(|t| t.texture()),
                MipSpace::Srgb,
            )?;
            let normal_view = decode(m.normal_texture().map(|t| t.texture()), MipSpace::Normal)?;
            let factors = MaterialFactors {
                base_color: pbr.base_color_factor(),
                normal_scale: m.normal_texture().map_or(1.0, |t| t.scale()),
                alpha_cutoff: if m.alpha_mode() == gltf::material::AlphaMode::Mask {
                    m.alpha_cutoff().unwrap_or(0.5)
                } else {
                    0.0
                },
            };
            materials.push(renderer.material(
                device,
                base_view.as_ref(),
                normal_view.as_ref().map(|v| (v, ChannelLayout::AsAuthored)),
                &factors,
            ));
        }
        let default_material = materials.len();
        materials.push(renderer.material(device, None, None, &MaterialFactors::default()));
        use wgpu::util::DeviceExt;
        // glTF mesh index -> our mesh entries
        let mut by_gltf_mesh: Vec<Vec<usize>> = vec![Vec::new(); document.meshes().len()];
        let mut meshes = Vec::new();
        for (mesh, _prim, g) in &prims {
            let vertex = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(&g.name),
                contents: bytemuck::cast_slice(&g.vertices),
                usage: wgpu::BufferUsages::VERTEX,
            });
            let index = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(&g.name),
                contents: bytemuck::cast_slice(&g.indices),
                usage: wgpu::BufferUsages::INDEX,
            });
            by_gltf_mesh[*mesh].push(meshes.len());
            meshes.push((
                vertex,
                index,
                g.indices.len() as u32,
                g.material.unwrap_or(default_material),
            ));
        }
        let roots: Vec<gltf::Node<'_>> = match document
            .default_scene()
            .or_else(|| document.scenes().next())
        {
            Some(s) => s.nodes().collect(),
            None => document.nodes().collect(),
        };
        let mut instances = Vec::new();
        let mut stack: Vec<(gltf::Node<'_>, Mat4, usize)> =
            roots.into_iter().map(|n| (n, Mat4::IDENTITY, 0)).collect();
        while let Some((node, parent, depth)) = stack.pop() {
            if depth > 64 {
                continue;
            }
            let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
            if let Some(mesh) = node.mesh() {
                for &m in &by_gltf_mesh[mesh.index()] {
                    instances.push((m, world));
                }
            }
            for child in node.children() {
                stack.push((child, world, depth + 1));
            }
        }
        Ok(Self {
            meshes,
            instances,
            materials,
            _textures: textures,
        })
    }

    /// Every instance at full detail.
    pub fn draws(&self) -> Vec<MeshDraw<'_>> {
        self.instances
            .iter()
            .map(|&(m, model)| {
                let (vertex, index, count, material) = &self.meshes[m];
                MeshDraw {
                    vertex,
                    index,
                    index_count: *count,
                    model,
                    material: &self.materials[*material],
                    fade: 0.0,
                }
            })
            .collect()
    }
}
