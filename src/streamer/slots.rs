//! What every texture slot holds, in dense arrays beside the texture table.
//!
//! A texture entry is several hundred bytes (its file, label, loads and
//! arrived levels), and at 10,000 textures each pass over the entries that
//! `update` made (the planner's resident states, the load requests, the
//! shrink and growth facts) cost a cache miss or more per texture: most of
//! a millisecond a frame for textures that hold their plan and have nothing
//! in flight. These arrays are written where a texture's residency changes
//! and read instead, so a frame touches only the entries that need work.

use super::{work, Streamer};
use crate::ids::TextureId;
use crate::kinds::Tier;
use crate::plan::ResidentState;

/// A free slot's state (what the planner was always given for one).
const FREE: ResidentState = ResidentState {
    level: 0,
    tier: Tier::Full,
    since_frame: 0,
};

/// Per texture slot (a `TextureId`'s index): what it holds, and whether the
/// load requests must look at its entry.
#[derive(Debug, Default)]
pub(super) struct TextureSlots {
    /// What the slot holds: the planner's input, kept as residency changes
    /// (free slots: level 0, full tier).
    resident: Vec<ResidentState>,
    /// Whether something of the texture's may be in flight, arrived,
    /// failed or waiting for another tier. Set (conservatively) by every
    /// change outside the load requests; cleared by them once they find the
    /// texture idle. Clear means: nothing requested, nothing pending,
    /// pending tier = resident tier, no failure.
    attention: Vec<bool>,
}

impl TextureSlots {
    /// Every slot's resident state (free slots as above).
    pub(super) fn resident(&self) -> &[ResidentState] {
        &self.resident
    }

    /// The slots there are.
    pub(super) fn len(&self) -> usize {
        self.resident.len()
    }

    /// `slot` now holds `state` (its load requests will look at it).
    pub(super) fn set(&mut self, slot: usize, state: ResidentState) {
        if slot >= self.resident.len() {
            self.resident.resize(slot + 1, FREE);
            self.attention.resize(slot + 1, false);
        }
        self.resident[slot] = state;
        self.attention[slot] = true;
    }

    /// `slot` was freed.
    pub(super) fn free(&mut self, slot: usize) {
        if slot < self.resident.len() {
            self.resident[slot] = FREE;
            self.attention[slot] = false;
        }
    }

    /// Something of `slot`'s changed outside the load requests.
    pub(super) fn touch(&mut self, slot: usize) {
        if let Some(a) = self.attention.get_mut(slot) {
            *a = true;
        }
    }

    /// Whether the load requests must look at `slot`.
    pub(super) fn needs_attention(&self, slot: usize) -> bool {
        self.attention.get(slot).copied().unwrap_or(false)
    }

    /// The load requests found `slot` idle (or not).
    pub(super) fn set_attention(&mut self, slot: usize, attention: bool) {
        if let Some(a) = self.attention.get_mut(slot) {
            *a = attention;
        }
    }
}

impl Streamer {
    /// The facts of the textures whose plan differs from what they hold
    /// (the others neither shrink nor grow), or with `all`, of every one.
    pub(super) fn texture_facts(&self, all: bool) -> Vec<work::TextureFacts<'_>> {
        if all {
            let facts = self.textures.iter::<TextureId>();
            return facts
                .map(|(id, e)| e.facts(id, self.texture_plan(id)))
                .collect();
        }
        // the dense arrays say which differ; only those entries are read
        let plan = &self.planner.last_plan().textures;
        let resident = self.slots.resident();
        let differs = (0..resident.len()).filter_map(|slot| {
            let (p, r) = (plan.get(slot).copied().unwrap_or_default(), resident[slot]);
            (p.tier != r.tier || p.target != r.level).then_some((slot, p))
        });
        let facts = differs.filter_map(|(slot, p)| {
            let id = self.textures.id_at::<TextureId>(slot)?;
            Some(self.textures.get(id).expect("a live slot").facts(id, p))
        });
        facts.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_grow_free_and_flag() {
        let mut s = TextureSlots::default();
        let held = ResidentState {
            level: 3,
            tier: Tier::Compact,
            since_frame: 7,
        };
        s.set(4, held);
        assert_eq!(s.len(), 5);
        assert_eq!(s.resident()[4], held);
        assert_eq!(s.resident()[1], FREE);
        assert!(s.needs_attention(4) && !s.needs_attention(1));
        s.set_attention(4, false);
        assert!(!s.needs_attention(4));
        s.touch(4);
        assert!(s.needs_attention(4));
        s.free(4);
        assert_eq!(s.resident()[4], FREE);
        assert!(!s.needs_attention(4));
        // out of range: nothing to flag, nothing breaks
        s.touch(99);
        assert!(!s.needs_attention(99));
    }
}
