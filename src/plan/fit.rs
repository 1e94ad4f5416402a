//! Budget fit: which state (mip level and tier) each texture gets so that the
//! total visible error is smallest within the byte budget.
//!
//! Each texture offers a chain of states from its always-resident tail (the
//! cheapest) to the finest level it wants, each with a byte cost and a visible
//! error. The fit is greedy by marginal benefit per byte: it takes the lower
//! convex hull of each chain (so a texture's steps have decreasing benefit per
//! byte), puts every texture's next step in a max-heap keyed by error removed
//! per byte added, and takes steps while they fit. For chains that are convex
//! this is the optimum of the fractional problem, off by at most one step from
//! the integer optimum; [`exact_fit`] solves small cases exactly (a
//! multiple-choice knapsack by dynamic programming) so tests can measure the gap.
//!
//! Evicting is the same computation: states a texture holds but no longer gets
//! are the ones with the least error removed per byte, so they go first.
//!
//! Growing into a state needs bytes beside the plan for a moment (the old
//! copy and the staged levels, [`Candidate::grow`]). The fit keeps room for
//! the largest growth it chooses inside the budget, so a plan never needs more
//! than the budget to come true, and a budget is not emptied by a fixed
//! reserve sized for the worst case: states already resident need no room.
//! A step that raises the room counts the raise in its cost per byte (as of
//! when the step is queued), so a tier switch that needs old and new copies
//! at once does not empty half the budget for a small gain; the room is that
//! of the states finally chosen, not of those passed on the way. The hull is
//! taken over each state's bytes plus the room it needs beyond them (a tier
//! switch's old copy), and a step that does not fit is routed round to the
//! best state that does, so a state needing much room never hides one
//! needing none (the state held now). Measured against [`exact_fit`] with
//! growth room on 200 random small cases (`plan::tests`): optimal in 196,
//! mean gap 0.074% of the tails-only error, worst 7.2% and never more than
//! one step (a hull over bytes alone, with no way round, left 30.6%).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One state a texture can be in.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Candidate {
    /// Bytes the texture occupies in this state.
    pub bytes: u64,
    /// Visible error in this state (smaller is better).
    pub error: f64,
    /// Bytes needed beside the plan while the texture grows into this state
    /// (its old copy and the staged upload); 0 for states already resident
    /// or coarser. The fit keeps room for the largest growth it chooses.
    pub grow: u64,
}

/// How many rooms [`Fitter::untrap`] tries a second fit with, at most.
const UNTRAP_ROOMS: usize = 2;

/// Per-texture preferences that keep the fit stable from frame to frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stickiness {
    /// Index in the chain of the state the texture has resident now.
    pub resident: usize,
    /// Benefit multiplier for steps the texture already has resident: others
    /// must be this much better per byte to take their bytes.
    pub keep_bonus: f64,
    /// The resident state is too recent to give up voluntarily: its steps are
    /// taken before any other while they fit.
    pub locked: bool,
}

