//! Each texture's chain of candidate states for the fit: the level it
//! wants (with hysteresis), and for every level from its tail to the finest
//! it may hold, in each tier it has, the bytes, the visible error (the error
//! model of the module docs) and the room growing into it needs; then the
//! fit's choices written back as the plan.

use super::density;
use super::fit::{Candidate, Stickiness};
use super::PlanTexture;
use super::{
    Entry, Limit, LossModel, Planner, PlannerOptions, ResidentState, TexturePlan,
    DEFAULT_DETAIL_MSE,
};
use crate::kinds::Tier;

/// What the textures left out of the fit hold (each its tail, the only
/// state it has this plan): bytes and error, constants to the fit.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Fixed {
    pub(super) bytes: u64,
    pub(super) error: f64,
}

/// A chain entry's state, parallel to the fit's candidates.
#[derive(Debug, Clone, Copy)]
pub(super) struct State {
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

/// A texture's measured loss curves (see [`crate::loss`]), as the planner
/// holds them: `full[l]` the error of level `l` (non-decreasing), `compact[l]`
/// that of the compact tier (at least `full[l]`), empty when not measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct Curve<'a> {
    full: &'a [f32],
    compact: &'a [f32],
    /// The compact tier's blur equivalent in levels (read only when used:
    /// making a `Curve` touches no curve data, so a texture nothing shows
    /// costs no cache miss).
    blur: Option<&'a f32>,
}

impl<'a> Curve<'a> {
    /// The curves stored for one texture by [`super::Planner::set_texture`]
    /// (`levels` full values, then, when measured, `levels` compact ones and
    /// the blur equivalent).
    pub(super) fn new(stored: &'a [f32], levels: usize) -> Option<Self> {
        if levels == 0 || stored.len() < levels {
            return None;
        }
        let compact = stored.get(levels..2 * levels).unwrap_or(&[]);
        Some(Self {
            full: &stored[..levels],
            compact,
            blur: stored.get(2 * levels),
        })
    }

    /// The full tier's error at the continuous lod `x`: level 0's below 0,
    /// interpolated between levels, the coarsest level's beyond it.
    fn at(&self, x: f64) -> f64 {
        interpolate(self.full, x)
    }

    /// The error a pixel sampling lod `x` shows with every level resident:
    /// trilinear filtering blends levels `i = floor(x)` and `i + 1` by
    /// `f = x - i`, and holding only level `i + 1` loses `(1 - f)` of the
    /// band between them in amplitude, so `(1 - f)^2` of its energy. What
    /// the pixel misses of a coarser level `r` is `F(r)` minus this (the
    /// bands between levels taken as uncorrelated), not `F(r) - F(x)`
    /// with `F` interpolated linearly, which overstates what a level
    /// finer than needed by a fraction of a level would add.
    fn reference_at(&self, x: f64) -> f64 {
        let n = self.full.len();
        if x.is_nan() || x <= 0.0 {
            return self.full[0] as f64;
        }
        if x >= (n - 1) as f64 {
            return self.full[n - 1] as f64;
        }
        let i = x as usize;
        let f = x - i as f64;
        let (a, b) = (self.full[i] as f64, self.full[i + 1] as f64);
        a + f * (2.0 - f) * (b - a)
    }

    /// The compact tier's error at the continuous lod `x`: its measured
    /// curve, but at least what the full tier shows its blur equivalent
    /// coarser (squared error undersells block artifacts); without a
    /// measured compact curve, the full tier's plus `loss`.
    fn compact_at(&self, x: f64, loss: f64) -> f64 {
        if self.compact.is_empty() {
            return self.at(x) + loss;
        }
        let blur = self.blur.map_or(0.0, |&b| b as f64);
        interpolate(self.compact, x).max(self.at(x + blur))
    }
}

/// `curve` (one value per level, not empty) at the continuous lod `x`:
/// level 0's below 0, interpolated between levels, the coarsest level's
/// beyond it.
fn interpolate(curve: &[f32], x: f64) -> f64 {
    let n = curve.len();
    if x.is_nan() || x <= 0.0 {
        return curve[0] as f64;
    }
    if x >= (n - 1) as f64 {
        return curve[n - 1] as f64;
    }
    let i = x as usize;
    let f = x - i as f64;
    curve[i] as f64 * (1.0 - f) + curve[i + 1] as f64 * f
}

