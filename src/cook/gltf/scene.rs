//! The scene file's parts: the materials (textures by slot, glTF factors)
//! and the instances of the default scene's node tree with their world
//! transforms and bounds.

use super::{Kind, PrimitiveGeometry, Textures};
use crate::mesh::container::Vertex;
use crate::mesh::scene_file::{SceneInstance, SceneMaterial};
use glam::{Mat4, Vec3};
use std::collections::BTreeMap;

/// Every glTF material, textures as their cooked files.
pub(super) fn materials(document: &gltf::Document, textures: &Textures<'_>) -> Vec<SceneMaterial> {
    let tex = |t: Option<gltf::Texture<'_>>, kind: Kind| {
        t.and_then(|t| super::texture_image(&t))
            .map(|i| textures.file(i, kind))
    };
    document
        .materials()
        .map(|m| {
            let pbr = m.pbr_metallic_roughness();
            SceneMaterial {
                name: m
                    .name()
                    .map_or_else(|| format!("#{}", m.index().unwrap_or(0)), str::to_owned),
                base_color: tex(pbr.base_color_texture().map(|t| t.texture()), Kind::Srgb),
                base_color_factor: pbr.base_color_factor(),
                normal: tex(m.normal_texture().map(|t| t.texture()), Kind::Normal),
                normal_scale: m.normal_texture().map_or(1.0, |t| t.scale()),
                metallic_roughness: tex(
                    pbr.metallic_roughness_texture().map(|t| t.texture()),
                    Kind::Linear,
                ),
                metallic_factor: pbr.metallic_factor(),
                roughness_factor: pbr.roughness_factor(),
                occlusion: tex(m.occlusion_texture().map(|t| t.texture()), Kind::Linear),
                emissive: tex(m.emissive_texture().map(|t| t.texture()), Kind::Srgb),
                emissive_factor: m.emissive_factor(),
                alpha_mode: format!("{:?}", m.alpha_mode()).to_uppercase(),
                alpha_cutoff: m.alpha_cutoff().unwrap_or(0.5),
                double_sided: m.double_sided(),
            }
        })
        .collect()
}

/// glTF's default material, for primitives without one.
pub(super) fn default_material() -> SceneMaterial {
    SceneMaterial {
        name: "default".into(),
        base_color: None,
        base_color_factor: [1.0; 4],
        normal: None,
        normal_scale: 1.0,
        metallic_roughness: None,
        metallic_factor: 1.0,
        roughness_factor: 1.0,
        occlusion: None,
        emissive: None,
        emissive_factor: [0.0; 3],
        alpha_mode: "OPAQUE".into(),
        alpha_cutoff: 0.5,
        double_sided: false,
    }
}

/// A node's name, `#index` without one.
pub(super) fn node_name(node: &gltf::Node<'_>) -> String {
    node.name()
        .map_or_else(|| format!("#{}", node.index()), str::to_owned)
}

/// Calls `visit` with every node of the default scene (or the first, or
/// every node when there is none), its world transform at rest and the
/// indices of its ancestors, root first, itself last.
pub(super) fn walk<'a>(
    document: &'a gltf::Document,
    warnings: &mut Vec<String>,
    mut visit: impl FnMut(&gltf::Node<'a>, Mat4, &[usize]),
) {
    let roots: Vec<gltf::Node<'_>> = match document
        .default_scene()
        .or_else(|| document.scenes().next())
    {
        Some(s) => s.nodes().collect(),
        None => document.nodes().collect(),
    };
    let mut stack: Vec<(gltf::Node<'_>, Mat4, Vec<usize>)> = roots
        .into_iter()
        .map(|n| (n, Mat4::IDENTITY, Vec::new()))
        .collect();
    while let Some((node, parent, mut chain)) = stack.pop() {
        if chain.len() > 64 {
            warnings.push("node tree deeper than 64 levels (a cycle?): cut".into());
            continue;
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        chain.push(node.index());
        visit(&node, world, &chain);
        for child in node.children() {
            stack.push((child, world, chain.clone()));
        }
    }
}

/// One instance per node showing a primitive in the default scene (or the
/// first, or every node when there is none), with its world transform; and
/// the world bounds of them all (zero when there are none).
pub(super) fn instances(
    document: &gltf::Document,
    primitives: &[(usize, usize, PrimitiveGeometry)],
    warnings: &mut Vec<String>,
) -> (Vec<SceneInstance>, [[f32; 3]; 2]) {
    let mut by_mesh: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, (mesh, _, _)) in primitives.iter().enumerate() {
        by_mesh.entry(*mesh).or_default().push(k);
    }
    let mut instances = Vec::new();
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    walk(document, warnings, |node, world, _| {
        if let Some(mesh) = node.mesh() {
            for &k in by_mesh.get(&mesh.index()).map_or(&[][..], |v| v) {
                let (min, max) = mesh_bounds(&primitives[k].2.vertices);
                for corner in 0..8 {
                    let c = Vec3::new(
                        if corner & 1 == 0 { min.x } else { max.x },
                        if corner & 2 == 0 { min.y } else { max.y },
                        if corner & 4 == 0 { min.z } else { max.z },
                    );
                    let w = world.transform_point3(c);
                    lo = lo.min(w);
                    hi = hi.max(w);
                }
                instances.push(SceneInstance {
                    mesh: k,
                    node: node_name(node),
                    transform: world.to_cols_array(),
                });
            }
        }
    });
    if instances.is_empty() {
        (lo, hi) = (Vec3::ZERO, Vec3::ZERO);
    }
    (instances, [lo.to_array(), hi.to_array()])
}

fn mesh_bounds(vertices: &[Vertex]) -> (Vec3, Vec3) {
    vertices.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), v| {
            let p = Vec3::from(v.position);
            (lo.min(p), hi.max(p))
        },
    )
}
