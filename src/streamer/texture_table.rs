//! The textures' side of the streamer, as one table: the entries, what
//! each slot holds (dense, for the plan), the tails' bytes, the views that
//! changed, the levels waiting for loader staging again. Its methods take
//! what they work against as arguments: the plan, the loader, the frame.

use super::arrivals::Restage;
use super::slots::{Facts, TextureSlots};
use super::textures::{load_key, TextureEntry};
use super::work;
use crate::ids::{Slots, TextureId};
use crate::plan::{Plan, TexturePlan};
use crate::transcode::TranscodeOptions;
use crate::worker::{LoadRequest, Loader};

/// The textures' side of the streamer: the entries, what each slot holds
/// (dense, for the plan), their tails' bytes, what changed for the engine,
/// and the levels waiting for loader staging again.
#[derive(Debug)]
pub(super) struct TextureTable {
    pub(super) entries: Slots<TextureEntry>,
    /// What each texture slot holds, dense (see `slots.rs`).
    pub(super) slots: TextureSlots,
    /// Bytes of every registered texture's tail (kept as textures come and
    /// go: summed over 10,000 textures several times a frame it cost a
    /// third of `update`'s own time).
    pub(super) tails: u64,
    /// Textures whose view changed since `take_changed` (filled by swaps).
    pub(super) changed: Vec<TextureId>,
    /// Registrations so far (each tail load gets its own key).
    pub(super) tail_loads: u64,
    /// Levels that came back unstaged because the loader staging reserve
    /// was full, to hand back to the loaders next update.
    pub(super) restage: Vec<Restage>,
    /// Whether compressed textures can be copied GPU-side on this device.
    pub(super) gpu_copies: bool,
}

impl TextureTable {
    pub(super) fn new(owner: u32, gpu_copies: bool) -> Self {
        Self {
            entries: Slots::owned_by(owner),
            slots: TextureSlots::default(),
            tails: 0,
            changed: Vec::new(),
            tail_loads: 0,
            restage: Vec::new(),
            gpu_copies,
        }
    }

    /// Queues the levels each texture's `plan` needs on `loader` (coarser first within a
    /// texture, textures by the plan's priority), cancels what is no longer
    /// wanted, and waits out failures' back-off; returns the levels asked for.
    pub(super) fn request_loads(&mut self, plan: &Plan, loader: &mut Loader, frame: u64) -> u32 {
        let mut requested = 0;
        for slot in 0..self.slots.len() {
            // holds its plan (or more) and nothing in flight: most textures,
            // most frames, decided on the dense arrays alone
            let r = self.slots.resident()[slot];
            let target = plan.textures.get(slot);
            let target = target.copied().unwrap_or_default();
            if !self.slots.needs_attention(slot)
                && target.tier == r.tier
                && target.target >= r.level
            {
                continue;
            }
            let Some(id) = self.entries.id_at::<TextureId>(slot) else {
                continue;
            };
            requested += self.request_levels(id, target, loader, frame);
            let idle = self.entries.get(id).expect("a live slot").idle();
            self.slots.set_attention(slot, !idle);
        }
        requested
    }