impl Default for Stickiness {
    fn default() -> Self {
        Self {
            resident: 0,
            keep_bonus: 1.0,
            locked: false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Step {
    gain: f64,
    texture: u32,
    /// Chain indices of the state the step leaves and the one it takes.
    from: u32,
    to: u32,
}

impl PartialEq for Step {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Step {}
impl PartialOrd for Step {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Step {
    fn cmp(&self, o: &Self) -> Ordering {
        // larger gain first; ties: lower texture index first (deterministic)
        self.gain
            .total_cmp(&o.gain)
            .then(o.texture.cmp(&self.texture))
    }
}

/// Reusable buffers for [`Fitter::fit`].
#[derive(Debug, Default)]
pub(crate) struct Fitter {
    hull: Vec<u32>,
    hull_start: Vec<u32>,
    heap: BinaryHeap<Step>,
    blocked: Vec<Step>,
    /// How many chosen states need each growth room (a multiset: the room
    /// is its largest key).
    grows: std::collections::BTreeMap<u64, u32>,
    room: u64,
    /// Whether this fit honours [`Stickiness::locked`]: only while every
    /// locked state fits beside the other textures' bases (see
    /// [`locks_fit`]).
    locks: bool,
    /// The second pass of [`Self::fit`] for a trapped texture (see
    /// [`Self::untrap`]): its own buffers, the chains it sees and its choice.
    retry: Option<Box<Fitter>>,
    retry_chains: Vec<Candidate>,
    retry_choice: Vec<u32>,
    /// Per chain, the state a refit's states below it (or needing more
    /// room than it sets aside) stand in for.
    retry_floors: Vec<u32>,
}

impl Fitter {
    /// Chooses a state per texture. `chains` holds every texture's candidates
    /// back to back, `offsets[t]..offsets[t + 1]` being texture `t`'s chain,
    /// cheapest (the base) first. Writes the chosen index within each chain
    /// to `choice` and returns the bytes used. Every texture gets at least its
    /// base state, even if the bases alone exceed `budget`. The chosen states
    /// and the largest [`Candidate::grow`] among them fit the budget together
    /// (see [`room`](Self::room)): the plan leaves room for its own growth.
    pub(crate) fn fit(
        &mut self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        budget: u64,
        choice: &mut Vec<u32>,
    ) -> u64 {
        let used = self.pass(chains, offsets, sticky, budget, choice);
        self.untrap(chains, offsets, sticky, budget, choice, used)
    }

    /// The greedy fit: hull steps by error removed per byte, then
    /// [`Self::swap`] and [`Self::fill`].
    fn pass(
        &mut self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        budget: u64,
        choice: &mut Vec<u32>,
    ) -> u64 {
        let n = offsets.len().saturating_sub(1);
        choice.clear();
        choice.resize(n, 0);
        self.hull.clear();
        self.hull_start.clear();
        self.heap.clear();
        self.blocked.clear();
        let mut used: u64 = 0;
        self.grows.clear();
        for t in 0..n {
            let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
            self.hull_start.push(self.hull.len() as u32);
            if chain.is_empty() {
                continue;
            }
            used = used.saturating_add(chain[0].bytes);
            self.put_grow(chain[0].grow);
            lower_hull(chain, &mut self.hull);
        }
        self.hull_start.push(self.hull.len() as u32);
        self.locks = locks_fit(chains, offsets, sticky, budget);
        for t in 0..n {
            if let Some(step) = self.step(chains, offsets, sticky, t, 0) {
                self.heap.push(step);
            }
        }
        while let Some(s) = self.heap.pop() {
            let t = s.texture as usize;
            let base = offsets[t] as usize;
            let (from, to) = (s.from as usize, s.to as usize);
            let add = chains[base + to].bytes - chains[base + from].bytes;
            let (g_from, g_to) = (chains[base + from].grow, chains[base + to].grow);
            self.take_grow(g_from);
            if used + add + self.max_grow().max(g_to) > budget {
                self.put_grow(g_from);
                // a state that does not fit (its growth room, often) may
                // stand before finer ones that do, such as the state held
                // now: go round it; else this texture stops here and
                // smaller steps of others may still fit
                match self.detour(chains, offsets, sticky, t, from, used, budget) {
                    Some(d) => self.heap.push(d),
                    None => self.blocked.push(s),
                }
                continue;
            }
            used += add;
            self.put_grow(g_to);
            choice[t] = to as u32;
            if let Some(next) = self.next_step(chains, offsets, sticky, t, to) {
                self.heap.push(next);
            }
        }
        self.swap(chains, offsets, sticky, budget, &mut used, choice);
        self.fill(chains, offsets, budget, &mut used, choice);
        self.room = self.max_grow();
        used
    }

    /// The room trap. Growing a texture (or a mesh) needs room beside the
    /// plan for a moment: the new copy is made while the old one is still
    /// bound. The greedy pass charges a step the room it raises, so a large
    /// growth is rarely worth its room in one frame, and the pass never
    /// frees room it has spent: others would have to give up a little
    /// first. A texture filling the screen can then stay a level coarser
    /// for as long as it fills it (Sponza at 960x540 and a quarter of its
    /// working set: `sponza_column_c_spec` at level 2 for 40 frames, the
    /// plan up to 47% above the integer optimum). So for the largest rooms
    /// that better states the pass ruled out need (at most
    /// [`UNTRAP_ROOMS`], most error removed first), this fits again with
    /// that room set aside from the start (the problem [`exact_fit`]
    /// solves room by room: only states needing at most the room, their
    /// bytes within the rest) and keeps whichever plan shows less error.
    /// Nothing ruled out (the usual case): one pass over the chosen states.
    ///
    /// A refit does not dig a deeper trap than the one it escapes: a
    /// resident state whose bytes (what regrowing it would need beside the
    /// plan) exceed the room the refit makes is not given up for it. Without
    /// that, a refit for a texture's growth dropped one of FlightHelmet's
    /// meshes a LOD (`RubberWood_low`, 528 KiB at LOD 1), which no later
    /// frame found room to regrow: 48.57 to 46.99 dB at half its working
    /// set (1280x720, lockstep). Before, the refit was only for a state
    /// beaten on both bytes and error, and an earlier attempt at refitting
    /// for any ruled-out state measured 46.87 there for this reason.
    fn untrap(
        &mut self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        budget: u64,
        choice: &mut Vec<u32>,
        mut used: u64,
    ) -> u64 {
        let bases: u64 = (0..choice.len())
            .filter_map(|t| chains.get(offsets[t] as usize))
            .map(|c| c.bytes)
            .sum();
        let mut rooms: Vec<(f64, u64)> = Vec::new();
        for (t, &at) in choice.iter().enumerate() {
            let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
            let now = chain[at as usize];
            for s in chain {
                // a better state this plan's room rules out (or one it
                // could have for fewer bytes), which fits beside the others'
                // bases with its room
                if s.error < now.error && bases - chain[0].bytes + s.bytes + s.grow <= budget {
                    rooms.push((now.error - s.error, s.grow));
                }
            }
        }
        if rooms.is_empty() {
            return used;
        }
        // per room the most error it could free, largest first
        rooms.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)));
        rooms.dedup_by_key(|r| r.1);
        rooms.sort_by(|a, b| b.0.total_cmp(&a.0));
        let error_of = |choice: &[u32]| -> f64 {
            (0..choice.len())
                .map(|t| chains[offsets[t] as usize + choice[t] as usize].error)
                .sum()
        };
        let mut best = error_of(choice);
        let mut retry = self.retry.take().unwrap_or_default();
        let mut alt = std::mem::take(&mut self.retry_choice);
        for &(_, room) in rooms.iter().take(UNTRAP_ROOMS) {
            // the chains as this room sees them: a state needing more room
            // becomes its chain's base (never chosen over it), the others
            // need none beyond the room set aside
            self.retry_chains.clear();
            self.retry_floors.clear();
            for t in 0..offsets.len().saturating_sub(1) {
                let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
                // a resident state whose regrowth would need more room than
                // this refit makes is not given up for it: it is the floor
                let r = sticky.get(t).map_or(0, |s| s.resident);
                let floor = match chain.get(r) {
                    Some(c) if c.bytes > room => r,
                    _ => 0,
                };
                self.retry_floors.push(floor as u32);
                self.retry_chains
                    .extend(chain.iter().enumerate().map(|(i, c)| {
                        let c = if i < floor || c.grow > room {
                            chain[floor]
                        } else {
                            *c
                        };
                        Candidate { grow: 0, ..c }
                    }));
            }
            let alt_used = retry.pass(&self.retry_chains, offsets, sticky, budget - room, &mut alt);
            // a state that stood in for its floor is the floor
            for (t, a) in alt.iter_mut().enumerate() {
                let floor = self.retry_floors[t];
                let grow = chains
                    .get(offsets[t] as usize + *a as usize)
                    .map_or(0, |c| c.grow);
                if *a < floor || grow > room {
                    *a = floor;
                }
            }
            let alt_room = (0..alt.len())
                .map(|t| chains[offsets[t] as usize + alt[t] as usize].grow)
                .max()
                .unwrap_or(0);
            if alt_used + alt_room > budget {
                continue;
            }
            let error = error_of(&alt);
            if error < best {
                best = error;
                used = alt_used;
                std::mem::swap(choice, &mut alt);
                std::mem::swap(&mut self.blocked, &mut retry.blocked);
                self.room = alt_room;
            }
        }
        self.retry = Some(retry);
        self.retry_choice = alt;
        used
    }

    /// The greedy order can spend the last bytes on small steps that then keep
    /// a more valuable large step out. For the most valuable blocked steps, this
    /// frees room by undoing other textures' last steps, least error per byte
    /// first, and swaps when the blocked step removes more error than they did.
    fn swap(
        &mut self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        budget: u64,
        used: &mut u64,
        choice: &mut [u32],
    ) {
        const TRIES: usize = 16;
        if self.blocked.is_empty() {
            return;
        }
        let bytes_err = |t: usize, i: u32| chains[offsets[t] as usize + i as usize];
        // each texture's last taken hull step: (gain per byte, texture, previous index)
        let mut removable: Vec<(f64, usize, u32)> = Vec::new();
        for (t, &chosen) in choice.iter().enumerate() {
            let hull = self.hull_of(t);
            if let Some(h) = hull.iter().position(|&i| i == chosen).filter(|&h| h > 0) {
                let (a, b) = (bytes_err(t, hull[h - 1]), bytes_err(t, hull[h]));
                let s = sticky.get(t).copied().unwrap_or_default();
                let kept = hull[h] as usize <= s.resident;
                if kept && s.locked && self.locks {
                    continue; // never given up voluntarily
                }
                let bonus = if kept { s.keep_bonus } else { 1.0 };
                removable.push((
                    bonus * (a.error - b.error) / (b.bytes - a.bytes).max(1) as f64,
                    t,
                    hull[h - 1],
                ));
            }
        }
        removable.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut touched = vec![false; choice.len()];
        let mut blocked = std::mem::take(&mut self.blocked);
        // most error removed first
        blocked.sort_by(|x, y| {
            self.step_value(chains, offsets, y)
                .total_cmp(&self.step_value(chains, offsets, x))
        });
        for s in blocked.iter().take(TRIES) {
            let u = s.texture as usize;
            let (from, to) = (s.from, s.to);
            if touched[u] || choice[u] != from {
                continue;
            }
            let (a, b) = (bytes_err(u, from), bytes_err(u, to));
            // (counting the room of states the swap may undo: safe)
            let room = self.max_grow().max(b.grow);
            // bytes to free so the step and its growth room fit
            let need = (*used + (b.bytes - a.bytes) + room).saturating_sub(budget);
            let (mut freed, mut loss, mut undo) = (0u64, 0.0, Vec::new());
            for &(_, t, prev) in &removable {
                if freed >= need {
                    break;
                }
                if t == u || touched[t] {
                    continue;
                }
                let (now, back) = (bytes_err(t, choice[t]), bytes_err(t, prev));
                let s = sticky.get(t).copied().unwrap_or_default();
                let bonus = if choice[t] as usize <= s.resident {
                    s.keep_bonus
                } else {
                    1.0
                };
                freed += now.bytes - back.bytes;
                loss += bonus * (back.error - now.error);
                undo.push((t, prev));
            }
            if freed >= need && loss < a.error - b.error {
                for (t, prev) in undo {
                    *used -= bytes_err(t, choice[t]).bytes - bytes_err(t, prev).bytes;
                    self.take_grow(bytes_err(t, choice[t]).grow);
                    self.put_grow(bytes_err(t, prev).grow);
                    choice[t] = prev;
                    touched[t] = true;
                }
                *used += b.bytes - a.bytes;
                self.take_grow(a.grow);
                self.put_grow(b.grow);
                choice[u] = to;
                touched[u] = true;
            }
        }
        self.blocked = blocked;
    }

    /// Error a blocked step would remove.
    fn step_value(&self, chains: &[Candidate], offsets: &[u32], s: &Step) -> f64 {
        let base = offsets[s.texture as usize] as usize;
        chains[base + s.from as usize].error - chains[base + s.to as usize].error
    }

    /// Spends what the hull steps left over: a texture whose next hull step
    /// did not fit may still afford a state between (off the hull), best
    /// blocked texture first.
    fn fill(
        &mut self,
        chains: &[Candidate],
        offsets: &[u32],
        budget: u64,
        used: &mut u64,
        choice: &mut [u32],
    ) {
        self.blocked.sort_by(|a, b| b.cmp(a));
        let blocked = std::mem::take(&mut self.blocked);
        for s in &blocked {
            let t = s.texture as usize;
            let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
            let now = chain[choice[t] as usize];
            self.take_grow(now.grow);
            let room = self.max_grow();
            let left = |c: &Candidate| budget.saturating_sub(*used + room.max(c.grow));
            let better = chain
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    c.bytes > now.bytes && c.bytes - now.bytes <= left(c) && c.error < now.error
                })
                .min_by(|a, b| a.1.error.total_cmp(&b.1.error));
            if let Some((i, c)) = better {
                *used += c.bytes - now.bytes;
                self.put_grow(c.grow);
                choice[t] = i as u32;
            } else {
                self.put_grow(now.grow);
            }
        }
        self.blocked = blocked;
    }

