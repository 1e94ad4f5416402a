//! The residency planner: pure CPU, no `wgpu::Device`.
//!
//! Each frame the planner turns the registered textures, the objects that use
//! them and the views into a [`Plan`]: for every texture, the mip level it
//! wants (from screen-space texel density, see `density`), and the level and
//! tier it gets within the byte budget (see `fit`). The streamer then loads,
//! uploads and evicts to move residency towards the plan. An object seen too
//! coarse to need anything above its textures' tails counts for nothing, and
//! clusters of such objects cost nothing (see `clusters.rs`).
//!
//! Stability, so textures do not thrash when the camera jitters:
//! - the wanted level moves only when the continuous lod leaves the current
//!   level's range by more than [`PlannerOptions::hysteresis`], and then to
//!   `floor(lod)`;
//! - states a texture has resident are kept unless another texture is
//!   [`PlannerOptions::keep_bonus`] times better per byte;
//! - a level made resident less than [`PlannerOptions::min_residency_frames`]
//!   ago is never given up voluntarily (only when the budget itself shrinks
//!   below what the locked states and the other textures' tails need
//!   together: then no lock holds) while the views still want it; detail no
//!   view wants any more (finer than the wanted level) is free to go at once.
//!
//! Visible error of a texture held at level `r` when it wants the continuous
//! lod `x`, by default ([`LossModel::Measured`]) from the loss curve the
//! texture carries (squared error per pixel of each level against level 0,
//! see `chains.rs`), times coverage and boost: the frame's summed squared
//! error. A texture without a curve, or every texture under
//! [`LossModel::Geometric`], by the geometric model (in the measured unit
//! beside measured textures): `coverage * boost * (1 - 2^-(r - x) + loss)`,
//! where the first term
//! counts only for `r > x`, `coverage` is its weighted screen area in pixels
//! and `loss` is 0 for the full tier and
//! [`PlannerOptions::compact_quality_loss`] for the compact tier.
//! `1 - 2^-(r - x)` is the fraction of the texels each screen pixel needs
//! (along each axis) that are missing.

pub(crate) mod bound;
pub mod certify;
mod chains;
mod clusters;
mod coverage;
pub(crate) mod density;
pub mod feedback;
pub(crate) mod fit;
mod floor;
pub mod mesh;
pub mod policy;
mod terms;
mod ties;
pub mod view;

use crate::kinds::Tier;
#[cfg(test)]
use chains::Need;
use chains::{loss_curves, Fixed, State};
use density::{ObjectTerms, TextureNeedSum};
use fit::{Candidate, Fitter, Stickiness};
pub use mesh::{MeshPlan, MeshResident, PlanMesh};
pub use policy::Policy;
use terms::Binding;
pub use view::{Frustum, View, ViewError};

