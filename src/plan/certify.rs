//! Claims about the budget fit that anyone can re-run: a frame's planning
//! problem as the fit saw it ([`FitProblem`], captured by
//! `mipstream bench --dump-plans`), and what the best plans for it are
//! ([`certify`]): the LP value the certificate defines (the minimum over
//! rooms of each room's LP relaxation, the streamer's `fit_gap_lp` bound) and the integer
//! optimum, solved exactly.
//!
//! The integer optimum is the problem the fit solves: one state per chain,
//! the chosen bytes plus the largest chosen growth room within the budget,
//! least total error, and a locked chain (a state loaded too recently to
//! give up, [`FitProblem::locked`]) never below the state it holds, as the
//! fit keeps it whenever every locked state fits beside the others'
//! cheapest ([`FitProblem::locks_hold`]). The keep bonus, a preference and
//! not a constraint, is left out: a plan that keeps what it holds for
//! stability shows that price in its gap. What the locks themselves cost is
//! the distance to the free optimum, the same problem without them
//! ([`Certified::free_optimum`]); the LP value, like the streamer's
//! certificate, has no locks either. Method: for each room `R` (0 and
//! each distinct growth room, ascending), a depth-first branch and bound over
//! the chains, bounded at every node by the exact LP relaxation of what is
//! left (the greedy over the remaining chains' lower convex hulls), with the
//! best plan found so far shared across rooms; a room whose LP value is
//! already no better is skipped. Exact when it finishes; it stops after
//! `node_limit` nodes and then says the optimum is not proven (what it
//! returns is then the best plan found, an upper bound).

use super::fit::{Candidate, Stickiness};

/// A state as the fit takes it.
fn candidate(s: &State) -> Candidate {
    Candidate {
        bytes: s.bytes,
        error: s.error,
        grow: s.grow,
    }
}

/// One state of a chain, as the fit saw it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct State {
    /// Bytes the asset holds in this state.
    pub bytes: u64,
    /// Its visible error.
    pub error: f64,
    /// Room it needs beside the plan while it grows into this state.
    pub grow: u64,
}

/// A frame's planning problem, as the budget fit solved it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FitProblem {
    /// The update it was planned in.
    pub frame: u64,
    /// Bytes for the chains: the planner's budget less what the assets with
    /// one state (tails its views want no finer) hold.
    pub budget: u64,
    /// Error of those one-state assets (in every plan alike).
    pub fixed_error: f64,
    /// One chain per texture or mesh the fit chose for.
    pub chains: Vec<Vec<State>>,
    /// Per chain: the state resident when it was planned.
    pub resident: Vec<u32>,
    /// Per chain: whether that state was locked (minimum residency).
    pub locked: Vec<bool>,
    /// Per chain: the state the fit chose.
    pub choice: Vec<u32>,
    /// The plan's total error (fixed error included).
    pub plan_error: f64,
    /// The lower bound the streamer reported for it (fixed error included),
    /// if it certified the frame.
    pub reported_bound: Option<f64>,
}

impl FitProblem {
    /// The problem the fit was given: its chains, stickiness and choice.
    pub(crate) fn capture(
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[super::fit::Stickiness],
        choice: &[u32],
        budget: u64,
    ) -> Box<Self> {
        let n = offsets.len().saturating_sub(1);
        let chains = (0..n)
            .map(|i| {
                let c = &chains[offsets[i] as usize..offsets[i + 1] as usize];
                let state = |c: &Candidate| State {
                    bytes: c.bytes,
                    error: c.error,
                    grow: c.grow,
                };
                c.iter().map(state).collect()
            })
            .collect();
        Box::new(Self {
            budget,
            chains,
            resident: sticky.iter().map(|s| s.resident as u32).collect(),
            locked: sticky.iter().map(|s| s.locked).collect(),
            choice: choice.to_vec(),
            ..Self::default()
        })
    }

    /// With the plan's frame, the one-state assets' error, the plan's error
    /// and the bound reported.
    pub(crate) fn with_plan(
        mut self: Box<Self>,
        frame: u64,
        fixed_error: f64,
        plan_error: f64,
        reported_bound: Option<f64>,
    ) -> Box<Self> {
        self.frame = frame;
        self.fixed_error = fixed_error;
        self.plan_error = plan_error;
        self.reported_bound = reported_bound;
        self
    }