    /// The room the last fit left beside its states for growing into them:
    /// the largest [`Candidate::grow`] it chose.
    pub(crate) fn room(&self) -> u64 {
        self.room
    }

    /// The error removed per byte of the best step the last fit could not
    /// take (the budget's marginal price), if one was blocked.
    pub(crate) fn marginal_gain(&self) -> Option<f64> {
        self.blocked
            .iter()
            .map(|s| s.gain)
            .filter(|g| g.is_finite() && *g > 0.0 && *g < f64::MAX)
            .reduce(f64::max)
    }

    fn put_grow(&mut self, grow: u64) {
        *self.grows.entry(grow).or_insert(0) += 1;
    }

    fn take_grow(&mut self, grow: u64) {
        if let Some(n) = self.grows.get_mut(&grow) {
            *n -= 1;
            if *n == 0 {
                self.grows.remove(&grow);
            }
        }
    }

    /// The room the states chosen so far need.
    fn max_grow(&self) -> u64 {
        self.grows.keys().next_back().copied().unwrap_or(0)
    }

    fn hull_of(&self, t: usize) -> &[u32] {
        &self.hull[self.hull_start[t] as usize..self.hull_start[t + 1] as usize]
    }

    /// The hull step `h -> h + 1` of texture `t`.
    fn step(
        &self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        t: usize,
        h: u32,
    ) -> Option<Step> {
        let hull = self.hull_of(t);
        let (&from, &to) = (hull.get(h as usize)?, hull.get(h as usize + 1)?);
        Some(self.make_step(chains, offsets, sticky, t, from, to))
    }

