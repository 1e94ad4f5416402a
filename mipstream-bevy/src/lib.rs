//! Textures of Bevy `StandardMaterial` scenes streamed mip by mip, and the
//! meshes of cooked scenes LOD by LOD, under one GPU memory budget by
//! [mipstream](https://docs.rs/mipstream).
//!
//! ```no_run
//! use bevy::prelude::*;
//! use mipstream_bevy::{MipstreamPlugin, SpawnStreamedScene, StreamingBudget};
//!
//! App::new()
//!     .add_plugins(DefaultPlugins)
//!     .add_plugins(MipstreamPlugin { budget: 64 << 20, ..default() })
//!     .add_systems(Startup, |mut commands: Commands, assets: Res<AssetServer>| {
//!         // any `.ktx2` (Basis ETC1S / UASTC or a GPU format): a `Handle<Image>`
//!         let albedo: Handle<Image> = assets.load("bricks.ktx2");
//!         // ... use it in a StandardMaterial; later: commands.insert_resource(StreamingBudget(32 << 20))
//!         // a scene cooked by `mipstream cook-gltf`: textures and mesh LODs stream
//!         commands.queue(SpawnStreamedScene::new("helmet/scene.json"));
//!     })
//!     .run();
//! ```
//!
//! How it fits Bevy:
//! - **One streamer on Bevy's device.** [`MipstreamPlugin`] creates a
//!   [`mipstream::Streamer`] on Bevy's own `wgpu::Device` and `Queue` (the
//!   `RenderDevice` Bevy puts in the main world) and keeps it in the
//!   [`Mipstream`] resource. Each frame, after transform propagation, it
//!   updates it from every active 3D camera (its viewport, projection and
//!   the velocity its transform change implies).
//! - **Streamed images are ordinary `Handle<Image>`s.** `asset_server.load("x.ktx2")`
//!   goes through [`StreamedImageLoader`] (settings: [`StreamedImageSettings`],
//!   e.g. the normal-map class). The loader reads the file and transcodes its
//!   small always-resident tail on Bevy's asset task pool, and returns a
//!   1x1 placeholder `Image`; from the frame the texture registers, the
//!   render world's `GpuImage` of that handle is mipstream's texture, so any
//!   `StandardMaterial` slot can use the handle. A loader, not a component,
//!   because that is how Bevy hands out images (`Handle<Image>` in materials,
//!   `load_builder().with_settings(..)` for per-file options) and it keeps the transcode
//!   off the main thread as Bevy's loaders do.
//! - **Same-frame swaps.** When a texture's resident levels change, the
//!   render world's `GpuImage` is replaced after Bevy prepares images and
//!   before it prepares materials, and every `StandardMaterial` that uses
//!   the image is marked changed, so its bind group is rebuilt in that same
//!   frame (Bevy otherwise keeps drawing the old bind group: bevy#15595).
//! - **No reuse while bound.** Bevy records frame N while the main world runs
//!   frame N+1; a texture mipstream frees may still be bound there, so the
//!   plugin sets [`mipstream::StreamerOptions::frames_in_flight`] to 3:
//!   a freed texture is refilled for another only after the frames that
//!   could bind it are recorded, and counts in the budget as retiring
//!   until then and until the GPU is done with it. Freed textures are
//!   dropped, never destroyed, so wgpu keeps them alive as long as a bind
//!   group holds them.
//! - **Objects.** Every entity with `Mesh3d`, `MeshMaterial3d<StandardMaterial>`,
//!   `GlobalTransform` and `Aabb` whose material uses a streamed image is a
//!   mipstream object: its world bounds, the UV density of its mesh (world
//!   units per UV unit, from the triangles) and the streamed textures of its
//!   material; kept in sync as it moves or changes material, freed when it
//!   despawns.
//! - **Normal maps** register with [`mipstream::transcode::NormalLayout::RedGreen`]:
//!   BC5 / EAC RG11 where the device has them, else RGBA8 holding (X, Y, Z),
//!   which is what `StandardMaterial` reads on every device.
//! - **GPU feedback** ([`MipstreamPlugin::feedback`], off by default):
//!   each entity whose material samples a streamed image gets a child
//!   drawing its [`FeedbackMaterial`] (a second draw in the transparent
//!   phase that writes nothing and passes only where the frame kept its
//!   depth, early test forced), so what Bevy's frames really sample, and
//!   only what they show, reaches the plan a frame or two later; the
//!   readback is recorded after Bevy's cameras without waiting.
//! - **Diagnostics**: [`MipstreamDiagnostics`] paths in Bevy's
//!   `DiagnosticsStore` (held and budget MiB, uploads, textures below what
//!   the view wants) and [`Mipstream::report`] for everything else.
//!
//! - **Cooked scenes with mesh LODs.** [`SpawnStreamedScene`] (or
//!   [`spawn_streamed_scene`]) spawns a `scene.json` written by `mipstream
//!   cook-gltf`: its textures stream as above and its meshes LOD by LOD
//!   under the same budget. mipstream plans, reads and counts the LODs
//!   ([`mipstream::streamer::MeshStorage::Engine`]); each LOD it hands over
//!   becomes a render-world-only `Mesh` (its bytes live once, in Bevy's mesh
//!   allocator), and each entity's `Mesh3d` is set to the LOD to draw in the
//!   frame it changes ([`StreamedMesh`]). The budget counts each LOD's
//!   vertex and index bytes from the frame it is handed over until it is
//!   dropped and Bevy's frames in flight have passed; the slabs Bevy's
//!   allocator packs them into, and their free space, are Bevy's and not
//!   counted (wgpu sees them as Bevy's buffers).
//! - **Checked against wgpu in Bevy's render world.** `tests/plugin.rs`
//!   reads wgpu's texture counter right after the plugin's update and right
//!   after Bevy's render world submits, through cuts to a tenth and a half:
//!   mipstream's textures stay within the budget, and within a cut's new
//!   budget 4 frames after it (with the retiring books off, they do not). A mesh leaves the streamer when
//!   the last entity showing it despawns.

