//! The spare-budget floor: what the fit leaves unused raises every texture
//! to a uniform floor level, then one more level for the textures nearest to
//! needing it, marked `prefetch` (loaded last, given up first; see
//! [`super::PlannerOptions::spare_floor`]).

use super::{Planner, ResidentState};

impl Planner {
    /// The spare-budget floor level of the last plan, if one was applied.
    pub fn floor(&self) -> Option<u32> {
        self.floor
    }

    /// `costs[l]`: extra bytes of holding every texture at least at level
    /// `l`, for every `l` up to `coarsest`, in one pass over the textures.
    fn floor_costs(&self, coarsest: u32) -> Vec<u64> {
        let mut costs = vec![0u64; coarsest as usize + 1];
        let pool = &self.pool;
        for (t, p) in self.textures.iter().zip(&self.plan.textures) {
            let Some(t) = t.as_ref() else { continue };
            let now = t.bytes(pool, p.target, p.tier);
            for l in 0..p.target.min(coarsest + 1) {
                let level = l.max(t.finest_allowed);
                costs[l as usize] += t.bytes(pool, level, p.tier) - now;
            }
        }
        costs
    }

    /// Raises textures to the finest uniform floor the unused budget pays
    /// for (see [`PlannerOptions::spare_floor`]). The floor moves finer only
    /// when it fits with 10% to spare, so it does not flicker as the views'
    /// needs change a little.
    pub(super) fn raise_floor(&mut self, budget: u64, resident: &[ResidentState]) {
        let spare = budget.saturating_sub(self.plan.bytes);
        let coarsest = self
            .textures
            .iter()
            .flatten()
            .map(|t| t.tail_level)
            .max()
            .unwrap_or(0);
        // the cost only falls as the floor gets coarser: find the finest that fits
        let costs = self.floor_costs(coarsest);
        let fits = |l: u32, margin: f64| (costs[l as usize] as f64) <= spare as f64 * margin;
        let kept = self.floor.filter(|&l| l <= coarsest && fits(l, 1.0));
        let finest = (0..coarsest).find(|&l| fits(l, 0.9));
        let floor = match (kept, finest) {
            (Some(k), Some(f)) => Some(k.min(f)),
            (k, f) => k.or(f),
        };
        self.floor = floor;
        let floor = floor.unwrap_or(coarsest);
        let mut extra = 0;
        for (t, p) in self.textures.iter().zip(self.plan.textures.iter_mut()) {
            let Some(t) = t.as_ref() else { continue };
            let level = p.target.min(floor.max(t.finest_allowed));
            if level < p.target {
                extra += t.bytes(&self.pool, level, p.tier) - t.bytes(&self.pool, p.target, p.tier);
                p.target = level;
                p.prefetch = true;
                // after everything a view needs (a texture still growing
                // towards what the views want keeps that priority)
                if p.priority <= 0.0 {
                    p.priority = 1e-25;
                }
            }
        }
        self.plan.bytes += extra;
        // What is left buys one more level for the textures nearest to
        // needing it (smallest lod), those already holding it first, so the
        // choice is stable from frame to frame.
        let mut left = budget.saturating_sub(self.plan.bytes);
        if left == 0 {
            return;
        }
        // (order bucket, slot, cost): held first, then by lod in eighths of a
        // mip (unseen last), placed by a counting sort: one pass, no
        // comparisons, for the ten thousand textures a frame may offer
        const BUCKETS: usize = 256;
        let mut steps: Vec<(u32, u32, u64)> = self
            .textures
            .iter()
            .enumerate()
            .filter_map(|(slot, t)| {
                let t = t.as_ref()?;
                let p = &self.plan.textures[slot];
                if p.target <= t.finest_allowed {
                    return None;
                }
                let to = p.target - 1;
                let cost = t.bytes(&self.pool, to, p.tier) - t.bytes(&self.pool, p.target, p.tier);
                if cost > left {
                    return None;
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
                Some((bucket as u32, slot as u32, cost))
            })
            .collect();
        let total: u64 = steps.iter().map(|s| s.2).sum();
        if total > left {
            let mut starts = vec![0usize; 2 * BUCKETS + 1];
            for s in &steps {
                starts[s.0 as usize + 1] += 1;
            }
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            let mut sorted = vec![(0u32, 0u32, 0u64); steps.len()];
            for s in &steps {
                let at = &mut starts[s.0 as usize];
                sorted[*at] = *s;
                *at += 1;
            }
            steps = sorted;
        }
        for (_, slot, cost) in steps {
            let slot = slot as usize;
            if cost > left {
                continue;
            }
            left -= cost;
            self.plan.bytes += cost;
            let p = &mut self.plan.textures[slot];
            p.target -= 1;
            p.prefetch = true;
            if p.priority <= 0.0 {
                p.priority = 1e-25;
            }
        }
    }
}
