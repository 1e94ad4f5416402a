//! The render world: streamed textures replace their images' `GpuImage`s
//! after Bevy prepares images and before it prepares materials.

use crate::{Mipstream, StreamedMesh};
use bevy::pbr::MeshMaterial3d;
use bevy::prelude::*;
use bevy::render::erased_render_asset::{prepare_erased_assets, ExtractedAssets};
use bevy::render::mesh::allocator::MeshAllocator;
use bevy::render::mesh::RenderMesh;
use bevy::render::render_asset::{prepare_assets, RenderAssets};
use bevy::render::render_resource::{Extent3d, Texture, TextureFormat, TextureUsages, TextureView};
use bevy::render::texture::GpuImage;
use bevy::render::{Extract, ExtractSchedule, Render, RenderSystems};
use mipstream::wgpu::wgt::TextureDescriptor;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// One streamed texture as Bevy's render types (converted once per change,
/// so Bevy's ids for it stay stable while it does).
#[derive(Clone, Debug)]
struct Streamed {
    texture: Texture,
    view: TextureView,
    descriptor: TextureDescriptor<Option<&'static str>, &'static [TextureFormat]>,
}

/// Every streamed image's current texture, in the render world.
#[derive(Resource, Debug, Default)]
struct RenderStreamed {
    images: HashMap<AssetId<Image>, Streamed>,
    /// Images whose texture changed in this frame's update.
    changed: Vec<AssetId<Image>>,
    /// Materials that use them (all must be prepared again this frame).
    materials: Vec<AssetId<StandardMaterial>>,
    /// Streamed-mesh entities: the mesh they draw, whether it is
    /// mipstream's current LOD, and that LOD's vertex and index counts.
    meshes: Vec<(AssetId<Mesh>, bool, u32, u32)>,
}

/// What the render world checked, every frame: after the swap, each
/// streamed image's `GpuImage` is mipstream's current texture, and every
/// material that uses a changed image is being prepared again this frame
/// (so no bind group Bevy draws with still holds the texture mipstream
/// replaced). Shared between both worlds: the main world's copy is a
/// resource too, for tests and diagnostics.
#[derive(Resource, Debug, Clone, Default)]
pub struct BindingAudit(Arc<Mutex<AuditCounts>>);

/// The counts behind [`BindingAudit`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditCounts {
    /// Render-world frames checked.
    pub frames: u64,
    /// Texture swaps applied to `GpuImage`s.
    pub swaps: u64,
    /// Streamed images whose `GpuImage` was not mipstream's texture once every
    /// asset was prepared (something prepared the placeholder again after the swap).
    pub not_swapped: u64,
    /// Materials that use a changed image and were not re-extracted this frame.
    pub stale_materials: u64,
    /// Time the render world's swap took, all frames together.
    pub render_time: std::time::Duration,
    /// Entity-frames of [`crate::StreamedMesh`] entities checked once Bevy
    /// had allocated the frame's meshes.
    pub mesh_checks: u64,
    /// Of those: the entity's `Mesh3d` was not the LOD mipstream draws it with.
    pub meshes_not_current: u64,
    /// Of those: Bevy's mesh allocator held no vertices or indices for its
    /// mesh (it would not be drawn).
    pub meshes_not_drawable: u64,
    /// Of those: what Bevy holds differs from what mipstream counts (the
    /// vertex stride is not 48 bytes, or the vertex or index count differs).
    pub mesh_size_mismatches: u64,
}