mod diagnostics;
mod feedback;
mod loader;
mod objects;
mod render;
mod scene;
mod views;

pub use diagnostics::MipstreamDiagnostics;
pub use feedback::{FeedbackDraw, FeedbackDrawOf, FeedbackMaterial, FeedbackParams};
pub use loader::{ImageClass, StreamedImageLoader, StreamedImageSettings, StreamedLoadError};
pub use render::{AuditCounts, BindingAudit};
pub use scene::{spawn_streamed_scene, SceneSpawnError, SpawnStreamedScene, StreamedMesh};

use bevy::asset::AssetEventSystems;
use bevy::prelude::*;
use bevy::render::renderer::{RenderDevice, RenderQueue};
use bevy::render::RenderApp;
use bevy::transform::TransformSystems;
use mipstream::streamer::MeshStorage;
use mipstream::{Budget, MeshId, Streamer, StreamerOptions, TextureId};
use std::collections::HashMap;

/// Streams the textures of `StandardMaterial` scenes under a GPU memory budget.
///
/// Add it after `DefaultPlugins` (it needs Bevy's render device).
#[derive(Debug, Clone)]
pub struct MipstreamPlugin {
    /// GPU bytes mipstream may hold (textures, mesh LODs and texture upload
    /// staging). Change it
    /// at run time through the [`StreamingBudget`] resource.
    pub budget: u64,
    /// Upload bytes per frame (mipstream's `upload_bytes_per_frame`).
    pub upload_bytes_per_frame: u64,
    /// Loader threads transcoding levels (mipstream's `workers`).
    pub workers: usize,
    /// Plan from what Bevy's frames really sample (GPU feedback fused with
    /// the CPU's prediction; `PlannerOptions::fuse_feedback`): each entity
    /// whose `StandardMaterial` samples a streamed image gets a child
    /// drawing its feedback ([`FeedbackDraw`]). Off by default, as in
    /// mipstream (see its docs/feedback.md for where fusion gains and
    /// where it does not yet).
    pub feedback: bool,
}

