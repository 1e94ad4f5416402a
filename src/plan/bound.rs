//! A certificate for the budget fit: a lower bound on the least total error
//! any plan can reach within the budget, so each frame can say how far its
//! plan is from optimal at most.
//!
//! The problem [`super::fit::Fitter::fit`] solves is a multiple-choice
//! knapsack (one state per chain, bytes within the budget) with one twist:
//! the plan also keeps room for the largest growth it chooses. For a room
//! `R`, only states needing at most `R` may be chosen and their bytes must
//! fit in `budget - R`; the true optimum is the best over every `R`. Each
//! `R`'s problem has the Lagrangian bound
//!
//! `L_R(λ) = Σ_chains min_{c: grow ≤ R} (error_c + λ bytes_c) - λ (budget - R)`
//!
//! which holds for every `λ ≥ 0` (weak duality) and whose best `λ` is the
//! value of the problem's LP relaxation, the fractional optimum the greedy
//! fit walks towards. The certificate is `min_R LP_R`: every term is below
//! that room's optimum, so the minimum is below every plan that fits, and
//! `plan error - bound` bounds how much error a better plan could still
//! remove. [`lp_bound`] computes it exactly: each room's LP by the greedy
//! over the chains' lower convex hulls, which solves the multiple-choice
//! knapsack's relaxation exactly (Sinha and Zoltners, 1979), for every
//! room. [`lower_bound`] takes it where its work (states times rooms) is
//! within [`EXACT_WORK`], and otherwise [`lagrangian_bound`], which tries
//! `λ` on a grid and refines only the room deciding the minimum: still a
//! bound, but up to a quarter below the exact value on random cases (see
//! the tests). Stickiness (the keep bonus, locked states) is not a
//! constraint here: a plan that keeps what is resident for stability shows
//! its price in the gap.

use super::fit::Candidate;

/// Reusable buffers for [`lower_bound`]: each chain's states split once
/// per plan into those needing no room (only their lower convex hull can be
/// a chain's best for some `λ`) and those needing room, indexed by the
/// distinct rooms, so each `λ` costs one pass without sorting.
#[derive(Debug, Default)]
pub(crate) struct Bound {
    /// (bytes, error) of the hull of each chain's no-room states.
    zero: Vec<(f64, f64)>,
    zero_at: Vec<u32>,
    /// (room index, bytes, error) of each chain's states needing room,
    /// room ascending.
    growing: Vec<(u32, f64, f64)>,
    growing_at: Vec<u32>,
    /// The distinct rooms within the budget, ascending, `rooms[0] = 0`.
    rooms: Vec<u64>,
    /// Per room: the change of the summed best states once it allows them.
    acc: Vec<f64>,
    /// Per room: the best bound found for it so far.
    best: Vec<f64>,
    /// Summed (bytes, error) of the chains with one state and no growth (a
    /// texture its views want no finer than its tail: most of them in a
    /// large scene), which add the same to every pass.
    fixed: (f64, f64),
    /// Whether the last [`lower_bound`] was the exact [`lp_bound`].
    pub exact: bool,
}

impl Bound {
    fn prepare(&mut self, chains: &[Candidate], offsets: &[u32], budget: u64) {
        self.rooms = rooms(chains, budget);
        self.zero.clear();
        self.zero_at.clear();
        self.growing.clear();
        self.growing_at.clear();
        self.zero_at.push(0);
        self.growing_at.push(0);
        self.fixed = (0.0, 0.0);
        let mut points: Vec<(f64, f64)> = Vec::new();
        for t in 0..offsets.len().saturating_sub(1) {
            let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
            if let [c] = chain {
                if c.grow == 0 {
                    self.fixed.0 += c.bytes as f64;
                    self.fixed.1 += c.error;
                    continue;
                }
            }
            points.clear();
            let start = self.growing.len();
            for c in chain {
                let (b, e) = (c.bytes as f64, c.error);
                if c.grow == 0 {
                    points.push((b, e));
                } else if c.grow <= budget {
                    let r = self.rooms.binary_search(&c.grow).unwrap_or(0) as u32;
                    self.growing.push((r, b, e));
                }
            }
            if points.is_empty() {
                // no state without room (not a chain the planner makes):
                // relaxed to count its cheapest state as if it needed none,
                // which only lowers the bound
                if let Some(c) = chain.iter().min_by_key(|c| c.bytes) {
                    points.push((c.bytes as f64, c.error));
                }
            }
            lower_left_hull(&mut points);
            self.zero.extend_from_slice(&points);
            self.zero_at.push(self.zero.len() as u32);
            self.growing[start..].sort_by_key(|g| g.0);
            self.growing_at.push(self.growing.len() as u32);
        }
        self.best.clear();
        self.best.resize(self.rooms.len(), f64::NEG_INFINITY);
    }

