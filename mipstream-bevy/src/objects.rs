//! Entities drawn with streamed images become mipstream objects.

use crate::scene::StreamedMesh;
use crate::{convert, material_images, Mipstream};
use bevy::camera::primitives::Aabb;
use bevy::mesh::{Indices, VertexAttributeValues};
use bevy::prelude::*;
use mipstream::{MeshId, ObjectDesc, ObjectId, TextureId};
use std::collections::HashMap;

/// What the plugin registered for each entity, and what it derived from
/// meshes and materials.
#[derive(Resource, Debug, Default)]
pub(crate) struct Tracked {
    objects: HashMap<Entity, (ObjectId, Bound)>,
    /// Entities showing each streamed mesh (the mesh goes when none does).
    mesh_users: HashMap<Entity, MeshId>,
    /// How many entities show each streamed mesh.
    mesh_counts: HashMap<MeshId, usize>,
    /// Mesh-space world units per UV unit (None: no triangles with UVs).
    uv_density: HashMap<AssetId<Mesh>, Option<f32>>,
    /// The streamed textures each material samples.
    material_textures: HashMap<AssetId<StandardMaterial>, Vec<TextureId>>,
    /// [`Mipstream::images_changed_since`] when objects were last bound.
    images_seen: u64,
}

/// What an object was registered with: its streamed textures and mesh.
type Bound = (Vec<TextureId>, Option<MeshId>);

type Drawn<'a> = (
    Entity,
    &'a Mesh3d,
    &'a MeshMaterial3d<StandardMaterial>,
    &'a GlobalTransform,
    &'a Aabb,
    Option<&'a StreamedMesh>,
);

type Moved = Or<(
    Changed<GlobalTransform>,
    Changed<Aabb>,
    Changed<Mesh3d>,
    Changed<MeshMaterial3d<StandardMaterial>>,
    Changed<StreamedMesh>,
)>;

/// Keeps mipstream's objects in step with the entities: new ones register,
/// moved ones move, ones whose material or mesh changed re-bind, despawned
/// ones are removed. Everything is re-bound when a streamed image arrives or
/// goes, or a material or mesh asset changes what it streams.
#[allow(clippy::too_many_arguments)] // a system's parameters
pub(crate) fn sync_objects(
    mut ms: ResMut<Mipstream>,
    mut tracked: ResMut<Tracked>,
    meshes: Res<Assets<Mesh>>,
    materials: Res<Assets<StandardMaterial>>,
    all: Query<Drawn>,
    moved: Query<Drawn, Moved>,
    mut gone_mesh: RemovedComponents<Mesh3d>,
    mut gone_material: RemovedComponents<MeshMaterial3d<StandardMaterial>>,
    mut gone_streamed: RemovedComponents<StreamedMesh>,
    new_streamed: Query<(Entity, &StreamedMesh), Changed<StreamedMesh>>,
    mut material_events: MessageReader<AssetEvent<StandardMaterial>>,
    mut mesh_events: MessageReader<AssetEvent<Mesh>>,
) {
    let t0 = std::time::Instant::now();
    let ms = &mut *ms;
    let t = &mut *tracked;
    let gone_streamed: Vec<Entity> = gone_streamed.read().collect();
    for entity in gone_mesh
        .read()
        .chain(gone_material.read())
        .chain(gone_streamed.iter().copied())
    {
        if let Some((id, _)) = t.objects.remove(&entity) {
            let _ = ms.streamer.remove_object(id);
        }
    }
    // a mesh whose last entity stops showing it goes, with its LODs
    let mut drop_user = |t: &mut Tracked, mesh: MeshId| {
        let n = t.mesh_counts.entry(mesh).or_default();
        *n = n.saturating_sub(1);
        if *n == 0 {
            t.mesh_counts.remove(&mesh);
            let _ = ms.streamer.remove_mesh(mesh);
        }
    };
    for (entity, streamed) in &new_streamed {
        match t.mesh_users.insert(entity, streamed.mesh) {
            Some(old) if old == streamed.mesh => continue,
            Some(old) => drop_user(t, old),
            None => {}
        }
        *t.mesh_counts.entry(streamed.mesh).or_default() += 1;
    }
    for entity in gone_streamed {
        if let Some(mesh) = t.mesh_users.remove(&entity) {
            drop_user(t, mesh);
        }
    }
    let mut full = ms.images_changed_since(&mut t.images_seen);
    if full {
        t.material_textures.clear();
    }
    for event in material_events.read() {
        if let AssetEvent::Modified { id } | AssetEvent::Removed { id } = *event {
            let now = materials.get(id).map(|m| streamed(ms, m));
            if now.as_ref() != t.material_textures.get(&id) {
                full = true;
                t.material_textures.remove(&id);
            }
        }
    }
    for event in mesh_events.read() {
        // only meshes measured (or looked for) before: streamed LODs
        // arrive as new meshes every swap and change nothing here
        if let AssetEvent::Added { id } | AssetEvent::Modified { id } = *event {
            if t.uv_density.remove(&id).is_some() {
                full = true;
            }
        }
    }
    let mut sync = |(entity, mesh, material, transform, aabb, streamed_mesh): (
        Entity,
        &Mesh3d,
        &MeshMaterial3d<StandardMaterial>,
        &GlobalTransform,
        &Aabb,
        Option<&StreamedMesh>,
    )| {
        let textures = t
            .material_textures
            .entry(material.id())
            .or_insert_with(|| {
                materials
                    .get(material.id())
                    .map_or(Vec::new(), |m| streamed(ms, m))
            })
            .clone();
        let bound: Bound = (textures, streamed_mesh.map(|s| s.mesh));
        if bound.0.is_empty() && bound.1.is_none() {
            if let Some((id, _)) = t.objects.remove(&entity) {
                let _ = ms.streamer.remove_object(id);
            }
            return;
        }
        let (min, max) = world_bounds(transform, aabb);
        if let Some((id, old)) = t.objects.get(&entity) {
            if *old == bound {
                let (c, h) = ((min + max) * 0.5, (max - min) * 0.5);
                let _ = ms
                    .streamer
                    .move_object(*id, convert::vec3(c), convert::vec3(h));
                return;
            }
        }
        let density = match streamed_mesh {
            // measured on the LOD mipstream handed over first; the `Mesh`
            // assets of streamed LODs live in the render world only
            Some(s) => s.units_per_uv,
            None => *t
                .uv_density
                .entry(mesh.id())
                .or_insert_with(|| meshes.get(mesh.id()).and_then(uv_density)),
        };
        // without UVs to measure, assume one UV unit spans the object's box
        let local = density.unwrap_or_else(|| 2.0 * aabb.half_extents.max_element());
        // a UV transform that tiles the texture n times makes a UV unit 1/n as long
        let tiling = materials.get(material.id()).map_or(1.0, |m| {
            m.uv_transform.matrix2.determinant().abs().sqrt().max(1e-6)
        });
        let world_per_uv = (local * scale_of(transform) / tiling).max(1e-6);
        let mut desc = ObjectDesc::aabb(convert::vec3(min), convert::vec3(max));
        for &texture in &bound.0 {
            desc = desc.with_texture(texture, world_per_uv);
        }
        if let Some(mesh) = bound.1 {
            desc = desc.with_mesh(mesh, scale_of(transform));
        }
        match t.objects.get(&entity) {
            Some((id, _)) => {
                let id = *id;
                if ms.streamer.set_object(id, desc).is_ok() {
                    t.objects.insert(entity, (id, bound));
                }
            }
            None => match ms.streamer.register_object(desc) {
                Ok(id) => {
                    t.objects.insert(entity, (id, bound));
                }
                Err(e) => warn!("mipstream: entity {entity}: {e}"),
            },
        }
    };
    if full {
        all.iter().for_each(&mut sync);
    } else {
        moved.iter().for_each(&mut sync);
    }
    ms.frame_time += t0.elapsed();
}

