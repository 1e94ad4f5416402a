//! The spare-budget floor: what the fit leaves unused raises every texture
//! to a uniform floor level, then one more level for the textures nearest to
//! needing it, marked `prefetch` (loaded last, given up first; see
//! [`super::PlannerOptions::spare_floor`]). A plan that fuses GPU feedback
//! first spends it on what the CPU alone predicts finer than the fused
//! need ([`Planner::raise_to_prediction`]).

use super::{Entry, Planner, ResidentState, TexturePlan};
use crate::kinds::Tier;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Marks a level the spare budget raised a texture to as prefetch: loaded
/// after everything a view needs (a texture still growing towards what the
/// views want keeps that priority).
fn mark_prefetch(p: &mut TexturePlan) {
    p.prefetch = true;
    if p.priority <= 0.0 {
        p.priority = 1e-25;
    }
}

impl Planner {
    /// The spare-budget floor level of the last plan, if one was applied.
    pub fn floor(&self) -> Option<u32> {
        self.floor
    }

    /// What `t` adds to `costs[l]` (see [`floor_costs`](Self::floor_costs))
    /// held at `target` in `tier`, for every `l` below both: the bytes of
    /// holding it at `l` (or its finest allowed, when that is finer than
    /// `target`) beyond those. (A finest allowed coarser than the target,
    /// as when it is coarser than the tail, adds nothing; it used to wrap
    /// the cost round below zero.)
    fn floor_cost_of<'a>(
        pool: &'a [u64],
        t: &Entry,
        target: u32,
        tier: Tier,
        coarsest: u32,
    ) -> impl Iterator<Item = (usize, u64)> + 'a {
        let now = t.bytes(pool, target, tier);
        let t = *t;
        (0..target.min(coarsest + 1)).map(move |l| {
            let level = l.max(t.finest_allowed.min(target));
            (l as usize, t.bytes(pool, level, tier) - now)
        })
    }

    /// The textures' largest tail level, and `floor_at_tails` up to date.
    fn tails_floor(&mut self) -> u32 {
        let coarsest = self.floor_at_tails.len().saturating_sub(1) as u32;
        if self.floor_at_tails_fresh {
            return coarsest;
        }
        self.floor_at_tails_fresh = true;
        let coarsest = self
            .textures
            .iter()
            .flatten()
            .map(|t| t.tail_level)
            .max()
            .unwrap_or(0);
        let mut costs = vec![0u64; coarsest as usize + 1];
        for t in self.textures.iter().flatten() {
            for (l, c) in Self::floor_cost_of(&self.pool, t, t.tail_level, Tier::Full, coarsest) {
                costs[l] += c;
            }
        }
        self.floor_at_tails = costs;
        coarsest
    }

    /// `costs[l]`: extra bytes of holding every texture at least at level
    /// `l`, for every `l` up to `coarsest` (the largest tail level): the
    /// costs with every texture at its tail (kept between plans: they
    /// change with the textures alone), corrected for the textures planned
    /// otherwise (most sit at their tails).
    fn floor_costs(&mut self) -> Vec<u64> {
        let coarsest = self.tails_floor();
        let mut costs = self.floor_at_tails.clone();
        let pool = &self.pool;
        for slot in 0..self.textures.len() {
            let Some(t) = self.textures[slot].as_ref() else {
                continue;
            };
            let p = &self.plan.textures[slot];
            if (p.target, p.tier) == (t.tail_level, Tier::Full) {
                continue;
            }
            // exact in wrapping arithmetic: every total is a real cost
            for (l, c) in Self::floor_cost_of(pool, t, p.target, p.tier, coarsest) {
                costs[l] = costs[l].wrapping_add(c);
            }
            for (l, c) in Self::floor_cost_of(pool, t, t.tail_level, Tier::Full, coarsest) {
                costs[l] = costs[l].wrapping_sub(c);
            }
        }
        costs
    }

    /// In a plan that fuses GPU feedback, spends the budget the fit leaves
    /// unused on what the CPU alone predicts finer than the fused need:
    /// level by level, the CPU's error removed per byte first, each level
    /// marked `prefetch` like the floor's. The fit's own choices stand (the
    /// CPU's prediction is the plan's second objective: only room the fused
    /// need leaves is spent on it). Where the GPU samples a surface coarser
    /// than the CPU's boxes judge it, or has not sampled it for a while, a
    /// budget with room still holds what the CPU predicts: the camera may
    /// come nearer, or turn to it, before the feedback shows it. Spent on
    /// the uniform floor instead, that room left the level the views were
    /// about to need to be uploaded when they needed it (annotated Sponza
    /// at its whole working set, 1280x720, lockstep: `mipstream_feedback`
    /// 54.32 dB against 58.22 for the CPU alone, the oracle 54.64;
    /// CHANGELOG.md, 2026-12-07). Taken inside the fit as a small second
    /// term of every state's error instead, the CPU's levels held room that
    /// a large growth needed later, which the fit's swaps, undoing one step
    /// per texture, could not free (the oracle at half that working set:
    /// 43.12 to 42.05 dB).
    pub(super) fn raise_to_prediction(&mut self, budget: u64) {
        if self.cpu_sums.is_empty() {
            return;
        }
        let mut left = budget.saturating_sub(self.plan.bytes);
        // (CPU error removed per byte, as the bits of a non-negative f64,
        // which order as the values do; slot; the level the step reaches;
        // the level the CPU wants)
        let mut heap = BinaryHeap::new();
        let step = |p: &Self, slot: usize, t: &Entry, to: u32, want: u32| {
            let tier = p.plan.textures[slot].tier;
            let model = p.model_of(slot, t, p.cpu_need(slot)?);
            let cost = t.bytes(&p.pool, to, tier) - t.bytes(&p.pool, to + 1, tier);
            let gain = (model.at(to + 1, tier) - model.at(to, tier)).max(0.0);
            (gain > 0.0).then(|| {
                let per_byte = (gain / cost.max(1) as f64).to_bits();
                (per_byte, Reverse(slot), to, want)
            })
        };
        for slot in 0..self.textures.len() {
            let Some(t) = self.textures[slot] else {
                continue;
            };
            let Some(cpu) = self.cpu_need(slot) else {
                continue;
            };
            let target = self.plan.textures[slot].target;
            let want = self.wanted_level(&t, cpu.finest, t.tail_level);
            if want < target {
                heap.extend(step(self, slot, &t, target - 1, want));
            }
        }
        while let Some((_, Reverse(slot), to, want)) = heap.pop() {
            let t = self.textures[slot].expect("planned textures exist");
            let p = &mut self.plan.textures[slot];
            let cost = t.bytes(&self.pool, to, p.tier) - t.bytes(&self.pool, p.target, p.tier);
            if cost > left {
                continue;
            }
            left -= cost;
            self.plan.bytes += cost;
            p.target = to;
            mark_prefetch(p);
            if to > want {
                heap.extend(step(self, slot, &t, to - 1, want));
            }
        }
    }

    /// Raises textures to the finest uniform floor the unused budget pays
    /// for (see [`PlannerOptions::spare_floor`]). The floor moves finer only
    /// when it fits with 10% to spare, so it does not flicker as the views'
    /// needs change a little.
    pub(super) fn raise_floor(&mut self, budget: u64, resident: &[ResidentState]) {
        let spare = budget.saturating_sub(self.plan.bytes);
        // the cost only falls as the floor gets coarser: find the finest that fits
        let costs = self.floor_costs();
        let coarsest = costs.len() as u32 - 1;
        let fits = |l: u32, margin: f64| (costs[l as usize] as f64) <= spare as f64 * margin;
        let kept = self.floor.filter(|&l| l <= coarsest && fits(l, 1.0));
        let finest = (0..coarsest).find(|&l| fits(l, 0.9));
        let floor = match (kept, finest) {
            (Some(k), Some(f)) => Some(k.min(f)),
            (k, f) => k.or(f),
        };
        self.floor = floor;
        let floor = floor.unwrap_or(coarsest);
        // One pass raises every texture to the floor and offers each its
        // next level: what is left after the floor buys one more level for
        // the textures nearest to needing it (smallest lod), those already
        // holding it first, so the choice is stable from frame to frame.
        // (order bucket, slot, cost): held first, then by lod in eighths of a
        // mip (unseen last), placed by a counting sort: no comparisons, for
        // the ten thousand textures a frame may offer. A step costing more
        // than the spare budget less the floor raised so far cannot fit
        // what is left after it either.
        // Within a bucket, steps go by slot, so this order still follows
        // registration (the fit's ties go by tie key, `ties.rs`): taken by
        // tie key, FlightHelmet's path parted at frame 60 and ended in the
        // mesh room trap, 1.7 dB down at half its working set (CHANGELOG,
        // 2026-12-06).
        const BUCKETS: usize = 256;
        let mut steps = std::mem::take(&mut self.floor_steps);
        steps.clear();
        let mut extra = 0;
        for (slot, (t, p)) in self
            .textures
            .iter()
            .zip(self.plan.textures.iter_mut())
            .enumerate()
        {
            let Some(t) = t.as_ref() else { continue };
            let level = p.target.min(floor.max(t.finest_allowed));
            if level < p.target {
                extra += t.bytes(&self.pool, level, p.tier) - t.bytes(&self.pool, p.target, p.tier);
                p.target = level;
                mark_prefetch(p);
            }
            if p.target <= t.finest_allowed {
                continue;
            }
            let to = p.target - 1;
            let cost = t.bytes(&self.pool, to, p.tier) - t.bytes(&self.pool, p.target, p.tier);
            if cost > spare.saturating_sub(extra) {
                continue;
            }
            let held = resident
                .get(slot)
                .is_some_and(|r| r.level <= to && r.tier == p.tier);
            let q = if p.lod.is_finite() {
                ((p.lod.clamp(-8.0, 23.0) + 8.0) * 8.0) as usize
            } else {
                BUCKETS - 1
            };
            let bucket = (!held as usize) * BUCKETS + q.min(BUCKETS - 1);
            steps.push((bucket as u32, slot as u32, cost));
        }
        self.plan.bytes += extra;
        let mut left = budget.saturating_sub(self.plan.bytes);
        if left == 0 {
            steps.clear();
        }
        steps.retain(|s| s.2 <= left);
        let total: u64 = steps.iter().map(|s| s.2).sum();
        let mut sorted = std::mem::take(&mut self.floor_sorted);
        let order = if total > left {
            let mut starts = [0usize; 2 * BUCKETS + 1];
            for s in &steps {
                starts[s.0 as usize + 1] += 1;
            }
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            sorted.clear();
            sorted.resize(steps.len(), (0, 0, 0));
            for s in &steps {
                let at = &mut starts[s.0 as usize];
                sorted[*at] = *s;
                *at += 1;
            }
            &sorted
        } else {
            &steps
        };
        for &(_, slot, cost) in order {
            let slot = slot as usize;
            if cost > left {
                continue;
            }
            left -= cost;
            self.plan.bytes += cost;
            let p = &mut self.plan.textures[slot];
            p.target -= 1;
            mark_prefetch(p);
        }
        self.floor_steps = steps;
        self.floor_sorted = sorted;
    }
}