    /// The chains as the fit takes them: back to back, with offsets.
    fn packed(&self) -> (Vec<Candidate>, Vec<u32>) {
        let mut flat = Vec::new();
        let mut offsets = vec![0u32];
        for c in &self.chains {
            flat.extend(c.iter().map(candidate));
            offsets.push(flat.len() as u32);
        }
        (flat, offsets)
    }

    /// Whether the fit keeps the locked states: every one of them fits
    /// beside the other chains' cheapest states, with the growth room those
    /// need (the fit's own test, `fit::locks_fit`).
    pub fn locks_hold(&self) -> bool {
        let (flat, offsets) = self.packed();
        let sticky: Vec<Stickiness> = (0..self.chains.len())
            .map(|i| Stickiness {
                resident: self.resident.get(i).map_or(0, |&r| r as usize),
                locked: self.locked.get(i).copied().unwrap_or(false),
                ..Stickiness::default()
            })
            .collect();
        super::fit::locks_fit(&flat, &offsets, &sticky, self.budget)
    }

    /// Whether `choice` keeps every locked chain at or above the state it
    /// holds (true when the locks do not hold: then nothing is kept).
    pub fn keeps_locks(&self, choice: &[u32]) -> bool {
        !self.locks_hold()
            || (0..self.chains.len()).all(|i| {
                !self.locked.get(i).copied().unwrap_or(false)
                    || choice.get(i).is_some_and(|&k| k >= self.resident[i])
            })
    }

    /// Whether the chosen states fit as the fit must keep them: their bytes
    /// plus the largest chosen growth room within the budget.
    pub fn choice_fits(&self) -> bool {
        let (mut bytes, mut room) = (0u64, 0u64);
        for (chain, &k) in self.chains.iter().zip(&self.choice) {
            let Some(s) = chain.get(k as usize) else {
                return false;
            };
            bytes += s.bytes;
            room = room.max(s.grow);
        }
        self.choice.len() == self.chains.len() && bytes + room <= self.budget
    }
}

/// What [`certify`] found for one problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Certified {
    /// The plan's total error.
    pub plan_error: f64,
    /// The LP value (the exact certificate), fixed error included; `None`
    /// when not even the cheapest states fit.
    pub lp_value: Option<f64>,
    /// The integer optimum of the fit's problem (locks kept), fixed error
    /// included (the best plan found when `proven` is false).
    pub optimum: Option<f64>,
    /// The state per chain of that optimum.
    pub optimum_choice: Vec<u32>,
    /// The integer optimum without the locks: below `optimum` by what
    /// keeping recently loaded states costs (the same when nothing is
    /// locked or the locks do not hold).
    pub free_optimum: Option<f64>,
    /// Whether the plan keeps the locks ([`FitProblem::keeps_locks`]); a
    /// plan that does not is not among the plans `optimum` ranges over.
    pub plan_keeps_locks: bool,
    /// Whether both searches finished, so the optima are exact.
    pub proven: bool,
    /// Nodes the searches visited.
    pub nodes: u64,
}

impl Certified {
    /// How far the plan is above the optimum, as a share of the plan's error.
    pub fn optimum_gap(&self) -> Option<f64> {
        self.optimum.map(|o| share(self.plan_error, o))
    }

    /// How far the plan is above the free optimum (no locks), as a share
    /// of the plan's error: the optimum gap plus what the locks cost.
    pub fn free_optimum_gap(&self) -> Option<f64> {
        self.free_optimum.map(|o| share(self.plan_error, o))
    }

    /// How far the plan is above the LP value, as a share of the plan's
    /// error (what the streamer reports as `fit_gap_lp`).
    pub fn lp_gap(&self) -> Option<f64> {
        self.lp_value.map(|v| share(self.plan_error, v))
    }
}

fn share(plan: f64, bound: f64) -> f64 {
    if plan > 0.0 {
        ((plan - bound) / plan).max(0.0)
    } else {
        0.0
    }
}