    /// One pass at `λ`: every room's `L_R(λ)`, kept where it beats the best
    /// so far; `only`: just that room's.
    fn pass(&mut self, budget: u64, lambda: f64, only: Option<usize>) -> f64 {
        self.acc.clear();
        self.acc.resize(self.rooms.len(), 0.0);
        let mut base = self.fixed.1 + lambda * self.fixed.0;
        for t in 0..self.zero_at.len() - 1 {
            let hull = &self.zero[self.zero_at[t] as usize..self.zero_at[t + 1] as usize];
            let mut best = hull
                .iter()
                .map(|&(b, e)| e + lambda * b)
                .fold(f64::INFINITY, f64::min);
            base += best;
            let growing =
                &self.growing[self.growing_at[t] as usize..self.growing_at[t + 1] as usize];
            for &(r, b, e) in growing {
                if only.is_some_and(|o| r as usize > o) {
                    break;
                }
                let v = e + lambda * b;
                if v < best {
                    self.acc[r as usize] += v - best;
                    best = v;
                }
            }
        }
        let budget = budget as f64;
        let mut sum = base;
        let mut value = f64::INFINITY;
        for (r, &room) in self.rooms.iter().enumerate() {
            sum += self.acc[r];
            let v = sum - lambda * (budget - room as f64);
            if only.is_none_or(|o| o == r) {
                self.best[r] = self.best[r].max(v);
                value = v;
            }
            if only == Some(r) {
                break;
            }
        }
        value
    }
}

