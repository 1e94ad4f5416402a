//! The residency planner: pure CPU, no `wgpu::Device`.
//!
//! Each frame the planner turns the registered textures, the objects that use
//! them and the views into a [`Plan`]: for every texture, the mip level it
//! wants (from screen-space texel density, see [`density`]), and the level and
//! tier it gets within the byte budget (see [`fit`]). The streamer then loads,
//! uploads and evicts to move residency towards the plan.
//!
//! Stability, so textures do not thrash when the camera jitters:
//! - the wanted level moves only when the continuous lod leaves the current
//!   level's range by more than [`PlannerOptions::hysteresis`], and then to
//!   `floor(lod)`;
//! - states a texture has resident are kept unless another texture is
//!   [`PlannerOptions::keep_bonus`] times better per byte;
//! - a level made resident less than [`PlannerOptions::min_residency_frames`]
//!   ago is never given up voluntarily (only when the budget itself shrinks).
//!
//! Visible error of a texture held at level `r` when it wants the continuous
//! lod `x`: `coverage * boost * (1 - 2^-(r - x) + loss)`, where the first term
//! counts only for `r > x`, `coverage` is its weighted screen area in pixels
//! and `loss` is 0 for the full tier and
//! [`PlannerOptions::compact_quality_loss`] for the compact tier.
//! `1 - 2^-(r - x)` is the fraction of the texels each screen pixel needs
//! (along each axis) that are missing.

pub mod density;
pub mod fit;
pub mod view;

use crate::transcode::Tier;
use density::{Binding, DensityPass, ViewTerms};
use fit::{Candidate, Fitter, Stickiness};
use glam::Vec3;
pub use view::{Frustum, View};

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
        }
    }
}

/// The planner's output.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Per texture slot; slots without a texture hold defaults.
    pub textures: Vec<TexturePlan>,
    /// Bytes the plan uses.
    pub bytes: u64,
    /// Bytes the always-resident tails use alone.
    pub tail_bytes: u64,
    /// The budget planned for.
    pub budget: u64,
}

#[derive(Debug, Clone, Copy)]
struct ObjectSlot {
    center: Vec3,
    half: Vec3,
    start: u32,
    len: u32,
    alive: bool,
}

/// A chain entry's state, parallel to the fit's candidates.
#[derive(Debug, Clone, Copy)]
struct State {
    level: u32,
    tier: Tier,
}

/// What the views need of a texture this frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Need {
    /// Finest lod any pixel needs.
    pub(crate) finest: f32,
    /// Coverage-weighted lod most pixels need.
    pub(crate) typical: f32,
    /// Weighted screen coverage in pixels.
    pub(crate) coverage: f32,
}

/// Visible error of `t` held at `level` in `tier` (see the module docs).
fn error(opts: &PlannerOptions, t: &PlanTexture, need: Need, level: u32, tier: Tier) -> f64 {
    let loss = if tier == Tier::Compact {
        opts.compact_quality_loss as f64
    } else {
        0.0
    };
    let miss = |lod: f32| 1.0 - (-((level as f32 - (lod + opts.lod_bias)).max(0.0) as f64)).exp2();
    // A vanishing term per level and tier keeps every step worth taking, so
    // spare budget still brings unseen or covered-by-nothing textures to their
    // wanted level, after everything that shows.
    let tie = 1e-12 * (level as f64 + loss);
    if need.coverage <= 0.0 {
        return tie;
    }
    let missing = 0.75 * miss(need.typical) + 0.25 * miss(need.finest);
    need.coverage as f64 * t.boost.max(0.0) as f64 * (missing + loss) + tie
}

/// Plans residency; owns the CPU-side description of textures and objects.
#[derive(Debug, Default)]
pub struct Planner {
    options: PlannerOptions,
    textures: Vec<Option<PlanTexture>>,
    objects: Vec<ObjectSlot>,
    bindings: Vec<Binding>,
    garbage: usize,
    wanted: Vec<u32>,
    // scratch
    lod: Vec<f32>,
    coverage: Vec<f32>,
    lod_sum: Vec<f32>,
    chains: Vec<Candidate>,
    states: Vec<State>,
    offsets: Vec<u32>,
    sticky: Vec<Stickiness>,
    order: Vec<usize>,
    choice: Vec<u32>,
    fitter: Fitter,
    plan: Plan,
}

impl Planner {
    /// A planner with `options`.
    pub fn new(options: PlannerOptions) -> Self {
        Self {
            options,
            ..Default::default()
        }
    }

    /// The options in use.
    pub fn options(&self) -> &PlannerOptions {
        &self.options
    }

    /// Changes the options from the next plan on.
    pub fn set_options(&mut self, options: PlannerOptions) {
        self.options = options;
    }