/// Solves `problem` (see the module docs) within `node_limit` nodes per
/// search (two when locks hold: with them and without).
pub fn certify(problem: &FitProblem, node_limit: u64) -> Certified {
    let (flat, offsets) = problem.packed();
    let lp_value =
        super::bound::lp_bound(&flat, &offsets, problem.budget).map(|v| v + problem.fixed_error);
    let locks = problem.locks_hold();
    let plan_keeps_locks = problem.keeps_locks(&problem.choice);
    let solve = |locks: bool, seed: Option<&(f64, Vec<u32>)>| {
        let mut search = Search::new(problem, node_limit, locks);
        // the plan itself, where it is one of the plans searched: the
        // first incumbent
        if problem.choice_fits() && (!locks || plan_keeps_locks) {
            let error = problem
                .chains
                .iter()
                .zip(&problem.choice)
                .map(|(c, &k)| c[k as usize].error)
                .sum::<f64>();
            search.best = Some((error, problem.choice.clone()));
        }
        // (a plan with the locks kept is one without them too)
        if let Some(s) = seed.filter(|s| search.best.as_ref().is_none_or(|b| s.0 < b.0)) {
            search.best = Some(s.clone());
        }
        search.run();
        (search.best, search.nodes)
    };
    let (best, nodes) = solve(locks, None);
    let (free, free_nodes) = if locks {
        solve(false, best.as_ref())
    } else {
        (best.clone(), 0)
    };
    let proven = nodes <= node_limit && free_nodes <= node_limit;
    let (optimum, optimum_choice) = match best {
        Some((e, c)) => (Some(e + problem.fixed_error), c),
        None => (None, Vec::new()),
    };
    Certified {
        plan_error: problem.plan_error,
        lp_value,
        optimum,
        optimum_choice,
        free_optimum: free.map(|(e, _)| e + problem.fixed_error),
        plan_keeps_locks,
        proven,
        nodes: nodes + free_nodes,
    }
}

/// The branch and bound over one problem.
struct Search<'a> {
    problem: &'a FitProblem,
    limit: u64,
    nodes: u64,
    best: Option<(f64, Vec<u32>)>,
    /// Whether locked chains keep their resident state or finer.
    locks: bool,
}

/// A state in a room: its index in the chain, bytes, error.
type RoomState = (u32, u64, f64);

/// One room's problem: per chain (in search order) its states that need at
/// most the room and are not dominated, bytes ascending.
struct Room {
    /// (chain index in the problem, its states).
    chains: Vec<(usize, Vec<RoomState>)>,
    /// Every remaining chain's hull steps, steepest first: (position in
    /// `chains`, bytes, error removed).
    steps: Vec<(usize, u64, f64)>,
    /// Per position: the bytes and error of its cheapest state, summed from
    /// there to the end.
    base_bytes: Vec<u64>,
    base_error: Vec<f64>,
}

impl<'a> Search<'a> {
    fn new(problem: &'a FitProblem, limit: u64, locks: bool) -> Self {
        Self {
            problem,
            limit,
            nodes: 0,
            best: None,
            locks,
        }
    }

    fn run(&mut self) {
        let mut rooms: Vec<u64> = std::iter::once(0)
            .chain(self.problem.chains.iter().flatten().map(|s| s.grow))
            .filter(|&r| r <= self.problem.budget)
            .collect();
        rooms.sort_unstable();
        rooms.dedup();
        for r in rooms {
            let Some(room) = Room::new(self.problem, r, self.locks) else {
                continue;
            };
            let cap = self.problem.budget - r;
            // a room whose relaxation is no better than the best plan: skip
            let Some(bound) = room.lp(0, cap) else {
                continue;
            };
            if self
                .best
                .as_ref()
                .is_some_and(|b| bound >= b.0 - tolerance(b.0))
            {
                continue;
            }
            let mut picks = vec![0u32; self.problem.chains.len()];
            self.descend(&room, 0, cap, 0.0, &mut picks);
            if self.nodes > self.limit {
                return;
            }
        }
    }