    /// The step after taking state `at` of texture `t`: along the hull when
    /// `at` is on it, else to the finer state removing most error per byte.
    fn next_step(
        &self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        t: usize,
        at: usize,
    ) -> Option<Step> {
        match self.hull_of(t).iter().position(|&i| i as usize == at) {
            Some(h) => self.step(chains, offsets, sticky, t, h as u32),
            None => self.best_from(chains, offsets, sticky, t, at, |_| true),
        }
    }

    /// The best step from state `from` of texture `t` to a better state that
    /// fits now beside `used` and the room kept, if any: the way round a
    /// state that does not fit.
    #[allow(clippy::too_many_arguments)]
    fn detour(
        &self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        t: usize,
        from: usize,
        used: u64,
        budget: u64,
    ) -> Option<Step> {
        let base = offsets[t] as usize;
        let a = chains[base + from];
        let room = self.max_grow();
        self.best_from(chains, offsets, sticky, t, from, |c| {
            used + (c.bytes - a.bytes) + room.max(c.grow) <= budget
        })
    }

    /// The step from `from` to the state of texture `t` (larger, with less
    /// error) that removes most error per byte among those `allowed`.
    fn best_from(
        &self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        t: usize,
        from: usize,
        allowed: impl Fn(&Candidate) -> bool,
    ) -> Option<Step> {
        let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
        let a = chain[from];
        (0..chain.len())
            .filter(|&j| {
                let c = &chain[j];
                c.bytes > a.bytes && c.error < a.error && allowed(c)
            })
            .map(|j| self.make_step(chains, offsets, sticky, t, from as u32, j as u32))
            .max_by(|x, y| x.gain.total_cmp(&y.gain))
    }