impl Default for MipstreamPlugin {
    fn default() -> Self {
        let o = StreamerOptions::default();
        Self {
            budget: 256 << 20,
            upload_bytes_per_frame: o.upload_bytes_per_frame,
            workers: o.workers,
            feedback: false,
        }
    }
}

/// The budget in bytes; change it and the next frame plans within it.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamingBudget(pub u64);

/// The streamer and what the plugin knows of Bevy's side of it.
#[derive(Resource, Debug)]
pub struct Mipstream {
    streamer: Streamer,
    /// Streamed images: Bevy's id to mipstream's.
    images: HashMap<AssetId<Image>, TextureId>,
    /// The reverse.
    ids: HashMap<TextureId, AssetId<Image>>,
    /// Images whose streamed texture changed in this frame's update.
    changed: Vec<AssetId<Image>>,
    /// Images no longer streamed this frame.
    removed: Vec<AssetId<Image>>,
    /// Counts every image that started or stopped streaming: a system that
    /// binds by image compares it with the count it last saw
    /// ([`Self::images_changed_since`]).
    images_generation: u64,
    /// Materials that use a changed image (marked changed this frame).
    changed_materials: Vec<AssetId<StandardMaterial>>,
    /// Time the plugin's main-world systems took this frame (`update` included).
    frame_time: std::time::Duration,
    /// The views of this frame's update.
    views: Vec<mipstream::View>,
    /// The `Mesh` asset of every mesh LOD mipstream handed over, by serial.
    mesh_lods: HashMap<u64, Handle<Mesh>>,
    /// Mesh units per UV unit of each streamed mesh's first LOD.
    mesh_densities: HashMap<MeshId, Option<f32>>,
    /// LODs handed over so far.
    mesh_uploads: u64,
}

impl Mipstream {
    /// The streamer (for reports, settings, or registering more by hand).
    pub fn streamer(&self) -> &Streamer {
        &self.streamer
    }

    /// The streamer, mutably.
    pub fn streamer_mut(&mut self) -> &mut Streamer {
        &mut self.streamer
    }

    /// mipstream's id of a streamed image, once it has registered.
    pub fn texture_id(&self, image: impl Into<AssetId<Image>>) -> Option<TextureId> {
        self.images.get(&image.into()).copied()
    }

    /// How many images stream.
    pub fn streamed_images(&self) -> usize {
        self.images.len()
    }

    /// Whether an image started or stopped streaming since `seen` was last
    /// brought up to date here (it is now).
    pub(crate) fn images_changed_since(&self, seen: &mut u64) -> bool {
        std::mem::replace(seen, self.images_generation) != self.images_generation
    }

    /// An image no longer streamed (its texture removed from the streamer).
    pub(crate) fn forget_image(&mut self, image: AssetId<Image>) {
        if let Some(texture) = self.images.remove(&image) {
            self.ids.remove(&texture);
            let _ = self.streamer.remove_texture(texture);
            self.removed.push(image);
            self.images_generation += 1;
        }
    }

    /// Records a registered texture as the image's; warns where
    /// `StandardMaterial` would read its channels differently from how they
    /// were stored.
    pub(crate) fn record_image(&mut self, image: AssetId<Image>, texture: TextureId) {
        self.images.insert(image, texture);
        self.images_generation += 1;
        self.ids.insert(texture, image);
        if let Ok(mipstream::transcode::ChannelLayout::RedGreenInRedAlpha) =
            self.streamer.channel_layout(texture)
        {
            warn!(
                "mipstream: {image} (texture {texture}) is a two-channel data file (read as r, r, r, g): \
                 StandardMaterial reads roughness from green and metallic from blue, so \
                 both would read its first channel; cook it with glTF's three channels"
            );
        }
    }