    fn descend(&mut self, room: &Room, at: usize, cap: u64, error: f64, picks: &mut [u32]) {
        self.nodes += 1;
        if self.nodes > self.limit {
            return;
        }
        if at == room.chains.len() {
            if self
                .best
                .as_ref()
                .is_none_or(|b| error < b.0 - tolerance(b.0))
            {
                self.best = Some((error, picks.to_vec()));
            }
            return;
        }
        let (chain, states) = &room.chains[at];
        // finest first: the LP solution's neighbourhood is found early
        for &(index, bytes, e) in states.iter().rev() {
            if bytes > cap {
                continue;
            }
            let rest = cap - bytes;
            let Some(bound) = room.lp(at + 1, rest) else {
                continue;
            };
            let total = error + e + bound;
            if self
                .best
                .as_ref()
                .is_some_and(|b| total >= b.0 - tolerance(b.0))
            {
                continue;
            }
            picks[*chain] = index;
            self.descend(room, at + 1, rest, error + e, picks);
            if self.nodes > self.limit {
                return;
            }
        }
    }
}

/// Relative slack below which two totals count as equal.
fn tolerance(x: f64) -> f64 {
    1e-12 * x.abs().max(1e-300)
}

impl Room {
    fn new(problem: &FitProblem, room: u64, locks: bool) -> Option<Self> {
        let mut chains = Vec::with_capacity(problem.chains.len());
        for (i, chain) in problem.chains.iter().enumerate() {
            // a locked chain keeps its state or a finer one
            let floor = match problem.locked.get(i) {
                Some(true) if locks => problem.resident[i] as usize,
                _ => 0,
            };
            let mut states: Vec<RoomState> = chain
                .iter()
                .enumerate()
                .filter(|(k, s)| s.grow <= room && *k >= floor)
                .map(|(k, s)| (k as u32, s.bytes, s.error))
                .collect();
            if states.is_empty() {
                return None;
            }
            // bytes ascending, and only states that remove error
            states.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.total_cmp(&b.2)));
            let mut kept: Vec<RoomState> = Vec::with_capacity(states.len());
            for s in states {
                if kept.last().is_none_or(|l| s.2 < l.2) {
                    kept.push(s);
                }
            }
            chains.push((i, kept));
        }
        // the chains with most error to remove first: their choice matters most
        chains.sort_by(|a, b| {
            let spread = |c: &Vec<RoomState>| c[0].2 - c[c.len() - 1].2;
            spread(&b.1).total_cmp(&spread(&a.1)).then(a.0.cmp(&b.0))
        });
        let mut steps = Vec::new();
        for (pos, (_, states)) in chains.iter().enumerate() {
            // the lower convex hull over (bytes, error), from the cheapest
            let mut hull: Vec<(u64, f64)> = Vec::new();
            for &(_, b, e) in states {
                while hull.len() >= 2 {
                    let (b1, e1) = hull[hull.len() - 2];
                    let (b2, e2) = hull[hull.len() - 1];
                    // drop the middle point when it lies on or above the chord
                    let cross =
                        (b2 as f64 - b1 as f64) * (e - e1) - (e2 - e1) * (b as f64 - b1 as f64);
                    if cross <= 0.0 {
                        hull.pop();
                    } else {
                        break;
                    }
                }
                hull.push((b, e));
            }
            for w in hull.windows(2) {
                steps.push((pos, w[1].0 - w[0].0, w[0].1 - w[1].1));
            }
        }
        steps.sort_by(|a, b| {
            let slope = |s: &(usize, u64, f64)| s.2 / s.1.max(1) as f64;
            slope(b).total_cmp(&slope(a)).then(a.0.cmp(&b.0))
        });
        let n = chains.len();
        let mut base_bytes = vec![0u64; n + 1];
        let mut base_error = vec![0.0f64; n + 1];
        for p in (0..n).rev() {
            let (_, b, e) = chains[p].1[0];
            base_bytes[p] = base_bytes[p + 1] + b;
            base_error[p] = base_error[p + 1] + e;
        }
        Some(Self {
            chains,
            steps,
            base_bytes,
            base_error,
        })
    }

    /// The LP relaxation's value over the chains from position `from` with
    /// `cap` bytes: each at its cheapest state, then hull steps, steepest
    /// first, the last one fractionally. `None` when the cheapest states do
    /// not fit.
    fn lp(&self, from: usize, cap: u64) -> Option<f64> {
        let base = self.base_bytes[from];
        if base > cap {
            return None;
        }
        let mut left = (cap - base) as f64;
        let mut error = self.base_error[from];
        for &(pos, bytes, removed) in &self.steps {
            if pos < from {
                continue;
            }
            let b = bytes as f64;
            if b <= left {
                left -= b;
                error -= removed;
            } else {
                error -= removed * left / b;
                break;
            }
        }
        Some(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small random problem from `seed`: `n` chains of up to `m` states,
    /// bytes rising, error falling, some states needing room.
    fn problem(seed: u64, n: usize, m: usize) -> FitProblem {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut chains = Vec::new();
        for _ in 0..n {
            let k = 1 + (next() % m as u64) as usize;
            let (mut bytes, mut error) = (1 + next() % 50, 50.0 + (next() % 1000) as f64);
            let mut chain = Vec::new();
            for j in 0..k {
                let grow = if j > 0 && next() % 3 == 0 {
                    next() % 200
                } else {
                    0
                };
                chain.push(State { bytes, error, grow });
                bytes += 1 + next() % 300;
                error *= 0.2 + (next() % 700) as f64 / 1000.0;
            }
            chains.push(chain);
        }
        let cheapest: u64 = chains.iter().map(|c| c[0].bytes).sum();
        let n = chains.len();
        FitProblem {
            budget: cheapest + next() % (150 * n as u64 + 1),
            choice: vec![0; n],
            resident: vec![0; n],
            locked: vec![false; n],
            plan_error: chains.iter().map(|c| c[0].error).sum(),
            chains,
            ..FitProblem::default()
        }
    }

    #[test]
    fn the_optimum_matches_the_exhaustive_one_and_the_lp_value_stays_below_it() {
        let mut lp_below = 0;
        for seed in 0..300 {
            let p = problem(seed, 2 + (seed % 7) as usize, 6);
            let c = certify(&p, 10_000_000);
            assert!(c.proven, "seed {seed}");
            let exact = super::super::fit::exact_fit(&candidates(&p.chains), p.budget).map(|e| e.0);
            match (exact, c.optimum) {
                (Some(e), Some(o)) => assert!(
                    (e - o).abs() <= 1e-9 * e.max(1.0),
                    "seed {seed}: {e} vs {o}"
                ),
                (e, o) => assert_eq!(e, o, "seed {seed}"),
            }
            // the optimum's choice is a plan that fits, with that error
            if let Some(o) = c.optimum {
                let mut q = p.clone();
                q.choice = c.optimum_choice.clone();
                assert!(q.choice_fits(), "seed {seed}");
                let e: f64 = q
                    .chains
                    .iter()
                    .zip(&q.choice)
                    .map(|(c, &k)| c[k as usize].error)
                    .sum();
                assert!((e - o).abs() <= 1e-9 * o.max(1.0));
                let lp = c.lp_value.unwrap();
                assert!(
                    lp <= o + 1e-9 * o.max(1.0),
                    "seed {seed}: LP {lp} above {o}"
                );
                if lp < o - 1e-9 * o {
                    lp_below += 1;
                }
            }
        }
        // the relaxation is not the optimum itself on most of them
        assert!(lp_below > 100, "{lp_below}");
    }

    fn candidates(chains: &[Vec<State>]) -> Vec<Vec<Candidate>> {
        chains
            .iter()
            .map(|c| c.iter().map(candidate).collect())
            .collect()
    }

    #[test]
    fn locked_chains_keep_their_state_in_the_optimum_and_the_free_one_drops_them() {
        let (mut locked_cases, mut priced) = (0, 0);
        for seed in 0..300 {
            let mut p = problem(seed, 2 + (seed % 7) as usize, 6);
            // lock about a third of the chains at a random state
            let mut x = seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1;
            for (i, chain) in p.chains.iter().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                p.resident[i] = (x % chain.len() as u64) as u32;
                p.locked[i] = x % 3 == 0;
            }
            let c = certify(&p, 10_000_000);
            assert!(c.proven, "seed {seed}");
            let free = super::super::fit::exact_fit(&candidates(&p.chains), p.budget);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
            assert!(
                close(c.free_optimum.unwrap_or(-1.0), free.map_or(-1.0, |f| f.0)),
                "seed {seed}"
            );
            if !p.locks_hold() {
                assert_eq!(c.optimum, c.free_optimum, "seed {seed}");
                continue;
            }
            locked_cases += 1;
            // the locked problem: each locked chain starts at its state
            let cut: Vec<Vec<State>> = p
                .chains
                .iter()
                .enumerate()
                .map(|(i, chain)| match p.locked[i] {
                    true => chain[p.resident[i] as usize..].to_vec(),
                    false => chain.clone(),
                })
                .collect();
            let exact = super::super::fit::exact_fit(&candidates(&cut), p.budget);
            assert!(
                close(
                    c.optimum.unwrap_or(-1.0),
                    exact.as_ref().map_or(-1.0, |e| e.0)
                ),
                "seed {seed}: {:?} vs {exact:?}",
                c.optimum
            );
            assert!(p.keeps_locks(&c.optimum_choice), "seed {seed}");
            let (o, f) = (c.optimum.unwrap(), c.free_optimum.unwrap());
            assert!(f <= o + 1e-9 * o.max(1.0), "seed {seed}");
            priced += usize::from(f < o - 1e-9 * o);
        }
        // the locks hold on many cases and cost something on some
        assert!(locked_cases > 50 && priced > 10, "{locked_cases} {priced}");
    }

    #[test]
    fn a_plan_that_keeps_a_lock_is_optimal_for_the_fit_and_the_lock_has_a_price() {
        let state = |bytes, error| State {
            bytes,
            error,
            grow: 0,
        };
        // the first chain holds its fine state, locked; the optimum without
        // the lock gives it up for the second chain's fine state
        let p = FitProblem {
            budget: 80,
            chains: vec![
                vec![state(10, 3.0), state(50, 1.0)],
                vec![state(10, 20.0), state(50, 2.0)],
            ],
            resident: vec![1, 0],
            locked: vec![true, false],
            choice: vec![1, 0],
            plan_error: 21.0,
            ..FitProblem::default()
        };
        assert!(p.locks_hold() && p.keeps_locks(&p.choice));
        let c = certify(&p, 1000);
        assert_eq!(c.optimum, Some(21.0));
        assert_eq!(c.optimum_gap(), Some(0.0));
        assert_eq!(c.free_optimum, Some(5.0));
        assert!((c.free_optimum_gap().unwrap() - 16.0 / 21.0).abs() < 1e-12);
        // a plan that breaks the lock is not among those the optimum ranges
        // over, and says so
        let broken = FitProblem {
            choice: vec![0, 1],
            plan_error: 5.0,
            ..p.clone()
        };
        let c = certify(&broken, 1000);
        assert!(!c.plan_keeps_locks);
        assert_eq!(c.optimum, Some(21.0));
        assert_eq!(c.free_optimum, Some(5.0));
        // locks that do not fit together bind nothing
        let tight = FitProblem {
            budget: 55,
            ..p.clone()
        };
        assert!(!tight.locks_hold());
        assert_eq!(certify(&tight, 1000).optimum, Some(23.0));
    }

    #[test]
    fn a_node_limit_stops_the_search_and_says_so() {
        let p = problem(7, 30, 12);
        let c = certify(&p, 50);
        assert!(!c.proven);
        assert!(c.nodes > 50);
        // the plan (every chain at its cheapest) fits, so a plan is returned
        assert!(c.optimum.is_some_and(|o| o <= p.plan_error));
        let full = certify(&p, u64::MAX);
        assert!(full.proven);
        assert!(full.optimum.unwrap() <= c.optimum.unwrap());
        assert!((full.optimum_gap().unwrap()) >= 0.0);
    }
}
