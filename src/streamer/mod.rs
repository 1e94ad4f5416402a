//! The [`Streamer`]: textures in, a memory budget kept, views out.
//!
//! Each [`Streamer::update`] runs the flow of `ARCHITECTURE.md`:
//! 1. **drain**: finished loads come back from the loader threads and wait,
//!    per texture, in a pending list until they can be uploaded;
//! 2. **plan**: the [`Planner`] turns views, objects and the budget into a
//!    target level and tier per texture;
//! 3. **request**: levels the targets need are queued on the loader (highest
//!    benefit per byte first); levels no longer needed are cancelled;
//! 4. **apply**: textures above their target shrink first (GPU copies, no
//!    upload), then textures below it grow by the contiguous levels that have
//!    arrived, in priority order, within the per-frame upload cap and the
//!    budget (see [`apply`]);
//! 5. the work is submitted; changed views are listed for rebinding.
//!
//! The render thread never reads files or transcodes; `update` only plans,
//! records GPU copies and copies arrived texels into a staging buffer.
//!
//! Meshes ([`Streamer::register_mesh`], [`ObjectDesc::with_mesh`]) go through
//! the same steps: their LOD chains are planned in the same budget fit, LODs
//! load on the same loader threads, and arrived LODs are swapped in during
//! apply under the same upload cap; [`Streamer::mesh_buffers`] is what to
//! draw (see `meshes.rs`).
//!
//! # Example
//!
//! ```no_run
//! use glam::{UVec2, Vec3};
//! use mipstream::streamer::{Budget, ObjectDesc, Streamer, StreamerOptions};
//! use mipstream::{gpu, TextureClass, View};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let g = gpu::headless(None)?; // or the renderer's own Device and Queue
//! let options = StreamerOptions {
//!     budget: Budget::Bytes(64 << 20),
//!     ..StreamerOptions::default()
//! };
//! let mut streamer = Streamer::with_options(&g.device, &g.queue, options);
//! let albedo = streamer.register_texture_path("assets/checker-uastc.ktx2", TextureClass::Color)?;
//! // a 2x2 quad whose UVs span 0..1: one UV unit covers 2 world units
//! let quad = ObjectDesc::aabb(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 0.0, 1.0))
//!     .with_texture(albedo, 2.0);
//! let _object = streamer.register_object(quad)?;
//!
//! for frame in 0..600 {
//!     let eye = Vec3::new(0.0, 1.0, 10.0 - frame as f32 * 0.015);
//!     let camera = View::look_at(eye, Vec3::ZERO, Vec3::Y, 1.0, UVec2::new(1280, 720), 0.1, 100.0);
//!     let stats = streamer.update(&[camera]);
//!     for id in streamer.take_changed() {
//!         // rebuild the bind groups that sample `id` with streamer.texture_view(id)?
//!         # let _ = id;
//!     }
//!     # let _ = stats;
//! }
//! println!("{}", streamer.report()); // per texture: wanted, resident, why below
//! # Ok(())
//! # }
//! ```

mod apply;
mod meshes;
mod options;
mod report;

pub use crate::ids::{MeshId, ObjectId, TextureId};
pub use crate::plan::Policy;
pub use meshes::MeshStatus;
pub use options::{Budget, MeshDesc, ObjectDesc, StreamerOptions, TextureDesc};
pub use report::{
    BelowReason, FrameStats, InvariantViolation, MeshReport, OomEvent, ResidencyReport,
    ResidencyState, TextureReport, Totals,
};

use crate::container::{mip_extent, OpenError};
use crate::gpu::memory::{self, DriverBudget};
use crate::gpu::store::{AllocError, GpuStore, Shape};
use crate::gpu::GpuTexture;
use crate::ids::Slots;
use crate::plan::{PlanTexture, Planner, PlannerOptions, ResidentState, View};
use crate::transcode::{
    self, ChannelLayout, LevelImage, TargetChoice, TextureClass, Tier, TranscodeError,
    TranscodeOptions,
};
use crate::worker::{LoadError, LoadKey, LoadRequest, Loader};
use crate::TextureFile;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Why a streamer call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamerError {
    /// The texture id was removed (or never issued by this streamer).
    #[error("texture {0} is not registered (removed, or from another streamer)")]
    StaleTexture(TextureId),
    /// The object id was removed (or never issued by this streamer).
    #[error("object {0} is not registered (removed, or from another streamer)")]
    StaleObject(ObjectId),
    /// The mesh id was removed (or never issued by this streamer).
    #[error("mesh {0} is not registered (removed, or from another streamer)")]
    StaleMesh(MeshId),
    /// Opening a mesh file failed.
    #[error(transparent)]
    MeshOpen(crate::mesh::MeshError),
    /// Reading a mesh's coarsest LOD at registration failed.
    #[error("loading the coarsest LOD of {label}: {source}")]
    MeshBase {
        /// The mesh.
        label: String,
        /// The error.
        #[source]
        source: crate::mesh::MeshError,
    },
    /// The texture's format cannot be used on this adapter.
    #[error(transparent)]
    Format(#[from] TranscodeError),
    /// Loading the always-resident tail failed.
    #[error("loading the tail of {label}: {source}")]
    Tail {
        /// The texture.
        label: String,
        /// The error.
        #[source]
        source: LoadError,
    },
    /// Opening a file failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The GPU refused an allocation.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// `settle` did not converge in time.
    #[error("residency did not settle within {0:?}")]
    SettleTimeout(Duration),
}

/// A texture's levels in brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextureStatus {
    /// Finest resident level.
    pub resident: u32,
    /// Tier of the resident levels.
    pub tier: Tier,
    /// Level the views want.
    pub wanted: u32,
    /// Level the budget plan gives it.
    pub planned: u32,
}

