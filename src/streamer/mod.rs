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
//!    budget (see `apply.rs`);
//! 5. the work is submitted; changed views are listed for rebinding.
//!
//! `frame.rs` holds these steps in this order; `textures.rs` and `meshes.rs`
//! the tables they work on.
//!
//! The render thread never reads files or transcodes; `update` only plans,
//! records GPU copies and copies arrived texels into a staging buffer
//! (`Queue::write_texture`), or with
//! [`StreamerOptions::loader_staging_bytes`] only records copies from the
//! staging buffers the loader threads filled.
//!
//! Meshes ([`Streamer::register_mesh`], [`ObjectDesc::with_mesh`]) go through
//! the same steps: their LOD chains are planned in the same budget fit, LODs
//! load on the same loader threads, and arrived LODs are swapped in during
//! apply under the same upload cap; [`Streamer::mesh_buffers`] is what to
//! draw (see `meshes.rs`).
//!
//! # Contract
//!
//! docs/embedding.md has a complete renderer that owns its
//! device, and the contract in full. In short:
//! - **device features**: each texture's format is chosen from the device's
//!   features at registration (BC7/BC5, ASTC 4x4, ETC2/EAC, else RGBA8 at 4
//!   bytes a texel; the report warns); [`Streamer::channel_layout`] says how
//!   a shader reads a texture's channels on this device;
//! - **threads**: `Streamer` is `Send + Sync`, and every call that changes
//!   it takes `&mut self`, so one thread at a time drives it (an engine can
//!   keep it in a resource that must be `Sync`, as Bevy's are). [`TexturePreparer`] (`Send + Sync`) reads a
//!   texture's tail on any thread; [`Streamer::register_prepared`] then
//!   registers it without file access, in call order ([`PreparedMesh`] and
//!   [`Streamer::register_prepared_mesh`] do the same for a mesh's coarsest
//!   LOD);
//! - **sampling**: [`Streamer::texture_view`] shows the resident levels only
//!   (its mip 0 is the finest resident level), so `textureDimensions`,
//!   `textureLoad` and explicit-LOD sampling address the resident texture;
//!   rebind what [`Streamer::take_changed`] lists;
//! - **memory**: at every moment between two calls into the streamer,
//!   wgpu's own count of the memory it created is within the budget in
//!   force; after the budget falls it exceeds it only by memory being given
//!   back, and is within the new one at most P + F + 1 updates later (P the
//!   cut's paced updates, F [`StreamerOptions::frames_in_flight`]). That
//!   holds when the engine rebuilds the bind groups of what
//!   [`Streamer::take_changed`] lists before its next submit, keeps no clone
//!   of a replaced view, and records at most `frames_in_flight` frames with
//!   an old one; [`FrameStats::retiring_bytes`] is what was released and
//!   the GPU may still hold, [`Streamer::gpu_bytes`] the sum with what is
//!   held;
//! - **settings**: nonsense is a [`SettingsError`] from
//!   [`Streamer::try_with_options`], or clamped with a report warning.
//!
//! ```
//! fn send_sync<T: Send + Sync>() {}
//! send_sync::<mipstream::Streamer>();
//! send_sync::<mipstream::streamer::TexturePreparer>();
//! send_sync::<mipstream::streamer::PreparedTexture>();
//! send_sync::<mipstream::streamer::PreparedMesh>();
//! send_sync::<mipstream::TextureFile>();
//! send_sync::<mipstream::mesh::MeshFile>();
//! ```
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
mod arrivals;
mod budget;
mod canonical;
mod errors;
mod feedback;
mod frame;
mod load_state;
mod meshes;
mod objects;
mod options;
mod plan_thread;
mod prepare;
mod report;
mod slots;
mod testing;
mod texture_table;
mod textures;
mod work;

pub use crate::ids::{MeshId, ObjectId, TextureId};
pub use crate::plan::Policy;
pub use crate::plan::ViewError;
pub use errors::{MeshRegisterError, SettleError, StaleId, StreamerError, TextureRegisterError};
pub use meshes::{MeshEvent, MeshStatus};
pub use options::{
    Budget, MeshDesc, MeshStorage, ObjectDesc, PlanThread, SettingsError, StreamerOptions,
    TextureDesc,
};
pub use prepare::{PreparedMesh, PreparedTexture, TexturePreparer};
pub use report::{
    BelowReason, FrameStats, InvariantViolation, LossSource, MeshReport, OomEvent, ResidencyReport,
    ResidencyState, TextureReport, Totals,
};
pub use textures::TextureStatus;