/// The vanishing error of every state (see [`ErrorModel::at`]): `loss` is
/// the tier's quality loss (0 for the full tier).
fn tie_break(level: u32, loss: f64) -> f64 {
    1e-12 * (level as f64 + loss)
}

/// The visible-error model of one texture this frame (see the module docs):
/// the error of holding it at a level in a tier. Measured when the texture
/// carries its loss curves and the planner uses [`super::LossModel::Measured`]
/// (squared error per pixel times coverage: a frame's summed squared error),
/// geometric otherwise (the share of needed texels missing, times coverage,
/// times `scale` to put it in the measured unit beside measured textures).
#[derive(Debug, Clone, Copy)]
pub(super) struct ErrorModel<'a> {
    /// Screen coverage times boost; 0 when nothing shows the texture.
    weight: f64,
    /// Lods (with the bias) that most pixels and the finest pixel need.
    typical: f64,
    finest: f64,
    compact_loss: f64,
    /// The measured curves, with their error at `typical` and `finest`.
    curve: Option<(Curve<'a>, f64, f64)>,
    /// The geometric model's unit in the measured one (1 when every texture
    /// is geometric).
    scale: f64,
}

impl<'a> ErrorModel<'a> {
    pub(super) fn new(
        opts: &PlannerOptions,
        boost: f32,
        need: Need,
        curve: Option<Curve<'a>>,
        scale: f64,
    ) -> Self {
        let bias = opts.lod_bias as f64;
        let (typical, finest) = (need.typical as f64 + bias, need.finest as f64 + bias);
        let weight = if need.coverage > 0.0 {
            need.coverage as f64 * boost.max(0.0) as f64
        } else {
            0.0
        };
        Self {
            weight,
            typical,
            finest,
            compact_loss: opts.compact_quality_loss as f64,
            // unused without weight (the error is the tie-break alone): not
            // read, most textures of a large scene show on nothing
            curve: curve
                .filter(|_| weight > 0.0)
                .map(|c| (c, c.reference_at(typical), c.reference_at(finest))),
            scale,
        }
    }

    /// The fraction of the needed texels that `level` holds for the typical
    /// and the finest pixel, before clamping to 1: `2^(lod - level)`.
    fn texel_ratios(&self, level: u32) -> (f64, f64) {
        if self.weight <= 0.0 {
            // unused: the error is the tie-break alone (and most textures
            // of a large scene show on nothing near enough to count)
            return (0.0, 0.0);
        }
        let l = level as f64;
        (
            density::exp2(self.typical - l),
            density::exp2(self.finest - l),
        )
    }

    /// The error at `level` in `tier`.
    pub(super) fn at(&self, level: u32, tier: Tier) -> f64 {
        self.with_ratios(level, tier, self.texel_ratios(level))
    }

    /// The error at `level` in `tier`, given its [`texel_ratios`](Self::texel_ratios)
    /// (a chain walks levels by doubling them instead of calling `exp2`).
    fn with_ratios(&self, level: u32, tier: Tier, (typical, finest): (f64, f64)) -> f64 {
        let loss = if tier == Tier::Compact {
            self.compact_loss
        } else {
            0.0
        };
        // A vanishing term per level and tier keeps every step worth taking,
        // so spare budget still brings unseen or covered-by-nothing textures
        // to their wanted level, after everything that shows.
        let tie = tie_break(level, loss);
        if self.weight <= 0.0 {
            return tie;
        }
        if let Some((c, at_typical, at_finest)) = self.curve {
            let missing = match tier {
                Tier::Full => {
                    let e = c.full[(level as usize).min(c.full.len() - 1)] as f64;
                    0.75 * (e - at_typical).max(0.0) + 0.25 * (e - at_finest).max(0.0)
                }
                // A pixel that needs lod `x` finer than the level held sees
                // the compact level; one that needs a coarser lod sees its
                // own levels compressed, so the compact tier costs it its
                // artifacts too.
                Tier::Compact => {
                    let (l, loss) = (level as f64, loss * self.scale);
                    let seen = |x: f64, reference: f64| {
                        if x >= l {
                            c.compact_at(x, loss) - c.at(x)
                        } else {
                            (c.compact_at(l, loss) - reference).max(0.0)
                        }
                    };
                    0.75 * seen(self.typical, at_typical) + 0.25 * seen(self.finest, at_finest)
                }
            };
            return self.weight * missing + tie;
        }
        let missing = 0.75 * (1.0 - typical.min(1.0)) + 0.25 * (1.0 - finest.min(1.0));
        self.weight * (missing + loss) * self.scale + tie
    }
}