/// Tunables of the planner, each with its default.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerOptions {
    /// Seconds ahead a moving view is also evaluated at. Default: 0.5.
    pub look_ahead_s: f32,
    /// Added to every texture's lod: positive saves memory, negative sharpens.
    /// Default: 0.
    pub lod_bias: f32,
    /// Mips the lod must move past a level before the wanted level changes.
    /// Default: 0.25.
    pub hysteresis: f32,
    /// How much better per byte a newcomer must be to take resident bytes.
    /// Default: 1.25.
    pub keep_bonus: f64,
    /// Frames a newly resident state is kept before it may be given up
    /// voluntarily. Default: 30.
    pub min_residency_frames: u64,
    /// Visible error of the compact tier, as a fraction of the texture's
    /// coverage, on top of any missing detail: lower-bit formats degrade every
    /// pixel a little. Default: 0.15.
    pub compact_quality_loss: f32,
    /// Spend budget the fit leaves unused on a uniform floor: every texture
    /// is held at least at the finest level `L` whose extra bytes still fit
    /// (coarser where the fit already chose finer), then one level more for
    /// the textures nearest to needing it. Those levels load after
    /// everything the views need and are the first given up when the views
    /// need room, so a camera that turns or cuts finds detail already there.
    /// A plan that fuses GPU feedback first spends that budget on what the
    /// CPU alone predicts finer than the fused need, the same way (see
    /// [`Planner::take_feedback`]). Default: true.
    pub spare_floor: bool,
    /// Offer the compact tier (lower-bit formats) at all. Default: true; off,
    /// every texture stays in its full-quality format and the budget is met
    /// by dropping mips alone.
    pub compact_tier: bool,
    /// Projected geometric error, in pixels, a mesh LOD may show before a
    /// finer one is wanted. Default: 1.
    pub mesh_error_px: f32,
    /// How a texture's visible error is judged: by the geometric model, or
    /// by its measured loss where it carries one ([`crate::loss`]). Default:
    /// [`LossModel::Measured`], at or above the geometric model, or within
    /// 0.1 dB of it, at 10 of the benchmark's 12 scene and budget points
    /// (docs/results.md); textures
    /// without a measured loss are judged geometrically either way.
    pub error_model: LossModel,
    /// Certify every plan: compute a lower bound on the error any plan
    /// within the budget could reach ([`Plan::fit_bound`], [`Plan::fit_gap`]).
    /// Costs a few passes over every chain per plan. Default: true.
    pub certify: bool,
    /// Certify every plan against the integer problem too
    /// ([`Plan::fit_bound_knapsack`]): a bound the plan can meet where the
    /// LP bound cannot, at the price of a dynamic program over bytes per
    /// plan (milliseconds for a few dozen textures; the benchmark turns it
    /// on, a renderer should not). Default: false.
    pub knapsack_certificate: bool,
    /// Fuse GPU feedback into the plan ([`feedback`]); off, feedback is
    /// reported, not planned on (it measured worse: docs/feedback.md). Default: false.
    pub fuse_feedback: bool,
}

/// How the planner judges visible error (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossModel {
    /// Measured loss curves where textures carry them, the geometric model
    /// in the same unit for those that do not.
    #[default]
    Measured,
    /// The geometric model for everything: content-blind.
    Geometric,
}

impl LossModel {
    /// `measured` or `geometric`.
    pub fn key(self) -> &'static str {
        match self {
            LossModel::Measured => "measured",
            LossModel::Geometric => "geometric",
        }
    }
}

/// The geometric model's unit in the measured one when no texture carries a
/// measured loss: the mean squared error (sRGB, 0-255 scale) of a texture
/// missing all its detail above its tail. Measured with `mipstream annotate`
/// on the eight Kodak photographs in `../shared/data/ktx2-samples/kodak-vulkan`
/// (768x512, ETC1S and UASTC; not a benchmark scene): their level 4 (48x32,
/// the first level within the default 64-texel tail) has a mean level error
/// of 722 (ETC1S 817, UASTC 627). It matters only when the measured model
/// finds no measured texture at all: then it weighs every texture's
/// geometric error against the meshes' LOD error.
pub const DEFAULT_DETAIL_MSE: f64 = 720.0;

/// A texture's measured loss as the planner takes it (see [`crate::loss`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanLoss {
    /// Per level: the error of holding that level (level 0: 0).
    pub full: Vec<f32>,
    /// Per level, in the compact tier the texture would use; empty when not
    /// measured (the geometric compact loss is added to `full` then).
    pub compact: Vec<f32>,
    /// The compact tier's blur equivalent in levels ([`crate::loss`]): a
    /// compact level `r` counts at least the full tier's error at `r +
    /// compact_blur`. 0 when not measured.
    pub compact_blur: f32,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self {
            look_ahead_s: 0.5,
            lod_bias: 0.0,
            hysteresis: 0.25,
            keep_bonus: 1.25,
            min_residency_frames: 30,
            compact_quality_loss: 0.15,
            spare_floor: true,
            compact_tier: true,
            mesh_error_px: 1.0,
            error_model: LossModel::Measured,
            certify: true,
            knapsack_certificate: false,
            fuse_feedback: false,
        }
    }
}