    fn make_step(
        &self,
        chains: &[Candidate],
        offsets: &[u32],
        sticky: &[Stickiness],
        t: usize,
        from: u32,
        to: u32,
    ) -> Step {
        let base = offsets[t] as usize;
        let (a, b) = (chains[base + from as usize], chains[base + to as usize]);
        // a step that needs more growth room than the plan keeps so far pays
        // for the difference too: that room holds nothing
        let cost = b.bytes.saturating_sub(a.bytes) + b.grow.saturating_sub(self.max_grow());
        let mut gain = (a.error - b.error) / cost.max(1) as f64;
        if let Some(s) = sticky.get(t) {
            if (to as usize) <= s.resident {
                gain = if s.locked && self.locks {
                    f64::MAX
                } else {
                    gain * s.keep_bonus
                };
            }
        }
        Step {
            gain,
            texture: t as u32,
            from,
            to,
        }
    }
}

/// Whether every locked texture's resident state fits the budget beside
/// the other textures' bases (and the growth room those states need). A
/// lock keeps a state that arrived recently from being given up
/// voluntarily; when the budget cannot hold them all, it has shrunk below
/// them, the locked states go anyway, and the fit is free. (Honouring the
/// locks then took each locked texture's steps towards its resident state
/// first, as far as they fit, without ever reaching it: the bytes went to
/// the lesser states of the textures that happened to be locked. In the
/// viewer, a budget cut to a quarter of the view's working set gave a plan
/// 63% above the LP bound this way, and the settled picture kept it.)
pub(crate) fn locks_fit(
    chains: &[Candidate],
    offsets: &[u32],
    sticky: &[Stickiness],
    budget: u64,
) -> bool {
    let (mut bytes, mut room) = (0u64, 0u64);
    let mut any = false;
    for t in 0..offsets.len().saturating_sub(1) {
        let chain = &chains[offsets[t] as usize..offsets[t + 1] as usize];
        let s = sticky.get(t).copied().unwrap_or_default();
        let i = if s.locked {
            any = true;
            s.resident
        } else {
            0
        };
        if let Some(c) = chain.get(i).or(chain.first()) {
            bytes = bytes.saturating_add(c.bytes);
            room = room.max(c.grow);
        }
    }
    any && bytes.saturating_add(room) <= budget
}