/// Visible error of `t` held at `level` in `tier` (see the module docs).
#[cfg(test)]
fn error(opts: &PlannerOptions, t: &PlanTexture, need: Need, level: u32, tier: Tier) -> f64 {
    ErrorModel::new(opts, t.boost, need, None, 1.0).at(level, tier)
}

/// The need of a texture's summed views.
fn need_of(sum: super::density::TextureNeedSum) -> Need {
    let finest = sum.lod();
    let typical = if sum.coverage > 0.0 {
        sum.lod_sum / sum.coverage
    } else {
        finest
    };
    Need {
        finest,
        typical: typical.max(finest),
        coverage: sum.coverage,
    }
}

/// The measured curves `stored` for a texture of `levels` levels, when the
/// planner's `options` judge by them.
fn measured_curve<'a>(
    options: &PlannerOptions,
    stored: &'a [f32],
    levels: u32,
) -> Option<Curve<'a>> {
    if options.error_model != LossModel::Measured {
        return None;
    }
    Curve::new(stored, levels as usize)
}

/// The error model of the texture `t` in `slot` for `need` this frame (see
/// [`Planner::losses`] and [`Planner::detail_scale`]).
fn model_of<'a>(
    options: &PlannerOptions,
    losses: &'a [Vec<f32>],
    detail_scale: f64,
    slot: usize,
    t: &Entry,
    need: Need,
) -> ErrorModel<'a> {
    let curve = measured_curve(options, &losses[slot], t.levels);
    ErrorModel::new(options, t.boost, need, curve, detail_scale)
}

impl Entry {
    /// Bytes growing this texture from what it holds (`r`; its tail when
    /// `None`) into `level` in `tier` needs beside the plan for a moment:
    /// growing holds the old texture beside the new one while the new
    /// levels are staged, so the new state's bytes, plus the whole old
    /// texture when the tier changes (and, `restaged`, without GPU copies
    /// the kept levels staged again); nothing for a state no finer than it
    /// holds.
    pub(super) fn growth_bytes(
        &self,
        pool: &[u64],
        restaged: bool,
        r: Option<ResidentState>,
        level: u32,
        tier: Tier,
    ) -> u64 {
        let held = r.map_or((self.tail_level, Tier::Full), |r| (r.level, r.tier));
        if level >= self.tail_level || (tier == held.1 && level >= held.0) {
            0
        } else if tier == held.1 || held.0 >= self.tail_level {
            let kept = if restaged {
                self.bytes(pool, held.0, held.1)
            } else {
                0
            };
            self.bytes(pool, level, tier) + kept
        } else {
            self.bytes(pool, level, tier) + self.bytes(pool, held.0, held.1)
        }
    }
}

impl Planner {
    /// The wanted level of texture `t` with hysteresis against the last one.
    pub(super) fn wanted_level(&self, t: &Entry, lod: f32, previous: u32) -> u32 {
        let x = lod + self.options.lod_bias;
        if !x.is_finite() {
            return t.tail_level;
        }
        let h = self.options.hysteresis;
        let p = previous as f32;
        // move only once the lod is past the current level by the margin,
        // then all the way to what it needs
        let level = if x < p - h || x >= p + 1.0 + h {
            // floor without a libm call (x86-64 has no SSE4.1 round by default);
            // the clamp keeps the cast exact, the result is clamped below anyway
            let x = x.clamp(-1e6, 1e6);
            let t = x as i32 as f32;
            if t > x {
                t - 1.0
            } else {
                t
            }
        } else {
            p
        };
        (level.max(0.0) as u32).clamp(t.finest_allowed.min(t.tail_level), t.tail_level)
    }

