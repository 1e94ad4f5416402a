//! What every texture slot holds, in dense arrays beside the texture table.
//!
//! A texture entry is several hundred bytes (its file, label, loads and
//! arrived levels), and at 10,000 textures each pass over the entries that
//! `update` made (the planner's resident states, the load requests, the
//! shrink and growth facts) cost a cache miss or more per texture: most of
//! a millisecond a frame for textures that hold their plan and have nothing
//! in flight. These arrays are written where a texture's residency changes
//! and read instead, so a frame touches only the entries that need work.

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

/// Which textures' facts the decisions are given (see
/// [`super::texture_table::TextureTable::facts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Facts {
    /// Every texture.
    All,
    /// Those whose plan is coarser than what they hold or in another tier:
    /// the only ones [`super::work::shrink_textures`] acts on.
    Shrinking,
    /// Those whose plan is finer than what they hold or in another tier and
    /// that have levels arrived (all of them while growth is `paused`, when
    /// each is reported held back): the only ones [`super::work::grow`] can build
    /// or hold. At 10,000 textures thousands wait for loads still in
    /// flight; their facts, their place in the growth order and a lookup
    /// of their arrived levels each cost every frame.
    Growing { paused: bool },
}