use crate::gpu::memory;
use crate::gpu::staging::LoaderStaging;
use crate::gpu::store::GpuStore;
use crate::ids::Slots;
use crate::plan::{Planner, PlannerOptions, View};
use crate::worker::Loader;
use budget::BudgetState;
use load_state::LoadState;
use objects::ObjectEntry;
use plan_thread::PlanHandle;
use std::time::{Duration, Instant};

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
    planner: PlanHandle,
    loader: Loader,
    budget: BudgetState,
    textures: texture_table::TextureTable,
    meshes: meshes::MeshTable,
    objects: Slots<ObjectEntry>,
    frame: frame::FrameState,
    /// Settings `with_options`/`set_budget` clamped, one line each.
    settings_warnings: Vec<String>,
}

impl Streamer {
    /// A streamer with default options.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self::with_options(device, queue, StreamerOptions::default())
    }

    /// A streamer with `options`. A setting that makes no sense (see
    /// [`SettingsError`]) is clamped to the nearest sane value and named in
    /// the report's `warnings`; [`try_with_options`](Self::try_with_options)
    /// refuses it instead.
    pub fn with_options(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        options: StreamerOptions,
    ) -> Self {
        let (options, warnings) = options.clamped();
        let mut s = Self::build(device, queue, options);
        s.settings_warnings = warnings;
        s
    }

    /// A streamer with `options`, or the first setting that makes no sense.
    pub fn try_with_options(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        options: StreamerOptions,
    ) -> Result<Self, SettingsError> {
        options.validate()?;
        Ok(Self::build(device, queue, options))
    }

    fn build(device: &wgpu::Device, queue: &wgpu::Queue, options: StreamerOptions) -> Self {
        // one tag for this streamer's ids: another streamer's id names nothing here
        let owner = crate::ids::new_owner();
        let mut s = Self {
            gpu: GpuStore::new(device.clone(), queue.clone(), 0),
            planner: PlanHandle::new(Planner::new(options.planner.clone())),
            loader: Loader::new(options.workers),
            budget: BudgetState::new(
                options.budget,
                memory::driver_budget(device),
                options.oom_backoff_frames,
            ),
            options,
            textures: texture_table::TextureTable::new(
                owner,
                memory::copies_compressed_textures(device),
            ),
            meshes: meshes::MeshTable::new(owner),
            objects: Slots::owned_by(owner),
            frame: frame::FrameState::default(),
            settings_warnings: Vec::new(),
        };
        s.gpu.set_pool_capacity(s.pool_capacity());
        s.gpu.set_count_retiring(s.options.count_retiring);
        s.gpu.set_frames_in_flight(s.options.frames_in_flight);
        if s.options.loader_staging_bytes > 0 {
            let reserve = s.gpu.staging_reserve().clone();
            s.loader
                .set_staging(Some(LoaderStaging::new(device, reserve)));
            s.size_staging_reserve();
        }
        s.planner
            .get()
            .set_mesh_growth_keeps_old_lod(s.options.mesh_cross_fade_frames > 0);
        s.planner
            .get()
            .set_growth_restages_kept_levels(!s.textures.gpu_copies);
        s
    }

    /// The options in force.
    pub fn options(&self) -> &StreamerOptions {
        &self.options
    }

    /// Whether `update` now takes its plan from the planner thread
    /// ([`StreamerOptions::plan_thread`] for the textures registered now).
    pub fn plans_in_background(&self) -> bool {
        self.options
            .plan_thread
            .in_background(self.textures.entries.len())
    }

    /// Changes the budget; it takes effect at the next `update`. A budget
    /// of 0 bytes becomes 1 byte (the tails alone are held; see
    /// [`effective_budget`](Self::effective_budget)) and an `Auto` fraction
    /// outside (0, 1] is clamped into it, each named in the report's
    /// `warnings`; [`try_set_budget`](Self::try_set_budget) refuses them.
    pub fn set_budget(&mut self, budget: Budget) {
        let budget = match budget.validate() {
            Ok(()) => budget,
            Err(e) => {
                let w = format!("setting clamped: {e}");
                if !self.settings_warnings.contains(&w) {
                    self.settings_warnings.push(w);
                }
                budget.clamped()
            }
        };
        self.apply_budget(budget);
    }

    /// Changes the budget, or says why it makes no sense (nothing changes).
    pub fn try_set_budget(&mut self, budget: Budget) -> Result<(), SettingsError> {
        budget.validate()?;
        self.apply_budget(budget);
        Ok(())
    }

    fn apply_budget(&mut self, budget: Budget) {
        // a plan made before it was made on another budget: `converged`
        // waits for one made on this one
        self.planner.invalidate();
        self.options.budget = budget;
        self.budget.set(budget);
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
        self.planner.get().set_options(planner.clone());
        self.planner.note_losses();
        self.options.planner = planner;
    }

    /// Changes the per-frame upload cap (bytes and levels).
    pub fn set_upload_cap(&mut self, bytes: u64, levels: u32) {
        self.options.upload_bytes_per_frame = bytes;
        self.options.uploads_per_frame = levels;
    }

    /// The configured budget in bytes (resolving [`Budget::Auto`]).
    pub fn budget_bytes(&self) -> u64 {
        self.budget.configured_bytes()
    }

    /// The budget in force: the configured one, lowered after out-of-memory
    /// events, never below what the tails and coarsest mesh LODs need.
    pub fn effective_budget(&self) -> u64 {
        self.budget.effective(self.tail_bytes())
    }

    /// The budget `update` keeps to (see [`budget`]).
    fn hard_budget(&self) -> u64 {
        let over = self.planner.last_plan().over_budget;
        self.budget.hard(self.tail_bytes(), over)
    }

    /// Bytes of the always-resident tails and coarsest mesh LODs.
    fn tail_bytes(&self) -> u64 {
        self.texture_tail_bytes() + self.mesh_base_bytes()
    }

    /// Sets the loader staging reserve (`BudgetState::staging_reserve`).
    fn size_staging_reserve(&self) {
        let bytes = self
            .budget
            .staging_reserve(self.tail_bytes(), self.options.loader_staging_bytes);
        self.gpu.staging_reserve().set_capacity(bytes);
    }

    fn pool_capacity(&self) -> u64 {
        self.budget.pool_capacity(self.options.recycle_pool_bytes)
    }

    /// The frame counter (`update` calls so far).
    pub fn frame(&self) -> u64 {
        self.frame.number
    }

    /// Textures whose view changed since the last call (rebuild their bind groups).
    pub fn take_changed(&mut self) -> Vec<TextureId> {
        let mut v = std::mem::take(&mut self.textures.changed);
        v.sort_unstable();
        v.dedup();
        v.retain(|id| self.textures.entries.get(*id).is_some());
        v
    }

    /// Bytes mipstream holds on the GPU now: resident textures, mesh
    /// buffers, the recycle pool, upload staging in flight and the loaders'
    /// reserve. Not what it released and the GPU still holds
    /// ([`retiring_bytes`](Self::retiring_bytes)).
    pub fn held_bytes(&self) -> u64 {
        self.gpu.held_bytes()
    }

    /// Bytes mipstream released that the GPU may still hold
    /// ([`crate::streamer::StreamerOptions::count_retiring`]).
    pub fn retiring_bytes(&self) -> u64 {
        self.gpu.retiring_bytes()
    }

    /// wgpu textures mipstream answers for: the registered, pooled and
    /// retiring ones (what GL's live-texture count shows of mipstream).
    pub fn gpu_textures(&self) -> u64 {
        self.textures.entries.len() as u64 + self.gpu.released_textures()
    }

    /// Held and retiring together: what the budget limits.
    pub fn gpu_bytes(&self) -> u64 {
        self.gpu.accounted_bytes()
    }

    /// Bytes the registered textures and meshes would hold with each exactly
    /// at the level `views` want (no hysteresis, look-ahead, cap on reduction
    /// or prefetch): what these views cost. The peak of it over a camera path
    /// is the path's working set, the basis of budgets that bind. Changes
    /// nothing the next `update` sees.
    pub fn wanted_bytes(&mut self, views: &[View]) -> u64 {
        self.planner.scratch().wanted_bytes(views)
    }

    /// Out-of-memory events since the streamer was made (the report keeps
    /// only the last 64).
    pub fn oom_event_count(&self) -> u64 {
        self.budget.event_count()
    }

    /// Out-of-memory events so far (the last 64).
    pub fn oom_events(&self) -> &[OomEvent] {
        self.budget.events()
    }

    /// Whether any texture or mesh is backing off after a failed load.
    pub fn has_failures(&self) -> bool {
        self.textures
            .entries
            .iter::<TextureId>()
            .any(|(_, e)| e.load.failure.is_some())
            || self
                .meshes
                .entries
                .iter::<MeshId>()
                .any(|(_, e)| e.load.failure.is_some())
    }

    /// The last frame's work.
    pub fn frame_stats(&self) -> FrameStats {
        self.frame.stats
    }

    /// The device the streamer uses.
    pub fn device(&self) -> &wgpu::Device {
        self.gpu.device()
    }

    /// Advances one frame with this frame's views: drain the loads that
    /// arrived, plan, request what the plan needs, decide the frame's work
    /// and carry it out. Never blocks on loads.
    pub fn update(&mut self, views: &[View]) -> FrameStats {
        let start = Instant::now();
        let waits = self.gpu.waits();
        self.begin_frame(views);
        self.drain();
        self.end_fades();
        let plan_start = Instant::now();
        self.plan();
        self.frame.stats.plan_time = plan_start.elapsed();
        self.request_loads();
        self.request_mesh_loads();
        self.work();
        if self.plans_in_background() {
            let handover = Instant::now();
            self.plan_next();
            self.frame.stats.plan_time += handover.elapsed();
        }
        self.end_frame(waits);
        self.frame.stats.update_time = start.elapsed();
        self.frame.stats
    }

    /// Runs `update` until every texture holds its planned levels and no loads
    /// are outstanding, waiting for the loader between updates: a deterministic
    /// "fully streamed" point for screenshots and render tests.
    pub fn settle(&mut self, views: &[View], timeout: Duration) -> Result<u32, SettleError> {
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
                return Err(SettleError::Timeout(timeout));
            }
            let nothing_arrived = self
                .textures
                .entries
                .iter::<TextureId>()
                .all(|(_, e)| e.pending.is_empty())
                && self
                    .meshes
                    .entries
                    .iter::<MeshId>()
                    .all(|(_, e)| e.pending.is_none());
            if self.loader.outstanding() > 0 && nothing_arrived {
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
        // what the budget blocks waits, unless what blocked it was this
        // frame's other uploads (staging not yet freed) or memory the GPU
        // has not given back yet (retiring: once it has, the growth fits and
        // a streamer "at rest" would move). Whether the GPU has already
        // freed them is timing, so a fast GPU can make this true one update
        // early: `settle_canonical` asks the deterministic question instead
        // (see `converged_when`).
        self.converged_when(self.gpu.staging_bytes() == 0 && self.gpu.retiring_bytes() == 0)
    }

    /// [`converged`](Self::converged), with `settled` saying whether a
    /// growth the budget held back was held back by the budget alone (not by
    /// this frame's other uploads).
    fn converged_when(&self, settled: bool) -> bool {
        let fixed = self.policy() != Policy::Budget;
        // a plan made on the planner thread may predate these views or a
        // change to the scene: holding it is not holding their plan
        let current = !self.plans_in_background() || self.planner.is_current_for(&self.frame.views);
        current
            && self.loader.outstanding() == 0
            && self.textures.restage.is_empty()
            && self.textures_converged(settled, fixed)
            && self.meshes_converged(settled)
    }

    /// Checks that accounted bytes equal the live resources (textures and
    /// mesh buffers), fit the budget in force (unless the last update could
    /// not: [`FrameStats::stuck_over_budget`]), that every texture keeps its
    /// tail and every mesh its coarsest LOD.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        self.check_mesh_invariants()?;
        self.check_texture_invariants()?;
        let held = self.gpu.held_bytes();
        let budget = self.hard_budget();
        // a forced shrink's staging (GL) is memory a cut gives back
        let staged = u64::from(self.frame.stats.giving_back) * self.gpu.staging_bytes();
        // unless the device refused the shrinks that would have freed it, or
        // a cut is given back at its pace
        let excused = self.frame.stats.stuck_over_budget || self.frame.stats.cut_paced;
        if held - staged > budget && !excused {
            return Err(InvariantViolation::OverBudget { held, budget });
        }
        // with what the GPU holds: an update begun within the budget ends
        // within it; one begun over it gives back and grows nothing
        let gpu = self.gpu.accounted_bytes();
        if gpu > budget && !self.frame.stats.giving_back && !self.frame.stats.stuck_over_budget {
            return Err(InvariantViolation::OverBudgetOnGpu {
                held,
                retiring: self.gpu.retiring_bytes(),
                budget,
            });
        }
        if self.frame.stats.giving_back && self.frame.stats.grown > 0 {
            return Err(InvariantViolation::GrewWhileGivingBack {
                grown: self.frame.stats.grown,
            });
        }
        Ok(())
    }

    /// Records an out-of-memory event: the budget loses what failed, growth
    /// pauses, the pool is dropped.
    fn record_oom(&mut self, what: String, bytes: u64) {
        let event = OomEvent {
            frame: self.frame.number,
            what,
            bytes,
            budget: self.effective_budget(),
            resident: self.gpu.held_bytes(),
            reserved_unallocated: memory::allocator_summary(self.gpu.device())
                .map(|a| a.unallocated()),
        };
        self.budget.record_oom(event);
        self.gpu.trim_pool(0);
    }

    /// A snapshot of residency, per texture and in total.
    pub fn report(&self) -> ResidencyReport {
        let mut totals = Totals {
            mesh: self.gpu.mesh_bytes(),
            pool: self.gpu.pool_bytes(),
            staging: self.gpu.staging_bytes(),
            loader_staging: self.gpu.staging_reserve().accounted(),
            loader_staging_used: self.gpu.staging_reserve().used(),
            retiring: self.gpu.retiring_bytes(),
            ..Default::default()
        };
        let textures = self.texture_reports(&mut totals);
        ResidencyReport {
            budget: self.budget_bytes(),
            effective_budget: self.effective_budget(),
            tail_bytes: self.tail_bytes(),
            totals,
            textures,
            meshes: self.mesh_reports(self.frame.number),
            frame: self.frame.stats,
            oom_events: self.oom_events().to_vec(),
            driver: self.budget.driver.clone(),
            allocator: memory::allocator_summary(self.gpu.device()),
            counters: memory::counters(self.gpu.device()),
            loads_outstanding: self.loader.outstanding(),
            warnings: self.warnings(),
        }
    }

    /// What the report should say the caller may not expect: clamped
    /// settings, a budget the tails alone exceed, views `update` skipped,
    /// textures held uncompressed because the device lacks their formats.
    fn warnings(&self) -> Vec<String> {
        let mut w = self.settings_warnings.clone();
        let (budget, tails) = (self.budget_bytes(), self.tail_bytes());
        if budget < tails {
            w.push(format!(
                "budget {} is below the {} the always-resident tails need: holding the tails alone",
                memory::human_bytes(budget),
                memory::human_bytes(tails)
            ));
        }
        if self.frame.stats.stuck_over_budget {
            w.push(format!(
                "frame {}: {} held, over the {} budget in force: the device refused the shrinks that would free it (tried again next update)",
                self.frame.number,
                memory::human_bytes(self.gpu.held_bytes()),
                memory::human_bytes(self.hard_budget())
            ));
        }
        if let Some((frame, e)) = self.frame.rejected_view {
            w.push(format!("frame {frame}: a view was skipped: {e}"));
        }
        let features = self.gpu.features();
        let fallback = self
            .textures
            .entries
            .iter::<TextureId>()
            .filter(|(_, t)| t.rgba8_fallback(features))
            .count();
        if fallback > 0 {
            w.push(format!(
                "{fallback} texture(s) held as uncompressed RGBA8 (4 bytes per texel): \
                 the device lacks their compressed formats (request TEXTURE_COMPRESSION_BC, _ETC2 or _ASTC)"
            ));
        }
        w.extend(self.loss_warnings());
        w
    }

    /// Textures the geometric error model judges while the planner uses
    /// measured loss: a count of those without one, each with a loss that
    /// cannot be used by name.
    fn loss_warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.options.planner.error_model != crate::plan::LossModel::Measured {
            return w;
        }
        let (mut missing, mut total) = (0, 0);
        for (id, e) in self.textures.entries.iter::<TextureId>() {
            total += 1;
            match self.loss_source(id, e) {
                LossSource::Measured => {}
                LossSource::Invalid(why) => w.push(format!(
                    "texture {}: {why}: the geometric error model judges it",
                    e.label
                )),
                _ => missing += 1,
            }
        }
        if missing > 0 {
            w.push(format!(
                "{missing} of {total} texture(s) carry no measured loss: the geometric error model \
                 judges them (`mipstream annotate` measures it)"
            ));
        }
        w
    }
}