/// What the planner needs to know about a texture.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanTexture {
    /// Texels across level 0 (the larger of width and height).
    pub size: u32,
    /// Mip levels in the file.
    pub level_count: u32,
    /// First level of the always-resident tail.
    pub tail_level: u32,
    /// Finest level allowed (from a maximum resolution); 0 for no limit.
    pub finest_allowed: u32,
    /// `resident_bytes[tier][r]`: bytes of levels `r..level_count` in that
    /// tier ([`Tier::Full`] = 0, [`Tier::Compact`] = 1). The compact list is
    /// empty when the texture has no compact tier.
    pub resident_bytes: [Vec<u64>; 2],
    /// Importance multiplier (1 = normal).
    pub boost: f32,
    /// Its measured loss, if it carries one (else the geometric model).
    pub loss: Option<PlanLoss>,
    /// Decides exact ties between textures (equal value per byte), so the
    /// plan does not depend on registration order: the streamer hashes
    /// the label, shape and tail texels. Equal keys fall back to the slot.
    pub tie_key: u64,
}

impl PlanTexture {
    fn has_compact(&self) -> bool {
        !self.resident_bytes[1].is_empty()
    }

    /// Bytes of levels `level..` in `tier`.
    pub fn bytes(&self, level: u32, tier: Tier) -> u64 {
        let list = &self.resident_bytes[tier_index(tier)];
        let list = if list.is_empty() {
            &self.resident_bytes[0]
        } else {
            list
        };
        list.get(level as usize).copied().unwrap_or(0)
    }
}

/// A texture as the planner keeps it: small and dense, with its byte tables
/// in one shared pool, so a plan walks textures through contiguous memory.
#[derive(Debug, Clone, Copy)]
struct Entry {
    size: u32,
    tail_level: u32,
    finest_allowed: u32,
    boost: f32,
    has_compact: bool,
    /// `pool[start + level]`: full-tier bytes of `level..`;
    /// `pool[start + levels + level]`: compact-tier bytes (full when none).
    start: u32,
    levels: u32,
    /// Pool entries reserved (at least `2 * levels`).
    capacity: u32,
}

impl Entry {
    #[inline]
    fn bytes(&self, pool: &[u64], level: u32, tier: Tier) -> u64 {
        if level >= self.levels {
            return 0;
        }
        let at = self.start
            + level
            + if tier == Tier::Compact {
                self.levels
            } else {
                0
            };
        pool[at as usize]
    }
}

fn tier_index(t: Tier) -> usize {
    match t {
        Tier::Full => 0,
        Tier::Compact => 1,
    }
}

/// What a texture has resident now (input to the planner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResidentState {
    /// Finest resident level.
    pub level: u32,
    /// Tier of the resident levels.
    pub tier: Tier,
    /// Frame at which this state became resident.
    pub since_frame: u64,
}

/// Why a texture is planned coarser than it wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The byte budget does not leave room.
    Budget,
    /// Its maximum resolution.
    MaxResolution,
}

/// The plan for one texture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TexturePlan {
    /// Finest continuous lod any view needs (infinite when nothing shows it).
    pub lod: f32,
    /// Weighted screen coverage in pixels.
    pub coverage: f32,
    /// Level it wants (after hysteresis and its maximum resolution).
    pub wanted: u32,
    /// Level the budget gives it.
    pub target: u32,
    /// Tier the budget gives it.
    pub tier: Tier,
    /// Why `target` is coarser than the lod asks for, if it is.
    pub limit: Option<Limit>,
    /// Error removed per byte by moving from the resident to the target state:
    /// the order loads should run in.
    pub priority: f32,
    /// The target is finer than the fit chose because of the spare-budget
    /// floor: loading it is prefetching, given up first.
    pub prefetch: bool,
}

impl Default for TexturePlan {
    fn default() -> Self {
        Self {
            lod: f32::INFINITY,
            coverage: 0.0,
            wanted: 0,
            target: 0,
            tier: Tier::Full,
            limit: None,
            priority: 0.0,
            prefetch: false,
        }
    }
}