/// Keeps the points on the lower-left convex hull of `points` (bytes,
/// error): the only ones that minimise `error + λ bytes` for some `λ ≥ 0`.
fn lower_left_hull(points: &mut Vec<(f64, f64)>) {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &p in points.iter() {
        // a point no better in error than the last kept is dominated
        if hull.last().is_some_and(|l: &(f64, f64)| p.1 >= l.1) {
            continue;
        }
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // b lies on or above the segment a-p: not on the hull
            if (b.1 - a.1) * (p.0 - a.0) >= (p.1 - a.1) * (b.0 - a.0) {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    *points = hull;
}

/// The most work (states times rooms) [`lower_bound`] computes the exact
/// [`lp_bound`] for: about 10 ms on one core (a few thousand textures with
/// dozens of distinct growth rooms); beyond it, the Lagrangian search.
pub(crate) const EXACT_WORK: usize = 4_000_000;

/// A lower bound on the total error of any plan whose chosen states' bytes
/// plus the largest chosen [`Candidate::grow`] fit `budget`: the exact
/// [`lp_bound`] where its work is within [`EXACT_WORK`] (then
/// [`Bound::exact`] says so), else [`lagrangian_bound`]. `None` when the
/// bases alone do not fit.
pub(crate) fn lower_bound(
    bound: &mut Bound,
    chains: &[Candidate],
    offsets: &[u32],
    budget: u64,
    hint: Option<f64>,
) -> Option<f64> {
    let rooms = rooms(chains, budget);
    bound.exact = chains.len().saturating_mul(rooms.len()) <= EXACT_WORK;
    if bound.exact {
        lp_over_rooms(chains, offsets, budget, rooms)
    } else {
        lagrangian_bound(bound, chains, offsets, budget, hint)
    }
}

/// The bound the certificate defines, exactly: `min_R LP_R` over every room
/// `R` (0 and each distinct [`Candidate::grow`] within the budget), `LP_R`
/// the LP relaxation of room `R`'s problem (each chain exactly one state,
/// fractionally, among those needing at most `R`; their bytes within
/// `budget - R`), solved by the greedy over each chain's lower convex hull:
/// every chain starts at its hull's cheapest point, and the hull's steps,
/// steepest error removed per byte first over all chains, fill the rest, the
/// last one fractionally (exact for this relaxation: Sinha and Zoltners,
/// 1979). A chain with no state within `R` counts its cheapest state as
/// needing none (not a chain the planner makes; it only lowers the bound).
/// Rooms whose cheapest points alone do not fit are infeasible and left
/// out. Costs, per room, a pass over every state and a sort of the hull
/// steps. `None` when the bases alone do not fit.
pub(crate) fn lp_bound(chains: &[Candidate], offsets: &[u32], budget: u64) -> Option<f64> {
    lp_over_rooms(chains, offsets, budget, rooms(chains, budget))
}

/// The rooms a plan's growth may need: 0 and each distinct
/// [`Candidate::grow`] within the budget, ascending.
fn rooms(chains: &[Candidate], budget: u64) -> Vec<u64> {
    let mut rooms: Vec<u64> = std::iter::once(0)
        .chain(chains.iter().map(|c| c.grow))
        .filter(|&r| r <= budget)
        .collect();
    rooms.sort_unstable();
    rooms.dedup();
    rooms
}

/// [`lp_bound`] over `rooms` (what [`rooms`] returns).
fn lp_over_rooms(
    chains: &[Candidate],
    offsets: &[u32],
    budget: u64,
    rooms: Vec<u64>,
) -> Option<f64> {
    let n = offsets.len().saturating_sub(1);
    let chain = |t: usize| &chains[offsets[t] as usize..offsets[t + 1] as usize];
    let bases: u64 = (0..n)
        .filter_map(|t| chain(t).first())
        .map(|c| c.bytes)
        .sum();
    if bases > budget {
        return None;
    }
    let mut points: Vec<(f64, f64)> = Vec::new();
    // every chain's hull, flat, and where each starts
    let mut hulls: Vec<(f64, f64)> = Vec::new();
    // (error removed per byte, bytes, chain, the step's end in `hulls`)
    let mut steps: Vec<(f64, f64, usize, usize)> = Vec::new();
    // per chain: the hull point the greedy reached, and how far (0..1) it
    // went along the next step
    let mut at: Vec<(usize, f64)> = Vec::new();
    let mut best = f64::INFINITY;
    for room in rooms {
        let mut bytes = 0.0f64;
        hulls.clear();
        steps.clear();
        at.clear();
        for t in 0..n {
            points.clear();
            points.extend(
                chain(t)
                    .iter()
                    .filter(|c| c.grow <= room)
                    .map(|c| (c.bytes as f64, c.error)),
            );
            if points.is_empty() {
                let Some(c) = chain(t).iter().min_by_key(|c| c.bytes) else {
                    continue;
                };
                points.push((c.bytes as f64, c.error));
            }
            lower_left_hull(&mut points);
            let start = hulls.len();
            bytes += points[0].0;
            hulls.extend_from_slice(&points);
            let chain_index = at.len();
            at.push((start, 0.0));
            steps.extend((start + 1..hulls.len()).map(|k| {
                let db = hulls[k].0 - hulls[k - 1].0;
                ((hulls[k - 1].1 - hulls[k].1) / db, db, chain_index, k)
            }));
        }
        let mut left = (budget - room) as f64 - bytes;
        if left < 0.0 {
            continue;
        }
        // steepest first; a chain's own steps come in its order (its hull's
        // slopes fall), so each taken step moves its chain one point on
        steps.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.3.cmp(&b.3)));
        for &(_, db, c, k) in &steps {
            if left <= 0.0 {
                break;
            }
            if db <= left {
                at[c] = (k, 0.0);
                left -= db;
            } else {
                at[c] = (k - 1, left / db);
                left = 0.0;
            }
        }
        // the errors of the points reached, summed directly (subtracting
        // each step's gain from the starting errors loses the small ones to
        // rounding: starts of 10^7 and ends of 10^-12)
        let error: f64 = at
            .iter()
            .map(|&(k, f)| {
                let e = hulls[k].1;
                if f > 0.0 {
                    e + f * (hulls[k + 1].1 - e)
                } else {
                    e
                }
            })
            .sum();
        best = best.min(error);
    }
    // errors are not negative: so is any plan's total; and the sums above
    // round differently from a plan's own: a hair below them
    best.is_finite().then(|| best.max(0.0) * (1.0 - 1e-9))
}