impl BindingAudit {
    /// The counts so far.
    pub fn counts(&self) -> AuditCounts {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, f: impl FnOnce(&mut AuditCounts)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

pub(crate) fn build(render_app: &mut SubApp, audit: BindingAudit) {
    render_app
        .insert_resource(audit)
        .init_resource::<RenderStreamed>()
        .add_systems(ExtractSchedule, extract)
        .add_systems(
            Render,
            (
                (swap_images, audit_materials)
                    .chain()
                    .in_set(RenderSystems::PrepareAssets)
                    .after(prepare_assets::<GpuImage>)
                    .before(prepare_erased_assets::<MeshMaterial3d<StandardMaterial>>),
                (audit_images, audit_meshes).in_set(RenderSystems::PrepareBindGroups),
            ),
        );
}

fn extract(
    ms: Extract<Res<Mipstream>>,
    drawn: Extract<Query<(&StreamedMesh, &Mesh3d)>>,
    mut out: ResMut<RenderStreamed>,
) {
    out.meshes.clear();
    for (streamed, mesh3d) in &drawn {
        let Ok(b) = ms.streamer.mesh_buffers(streamed.mesh) else {
            continue;
        };
        // mipstream counts 48 bytes a vertex and 4 an index
        let vertices = ((b.bytes - 4 * b.index_count as u64) / 48) as u32;
        let current = ms.drawn_mesh(streamed.mesh).map(|h| h.id()) == Some(mesh3d.id());
        out.meshes
            .push((mesh3d.id(), current, vertices, b.index_count));
    }
    for id in &ms.removed {
        out.images.remove(id);
    }
    out.changed.clear();
    for &image in &ms.changed {
        let Some(&texture) = ms.images.get(&image) else {
            continue;
        };
        let Ok(r) = ms.streamer.resident(texture) else {
            continue;
        };
        let size = r.texture.size();
        let descriptor = TextureDescriptor {
            label: None,
            size: Extent3d {
                width: size.width,
                height: size.height,
                depth_or_array_layers: size.depth_or_array_layers,
            },
            mip_level_count: r.texture.mip_level_count(),
            sample_count: 1,
            dimension: r.texture.dimension(),
            format: r.format,
            usage: TextureUsages::TEXTURE_BINDING | TextureUsages::COPY_DST,
            view_formats: &[] as &'static [TextureFormat],
        };
        out.images.insert(
            image,
            Streamed {
                texture: Texture::from(r.texture.clone()),
                view: TextureView::from(r.view.clone()),
                descriptor,
            },
        );
        out.changed.push(image);
    }
    out.materials.clone_from(&ms.changed_materials);
}

/// Puts every streamed texture into its image's `GpuImage` (keeping Bevy's
/// sampler), where it is not there already.
fn swap_images(
    streamed: Res<RenderStreamed>,
    mut images: ResMut<RenderAssets<GpuImage>>,
    audit: Res<BindingAudit>,
) {
    let t0 = std::time::Instant::now();
    let mut swaps = 0;
    for (&id, s) in &streamed.images {
        let Some(gpu) = images.get_mut(id) else {
            continue;
        };
        if gpu.texture_view.id() != s.view.id() {
            gpu.texture = s.texture.clone();
            gpu.texture_view = s.view.clone();
            gpu.texture_descriptor = s.descriptor.clone();
            gpu.texture_view_descriptor = None;
            gpu.had_data = true;
            swaps += 1;
        }
    }
    audit.add(|c| {
        c.swaps += swaps;
        c.render_time += t0.elapsed();
    });
}

/// Before the materials' prepare: every material that uses a changed image
/// was extracted again, so it is prepared (its bind group rebuilt) now.
fn audit_materials(
    streamed: Res<RenderStreamed>,
    materials: Res<ExtractedAssets<MeshMaterial3d<StandardMaterial>>>,
    audit: Res<BindingAudit>,
) {
    let again: HashSet<AssetId<StandardMaterial>> =
        materials.extracted.iter().map(|(id, _)| *id).collect();
    let stale = streamed
        .materials
        .iter()
        .filter(|m| !again.contains(m))
        .count() as u64;
    audit.add(|c| {
        c.frames += 1;
        c.stale_materials += stale;
    });
}

/// After every prepare, before bind groups are used: each streamed image's
/// `GpuImage` is still mipstream's current texture (nothing prepared the
/// placeholder again after the swap).
fn audit_images(
    streamed: Res<RenderStreamed>,
    images: Res<RenderAssets<GpuImage>>,
    audit: Res<BindingAudit>,
) {
    let not_swapped = streamed
        .images
        .iter()
        .filter(|(id, s)| {
            images
                .get(**id)
                .is_some_and(|g| g.texture_view.id() != s.view.id())
        })
        .count() as u64;
    audit.add(|c| c.not_swapped += not_swapped);
}

/// After Bevy allocated this frame's meshes: every streamed-mesh entity
/// draws mipstream's current LOD, Bevy's allocator holds it, and holds
/// exactly what mipstream counts for it.
fn audit_meshes(
    streamed: Res<RenderStreamed>,
    allocator: Res<MeshAllocator>,
    render_meshes: Res<RenderAssets<RenderMesh>>,
    audit: Res<BindingAudit>,
) {
    let (mut not_current, mut not_drawable, mut mismatched) = (0, 0, 0);
    for &(id, current, vertices, indices) in &streamed.meshes {
        not_current += u64::from(!current);
        let (Some(v), Some(i), Some(m)) = (
            allocator.mesh_vertex_slice(&id),
            allocator.mesh_index_slice(&id),
            render_meshes.get(id),
        ) else {
            not_drawable += 1;
            continue;
        };
        let stride = m.layout.0.layout().array_stride;
        mismatched += u64::from(
            stride != 48 || v.range.len() != vertices as usize || i.range.len() != indices as usize,
        );
    }
    audit.add(|c| {
        c.mesh_checks += streamed.meshes.len() as u64;
        c.meshes_not_current += not_current;
        c.meshes_not_drawable += not_drawable;
        c.mesh_size_mismatches += mismatched;
    });
}