/// The planner's output.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Per texture slot; slots without a texture hold defaults.
    pub textures: Vec<TexturePlan>,
    /// Per mesh slot; slots without a mesh hold defaults.
    pub meshes: Vec<MeshPlan>,
    /// Bytes the plan uses.
    pub bytes: u64,
    /// Bytes the always-resident tails (and coarsest mesh LODs) use alone.
    pub tail_bytes: u64,
    /// The budget planned for.
    pub budget: u64,
    /// Bytes of the budget the plan leaves free so its largest growth can
    /// happen (the old copy and the staged levels beside everything else).
    pub growth_room: u64,
    /// The plan holds more than the budget on purpose: a fixed [`Policy`]
    /// whose rule keeps floors whatever the budget (Unity's maximum level
    /// reduction). The budget fit never does.
    pub over_budget: bool,
    /// The total visible error of the states the budget fit chose (before
    /// the spare-budget floor); 0 under a fixed [`Policy`].
    pub fit_error: f64,
    /// A lower bound on the error of any plan within the budget
    /// (`bound::lower_bound`), when [`PlannerOptions::certify`] is on and
    /// the budget fit planned.
    pub fit_bound: Option<f64>,
    /// A lower bound from the integer problem with bytes rounded down to
    /// 1/8192 of the budget (`bound::knapsack_bound`), when
    /// [`PlannerOptions::knapsack_certificate`] is on and the budget fit
    /// planned: within a rounding step per texture of the best plan, where
    /// [`Self::fit_bound`] can sit far below it.
    pub fit_bound_knapsack: Option<f64>,
    /// Time the certificates ([`Self::fit_bound`], [`Self::fit_bound_knapsack`])
    /// took in this plan: part of the plan's time, not of the fit's.
    pub certificate_time: std::time::Duration,
    /// The fit's problem, when the planner captures them ([`Planner::set_capture`]).
    pub problem: Option<Box<certify::FitProblem>>,
}

/// The cells of [`bound::knapsack_bound`]'s dynamic program per plan.
const KNAPSACK_CELLS: usize = 8192;

impl Plan {
    /// How far the fit's plan is from optimal at most, as a share of its
    /// error: `(fit_error - fit_bound) / fit_error` (0 when the bound meets
    /// it). `None` without a bound.
    pub fn fit_gap(&self) -> Option<f64> {
        self.fit_bound
            .map(|b| bound::relative_gap(self.fit_error, b))
    }

    /// The same against [`Self::fit_bound_knapsack`].
    pub fn fit_gap_knapsack(&self) -> Option<f64> {
        self.fit_bound_knapsack
            .map(|b| bound::relative_gap(self.fit_error, b))
    }
}

/// Where an object's bindings are in `Planner::bindings`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectSlot {
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) alive: bool,
}

/// Plans residency; owns the CPU-side description of textures and objects.
#[derive(Debug, Default)]
pub struct Planner {
    options: PlannerOptions,
    textures: Vec<Option<Entry>>,
    /// By texture slot: the measured loss curves, `levels` full-tier values
    /// then (when measured) `levels` compact ones, made monotone; empty for
    /// a texture without.
    losses: Vec<Vec<f32>>,
    /// The geometric model's unit in the measured one (see
    /// [`chains`]'s `update_detail_scale`), and whether it is up to date
    /// (it changes only with the textures and the options: recomputed
    /// every plan, reading every measured texture's curve cost 10,000
    /// cache misses a plan at 10,000 textures).
    detail_scale: f64,
    detail_scale_fresh: bool,
    /// Byte tables of every entry (see [`Entry`]).
    pool: Vec<u64>,
    pool_garbage: usize,
    objects: Vec<ObjectSlot>,
    layout: clusters::Layout,
    bindings: Vec<Binding>,
    garbage: usize,
    wanted: Vec<u32>,
    // scratch
    object_terms: ObjectTerms,
    /// By sum index: each texture's tail level (`-inf`: the sink, none),
    /// and the lod from which a binding needs nothing of it.
    tails: Vec<f32>,
    cutoff: Vec<f32>,
    sums: Vec<TextureNeedSum>,
    /// GPU feedback taken (`feedback.rs`), fused into `sums` when it counts.
    feedback: feedback::FeedbackMemory,
    /// The CPU's own sums of this plan when it fuses feedback (empty when
    /// it does not): the fit's second objective (`feedback.rs`).
    cpu_sums: Vec<TextureNeedSum>,
    chains: Vec<Candidate>,
    states: Vec<State>,
    offsets: Vec<u32>,
    sticky: Vec<Stickiness>,
    order: Vec<usize>,
    /// Slots in the order the chains visit them (`ties`).
    ties: ties::TieOrder,
    choice: Vec<u32>,
    /// The textures [`chains`]'s `build_chains` gave no chain this plan.
    fixed: Fixed,
    /// `floor_at_tails[l]`: the spare floor's cost at level `l` with every
    /// texture at its tail (see [`floor`]), and whether it is up to date
    /// (it changes only with the textures).
    floor_at_tails: Vec<u64>,
    floor_at_tails_fresh: bool,
    /// Scratch of the spare floor's next-level steps (see [`floor`]).
    floor_steps: Vec<(u32, u32, u64)>,
    floor_sorted: Vec<(u32, u32, u64)>,
    /// Tests: give every texture a chain, as before single-state textures
    /// were left out of the fit (the plans must not differ).
    #[cfg(test)]
    chain_every_texture: bool,
    fitter: Fitter,
    bound: bound::Bound,
    /// Whether each plan keeps its problem ([`Plan::problem`]).
    capture: bool,
    plan: Plan,
    /// The spare-budget floor of the last plan (see [`PlannerOptions::spare_floor`]).
    floor: Option<u32>,
    meshes: Vec<Option<PlanMesh>>,
    mesh_wanted: Vec<u32>,
    /// By object slot: the meshes an object shows, with its bounds.
    mesh_objects: Vec<Option<mesh::MeshObject>>,
    // scratch
    mesh_need: Vec<mesh::MeshNeed>,
    mesh_order: Vec<usize>,
    /// Whether a mesh keeps its old LOD while it grows (cross-fades).
    keep_old_mesh_lod: bool,
    /// Whether a texture's growth stages its kept levels again.
    restaged_growth: bool,
    /// How levels are chosen (the budget fit, or a fixed rule).
    policy: Policy,
    /// By texture and mesh slot: the last frame a view drew it (`u64::MAX`:
    /// never), for the rules that rank by recency.
    last_seen: Vec<u64>,
    mesh_last_seen: Vec<u64>,
}