/// A lower bound on the total error of any plan whose chosen states' bytes
/// plus the largest chosen [`Candidate::grow`] fit `budget` (see the module
/// docs): `min_R max_λ L_R(λ)`, with `λ` tried at powers of two around
/// `hint` (the fit's marginal price, [`super::fit::Fitter::marginal_gain`])
/// for every room, then refined by golden-section search for the room that
/// decides the minimum: 15 passes over the chains. `chains` and `offsets` as
/// [`super::fit::Fitter::fit`] takes them. `None` when the bases alone do
/// not fit (no plan fits; the fit holds the bases anyway). Each room's term
/// is at most its LP value, so this is at most [`lp_bound`].
pub(crate) fn lagrangian_bound(
    bound: &mut Bound,
    chains: &[Candidate],
    offsets: &[u32],
    budget: u64,
    hint: Option<f64>,
) -> Option<f64> {
    let n = offsets.len().saturating_sub(1);
    let mut bases = 0u64;
    // without a hint: the geometric mean of the shallowest and steepest
    // error removed per byte over any chain's states
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for t in 0..n {
        let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
        let Some(first) = chain.first() else { continue };
        bases = bases.saturating_add(first.bytes);
        if hint.is_some() {
            continue;
        }
        for c in &chain[1..] {
            if c.bytes > first.bytes && c.error < first.error {
                let slope = (first.error - c.error) / (c.bytes - first.bytes) as f64;
                lo = lo.min(slope);
                hi = hi.max(slope);
            }
        }
    }
    if bases > budget {
        return None;
    }
    bound.prepare(chains, offsets, budget);
    bound.pass(budget, 0.0, None);
    let centre = match hint.filter(|h| h.is_finite() && *h > 0.0) {
        Some(h) => h.ln(),
        None if hi > 0.0 => 0.5 * (lo.ln() + hi.ln()),
        // nothing to buy: every chain's base is its best state
        None => {
            return bound
                .best
                .iter()
                .copied()
                .reduce(f64::min)
                .map(|b| b.max(0.0))
        }
    };
    // powers of two around the price, every room at once, remembering each
    // room's best multiplier
    let mut best_x = vec![centre; bound.rooms.len()];
    for k in -3..=3 {
        let x = centre + k as f64 * std::f64::consts::LN_2;
        let before = bound.best.clone();
        bound.pass(budget, x.exp(), None);
        for (r, (b, a)) in bound.best.iter().zip(&before).enumerate() {
            if b > a {
                best_x[r] = x;
            }
        }
    }
    // refine the room deciding the minimum (concave in λ for each room)
    let (r, _) = bound
        .best
        .iter()
        .enumerate()
        .min_by(|x, y| x.1.total_cmp(y.1))?;
    let (mut a, mut b) = (
        best_x[r] - std::f64::consts::LN_2,
        best_x[r] + std::f64::consts::LN_2,
    );
    let phi = 0.618_033_988_75;
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let mut fc = bound.pass(budget, c.exp(), Some(r));
    let mut fd = bound.pass(budget, d.exp(), Some(r));
    for _ in 0..6 {
        if fc > fd {
            (b, d, fd) = (d, c, fc);
            c = b - phi * (b - a);
            fc = bound.pass(budget, c.exp(), Some(r));
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + phi * (b - a);
            fd = bound.pass(budget, d.exp(), Some(r));
        }
    }
    // errors are not negative: so is any plan's total; and the sums above
    // round differently from a plan's own: a hair below them
    bound
        .best
        .iter()
        .copied()
        .reduce(f64::min)
        .map(|b| b.max(0.0) * (1.0 - 1e-9))
}