/// The streamed textures a material samples, in slot order, once each.
fn streamed(ms: &Mipstream, m: &StandardMaterial) -> Vec<TextureId> {
    let mut out: Vec<TextureId> = Vec::new();
    for image in material_images(m) {
        if let Some(&t) = ms.images.get(&image) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    // StandardMaterial samples every slot through one UV transform
    out
}

/// The world-space box around `aabb` under `transform`.
fn world_bounds(transform: &GlobalTransform, aabb: &Aabb) -> (Vec3, Vec3) {
    let m = transform.affine();
    let c = m.transform_point3(Vec3::from(aabb.center));
    let h = Vec3::from(aabb.half_extents);
    let e =
        m.matrix3.x_axis.abs() * h.x + m.matrix3.y_axis.abs() * h.y + m.matrix3.z_axis.abs() * h.z;
    (c - Vec3::from(e), c + Vec3::from(e))
}

/// How much the transform scales lengths on surfaces (the cube root of its
/// volume scale: exact for uniform scales).
fn scale_of(transform: &GlobalTransform) -> f32 {
    transform.affine().matrix3.determinant().abs().cbrt()
}

/// Mesh-space world units per UV unit: the square root of the mesh's
/// surface area over its UV area, over every triangle with UVs.
pub(crate) fn uv_density(mesh: &Mesh) -> Option<f32> {
    let Some(VertexAttributeValues::Float32x3(p)) = mesh.attribute(Mesh::ATTRIBUTE_POSITION) else {
        return None;
    };
    let Some(VertexAttributeValues::Float32x2(uv)) = mesh.attribute(Mesh::ATTRIBUTE_UV_0) else {
        return None;
    };
    let indices: Vec<u32> = match mesh.indices() {
        Some(Indices::U16(i)) => i.iter().map(|&i| i as u32).collect(),
        Some(Indices::U32(i)) => i.clone(),
        None => (0..p.len() as u32).collect(),
    };
    let len = p.len().min(uv.len());
    mipstream::mesh::units_per_uv(|i| p[i], |i| uv[i], len, &indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cuboid_spans_its_faces_in_uv() {
        // Bevy's cuboid maps each face onto the whole UV square: a 2 m cube
        // has 2 m per UV unit on every face
        let mesh = Mesh::from(Cuboid::new(2.0, 2.0, 2.0));
        let d = uv_density(&mesh).unwrap();
        assert!((d - 2.0).abs() < 1e-4, "{d}");
        let plane = Mesh::from(Plane3d::default().mesh().size(10.0, 10.0));
        assert!((uv_density(&plane).unwrap() - 10.0).abs() < 1e-3);
    }

    #[test]
    fn bounds_follow_rotation_and_scale() {
        let aabb = Aabb::from_min_max(Vec3::splat(-1.0), Vec3::splat(1.0));
        let t = GlobalTransform::from(
            Transform::from_xyz(5.0, 0.0, 0.0)
                .with_rotation(Quat::from_rotation_y(std::f32::consts::FRAC_PI_4))
                .with_scale(Vec3::splat(2.0)),
        );
        let (min, max) = world_bounds(&t, &aabb);
        let r = 2.0 * std::f32::consts::SQRT_2;
        assert!((max.x - (5.0 + r)).abs() < 1e-4 && (min.x - (5.0 - r)).abs() < 1e-4);
        assert!((max.y - 2.0).abs() < 1e-4);
        assert!((scale_of(&t) - 2.0).abs() < 1e-4);
    }
}