    /// Sets or replaces the texture in `slot`.
    pub fn set_texture(&mut self, slot: usize, texture: PlanTexture) {
        if self.textures.len() <= slot {
            self.textures.resize(slot + 1, None);
            self.wanted.resize(slot + 1, 0);
        }
        self.wanted[slot] = texture.tail_level;
        self.textures[slot] = Some(texture);
    }

    /// Removes the texture in `slot`; objects still naming it ignore it.
    pub fn remove_texture(&mut self, slot: usize) {
        if let Some(t) = self.textures.get_mut(slot) {
            *t = None;
        }
    }

    /// Sets or replaces the object in `slot`: its bounding box (`center` plus
    /// or minus `half`) and, per texture slot it uses, the world units one UV
    /// unit spans.
    pub fn set_object(&mut self, slot: usize, center: Vec3, half: Vec3, textures: &[(usize, f32)]) {
        if self.objects.len() <= slot {
            let empty = ObjectSlot {
                center: Vec3::ZERO,
                half: Vec3::ZERO,
                start: 0,
                len: 0,
                alive: false,
            };
            self.objects.resize(slot + 1, empty);
        }
        let bindings = textures.iter().filter_map(|&(t, world_per_uv)| {
            let size = self.textures.get(t)?.as_ref()?.size.max(1);
            Some(Binding {
                texture: t as u32,
                lod_offset: (size as f32).log2() - world_per_uv.max(1e-9).log2(),
            })
        });
        let bindings: Vec<Binding> = bindings.collect();
        let o = &mut self.objects[slot];
        if o.alive && bindings.len() <= o.len as usize {
            let start = o.start as usize;
            self.bindings[start..start + bindings.len()].copy_from_slice(&bindings);
            self.garbage += o.len as usize - bindings.len();
        } else {
            if o.alive {
                self.garbage += o.len as usize;
            }
            o.start = self.bindings.len() as u32;
            self.bindings.extend_from_slice(&bindings);
        }
        let o = &mut self.objects[slot];
        o.len = bindings.len() as u32;
        o.center = center;
        o.half = half.abs();
        o.alive = true;
        if self.garbage > 1024 && self.garbage > self.bindings.len() / 2 {
            self.compact_bindings();
        }
    }

    /// Moves the object in `slot`.
    pub fn move_object(&mut self, slot: usize, center: Vec3, half: Vec3) {
        if let Some(o) = self.objects.get_mut(slot).filter(|o| o.alive) {
            o.center = center;
            o.half = half.abs();
        }
    }

    /// Removes the object in `slot`.
    pub fn remove_object(&mut self, slot: usize) {
        if let Some(o) = self.objects.get_mut(slot).filter(|o| o.alive) {
            o.alive = false;
            self.garbage += o.len as usize;
        }
    }

    fn compact_bindings(&mut self) {
        let mut packed = Vec::with_capacity(self.bindings.len() - self.garbage);
        for o in self.objects.iter_mut().filter(|o| o.alive) {
            let start = o.start as usize;
            o.start = packed.len() as u32;
            packed.extend_from_slice(&self.bindings[start..start + o.len as usize]);
        }
        self.bindings = packed;
        self.garbage = 0;
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
        self.densities(views);
        self.build_chains(resident, frame);
        let used = self.fitter.fit(
            &self.chains,
            &self.offsets,
            &self.sticky,
            budget,
            &mut self.choice,
        );
        self.write_plan(resident, budget, used);
        &self.plan
    }

    /// The last plan.
    pub fn last_plan(&self) -> &Plan {
        &self.plan
    }

    fn densities(&mut self, views: &[View]) {
        let n = self.textures.len();
        self.lod.clear();
        self.lod.resize(n, f32::INFINITY);
        self.coverage.clear();
        self.coverage.resize(n, 0.0);
        self.lod_sum.clear();
        self.lod_sum.resize(n, 0.0);
        let terms: Vec<ViewTerms> = views
            .iter()
            .map(|v| ViewTerms::new(v, self.options.look_ahead_s))
            .collect();
        let mut pass = DensityPass {
            views: &terms,
            lod: &mut self.lod,
            coverage: &mut self.coverage,
            lod_sum: &mut self.lod_sum,
        };
        for o in self.objects.iter().filter(|o| o.alive) {
            let b = &self.bindings[o.start as usize..(o.start + o.len) as usize];
            pass.object(o.center, o.half, b);
        }
    }