    /// Mesh LODs mipstream handed over to Bevy so far (registration's
    /// coarsest ones included).
    pub fn mesh_uploads(&self) -> u64 {
        self.mesh_uploads
    }

    /// Mesh LODs Bevy holds for mipstream now.
    pub fn held_mesh_lods(&self) -> usize {
        self.mesh_lods.len()
    }

    /// The cameras of the last update, as mipstream saw them.
    pub fn views(&self) -> &[mipstream::View] {
        &self.views
    }

    /// Bytes the last update's cameras would want at full detail (what a
    /// budget must hold for nothing to stay below what the view wants).
    pub fn wanted_bytes(&mut self) -> u64 {
        let views = std::mem::take(&mut self.views);
        let wanted = self.streamer.wanted_bytes(&views);
        self.views = views;
        wanted
    }

    /// The last update's statistics.
    pub fn frame_stats(&self) -> mipstream::streamer::FrameStats {
        self.streamer.frame_stats()
    }

    /// What the plugin's main-world systems cost this frame: registering
    /// loaded textures, keeping objects in step, the streamer's `update`,
    /// marking materials (the render world's swap is in [`AuditCounts::render_time`]).
    pub fn plugin_time(&self) -> std::time::Duration {
        self.frame_time
    }

    /// The residency report (what is held, wanted, and why not more).
    pub fn report(&self) -> mipstream::streamer::ResidencyReport {
        self.streamer.report()
    }
}

/// The plugin's main-world systems, in order, in `PostUpdate` after
/// transform propagation and before asset events are sent (so the
/// materials it marks changed are extracted this frame).
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub enum MipstreamSystems {
    /// Prepared textures register; objects follow their entities.
    Sync,
    /// The streamer plans and uploads for this frame's cameras.
    Update,
}

impl Plugin for MipstreamPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(StreamingBudget(self.budget));
        loader::build(app);
        diagnostics::build(app);
        if self.feedback {
            feedback::build(app);
        }
    }

    fn finish(&self, app: &mut App) {
        let (Some(device), Some(queue)) = (
            app.world().get_resource::<RenderDevice>(),
            app.world().get_resource::<RenderQueue>(),
        ) else {
            panic!(
                "MipstreamPlugin needs Bevy's renderer: add it after DefaultPlugins \
                 (with a GPU adapter: on Linux without one, install mesa-vulkan-drivers)"
            );
        };
        let mut options = StreamerOptions {
            budget: Budget::Bytes(self.budget),
            upload_bytes_per_frame: self.upload_bytes_per_frame,
            workers: self.workers.max(1),
            // Bevy records frame N while frame N+1 updates: see the crate docs
            frames_in_flight: 3,
            // Bevy draws meshes only from its own mesh allocator
            mesh_storage: MeshStorage::Engine,
            ..Default::default()
        };
        options.planner.fuse_feedback = self.feedback;
        let streamer = Streamer::try_with_options(device.wgpu_device(), queue, options)
            .unwrap_or_else(|e| panic!("mipstream settings: {e}"));
        loader::finish(app, streamer.preparer());
        app.insert_resource(Mipstream {
            streamer,
            images: HashMap::new(),
            ids: HashMap::new(),
            changed: Vec::new(),
            removed: Vec::new(),
            images_generation: 0,
            changed_materials: Vec::new(),
            frame_time: Default::default(),
            views: Vec::new(),
            mesh_lods: HashMap::new(),
            mesh_densities: HashMap::new(),
            mesh_uploads: 0,
        });
        app.configure_sets(
            PostUpdate,
            (MipstreamSystems::Sync, MipstreamSystems::Update)
                .chain()
                .after(TransformSystems::Propagate)
                // the materials it marks changed must reach this frame's
                // asset events, which the render world extracts from
                .before(AssetEventSystems),
        )
        .init_resource::<objects::Tracked>()
        .init_resource::<views::CameraMotion>()
        .add_systems(
            PostUpdate,
            (
                (loader::register_loaded, objects::sync_objects)
                    .chain()
                    .in_set(MipstreamSystems::Sync),
                (
                    apply_budget,
                    update,
                    scene::draw_lods,
                    feedback::sync.run_if(resource_exists::<feedback::FeedbackMaterials>),
                    invalidate_materials,
                    diagnostics::record,
                )
                    .chain()
                    .in_set(MipstreamSystems::Update),
            ),
        );
        if self.feedback {
            feedback::finish(app);
        }
        let audit = BindingAudit::default();
        app.insert_resource(audit.clone());
        if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
            render::build(render_app, audit);
        }
    }
}