/// A load that failed, waiting to be retried.
#[derive(Debug, Clone)]
struct Failure {
    message: String,
    attempts: u32,
    retry_at: u64,
}

/// One registered texture.
#[derive(Debug)]
struct Entry {
    label: String,
    file: TextureFile,
    class: TextureClass,
    choice: TargetChoice,
    formats: [wgpu::TextureFormat; 2],
    plan: PlanTexture,
    /// The texture holding the resident levels (always at least the tail).
    resident: GpuTexture,
    tier: Tier,
    since_frame: u64,
    generation: u64,
    /// Arrived levels of `pending_tier`, waiting to be uploaded.
    pending: BTreeMap<u32, LevelImage>,
    pending_tier: Tier,
    /// Levels of `pending_tier` queued or running on the loader.
    requested: BTreeSet<u32>,
    failure: Option<Failure>,
    /// Set when this frame's caps or budget held the texture back.
    held_back: Option<BelowReason>,
    /// CPU copies of the resident levels, kept where the backend cannot copy
    /// compressed textures GPU-side (wgpu's GL backend): growing and shrinking
    /// then re-upload kept levels from here.
    shadow: Option<BTreeMap<u32, LevelImage>>,
}

impl Entry {
    fn levels(&self) -> u32 {
        self.plan.level_count
    }

    fn shape(&self, first: u32, tier: Tier) -> Shape {
        let info = self.file.info();
        Shape {
            format: self.formats[tier_index(tier)],
            width: mip_extent(info.width, first),
            height: mip_extent(info.height, first),
            mips: self.levels() - first,
            layers: info.images_per_level(),
        }
    }
}

fn tier_index(t: Tier) -> usize {
    match t {
        Tier::Full => 0,
        Tier::Compact => 1,
    }
}

#[derive(Debug)]
struct ObjectEntry {
    desc: ObjectDesc,
}

/// Keeps registered textures at the best mips the budget allows.
///
/// Made from a `wgpu::Device`/`Queue` (clones share the device). Register
/// textures and the objects that show them, call [`update`](Self::update) once
/// per frame with the frame's views, and bind [`texture_view`](Self::texture_view);
/// [`take_changed`](Self::take_changed) says which views to rebind.
#[derive(Debug)]
pub struct Streamer {
    options: StreamerOptions,
    gpu: GpuStore,
    planner: Planner,
    loader: Loader,
    textures: Slots<Entry>,
    meshes: Slots<meshes::MeshEntry>,
    objects: Slots<ObjectEntry>,
    frame: u64,
    stats: FrameStats,
    changed: Vec<TextureId>,
    oom_events: Vec<OomEvent>,
    oom_count: u64,
    /// Registrations so far (each tail load gets its own key).
    tail_loads: u64,
    oom_reduction: u64,
    grow_paused_until: u64,
    driver: Option<DriverBudget>,
    views: Vec<View>,
    /// Bytes the plan leaves free so a texture blocked by the budget while it
    /// grows (old and new texture plus staging coexist) can get through.
    headroom: u64,
    /// Frame the headroom was last raised.
    headroom_frame: u64,
    /// Whether compressed textures can be copied GPU-side on this device.
    gpu_copies: bool,
}