    /// The wanted level of texture `t` with hysteresis against the last one.
    fn wanted_level(&self, t: &PlanTexture, lod: f32, previous: u32) -> u32 {
        let x = lod + self.options.lod_bias;
        if !x.is_finite() {
            return t.tail_level;
        }
        let h = self.options.hysteresis;
        let p = previous as f32;
        // move only once the lod is past the current level by the margin,
        // then all the way to what it needs
        let level = if x < p - h || x >= p + 1.0 + h {
            x.floor()
        } else {
            p
        };
        (level.max(0.0) as u32).clamp(t.finest_allowed.min(t.tail_level), t.tail_level)
    }

    fn error(&self, t: &PlanTexture, need: Need, level: u32, tier: Tier) -> f64 {
        error(&self.options, t, need, level, tier)
    }

    fn need(&self, slot: usize) -> Need {
        let (finest, coverage) = (self.lod[slot], self.coverage[slot]);
        let typical = if coverage > 0.0 {
            self.lod_sum[slot] / coverage
        } else {
            finest
        };
        Need {
            finest,
            typical: typical.max(finest),
            coverage,
        }
    }

    fn build_chains(&mut self, resident: &[ResidentState], frame: u64) {
        self.chains.clear();
        self.states.clear();
        self.offsets.clear();
        self.sticky.clear();
        self.order.clear();
        self.offsets.push(0);
        for slot in 0..self.textures.len() {
            let Some(t) = &self.textures[slot] else {
                continue;
            };
            let need = self.need(slot);
            let wanted = self.wanted_level(t, need.finest, self.wanted[slot]);
            self.wanted[slot] = wanted;
            let options = &self.options;
            let push = |chains: &mut Vec<Candidate>, states: &mut Vec<State>, level, tier| {
                chains.push(Candidate {
                    bytes: t.bytes(level, tier),
                    error: error(options, t, need, level, tier),
                });
                states.push(State { level, tier });
            };
            let r = resident.get(slot).copied();
            let locked = r.is_some_and(|r| {
                frame.saturating_sub(r.since_frame) < self.options.min_residency_frames
            });
            // a locked state finer than what is wanted stays in the running
            let finest = match r {
                Some(r) if locked => wanted.min(r.level),
                _ => wanted,
            };
            let start = self.chains.len();
            push(&mut self.chains, &mut self.states, t.tail_level, Tier::Full);
            for level in (finest..t.tail_level).rev() {
                if t.has_compact() {
                    push(&mut self.chains, &mut self.states, level, Tier::Compact);
                }
                push(&mut self.chains, &mut self.states, level, Tier::Full);
            }
            self.offsets.push(self.chains.len() as u32);
            let resident_index = r.map_or(0, |r| {
                self.states[start..]
                    .iter()
                    .rposition(|s| {
                        s.level >= r.level && (s.tier == r.tier || s.level >= t.tail_level)
                    })
                    .unwrap_or(0)
            });
            self.sticky.push(Stickiness {
                resident: resident_index,
                keep_bonus: self.options.keep_bonus,
                locked,
            });
            self.order.push(slot);
        }
    }

    fn write_plan(&mut self, resident: &[ResidentState], budget: u64, used: u64) {
        self.plan.textures.clear();
        self.plan
            .textures
            .resize(self.textures.len(), TexturePlan::default());
        self.plan.budget = budget;
        self.plan.bytes = used;
        self.plan.tail_bytes = 0;
        for (i, &slot) in self.order.iter().enumerate() {
            let t = self.textures[slot]
                .as_ref()
                .expect("planned textures exist");
            let base = self.offsets[i] as usize;
            let chosen = self.states[base + self.choice[i] as usize];
            let (lod, cov, wanted) = (self.lod[slot], self.coverage[slot], self.wanted[slot]);
            let limit = if chosen.level > wanted || chosen.tier == Tier::Compact {
                Some(Limit::Budget)
            } else if t.finest_allowed > 0
                && wanted == t.finest_allowed
                && (lod + self.options.lod_bias).floor() < wanted as f32
            {
                Some(Limit::MaxResolution)
            } else {
                None
            };
            let r = resident
                .get(slot)
                .map_or((t.tail_level, Tier::Full), |r| (r.level, r.tier));
            let (e_now, b_now) = (self.error(t, self.need(slot), r.0, r.1), t.bytes(r.0, r.1));
            let (e_to, b_to) = (
                self.chains[base + self.choice[i] as usize].error,
                t.bytes(chosen.level, chosen.tier),
            );
            self.plan.tail_bytes += t.bytes(t.tail_level, Tier::Full);
            self.plan.textures[slot] = TexturePlan {
                lod,
                coverage: cov,
                wanted,
                target: chosen.level,
                tier: chosen.tier,
                limit,
                priority: ((e_now - e_to).max(0.0) / b_to.saturating_sub(b_now).max(1) as f64)
                    as f32,
            };
        }
    }
}

#[cfg(test)]
mod tests;