/// A state's cost for the hull: its bytes, plus the growth room it needs
/// beyond its own bytes (a tier switch holds the old copy beside the new
/// one). Plain growth (room = the new bytes) and held states (no room) cost
/// their bytes; a tier switch standing before the state held now no longer
/// hides it from the fit.
fn hull_cost(c: &Candidate) -> u64 {
    c.bytes + c.grow.saturating_sub(c.bytes)
}

/// Appends to `hull` the chain indices on the lower convex hull of
/// ([`hull_cost`], error), starting with the base: the states a greedy fit
/// would ever stop at, with error removed per byte decreasing along them.
fn lower_hull(chain: &[Candidate], hull: &mut Vec<u32>) {
    let start = hull.len();
    hull.push(0);
    // chains come cheapest first, except where a tier switch costs its old
    // copy too: sort only then
    let sorted = chain
        .windows(2)
        .all(|w| hull_cost(&w[0]) <= hull_cost(&w[1]));
    let mut order: Vec<u32> = (1..chain.len() as u32).collect();
    if !sorted {
        order.sort_by(|&a, &b| {
            let (a, b) = (&chain[a as usize], &chain[b as usize]);
            hull_cost(a)
                .cmp(&hull_cost(b))
                .then(a.error.total_cmp(&b.error))
        });
    }
    for i in order {
        let c = chain[i as usize];
        let last = chain[hull[hull.len() - 1] as usize];
        // a state that is not cheaper-for-its-error than the last is never
        // chosen; nor, on the hull, one with fewer bytes (steps only add)
        if hull_cost(&c) <= hull_cost(&last) || c.bytes <= last.bytes || c.error >= last.error {
            continue;
        }
        while hull.len() - start >= 2 {
            let (a, b) = (
                chain[hull[hull.len() - 2] as usize],
                chain[hull[hull.len() - 1] as usize],
            );
            let gain_ab = (a.error - b.error) / (hull_cost(&b) - hull_cost(&a)) as f64;
            let gain_bc = (b.error - c.error) / (hull_cost(&c) - hull_cost(&b)) as f64;
            if gain_ab <= gain_bc {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(i);
    }
}

/// The exact optimum of the problem [`Fitter::fit`] solves, for small cases
/// (to measure the greedy fit against): one candidate per chain, the chosen
/// bytes plus the largest chosen [`Candidate::grow`] within `budget`, least
/// total error. Exact in bytes: for every possible room `R` (0 or a
/// candidate's `grow`) it keeps the Pareto front of (bytes, error) over the
/// chains, with only candidates needing at most `R` and bytes up to
/// `budget - R`, and takes the best over all `R`. Returns the total error and
/// the chosen index per chain, or `None` when even the bases do not fit.
/// Exponential at worst; meant for a handful of chains.
#[cfg(test)]
pub(crate) fn exact_fit(chains: &[Vec<Candidate>], budget: u64) -> Option<(f64, Vec<usize>)> {
    let mut rooms: Vec<u64> = std::iter::once(0)
        .chain(chains.iter().flatten().map(|c| c.grow))
        .filter(|&r| r <= budget)
        .collect();
    rooms.sort_unstable();
    rooms.dedup();
    let mut best: Option<(f64, Vec<usize>)> = None;
    for room in rooms {
        let cap = budget - room;
        // the front: (bytes, error, choices), bytes rising, error falling
        let mut front: Vec<(u64, f64, Vec<usize>)> = vec![(0, 0.0, Vec::new())];
        for chain in chains {
            let mut next: Vec<(u64, f64, Vec<usize>)> = Vec::new();
            for (bytes, error, picks) in &front {
                for (i, c) in chain.iter().enumerate() {
                    let b = bytes + c.bytes;
                    if c.grow <= room && b <= cap {
                        let mut p = picks.clone();
                        p.push(i);
                        next.push((b, error + c.error, p));
                    }
                }
            }
            next.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            front.clear();
            for s in next {
                if front.last().is_none_or(|l| s.1 < l.1) {
                    front.push(s);
                }
            }
            if front.is_empty() {
                break;
            }
        }
        if let Some((_, error, picks)) = front.pop().filter(|f| f.2.len() == chains.len()) {
            if best.as_ref().is_none_or(|b| error < b.0) {
                best = Some((error, picks));
            }
        }
    }
    best
}

/// Chains back to back with their offsets, as [`Fitter::fit`] takes them
/// (for tests).
#[cfg(test)]
pub(crate) fn flat(chains: &[Vec<Candidate>]) -> (Vec<Candidate>, Vec<u32>) {
    let mut all = Vec::new();
    let mut off = vec![0];
    for c in chains {
        all.extend_from_slice(c);
        off.push(all.len() as u32);
    }
    (all, off)
}

#[cfg(test)]
mod tests;