/// A tighter lower bound than [`lower_bound`], for offline checks (the
/// benchmark): the integer problem itself, solved by dynamic programming
/// over bytes with every state's bytes rounded down to a multiple of
/// `budget / cells` (and the budget rounded down likewise), room by room as
/// [`super::fit::exact_fit`] does. Rounding down can only let more plans
/// fit, so the result is at most the true optimum; it is within a rounding
/// step per chain of it, where the LP bound can sit far below the optimum
/// (a chain whose one large step the LP takes a fraction of). Costs the
/// chains' states times `cells` per distinct room: milliseconds for a few
/// dozen textures, too slow for every frame of a large scene. `None` when
/// the bases alone do not fit.
pub(crate) fn knapsack_bound(
    chains: &[Candidate],
    offsets: &[u32],
    budget: u64,
    cells: usize,
) -> Option<f64> {
    let n = offsets.len().saturating_sub(1);
    let chain = |t: usize| &chains[offsets[t] as usize..offsets[t + 1] as usize];
    let bases: u64 = (0..n)
        .filter_map(|t| chain(t).first())
        .map(|c| c.bytes)
        .sum();
    if bases > budget {
        return None;
    }
    let quantum = budget.div_ceil(cells.max(1) as u64).max(1);
    let rooms = rooms(chains, budget);
    let (mut dp, mut next) = (Vec::new(), Vec::new());
    let mut best = f64::INFINITY;
    for room in rooms {
        let cap = ((budget - room) / quantum) as usize;
        // dp[c]: the least error of the chains so far within c quanta
        dp.clear();
        dp.resize(cap + 1, 0.0);
        let mut feasible = true;
        for t in 0..n {
            next.clear();
            next.resize(cap + 1, f64::INFINITY);
            let mut any = false;
            for s in chain(t).iter().filter(|s| s.grow <= room) {
                let w = (s.bytes / quantum) as usize;
                if w > cap {
                    continue;
                }
                any = true;
                for c in w..=cap {
                    let e = dp[c - w] + s.error;
                    if e < next[c] {
                        next[c] = e;
                    }
                }
            }
            if !any {
                feasible = false;
                break;
            }
            std::mem::swap(&mut dp, &mut next);
        }
        if feasible {
            best = best.min(dp[cap]);
        }
    }
    best.is_finite().then_some(best)
}