    #[cfg(test)]
    pub(super) fn error(&self, t: &PlanTexture, need: Need, level: u32, tier: Tier) -> f64 {
        error(&self.options, t, need, level, tier)
    }

    pub(super) fn need(&self, slot: usize) -> Need {
        need_of(self.sums[slot + 1])
    }

    /// What the CPU alone predicts of the texture in `slot`, when this plan
    /// fuses GPU feedback (see `floor.rs`).
    pub(super) fn cpu_need(&self, slot: usize) -> Option<Need> {
        self.cpu_sums.get(slot + 1).copied().map(need_of)
    }

    /// The geometric model's unit in the measured one: the mean error the
    /// measured textures show at their tails (a texture missing all its
    /// detail above the tail), or [`DEFAULT_DETAIL_MSE`] when none is
    /// measured. 1 when the planner uses the geometric model.
    pub(super) fn update_detail_scale(&mut self) {
        if self.detail_scale_fresh {
            return;
        }
        self.detail_scale_fresh = true;
        self.detail_scale = 1.0;
        if self.options.error_model != LossModel::Measured {
            return;
        }
        let (mut sum, mut n) = (0.0, 0usize);
        for (t, loss) in self.textures.iter().zip(&self.losses) {
            let Some(t) = t else { continue };
            if let Some(c) = Curve::new(loss, t.levels as usize) {
                sum += c.full[(t.tail_level as usize).min(c.full.len() - 1)] as f64;
                n += 1;
            }
        }
        self.detail_scale = if n > 0 && sum > 0.0 {
            sum / n as f64
        } else {
            DEFAULT_DETAIL_MSE
        };
    }