impl Planner {
    /// A planner with `options`.
    pub fn new(options: PlannerOptions) -> Self {
        Self {
            options,
            ..Default::default()
        }
    }

    /// Forgets everything earlier plans leave behind (each texture's and
    /// mesh's last wanted level, when each was last seen, the spare floor),
    /// as if every texture and mesh had just been registered.
    pub fn forget_history(&mut self) {
        for (slot, t) in self.textures.iter().enumerate() {
            if let Some(t) = t {
                self.wanted[slot] = t.tail_level;
            }
            self.last_seen[slot] = u64::MAX;
        }
        for (slot, m) in self.meshes.iter().enumerate() {
            if let Some(m) = m {
                self.mesh_wanted[slot] = m.coarsest();
            }
            self.mesh_last_seen[slot] = u64::MAX;
        }
        self.floor = None;
        self.feedback.clear();
    }

    /// The options in use.
    pub fn options(&self) -> &PlannerOptions {
        &self.options
    }

    /// Changes the options from the next plan on.
    pub fn set_options(&mut self, options: PlannerOptions) {
        self.options = options;
        self.detail_scale_fresh = false;
    }

    /// Chooses levels by a fixed [`Policy`] instead of the budget fit, from
    /// the next plan on.
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
    }

    /// The policy in use.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Whether a mesh growing to a finer LOD keeps its old one beside it
    /// (a streamer that cross-fades LODs does): the room the plan leaves for
    /// growth then counts both. Default: false.
    pub fn set_mesh_growth_keeps_old_lod(&mut self, keep: bool) {
        self.keep_old_mesh_lod = keep;
    }

    /// Whether each budget-fit plan keeps its problem in [`Plan::problem`]
    /// (`mipstream bench --dump-plans`; off by default).
    pub fn set_capture(&mut self, capture: bool) {
        self.capture = capture;
    }

    /// Whether a texture growing in its tier stages its kept levels again
    /// beside the new ones (a streamer on a backend without GPU copies,
    /// GL, does): the room plans leave for growth then counts them too.
    /// Default: false.
    pub fn set_growth_restages_kept_levels(&mut self, restages: bool) {
        self.restaged_growth = restages;
    }

    /// Sets or replaces the texture in `slot`.
    pub fn set_texture(&mut self, slot: usize, texture: PlanTexture) {
        if self.textures.len() <= slot {
            self.textures.resize(slot + 1, None);
            self.wanted.resize(slot + 1, 0);
            self.last_seen.resize(slot + 1, u64::MAX);
            self.losses.resize(slot + 1, Vec::new());
        }
        self.losses[slot] = loss_curves(&texture);
        self.ties.set(slot, texture.tie_key);
        self.detail_scale_fresh = false;
        self.floor_at_tails_fresh = false;
        self.wanted[slot] = texture.tail_level;
        self.last_seen[slot] = u64::MAX;
        let levels = texture
            .level_count
            .max(texture.resident_bytes[0].len() as u32);
        let old = self.textures[slot].take();
        if old.is_some() {
            self.layout.textures_changed();
        }
        if let Some(e) = old.filter(|e| e.size != texture.size) {
            // bindings hold log2(size): move them to the new size
            let shift = (texture.size.max(1) as f32).log2() - (e.size.max(1) as f32).log2();
            let sum = slot as u32 + 1;
            for b in self.bindings.iter_mut().filter(|b| b.sum == sum) {
                b.lod_offset += shift;
            }
        }
        let (start, capacity) = match old {
            Some(e) if e.capacity >= 2 * levels => (e.start, e.capacity),
            _ => {
                if let Some(e) = old {
                    self.pool_garbage += e.capacity as usize;
                }
                self.pool.resize(self.pool.len() + 2 * levels as usize, 0);
                ((self.pool.len() - 2 * levels as usize) as u32, 2 * levels)
            }
        };
        for tier in [Tier::Full, Tier::Compact] {
            for level in 0..levels {
                let at = start + level + if tier == Tier::Compact { levels } else { 0 };
                self.pool[at as usize] = texture.bytes(level, tier);
            }
        }
        self.textures[slot] = Some(Entry {
            size: texture.size,
            tail_level: texture.tail_level,
            finest_allowed: texture.finest_allowed,
            boost: texture.boost,
            has_compact: texture.has_compact(),
            start,
            levels,
            capacity,
        });
        if self.pool_garbage > 4096 && self.pool_garbage > self.pool.len() / 2 {
            self.compact_pool();
        }
    }

    /// Whether the texture in `slot` is judged by its measured loss (it
    /// carries one and the planner uses [`LossModel::Measured`]).
    pub fn uses_measured_loss(&self, slot: usize) -> bool {
        self.curve_of(slot).is_some()
    }

    /// Removes the texture in `slot`; objects that used it stop counting it
    /// (also when a new texture takes the slot later).
    pub fn remove_texture(&mut self, slot: usize) {
        if let Some(l) = self.losses.get_mut(slot) {
            *l = Vec::new();
        }
        self.detail_scale_fresh = false;
        self.floor_at_tails_fresh = false;
        self.ties.remove(slot);
        if let Some(e) = self.textures.get_mut(slot).and_then(Option::take) {
            self.pool_garbage += e.capacity as usize;
            let sum = slot as u32 + 1;
            self.bindings
                .iter_mut()
                .filter(|b| b.sum == sum)
                .for_each(Binding::kill);
        }
    }

    fn compact_pool(&mut self) {
        let mut packed = Vec::with_capacity(self.pool.len() - self.pool_garbage);
        for e in self.textures.iter_mut().flatten() {
            let range = e.start as usize..(e.start + 2 * e.levels) as usize;
            e.start = packed.len() as u32;
            e.capacity = 2 * e.levels;
            packed.extend_from_slice(&self.pool[range]);
        }
        self.pool = packed;
        self.pool_garbage = 0;
    }

    /// Plans residency for `views` within `budget` bytes. `resident[slot]` is
    /// what each texture has resident now (missing entries: its tail).
    pub fn plan(
        &mut self,
        views: &[View],
        budget: u64,
        resident: &[ResidentState],
        frame: u64,
    ) -> &Plan {
        self.plan_with_meshes(views, budget, resident, &[], frame)
    }

    /// [`plan`](Self::plan) with what each mesh has resident now
    /// (`meshes[slot]`; missing entries: its coarsest LOD). Textures and
    /// meshes share the budget in one fit.
    pub fn plan_with_meshes(
        &mut self,
        views: &[View],
        budget: u64,
        resident: &[ResidentState],
        meshes: &[MeshResident],
        frame: u64,
    ) -> &Plan {
        self.densities(views);
        self.fuse_feedback(frame);
        self.mesh_needs(views);
        self.plan.fit_error = 0.0;
        self.plan.fit_bound = None;
        self.plan.fit_bound_knapsack = None;
        self.plan.certificate_time = std::time::Duration::ZERO;
        if self.policy != Policy::Budget {
            self.plan_by_policy(budget, resident, meshes, frame);
            return &self.plan;
        }
        #[cfg(test)]
        let fix = !self.chain_every_texture;
        #[cfg(not(test))]
        let fix = true;
        self.build_chains(resident, frame, fix);
        if self.fixed.bytes > budget {
            // the tails alone do not fit: the fit holds them anyway, and
            // sees every texture to do it the same way as always
            self.build_chains(resident, frame, false);
        }
        let fixed = self.fixed;
        let first_mesh_chain = self.order.len();
        self.build_mesh_chains(meshes, frame);
        let used = self.fitter.fit(
            &self.chains,
            &self.offsets,
            &self.sticky,
            budget - fixed.bytes,
            &mut self.choice,
        );
        self.write_plan(resident, budget, used + fixed.bytes);
        self.plan.growth_room = self.fitter.room();
        self.plan.fit_error = fixed.error
            + (0..self.choice.len())
                .map(|i| self.chains[self.offsets[i] as usize + self.choice[i] as usize].error)
                .sum::<f64>();
        let certifying = std::time::Instant::now();
        self.plan.fit_bound = if self.options.certify {
            bound::lower_bound(
                &mut self.bound,
                &self.chains,
                &self.offsets,
                budget - fixed.bytes,
                self.fitter.marginal_gain(),
            )
            .map(|b| b + fixed.error)
        } else {
            None
        };
        if self.options.knapsack_certificate {
            self.plan.fit_bound_knapsack = bound::knapsack_bound(
                &self.chains,
                &self.offsets,
                budget - fixed.bytes,
                KNAPSACK_CELLS,
            )
            .map(|b| b + fixed.error);
        }
        self.plan.certificate_time = certifying.elapsed();
        self.plan.problem = self.capture.then(|| {
            let (fit, budget) = (&self.chains, budget - fixed.bytes);
            certify::FitProblem::capture(fit, &self.offsets, &self.sticky, &self.choice, budget)
                .with_plan(frame, fixed.error, self.plan.fit_error, self.plan.fit_bound)
        });
        self.write_mesh_plan(meshes, first_mesh_chain);
        if self.options.spare_floor {
            let spare = budget.saturating_sub(self.plan.growth_room);
            self.raise_to_prediction(spare);
            self.raise_floor(spare, resident);
        }
        &self.plan
    }

    /// Bytes held with every texture at exactly the level its views want and
    /// every mesh at exactly the LOD its views want: the floor of the lod,
    /// with no hysteresis, no look-ahead, no cap on reduction, no prefetch,
    /// full tier (the working set of these views, the basis of budgets that
    /// bind). Only scratch state changes: the next plan is as it would be.
    pub fn wanted_bytes(&mut self, views: &[View]) -> u64 {
        let look_ahead = std::mem::replace(&mut self.options.look_ahead_s, 0.0);
        self.densities(views);
        self.mesh_needs(views);
        self.options.look_ahead_s = look_ahead;
        let mut bytes = self.mesh_wanted_bytes();
        for (slot, t) in self.textures.iter().enumerate() {
            let Some(t) = t else { continue };
            let lod = self.sums[slot + 1].lod() + self.options.lod_bias;
            let level = if lod.is_finite() {
                (lod.floor().max(0.0) as u32)
                    .clamp(t.finest_allowed.min(t.tail_level), t.tail_level)
            } else {
                t.tail_level
            };
            bytes += t.bytes(&self.pool, level, Tier::Full);
        }
        bytes
    }

    /// The last plan.
    pub fn last_plan(&self) -> &Plan {
        &self.plan
    }

    /// Swaps the last plan with `plan` (the streamer keeps its last plan
    /// while the planner makes the next one; every plan call rewrites the
    /// planner's own in full).
    pub(crate) fn swap_plan(&mut self, plan: &mut Plan) {
        std::mem::swap(&mut self.plan, plan);
    }
}

#[cfg(test)]
mod tests;