impl Streamer {
    /// A streamer with default options.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self::with_options(device, queue, StreamerOptions::default())
    }

    /// A streamer with `options`.
    pub fn with_options(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        options: StreamerOptions,
    ) -> Self {
        let driver = memory::driver_budget(device);
        let mut s = Self {
            gpu: GpuStore::new(device.clone(), queue.clone(), 0),
            planner: Planner::new(options.planner.clone()),
            loader: Loader::new(options.workers),
            options,
            textures: Slots::default(),
            meshes: Slots::default(),
            objects: Slots::default(),
            frame: 0,
            stats: FrameStats::default(),
            changed: Vec::new(),
            oom_events: Vec::new(),
            oom_count: 0,
            tail_loads: 0,
            oom_reduction: 0,
            grow_paused_until: 0,
            driver,
            views: Vec::new(),
            headroom: 0,
            headroom_frame: 0,
            gpu_copies: memory::copies_compressed_textures(device),
        };
        s.gpu.set_pool_capacity(s.pool_capacity());
        s.planner
            .set_mesh_growth_keeps_old_lod(s.options.mesh_cross_fade_frames > 0);
        s
    }

    /// The options in force.
    pub fn options(&self) -> &StreamerOptions {
        &self.options
    }

    /// Changes the budget; it takes effect at the next `update`.
    pub fn set_budget(&mut self, budget: Budget) {
        self.options.budget = budget;
        self.headroom = 0;
        self.gpu.set_pool_capacity(self.pool_capacity());
    }

    /// Chooses levels by a fixed policy instead of the budget fit (for
    /// benchmarks against the strategies engines use). The policy plans within
    /// the same budget the fit would get (less the recycle pool and any
    /// headroom), and the streamer keeps to the budget as it does for the fit:
    /// a growth that does not fit beside everything held waits. Only a rule
    /// that holds more on purpose (Unity's floors) goes over, and then openly.
    /// Give a policy without a budget (`DistanceOnly`) a large budget.
    pub fn set_policy(&mut self, policy: Policy) {
        self.planner.set_policy(policy);
    }

    /// The level policy in use.
    pub fn policy(&self) -> Policy {
        self.planner.policy()
    }

    /// Changes the planner's tunables (LOD bias, hysteresis, compact tier...)
    /// from the next `update` on.
    pub fn set_planner_options(&mut self, planner: PlannerOptions) {
        self.planner.set_options(planner.clone());
        self.options.planner = planner;
    }

    /// Changes the per-frame upload cap (bytes and levels).
    pub fn set_upload_cap(&mut self, bytes: u64, levels: u32) {
        self.options.upload_bytes_per_frame = bytes;
        self.options.uploads_per_frame = levels;
    }

    /// The configured budget in bytes (resolving [`Budget::Auto`]).
    pub fn budget_bytes(&self) -> u64 {
        match self.options.budget {
            Budget::Bytes(b) => b,
            Budget::Auto { fraction, fallback } => self
                .driver
                .as_ref()
                .and_then(|d| d.device_local_budget())
                .map_or(fallback, |b| {
                    (b as f64 * fraction.clamp(0.0, 1.0) as f64) as u64
                }),
        }
    }

    /// The budget in force: the configured one, lowered after out-of-memory
    /// events, never below what the tails and coarsest mesh LODs need.
    pub fn effective_budget(&self) -> u64 {
        self.budget_bytes()
            .saturating_sub(self.oom_reduction)
            .max(self.tail_bytes())
    }

    /// The budget `update` keeps to: the effective budget, except in frames
    /// where a fixed policy's rule holds more on purpose (Unity's floors,
    /// [`Plan::over_budget`](crate::plan::Plan::over_budget)), which are then
    /// over budget in the open rather than cut by the streamer.
    fn hard_budget(&self) -> u64 {
        if self.planner.last_plan().over_budget {
            u64::MAX / 4
        } else {
            self.effective_budget()
        }
    }

    fn tail_bytes(&self) -> u64 {
        self.textures
            .iter::<TextureId>()
            .map(|(_, e)| e.plan.bytes(e.plan.tail_level, Tier::Full))
            .sum::<u64>()
            + self.mesh_base_bytes()
    }

    fn pool_capacity(&self) -> u64 {
        self.options
            .recycle_pool_bytes
            .min(self.budget_bytes() / 16)
    }

    /// The frame counter (`update` calls so far).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Registers a texture: loads its tail (waiting for the loader threads),
    /// so its view is never blank.
    pub fn register_texture(&mut self, desc: TextureDesc) -> Result<TextureId, StreamerError> {
        let info = desc.file.info().clone();
        let features = self.gpu.device().features();
        let choice = transcode::choose_targets(&info, desc.class, features)?;
        let formats = [
            choice.wgpu_format(&info, Tier::Full),
            choice.wgpu_format(&info, Tier::Compact),
        ];
        let levels = info.levels.len() as u32;
        // the tail: levels no larger than tail_size, from a level the format can
        // start a texture at
        let mut tail = (0..levels)
            .find(|&l| {
                mip_extent(info.width, l).max(mip_extent(info.height, l)) <= self.options.tail_size
            })
            .unwrap_or(levels - 1);
        while tail > 0
            && !formats
                .iter()
                .all(|&f| crate::gpu::valid_base_level(f, info.width, info.height, tail))
        {
            tail -= 1;
        }
        let finest_allowed = desc.max_resolution.map_or(0, |m| {
            (0..levels)
                .find(|&l| mip_extent(info.width, l).max(mip_extent(info.height, l)) <= m)
                .unwrap_or(levels - 1)
                .min(tail)
        });
        let resident_bytes = |tier: Tier| -> Vec<u64> {
            let format = formats[tier_index(tier)];
            let mut acc = 0u64;
            let mut v = vec![0u64; levels as usize];
            for l in (0..levels).rev() {
                acc += transcode::gpu_level_bytes(
                    format,
                    mip_extent(info.width, l),
                    mip_extent(info.height, l),
                ) * info.images_per_level() as u64;
                v[l as usize] = acc;
            }
            v
        };
        let plan = PlanTexture {
            size: info.width.max(info.height),
            level_count: levels,
            tail_level: tail,
            finest_allowed,
            resident_bytes: [
                resident_bytes(Tier::Full),
                if choice.compact.is_some() {
                    resident_bytes(Tier::Compact)
                } else {
                    Vec::new()
                },
            ],
            boost: desc.priority,
        };
        let label = desc.label.clone().unwrap_or_else(|| {
            std::path::Path::new(&info.name)
                .file_stem()
                .map_or(info.name.clone(), |s| s.to_string_lossy().into_owned())
        });
        let tail_levels = self.load_now(&desc.file, &choice, tail..levels, &label)?;
        let shape_tail = Shape {
            format: formats[0],
            width: mip_extent(info.width, tail),
            height: mip_extent(info.height, tail),
            mips: levels - tail,
            layers: info.images_per_level(),
        };
        let gpu_label = format!("mipstream {label} levels {tail}..{levels}");
        let dim = crate::gpu::upload::view_dimension(&info);
        let resident = self.gpu.create_texture(&gpu_label, shape_tail, tail, dim)?;
        let uploads: Vec<_> = tail_levels
            .iter()
            .enumerate()
            .map(|(i, l)| (&resident.texture, i as u32, l))
            .collect();
        if let Err(e) = self.gpu.stage(&uploads, &gpu_label) {
            drop(uploads);
            self.gpu.release(resident);
            return Err(e.into());
        }
        drop(uploads);
        self.gpu.submit();
        let compressed = formats.iter().any(|f| f.block_dimensions() != (1, 1));
        let shadow = (!self.gpu_copies && compressed)
            .then(|| tail_levels.iter().map(|l| (l.level, l.clone())).collect());
        let entry = Entry {
            label,
            file: desc.file,
            class: desc.class,
            choice,
            formats,
            plan: plan.clone(),
            resident,
            tier: Tier::Full,
            since_frame: self.frame,
            generation: 0,
            pending: BTreeMap::new(),
            pending_tier: Tier::Full,
            requested: BTreeSet::new(),
            failure: None,
            held_back: None,
            shadow,
        };
        let id: TextureId = self.textures.insert(entry);
        self.planner.set_texture(id.index(), plan);
        self.changed.push(id);
        Ok(id)
    }

    /// Opens and registers a texture file with a class.
    pub fn register_texture_path(
        &mut self,
        path: impl AsRef<std::path::Path>,
        class: TextureClass,
    ) -> Result<TextureId, StreamerError> {
        let file = TextureFile::open_path(path)?;
        self.register_texture(TextureDesc::new(file).with_class(class))
    }

    /// Loads `levels` through the loader threads and waits for them.
    fn load_now(
        &mut self,
        file: &TextureFile,
        choice: &TargetChoice,
        levels: std::ops::Range<u32>,
        label: &str,
    ) -> Result<Vec<LevelImage>, StreamerError> {
        // a key of its own per registration: results of an earlier failed
        // registration still in flight must not be taken for this one's
        self.tail_loads += 1;
        let key = LoadKey::Tail(self.tail_loads);
        for level in levels.clone() {
            self.loader.submit(LoadRequest {
                key,
                file: file.clone(),
                level,
                options: TranscodeOptions::new(choice.full, choice.srgb)
                    .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
                priority: f32::MAX,
            });
        }
        let mut got: BTreeMap<u32, LevelImage> = BTreeMap::new();
        let mut failed = None;
        while got.len() < levels.len() && failed.is_none() {
            for r in self.loader.wait(Duration::from_secs(60)) {
                if r.key != key {
                    // another texture's level: it must reach its texture even
                    // when this registration fails, or that texture would wait
                    // for it forever (a soak run caught exactly that)
                    self.accept_load(r);
                    continue;
                }
                match r.result {
                    Ok(img) => {
                        got.insert(r.level, img);
                    }
                    Err(source) => failed = failed.or(Some(source)),
                }
            }
        }
        if let Some(source) = failed {
            // the tail's other levels finish on their own; their results are
            // dropped as they arrive (the key matches no texture)
            return Err(StreamerError::Tail {
                label: label.to_owned(),
                source,
            });
        }
        Ok(got.into_values().collect())
    }

    /// Removes a texture; objects that showed it stop counting it.
    pub fn remove_texture(&mut self, id: TextureId) -> Result<(), StreamerError> {
        let e = self
            .textures
            .remove(id)
            .ok_or(StreamerError::StaleTexture(id))?;
        self.gpu.release(e.resident);
        for level in e.requested {
            self.loader.cancel(load_key(id, e.pending_tier), level);
        }
        self.planner.remove_texture(id.index());
        let affected: Vec<ObjectId> = self
            .objects
            .iter::<ObjectId>()
            .filter(|(_, o)| o.desc.textures.iter().any(|(t, _)| *t == id))
            .map(|(o, _)| o)
            .collect();
        for o in affected {
            let mut desc = self.objects.get(o).expect("listed").desc.clone();
            desc.textures.retain(|(t, _)| *t != id);
            self.set_object(o, desc)?;
        }
        Ok(())
    }

    /// Registers an object.
    pub fn register_object(&mut self, desc: ObjectDesc) -> Result<ObjectId, StreamerError> {
        self.check_textures(&desc)?;
        self.check_meshes(&desc)?;
        let id: ObjectId = self.objects.insert(ObjectEntry { desc: desc.clone() });
        self.push_object(id, &desc);
        Ok(id)
    }

    /// Replaces an object's bounds and textures.
    pub fn set_object(&mut self, id: ObjectId, desc: ObjectDesc) -> Result<(), StreamerError> {
        self.check_textures(&desc)?;
        self.check_meshes(&desc)?;
        let o = self
            .objects
            .get_mut(id)
            .ok_or(StreamerError::StaleObject(id))?;
        o.desc = desc.clone();
        self.push_object(id, &desc);
        Ok(())
    }

    /// Moves an object (its new bounding box centre and half extents).
    pub fn move_object(
        &mut self,
        id: ObjectId,
        center: glam::Vec3,
        half_extents: glam::Vec3,
    ) -> Result<(), StreamerError> {
        let o = self
            .objects
            .get_mut(id)
            .ok_or(StreamerError::StaleObject(id))?;
        o.desc.center = center;
        o.desc.half_extents = half_extents;
        self.planner.move_object(id.index(), center, half_extents);
        Ok(())
    }

    /// Removes an object.
    pub fn remove_object(&mut self, id: ObjectId) -> Result<(), StreamerError> {
        self.objects
            .remove(id)
            .ok_or(StreamerError::StaleObject(id))?;
        self.planner.remove_object(id.index());
        Ok(())
    }

    fn check_textures(&self, desc: &ObjectDesc) -> Result<(), StreamerError> {
        match desc
            .textures
            .iter()
            .find(|(t, _)| self.textures.get(*t).is_none())
        {
            Some((t, _)) => Err(StreamerError::StaleTexture(*t)),
            None => Ok(()),
        }
    }

    fn push_object(&mut self, id: ObjectId, desc: &ObjectDesc) {
        let bindings: Vec<(usize, f32)> =
            desc.textures.iter().map(|(t, s)| (t.index(), *s)).collect();
        self.planner
            .set_object(id.index(), desc.center, desc.half_extents, &bindings);
        self.planner.set_object_meshes(
            id.index(),
            desc.center,
            desc.half_extents,
            &Self::mesh_bindings(desc),
        );
    }

    /// The view to bind for a texture. It changes when the resident levels do
    /// (see [`take_changed`](Self::take_changed)).
    pub fn texture_view(&self, id: TextureId) -> Result<&wgpu::TextureView, StreamerError> {
        Ok(&self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?
            .resident
            .view)
    }

    /// The resident texture (its first level, format and bytes).
    pub fn resident(&self, id: TextureId) -> Result<&GpuTexture, StreamerError> {
        Ok(&self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?
            .resident)
    }

    /// Resident, wanted and planned levels of a texture (cheap; for per-frame
    /// debug views).
    pub fn texture_status(&self, id: TextureId) -> Result<TextureStatus, StreamerError> {
        let e = self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?;
        let p = self
            .planner
            .last_plan()
            .textures
            .get(id.index())
            .copied()
            .unwrap_or_default();
        Ok(TextureStatus {
            resident: e.resident.first_level,
            tier: e.tier,
            wanted: if p.lod.is_finite() || p.wanted > 0 {
                p.wanted
            } else {
                e.plan.tail_level
            },
            planned: p.target,
        })
    }

    /// Bytes the texture takes with every level resident in its full tier.
    pub fn full_bytes(&self, id: TextureId) -> Result<u64, StreamerError> {
        let e = self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?;
        Ok(e.plan.bytes(0, Tier::Full))
    }

    /// Bytes the texture takes with levels `first..` resident in its full
    /// tier (`first` clamped to its always-resident tail).
    pub fn bytes_from_level(&self, id: TextureId, first: u32) -> Result<u64, StreamerError> {
        let e = self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?;
        Ok(e.plan.bytes(first.min(e.plan.tail_level), Tier::Full))
    }

    /// How shaders should read the texture's channels.
    pub fn channel_layout(&self, id: TextureId) -> Result<ChannelLayout, StreamerError> {
        Ok(self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?
            .choice
            .layout)
    }

    /// A counter that increases each time the texture's view changes.
    pub fn view_generation(&self, id: TextureId) -> Result<u64, StreamerError> {
        Ok(self
            .textures
            .get(id)
            .ok_or(StreamerError::StaleTexture(id))?
            .generation)
    }

    /// Textures whose view changed since the last call (rebuild their bind groups).
    pub fn take_changed(&mut self) -> Vec<TextureId> {
        let mut v = std::mem::take(&mut self.changed);
        v.sort_unstable();
        v.dedup();
        v.retain(|id| self.textures.get(*id).is_some());
        v
    }

    /// Every registered texture's id.
    pub fn texture_ids(&self) -> Vec<TextureId> {
        self.textures
            .iter::<TextureId>()
            .map(|(id, _)| id)
            .collect()
    }

    /// Makes the next `count` GPU allocations fail as out-of-memory (to test
    /// that the streamer degrades and recovers).
    pub fn inject_out_of_memory(&mut self, count: u32) {
        self.gpu.inject_out_of_memory(count);
    }

    /// Injects faults at the rates of `faults` (None: stop): transcodes on the
    /// loader threads fail and GPU allocations fail as out-of-memory. Wrap
    /// texture sources in [`crate::fault::FaultySource`] for I/O faults.
    /// A test and soak hook; see [`crate::fault`].
    pub fn set_faults(&mut self, faults: Option<std::sync::Arc<crate::fault::Faults>>) {
        self.loader.set_faults(faults.clone());
        self.gpu.set_faults(faults);
    }

    /// Bytes held on the GPU now: resident textures, the recycle pool and
    /// staging in flight (what the budget limits).
    pub fn held_bytes(&self) -> u64 {
        self.gpu.accounted_bytes()
    }

    /// Bytes the registered textures and meshes would hold with each exactly
    /// at the level `views` want (no hysteresis, look-ahead, cap on reduction
    /// or prefetch): what these views cost. The peak of it over a camera path
    /// is the path's working set, the basis of budgets that bind. Changes
    /// nothing the next `update` sees.
    pub fn wanted_bytes(&mut self, views: &[View]) -> u64 {
        self.planner.wanted_bytes(views)
    }

    /// Out-of-memory events since the streamer was made (the report keeps
    /// only the last 64).
    pub fn oom_event_count(&self) -> u64 {
        self.oom_count
    }

    /// Whether any texture or mesh is backing off after a failed load.
    pub fn has_failures(&self) -> bool {
        self.textures
            .iter::<TextureId>()
            .any(|(_, e)| e.failure.is_some())
            || self
                .meshes
                .iter::<MeshId>()
                .any(|(_, e)| e.failure.is_some())
    }

    /// Advances one frame with this frame's views. Never blocks on loads.
    pub fn update(&mut self, views: &[View]) -> FrameStats {
        let start = Instant::now();
        self.frame += 1;
        self.views.clear();
        self.views.extend_from_slice(views);
        self.stats = FrameStats {
            frame: self.frame,
            ..Default::default()
        };
        self.gpu.poll();
        for r in self.loader.drain() {
            self.accept_load(r);
        }
        for r in self.loader.drain_meshes() {
            self.accept_mesh_load(r);
        }
        if self.frame.is_multiple_of(60) && matches!(self.options.budget, Budget::Auto { .. }) {
            self.driver = memory::driver_budget(self.gpu.device());
        }
        self.relax_oom_reduction();
        if self.headroom > 0 && self.frame > self.headroom_frame + STICKY_FRAMES {
            self.headroom = 0;
        }
        self.end_fades();
        self.plan();
        self.request_loads();
        self.request_mesh_loads();
        self.apply();
        self.gpu.poll();
        if self.gpu.accounted_bytes() > self.hard_budget() && self.gpu.staging_bytes() > 0 {
            // a forced eviction re-uploaded kept levels (backends without GPU
            // copies): the budget is a hard limit, so let that staging drain
            self.gpu.wait_idle();
            self.gpu.poll();
        }
        self.stats.update_time = start.elapsed();
        self.stats
    }

    /// The planner's budget: the effective budget less the pool and the
    /// transient reserve, or the headroom a blocked build asked for, whichever
    /// is larger. The plan itself keeps room for its largest growth step
    /// (`Plan::growth_room`): a fixed fraction for that kept a third of a
    /// quarter-size FlightHelmet budget empty.
    fn planner_budget(&self) -> u64 {
        let effective = self.effective_budget();
        let transient =
            (effective as f64 * self.options.transient_reserve.clamp(0.0, 0.9) as f64) as u64;
        effective
            .saturating_sub(transient.max(self.headroom))
            .saturating_sub(self.gpu.pool_bytes())
    }

    /// Leaves `bytes` free in later plans: a build needed that much room beside
    /// the plan (kept for a while, so plans do not flip back and forth).
    /// A build blocked while other uploads are staged, or while something is
    /// still held above its plan (a mesh keeps its finer LOD until the coarser
    /// one it is planned at has loaded), just waits: the plan keeps room for
    /// one growth beside itself, not beside all of a frame's uploads or
    /// beside what it has already given up.
    fn need_headroom(&mut self, bytes: u64) {
        let plan = self.planner.last_plan().bytes + self.gpu.pool_bytes();
        if self.gpu.staging_bytes() > 0 || self.gpu.accounted_bytes() > plan {
            return;
        }
        self.headroom = self.headroom.max(bytes);
        self.headroom_frame = self.frame;
    }

    fn plan(&mut self) {
        let resident: Vec<ResidentState> = (0..self.planner_slot_count())
            .map(|slot| {
                self.textures
                    .id_at::<TextureId>(slot)
                    .and_then(|id| self.textures.get(id))
                    .map_or(
                        ResidentState {
                            level: 0,
                            tier: Tier::Full,
                            since_frame: 0,
                        },
                        |e| ResidentState {
                            level: e.resident.first_level,
                            tier: e.tier,
                            since_frame: e.since_frame,
                        },
                    )
            })
            .collect();
        // prefetch shares the fit's budget: letting it into the room kept for
        // staging blocked the growth the views needed (a scene test caught a
        // settled picture coarser at 50% than at 15%)
        let budget = self.planner_budget();
        let meshes = self.mesh_resident();
        self.planner
            .plan_with_meshes(&self.views, budget, &resident, &meshes, self.frame);
    }

    fn planner_slot_count(&self) -> usize {
        self.textures
            .iter::<TextureId>()
            .map(|(id, _)| id.index() + 1)
            .max()
            .unwrap_or(0)
    }

    fn accept_load(&mut self, r: crate::worker::LoadResult) {
        let Some((id, tier)) = self.decode_key(r.key) else {
            return;
        };
        let frame = self.frame;
        let backoff = self.options.retry_backoff_frames;
        let Some(e) = self.textures.get_mut(id) else {
            return;
        };
        if tier != e.pending_tier {
            return; // a tier the texture no longer wants
        }
        e.requested.remove(&r.level);
        match r.result {
            Ok(img) => {
                e.failure = None;
                let useful = tier != e.tier || r.level < e.resident.first_level;
                if useful {
                    e.pending.insert(r.level, img);
                }
            }
            Err(err) => {
                self.stats.failed_loads += 1;
                if matches!(err, LoadError::Panicked { .. }) {
                    self.stats.panicked_loads += 1;
                }
                let e = self.textures.get_mut(id).expect("checked above");
                match &mut e.failure {
                    // another level of the same attempt: one attempt, one back-off
                    Some(f) if frame < f.retry_at => f.message = err.to_string(),
                    _ => {
                        let attempts = e.failure.as_ref().map_or(0, |f| f.attempts) + 1;
                        e.failure = Some(Failure {
                            message: err.to_string(),
                            attempts,
                            retry_at: frame + backoff * (1u64 << (attempts - 1).min(6)),
                        });
                    }
                }
            }
        }
    }

    fn decode_key(&self, key: LoadKey) -> Option<(TextureId, Tier)> {
        let LoadKey::Texture {
            slot,
            generation,
            tier,
        } = key
        else {
            return None;
        };
        let id: TextureId = self.textures.id_at(slot as usize)?;
        (id.generation() == generation).then_some((id, tier))
    }

    fn request_loads(&mut self) {
        let frame = self.frame;
        let ids = self.texture_ids();
        for id in ids {
            let target = self.planner.last_plan().textures[id.index()];
            let e = self.textures.get_mut(id).expect("live id");
            let n = e.levels();
            // switching tier: everything of the new tier from the target down
            let (tier, wanted): (Tier, Vec<u32>) = if target.tier != e.tier {
                (target.tier, (target.target..n).collect())
            } else {
                (e.tier, (target.target..e.resident.first_level).collect())
            };
            if tier != e.pending_tier {
                for level in std::mem::take(&mut e.requested) {
                    self.loader.cancel(load_key(id, e.pending_tier), level);
                }
                e.pending.clear();
                e.pending_tier = tier;
            }
            // cancel what is no longer wanted, drop what arrived for nothing
            let stale: Vec<u32> = e
                .requested
                .iter()
                .copied()
                .filter(|l| !wanted.contains(l))
                .collect();
            for level in stale {
                e.requested.remove(&level);
                self.loader.cancel(load_key(id, tier), level);
            }
            e.pending.retain(|l, _| wanted.contains(l));
            if wanted.is_empty() {
                // nothing to load: a failure of a level no longer wanted is
                // history, not a state to back off in
                e.failure = None;
            }
            if e.failure.as_ref().is_some_and(|f| f.retry_at > frame) {
                continue;
            }
            for &level in wanted.iter().rev() {
                if e.pending.contains_key(&level) || e.requested.contains(&level) {
                    continue;
                }
                let choice = e.choice;
                let output = choice.output(tier);
                self.loader.submit(LoadRequest {
                    key: load_key(id, tier),
                    file: e.file.clone(),
                    level,
                    options: TranscodeOptions::new(output, choice.srgb)
                        .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
                    // the texture's benefit per byte; coarser levels first within it
                    priority: target.priority.max(1e-30) * (1.0 + level as f32 * 1e-3),
                });
                e.requested.insert(level);
                self.stats.requested += 1;
            }
        }
    }

    /// Runs `update` until every texture holds its planned levels and no loads
    /// are outstanding, waiting for the loader between updates: a deterministic
    /// "fully streamed" point for screenshots and render tests.
    pub fn settle(&mut self, views: &[View], timeout: Duration) -> Result<u32, StreamerError> {
        let start = Instant::now();
        let mut frames = 0;
        loop {
            self.update(views);
            frames += 1;
            if self.converged() {
                self.gpu.wait_idle();
                self.gpu.poll();
                return Ok(frames);
            }
            if start.elapsed() > timeout {
                return Err(StreamerError::SettleTimeout(timeout));
            }
            if self.loader.outstanding() > 0
                && self
                    .textures
                    .iter::<TextureId>()
                    .all(|(_, e)| e.pending.is_empty())
                && self
                    .meshes
                    .iter::<MeshId>()
                    .all(|(_, e)| e.pending.is_none())
            {
                for r in self.loader.wait(Duration::from_millis(200)) {
                    self.accept_load(r);
                }
            }
        }
    }

    /// Whether every texture holds its planned level and tier, every mesh its
    /// planned LOD, and nothing is in flight (failed ones count as settled
    /// while they back off, and so does spare detail, finer than the views
    /// want, that does not fit beside everything held).
    pub fn converged(&self) -> bool {
        let plan = self.planner.last_plan();
        // spare detail blocked by the budget waits, unless what blocked it was
        // this frame's other uploads
        let settled = self.gpu.staging_bytes() == 0;
        // a fixed policy's target that does not fit beside everything held
        // waits too: its rule, unlike the fit, keeps no room to grow
        let fixed = self.policy() != Policy::Budget;
        self.loader.outstanding() == 0
            && self.textures.iter::<TextureId>().all(|(id, e)| {
                let p = plan.textures.get(id.index());
                e.failure.is_some()
                    || p.is_some_and(|p| p.target == e.resident.first_level && p.tier == e.tier)
                    // spare-budget detail that does not fit beside the plan waits
                    || (settled
                        && p.is_some_and(|p| {
                            (p.prefetch || fixed) && e.held_back == Some(BelowReason::Budget)
                        }))
            })
            && self.meshes_converged(settled)
    }

    /// Checks that accounted bytes equal the live resources (textures and
    /// mesh buffers), fit the budget in force, that every texture keeps its
    /// tail and every mesh its coarsest LOD.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        self.check_mesh_invariants()?;
        let live: u64 = self
            .textures
            .iter::<TextureId>()
            .map(|(_, e)| e.shape(e.resident.first_level, e.tier).bytes())
            .sum();
        let accounted = self.gpu.texture_bytes();
        if live != accounted {
            return Err(InvariantViolation::Accounting { accounted, live });
        }
        let held = self.gpu.accounted_bytes();
        let budget = self.hard_budget();
        if held > budget {
            return Err(InvariantViolation::OverBudget { held, budget });
        }
        for (id, e) in self.textures.iter::<TextureId>() {
            let (first, end) = (
                e.resident.first_level,
                e.resident.first_level + e.resident.level_count,
            );
            if first > e.plan.tail_level || end != e.levels() {
                return Err(InvariantViolation::MissingTail {
                    id,
                    first,
                    end,
                    tail: e.plan.tail_level,
                    levels: e.levels(),
                });
            }
        }
        Ok(())
    }

    fn relax_oom_reduction(&mut self) {
        if self.oom_reduction > 0 && self.frame >= self.grow_paused_until {
            // give back a quarter of the reduction per backoff period
            self.oom_reduction -= self.oom_reduction.div_ceil(4);
            self.grow_paused_until = self.frame + self.options.oom_backoff_frames;
        }
    }

    fn record_oom(&mut self, what: String, bytes: u64) {
        let event = OomEvent {
            frame: self.frame,
            what,
            bytes,
            budget: self.effective_budget(),
            resident: self.gpu.accounted_bytes(),
            reserved_unallocated: memory::allocator_summary(self.gpu.device())
                .map(|a| a.unallocated()),
        };
        if self.oom_events.len() >= 64 {
            self.oom_events.remove(0);
        }
        self.oom_events.push(event);
        self.oom_count += 1;
        self.oom_reduction = self.oom_reduction.saturating_add(bytes);
        self.grow_paused_until = self.frame + self.options.oom_backoff_frames;
        self.gpu.trim_pool(0);
    }

    /// Out-of-memory events so far (the last 64).
    pub fn oom_events(&self) -> &[OomEvent] {
        &self.oom_events
    }

    /// The last frame's work.
    pub fn frame_stats(&self) -> FrameStats {
        self.stats
    }

    /// A snapshot of residency, per texture and in total.
    pub fn report(&self) -> ResidencyReport {
        let plan = self.planner.last_plan();
        let mut totals = Totals {
            mesh: self.gpu.mesh_bytes(),
            pool: self.gpu.pool_bytes(),
            staging: self.gpu.staging_bytes(),
            ..Default::default()
        };
        let frame = self.frame;
        let textures = self
            .textures
            .iter::<TextureId>()
            .map(|(id, e)| {
                let p = plan.textures.get(id.index()).copied().unwrap_or_default();
                let bytes = e.shape(e.resident.first_level, e.tier).bytes();
                match e.class {
                    TextureClass::Color => totals.color += bytes,
                    TextureClass::Normal => totals.normal += bytes,
                    TextureClass::Data => totals.data += bytes,
                }
                let state = if let Some(f) = &e.failure {
                    ResidencyState::Failed {
                        error: f.message.clone(),
                        retry_at_frame: f.retry_at,
                    }
                } else if !e.requested.is_empty() {
                    ResidencyState::Loading {
                        levels: e.requested.len() as u32,
                    }
                } else if !e.pending.is_empty() {
                    ResidencyState::Uploading {
                        levels: e.pending.len() as u32,
                    }
                } else {
                    ResidencyState::Resident
                };
                let info = e.file.info();
                TextureReport {
                    id,
                    label: e.label.clone(),
                    class: e.class,
                    size: (info.width, info.height),
                    levels: e.levels(),
                    wanted: p.wanted,
                    planned: p.target,
                    resident: e.resident.first_level,
                    tier: e.tier,
                    format: e.resident.format,
                    bytes,
                    coverage: p.coverage,
                    below: below_reason(e, &p, frame, self.grow_paused_until),
                    state,
                }
            })
            .collect();
        ResidencyReport {
            budget: self.budget_bytes(),
            effective_budget: self.effective_budget(),
            tail_bytes: self.tail_bytes(),
            totals,
            textures,
            meshes: self.mesh_reports(frame),
            frame: self.stats,
            oom_events: self.oom_events.clone(),
            driver: self.driver.clone(),
            allocator: memory::allocator_summary(self.gpu.device()),
            counters: memory::counters(self.gpu.device()),
            loads_outstanding: self.loader.outstanding(),
        }
    }

    /// The device the streamer uses.
    pub fn device(&self) -> &wgpu::Device {
        self.gpu.device()
    }
}