    /// The measured curves of the texture in `slot`, when the planner uses them.
    pub(super) fn curve_of(&self, slot: usize) -> Option<Curve<'_>> {
        let t = self.textures.get(slot)?.as_ref()?;
        measured_curve(&self.options, self.losses.get(slot)?, t.levels)
    }

    /// Builds every texture's chain for the fit. With `fix`, a texture
    /// whose only state is its tail (it wants nothing finer) gets no chain:
    /// its plan is written here, its bytes and error are summed into
    /// [`Planner::fixed`] for the fit and the certificate to add back (in a
    /// large scene most textures, most frames: a single-state chain is a
    /// constant to the fit, but building and carrying it cost more than the
    /// rest of the plan).
    pub(super) fn build_chains(&mut self, resident: &[ResidentState], frame: u64, fix: bool) {
        self.update_detail_scale();
        self.chains.clear();
        self.states.clear();
        self.offsets.clear();
        self.sticky.clear();
        self.order.clear();
        self.offsets.push(0);
        self.fixed = Fixed::default();
        self.plan.textures.clear();
        self.plan
            .textures
            .resize(self.textures.len(), TexturePlan::default());
        self.plan.tail_bytes = 0;
        // by tie key (`ties.rs`): the chain order is the order the fit
        // breaks exact ties in
        let mut ties = std::mem::take(&mut self.ties);
        for &slot in ties.slots() {
            let Some(t) = self.textures[slot] else {
                continue;
            };
            let need = self.need(slot);
            let wanted = self.wanted_level(&t, need.finest, self.wanted[slot]);
            self.wanted[slot] = wanted;
            let r = resident.get(slot).copied();
            if fix && wanted >= t.tail_level {
                let tail = State {
                    level: t.tail_level,
                    tier: Tier::Full,
                };
                let bytes = t.bytes(&self.pool, tail.level, tail.tier);
                // the error `ErrorModel` gives a texture at its tail: the
                // tie-break alone when nothing shows it or every pixel
                // needs the tail or coarser (both models' error is then 0
                // at the tail, the measured curves being non-decreasing):
                // the curves, a cache miss each, are read only otherwise
                let bias = self.options.lod_bias as f64;
                let coarse = |lod: f32| lod as f64 + bias >= tail.level as f64;
                let error = if need.coverage > 0.0 && !(coarse(need.typical) && coarse(need.finest))
                {
                    self.model_of(slot, &t, need).at(tail.level, tail.tier)
                } else {
                    tie_break(tail.level, 0.0)
                };
                self.fixed.bytes += bytes;
                self.fixed.error += error;
                self.plan.tail_bytes += bytes;
                self.plan.textures[slot] = self.texture_plan(slot, &t, tail, error, resident);
                continue;
            }
            let model = model_of(
                &self.options,
                &self.losses,
                self.detail_scale,
                slot,
                &t,
                need,
            );
            let pool = &self.pool;
            let restaged = self.restaged_growth;
            let grow = |level: u32, tier: Tier| t.growth_bytes(pool, restaged, r, level, tier);
            let push =
                |chains: &mut Vec<Candidate>, states: &mut Vec<State>, level, tier, ratios| {
                    chains.push(Candidate {
                        bytes: t.bytes(pool, level, tier),
                        error: model.with_ratios(level, tier, ratios),
                        grow: grow(level, tier),
                    });
                    states.push(State { level, tier });
                };
            // a state made resident recently is not given up voluntarily
            // while the views still want it (no finer than their level):
            // detail no view wants any more is free to go at once
            let locked = r.is_some_and(|r| {
                frame.saturating_sub(r.since_frame) < self.options.min_residency_frames
                    && r.level >= wanted
            });
            let finest = wanted;
            let start = self.chains.len();
            let mut ratios = model.texel_ratios(t.tail_level);
            push(
                &mut self.chains,
                &mut self.states,
                t.tail_level,
                Tier::Full,
                ratios,
            );
            for level in (finest..t.tail_level).rev() {
                // one level finer holds twice the texels per axis
                ratios = (ratios.0 * 2.0, ratios.1 * 2.0);
                if t.has_compact && self.options.compact_tier {
                    push(
                        &mut self.chains,
                        &mut self.states,
                        level,
                        Tier::Compact,
                        ratios,
                    );
                }
                push(
                    &mut self.chains,
                    &mut self.states,
                    level,
                    Tier::Full,
                    ratios,
                );
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
        self.ties = ties;
    }

    /// The error model of the texture `t` in `slot` for `need` this frame.
    pub(super) fn model_of(&self, slot: usize, t: &Entry, need: Need) -> ErrorModel<'_> {
        model_of(
            &self.options,
            &self.losses,
            self.detail_scale,
            slot,
            t,
            need,
        )
    }

    /// The plan of the texture `t` in `slot` given the state the fit chose
    /// for it and that state's error.
    fn texture_plan(
        &self,
        slot: usize,
        t: &Entry,
        chosen: State,
        error_to: f64,
        resident: &[ResidentState],
    ) -> TexturePlan {
        let (lod, cov) = (self.sums[slot + 1].lod(), self.sums[slot + 1].coverage);
        let wanted = self.wanted[slot];
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
        let pool = &self.pool;
        // the loader serves the largest error removed per byte first;
        // nothing to load when it stays or shrinks within the full tier
        // (no error removed: a level's error never falls as it coarsens)
        let shrinks = r.1 == Tier::Full && chosen.tier == Tier::Full && r.0 <= chosen.level;
        let priority = if (chosen.level, chosen.tier) == r || shrinks {
            0.0
        } else {
            let model = self.model_of(slot, t, self.need(slot));
            let e_now = model.at(r.0, r.1);
            let b_now = t.bytes(pool, r.0, r.1);
            let b_to = t.bytes(pool, chosen.level, chosen.tier);
            ((e_now - error_to).max(0.0) / b_to.saturating_sub(b_now).max(1) as f64) as f32
        };
        TexturePlan {
            lod,
            coverage: cov,
            wanted,
            target: chosen.level,
            tier: chosen.tier,
            limit,
            priority,
            prefetch: false,
        }
    }

    /// Writes the plan of every texture with a chain (those without were
    /// written by [`build_chains`](Self::build_chains)) and the plan's
    /// totals.
    pub(super) fn write_plan(&mut self, resident: &[ResidentState], budget: u64, used: u64) {
        self.plan.budget = budget;
        self.plan.bytes = used;
        self.plan.over_budget = false;
        for i in 0..self.order.len() {
            let slot = self.order[i];
            let t = self.textures[slot].expect("planned textures exist");
            let at = self.offsets[i] as usize + self.choice[i] as usize;
            let (chosen, error) = (self.states[at], self.chains[at].error);
            self.plan.tail_bytes += t.bytes(&self.pool, t.tail_level, Tier::Full);
            self.plan.textures[slot] = self.texture_plan(slot, &t, chosen, error, resident);
        }
    }
}