fn apply_budget(budget: Res<StreamingBudget>, mut ms: ResMut<Mipstream>) {
    let t0 = std::time::Instant::now();
    if budget.is_changed() {
        if let Err(e) = ms.streamer.try_set_budget(Budget::Bytes(budget.0)) {
            warn!("mipstream: budget {} refused: {e}", budget.0);
        }
    }
    ms.frame_time += t0.elapsed();
}

fn update(
    mut ms: ResMut<Mipstream>,
    time: Res<Time>,
    mut motion: ResMut<views::CameraMotion>,
    cameras: Query<(Entity, &Camera, &GlobalTransform, &Projection)>,
) {
    let t0 = std::time::Instant::now();
    let ms = &mut *ms;
    ms.views = motion.views(&cameras, time.delta_secs());
    ms.streamer.update(&ms.views);
    ms.changed.clear();
    for id in ms.streamer.take_changed() {
        if let Some(&image) = ms.ids.get(&id) {
            ms.changed.push(image);
        }
    }
    ms.frame_time += t0.elapsed();
}

/// Marks every `StandardMaterial` that uses a changed image as changed, so
/// Bevy re-prepares it (and rebuilds its bind group) this frame.
fn invalidate_materials(
    mut ms: ResMut<Mipstream>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let t0 = std::time::Instant::now();
    ms.changed_materials.clear();
    if ms.changed.is_empty() {
        ms.frame_time += t0.elapsed();
        return;
    }
    let changed: std::collections::HashSet<AssetId<Image>> = ms.changed.iter().copied().collect();
    let using: Vec<AssetId<StandardMaterial>> = materials
        .iter()
        .filter(|(_, m)| material_images(m).any(|i| changed.contains(&i)))
        .map(|(id, _)| id)
        .collect();
    for &id in &using {
        let _ = materials.get_mut(id).map(|m| m.into_inner());
    }
    ms.changed_materials = using;
    ms.frame_time += t0.elapsed();
}

/// A material's five texture slots and the UV set each reads, in the order
/// GPU feedback reports them: base colour, normal map,
/// metallic-roughness, occlusion, emissive.
pub(crate) fn material_slots(
    m: &StandardMaterial,
) -> [(&Option<Handle<Image>>, &bevy::mesh::UvChannel); 5] {
    [
        (&m.base_color_texture, &m.base_color_channel),
        (&m.normal_map_texture, &m.normal_map_channel),
        (&m.metallic_roughness_texture, &m.metallic_roughness_channel),
        (&m.occlusion_texture, &m.occlusion_channel),
        (&m.emissive_texture, &m.emissive_channel),
    ]
}

/// The images a material samples.
pub(crate) fn material_images(m: &StandardMaterial) -> impl Iterator<Item = AssetId<Image>> + '_ {
    material_slots(m)
        .into_iter()
        .filter_map(|(image, _)| image.as_ref().map(Handle::id))
}

/// Bevy's vectors and matrices into mipstream's (glam 0.33 into 0.30).
pub(crate) mod convert {
    use mipstream::glam as mg;

    pub(crate) fn vec3(v: bevy::math::Vec3) -> mg::Vec3 {
        mg::Vec3::from_array(v.to_array())
    }

    pub(crate) fn mat4(m: bevy::math::Mat4) -> mg::Mat4 {
        mg::Mat4::from_cols_array(&m.to_cols_array())
    }
}