/// Why a texture is coarser than it wants, if it is.
fn below_reason(
    e: &Entry,
    p: &crate::plan::TexturePlan,
    frame: u64,
    paused_until: u64,
) -> Option<BelowReason> {
    if e.resident.first_level <= p.wanted && e.tier == Tier::Full {
        return None;
    }
    if let Some(f) = &e.failure {
        return Some(BelowReason::Error(f.message.clone()));
    }
    if p.target > e.resident.first_level || (p.target == e.resident.first_level && p.tier == e.tier)
    {
        return Some(match p.limit {
            Some(crate::plan::Limit::MaxResolution) => BelowReason::MaxResolution,
            _ => BelowReason::Budget,
        });
    }
    if let Some(reason) = &e.held_back {
        return Some(reason.clone());
    }
    if frame < paused_until {
        return Some(BelowReason::OutOfMemoryBackoff);
    }
    if !e.requested.is_empty() {
        return Some(BelowReason::Loading);
    }
    Some(BelowReason::UploadCap)
}

/// Frames the headroom stays raised before it may drop (about 10 s at 60
/// fps): plans do not flip back and forth.
const STICKY_FRAMES: u64 = 600;

/// The loader key of a texture's loads in a tier.
fn load_key(id: TextureId, tier: Tier) -> LoadKey {
    LoadKey::Texture {
        slot: id.index() as u32,
        generation: id.generation(),
        tier,
    }
}