/// A texture's loss curves as the planner stores them (see
/// [`Planner::losses`]): the full tier's made non-decreasing, then the
/// compact tier's, at least the full tier's, and its blur equivalent; empty
/// when the texture carries none or its lists do not match its levels.
pub(super) fn loss_curves(t: &PlanTexture) -> Vec<f32> {
    let levels = t.level_count.max(t.resident_bytes[0].len() as u32) as usize;
    let Some(loss) = t
        .loss
        .as_ref()
        .filter(|l| l.full.len() == levels && levels > 0)
    else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(2 * levels);
    let mut top = 0.0f32;
    for &e in &loss.full {
        top = top.max(if e.is_finite() { e } else { 0.0 });
        out.push(top);
    }
    if loss.compact.len() == levels {
        let mut top = 0.0f32;
        for (l, &e) in loss.compact.iter().enumerate() {
            top = top.max(if e.is_finite() { e } else { 0.0 });
            out.push(top.max(out[l]));
        }
        let blur = loss.compact_blur;
        out.push(if blur.is_finite() { blur.max(0.0) } else { 0.0 });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured texture: level errors 0, 100, 300, 700, 1500 (the
    /// bands between levels 100, 200, 400, 800), its compact tier 20 above
    /// the full tier at every level, no blur equivalent to speak of.
    const FULL: [f32; 5] = [0.0, 100.0, 300.0, 700.0, 1500.0];
    const COMPACT: [f32; 5] = [20.0, 120.0, 320.0, 720.0, 1520.0];

    fn model(stored: &[f32], typical: f32, finest: f32) -> ErrorModel<'_> {
        let need = Need {
            finest,
            typical,
            coverage: 1.0,
        };
        let curve = Curve::new(stored, FULL.len());
        ErrorModel::new(&PlannerOptions::default(), 1.0, need, curve, 1.0)
    }

    fn stored() -> Vec<f32> {
        let mut v = FULL.to_vec();
        v.extend(COMPACT);
        v.push(0.01);
        v
    }

    #[test]
    fn a_level_coarser_by_a_fraction_loses_the_square_of_that_fraction() {
        let s = stored();
        // every pixel at lod 1.5: trilinear shows half of level 1 and half
        // of level 2, so holding level 2 loses half the band's amplitude,
        // a quarter of its energy (200 / 4), not half of it
        let m = model(&s, 1.5, 1.5);
        assert!(
            (m.at(2, Tier::Full) - 50.0).abs() < 1e-6,
            "{}",
            m.at(2, Tier::Full)
        );
        // and a level further: the whole next band on top
        assert!(
            (m.at(3, Tier::Full) - 450.0).abs() < 1e-6,
            "{}",
            m.at(3, Tier::Full)
        );
        // what the pixels need or finer costs nothing
        assert!(m.at(1, Tier::Full) < 1e-9);
        // at a whole lod the curve's difference itself
        let m = model(&s, 1.0, 1.0);
        assert!((m.at(3, Tier::Full) - 600.0).abs() < 1e-6);
    }

    #[test]
    fn the_compact_tier_costs_pixels_that_need_coarser_levels_its_artifacts() {
        let s = stored();
        // every pixel needs lod 3: the full tier from level 1 shows them
        // their own levels, the compact tier shows them compressed
        let m = model(&s, 3.0, 3.0);
        assert!(m.at(1, Tier::Full) < 1e-9);
        let compact = m.at(1, Tier::Compact);
        assert!((compact - 20.0).abs() < 1e-6, "{compact}");
        // pixels that need finer than the level held: the compact level's
        // error against what they would show
        let m = model(&s, 0.0, 0.0);
        assert!((m.at(2, Tier::Compact) - 320.0).abs() < 1e-6);
        assert!((m.at(2, Tier::Full) - 300.0).abs() < 1e-6);
    }
}