/// The gap between a plan's error and a lower bound, as a share of the
/// plan's error (0: provably optimal).
pub(crate) fn relative_gap(plan_error: f64, bound: f64) -> f64 {
    if plan_error <= 0.0 {
        return 0.0;
    }
    ((plan_error - bound) / plan_error).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fit::{exact_fit, flat, Fitter, Stickiness};

    /// Random small cases like the fit's own tests: chains of rising bytes
    /// and falling error, the states past a resident one needing room.
    fn cases(count: usize, seed: u64) -> Vec<(Vec<Vec<Candidate>>, u64)> {
        sized_cases(count, seed, 5, 5)
    }

    /// The same, up to `chains` chains of up to `states` states, the budget
    /// spread over what they could use.
    fn sized_cases(
        count: usize,
        seed: u64,
        chains: usize,
        states: usize,
    ) -> Vec<(Vec<Vec<Candidate>>, u64)> {
        let mut rng = seed;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        (0..count)
            .map(|_| {
                let n = 1 + (next() % chains as u64) as usize;
                let chains: Vec<Vec<Candidate>> = (0..n)
                    .map(|_| {
                        let len = 1 + (next() % states as u64) as usize;
                        let held = (next() % len as u64) as usize;
                        let (mut bytes, mut error) =
                            (1 + next() % 100, 100.0 + (next() % 900) as f64);
                        (0..len)
                            .map(|i| {
                                let c = Candidate {
                                    bytes,
                                    error,
                                    grow: if i > held { bytes + next() % 50 } else { 0 },
                                };
                                bytes += 1 + next() % 400;
                                error *= 0.1 + (next() % 80) as f64 / 100.0;
                                c
                            })
                            .collect()
                    })
                    .collect();
                let base: u64 = chains.iter().map(|c| c[0].bytes).sum();
                let budget = base + next() % (300 * (n * states) as u64).max(1500);
                (chains, budget)
            })
            .collect()
    }

    #[test]
    fn the_bound_is_below_the_exact_optimum_and_the_greedy_plan() {
        let mut bound = Bound::default();
        let mut fitter = Fitter::default();
        let mut choice = Vec::new();
        let (mut gaps, mut tight) = (Vec::new(), 0);
        for (k, (chains, budget)) in cases(300, 7).into_iter().enumerate() {
            let (all, off) = flat(&chains);
            let lb = lower_bound(&mut bound, &all, &off, budget, None).expect("bases fit");
            let (opt, _) = exact_fit(&chains, budget).expect("bases fit");
            assert!(
                lb <= opt + 1e-9 * opt.abs().max(1.0),
                "case {k}: bound {lb} > optimum {opt}"
            );
            let sticky = vec![Stickiness::default(); chains.len()];
            fitter.fit(&all, &off, &sticky, budget, &mut choice);
            let greedy: f64 = (0..chains.len())
                .map(|t| chains[t][choice[t] as usize].error)
                .sum();
            assert!(lb <= greedy + 1e-9, "case {k}: bound {lb} > plan {greedy}");
            let gap = relative_gap(opt, lb);
            if gap < 1e-6 {
                tight += 1;
            }
            gaps.push(gap);
        }
        // the bound is not vacuous: mostly close to the optimum
        gaps.sort_by(f64::total_cmp);
        let median = gaps[gaps.len() / 2];
        assert!(median < 0.15, "median gap to the optimum {median}");
        assert!(tight > 0, "the bound never met the optimum");
    }

    /// `min_R LP_R` by an independent solver: each room's LP in microlp.
    fn lp_by_solver(chains: &[Vec<Candidate>], budget: u64) -> Option<f64> {
        use microlp::{ComparisonOp, OptimizationDirection, Problem};
        let mut rooms: Vec<u64> = std::iter::once(0)
            .chain(chains.iter().flatten().map(|c| c.grow))
            .filter(|&r| r <= budget)
            .collect();
        rooms.sort_unstable();
        rooms.dedup();
        let mut best: Option<f64> = None;
        for room in rooms {
            let mut p = Problem::new(OptimizationDirection::Minimize);
            let mut bytes = Vec::new();
            for chain in chains {
                let allowed: Vec<&Candidate> = chain.iter().filter(|c| c.grow <= room).collect();
                let vars: Vec<_> = allowed
                    .iter()
                    .map(|c| {
                        let v = p.add_var(c.error, (0.0, 1.0));
                        bytes.push((v, c.bytes as f64));
                        (v, 1.0)
                    })
                    .collect();
                p.add_constraint(vars.as_slice(), ComparisonOp::Eq, 1.0);
            }
            p.add_constraint(bytes.as_slice(), ComparisonOp::Le, (budget - room) as f64);
            if let Ok(sol) = p.solve() {
                let v = sol.objective();
                best = Some(best.map_or(v, |b: f64| b.min(v)));
            }
        }
        best
    }

    #[test]
    fn the_exact_bound_is_the_lp_an_independent_solver_finds() {
        let mut bound = Bound::default();
        let mut worst_lagrangian = 0.0f64;
        let mut checked = 0;
        for (size, seed) in [((5, 5), 3), ((20, 8), 5), ((50, 12), 9)] {
            for (k, (chains, budget)) in sized_cases(70, seed, size.0, size.1)
                .into_iter()
                .enumerate()
            {
                let (all, off) = flat(&chains);
                let exact = lp_bound(&all, &off, budget).expect("bases fit");
                let solver = lp_by_solver(&chains, budget).expect("a room is feasible");
                assert!(
                    (exact - solver).abs() <= 1e-3 * solver.abs().max(1.0),
                    "{size:?} case {k}: exact {exact} against the solver's {solver}"
                );
                // the grid search is a bound below it, sometimes far below
                let grid = lagrangian_bound(&mut bound, &all, &off, budget, None).unwrap();
                assert!(
                    grid <= exact * (1.0 + 1e-9) + 1e-9,
                    "{size:?} case {k}: {grid} > {exact}"
                );
                worst_lagrangian = worst_lagrangian.max(relative_gap(exact, grid));
                // small cases: below the integer optimum too
                if size.0 <= 5 {
                    let (opt, _) = exact_fit(&chains, budget).unwrap();
                    assert!(
                        exact <= opt + 1e-9 * opt.max(1.0),
                        "case {k}: {exact} > {opt}"
                    );
                }
                // what the planner calls is the exact bound at this size
                let lb = lower_bound(&mut bound, &all, &off, budget, None).unwrap();
                assert!(bound.exact && lb == exact);
                checked += 1;
            }
        }
        eprintln!(
            "{checked} cases; the grid search fell up to {:.1}% below the exact bound",
            worst_lagrangian * 100.0
        );
        assert!(
            worst_lagrangian > 0.0,
            "the cases should tell the two apart"
        );
    }

    #[test]
    fn tiny_errors_beside_large_ones_are_not_lost_to_rounding() {
        // a frame of the built-in scene with everything at its finest: the
        // coarse states' errors are 10^6 and more, the finest 10^-12; the
        // budget holds every finest state, so the LP is their sum
        let chains: Vec<Vec<Candidate>> = (0..18)
            .map(|i| {
                vec![
                    Candidate {
                        bytes: 6400,
                        error: 5.0e6 + i as f64 * 1.0e5,
                        grow: 0,
                    },
                    Candidate {
                        bytes: 12032,
                        error: 2.0e7,
                        grow: 100_352,
                    },
                    Candidate {
                        bytes: 22784,
                        error: 1.0e-12 * (1 + i % 2) as f64,
                        grow: 0,
                    },
                ]
            })
            .collect();
        let finest: f64 = chains.iter().map(|c| c[2].error).sum();
        let (all, off) = flat(&chains);
        let lb = lp_bound(&all, &off, 1_263_616).unwrap();
        assert!(
            (lb - finest).abs() <= 1e-6 * finest,
            "{lb} against {finest}"
        );
    }

    #[test]
    fn the_knapsack_bound_is_below_the_optimum_and_above_the_lp_bound() {
        let mut bound = Bound::default();
        let (mut exact, mut above_lp) = (0, 0);
        let all_cases = cases(300, 11);
        for (k, (chains, budget)) in all_cases.iter().enumerate() {
            let (all, off) = flat(chains);
            let (opt, _) = exact_fit(chains, *budget).expect("bases fit");
            let lp = lower_bound(&mut bound, &all, &off, *budget, None).unwrap();
            // one cell per byte: the exact optimum
            let kb = knapsack_bound(&all, &off, *budget, *budget as usize).unwrap();
            assert!(
                (kb - opt).abs() <= 1e-9 * opt.max(1.0),
                "case {k}: {kb} vs {opt}"
            );
            // coarse cells: still a bound, and no weaker than the LP's
            // but for rounding (a cell per 1/16 of the budget)
            let coarse = knapsack_bound(&all, &off, *budget, 16).unwrap();
            assert!(
                coarse <= opt + 1e-9 * opt.max(1.0),
                "case {k}: {coarse} > {opt}"
            );
            exact += usize::from((coarse - opt).abs() <= 1e-9 * opt.max(1.0));
            above_lp += usize::from(coarse > lp + 1e-9 * lp.max(1.0));
        }
        eprintln!("knapsack bound at 16 cells: the optimum in {exact} of 300, above the LP bound in {above_lp}");
        assert!(exact > 0 && above_lp > 0);
        // the bases over the budget: no plan
        let (all, off) = flat(&all_cases[0].0);
        assert!(knapsack_bound(&all, &off, 0, 16).is_none());
    }

    #[test]
    fn without_growth_room_the_bound_is_the_fractional_optimum() {
        // two chains, no room: the LP takes the steepest steps, the last
        // one fractionally. Chain A: 10 -> 30 bytes removes 100 (5/byte);
        // chain B: 10 -> 110 removes 100 (1/byte). Budget 70: the bases
        // (20), A's step (20 bytes) and 30 of B's 100: error 0 + 70.
        let a = [(10, 100.0), (30, 0.0)];
        let b = [(10, 100.0), (110, 0.0)];
        let chain = |s: &[(u64, f64)]| {
            s.iter()
                .map(|&(bytes, error)| Candidate {
                    bytes,
                    error,
                    grow: 0,
                })
                .collect::<Vec<_>>()
        };
        let (all, off) = flat(&[chain(&a), chain(&b)]);
        let lb = lower_bound(&mut Bound::default(), &all, &off, 70, None).unwrap();
        assert!((lb - 70.0).abs() < 1e-6, "{lb}");
        // the bases alone over the budget: no plan fits
        assert!(lower_bound(&mut Bound::default(), &all, &off, 15, None).is_none());
    }

    #[test]
    fn growth_room_raises_the_bound() {
        // one chain whose fine state needs as much room as its bytes: with a
        // budget of 150 it cannot grow (100 bytes + 100 room > 150)
        let chain = vec![
            Candidate {
                bytes: 10,
                error: 100.0,
                grow: 0,
            },
            Candidate {
                bytes: 100,
                error: 0.0,
                grow: 100,
            },
        ];
        let (all, off) = flat(&[chain]);
        let lb = lower_bound(&mut Bound::default(), &all, &off, 150, None).unwrap();
        // R = 0: stays at 100 error; R = 100: budget 50 holds 4/9 of the
        // step's bytes: 100 - 44.4. The bound is the smaller, 55.6
        assert!((lb - (100.0 - 400.0 / 9.0)).abs() < 1e-6, "{lb}");
        assert_eq!(exact_fit(std::slice::from_ref(&all), 150).unwrap().0, 100.0);
        // the knapsack bound takes no fraction of the step: the optimum
        assert_eq!(knapsack_bound(&all, &off, 150, 64), Some(100.0));
    }
}