    /// One texture's part of [`Self::request_loads`]: how many levels it
    /// asked for.
    fn request_levels(
        &mut self,
        id: TextureId,
        target: TexturePlan,
        loader: &mut Loader,
        frame: u64,
    ) -> u32 {
        let mut requested = 0;
        let e = self.entries.get_mut(id).expect("a live slot");
        let n = e.levels();
        // switching tier: everything of the new tier from the target down
        let (tier, wanted) = if target.tier != e.tier {
            (target.tier, target.target..n)
        } else {
            (e.tier, target.target..e.resident.first_level)
        };
        if wanted.is_empty()
            && tier == e.pending_tier
            && e.requested.is_empty()
            && e.pending.is_empty()
        {
            // holds its plan, nothing in flight (most textures, most
            // frames: at 10,000 textures the general path below cost
            // about half a millisecond a frame in allocations)
            e.load.failure = None;
            return 0;
        }
        if tier != e.pending_tier {
            for level in std::mem::take(&mut e.requested) {
                loader.cancel(load_key(id, e.pending_tier), level);
            }
            for (_, l) in std::mem::take(&mut e.pending) {
                loader.free(l.data);
            }
            e.pending_tier = tier;
        }
        // cancel what is no longer wanted, drop what arrived for nothing
        // (`wanted` is a range: a set lies in it when its ends do)
        let ends = |first: Option<&u32>, last: Option<&u32>| {
            first.is_none_or(|l| wanted.contains(l)) && last.is_none_or(|l| wanted.contains(l))
        };
        if !ends(e.requested.first(), e.requested.last()) {
            for level in e.requested.extract_if(.., |l| !wanted.contains(l)) {
                loader.cancel(load_key(id, tier), level);
            }
        }
        if !ends(e.pending.keys().next(), e.pending.keys().next_back()) {
            // their texels are freed off the render thread: at a camera cut
            // the levels that arrived for the group left behind (or waited
            // for upload room) can be megabytes, and freeing them here cost
            // `update` up to 2 ms on lavapipe (bench-uploads)
            for (_, l) in e.pending.extract_if(.., |l, _| !wanted.contains(l)) {
                loader.free(l.data);
            }
        }
        // (both now lie in `wanted`, and never share a level)
        let n_wanted = wanted.len();
        if e.pending.len() == n_wanted {
            // nothing left to load (nothing wanted, or every wanted level
            // arrived and waits for room): a failure is history, not a
            // state to back off in. Without this a texture whose wanted
            // levels all arrived, but wait for budget room, kept an old
            // failure forever (the flaky soak test: "DID NOT CONVERGE").
            e.load.failure = None;
        }
        if e.load.backing_off(frame) || e.pending.len() + e.requested.len() == n_wanted {
            return 0;
        }
        for level in wanted.rev() {
            if e.pending.contains_key(&level) || e.requested.contains(&level) {
                continue;
            }
            let output = e.choice.output(tier);
            loader.submit(LoadRequest {
                key: load_key(id, tier),
                file: e.file.clone(),
                level,
                options: TranscodeOptions::for_choice(&e.choice, output)
                    .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
                // the texture's benefit per byte; coarser levels first within it
                priority: target.priority.max(1e-30) * (1.0 + level as f32 * 1e-3),
                // kept CPU copies (no GPU copies) need the texels in memory
                stage: e.shadow.is_none(),
            });
            e.requested.insert(level);
            requested += 1;
        }
        requested
    }

    /// The facts of the textures `which` selects among those whose `plan`
    /// differs from what they hold (the others neither shrink nor grow).
    pub(super) fn facts(&self, plan: &Plan, which: Facts) -> Vec<work::TextureFacts<'_>> {
        let plan = &plan.textures;
        if which == Facts::All {
            let facts = self.entries.iter::<TextureId>();
            return facts
                .map(|(id, e)| e.facts(id, plan.get(id.index()).copied().unwrap_or_default()))
                .collect();
        }
        // the dense arrays say which differ; only those entries are read
        let resident = self.slots.resident();
        let differs = (0..resident.len()).filter_map(|slot| {
            let (p, r) = (plan.get(slot).copied().unwrap_or_default(), resident[slot]);
            let wanted = match which {
                Facts::Shrinking => p.tier != r.tier || p.target > r.level,
                _ => p.tier != r.tier || p.target < r.level,
            };
            wanted.then_some((slot, p))
        });
        let facts = differs.filter_map(|(slot, p)| {
            let id = self.entries.id_at::<TextureId>(slot)?;
            let e = self.entries.get(id).expect("a live slot");
            if which == (Facts::Growing { paused: false }) && e.pending.is_empty() {
                return None;
            }
            Some(e.facts(id, p))
        });
        facts.collect()
    }
}
