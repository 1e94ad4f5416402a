//! The order in which the budget fit visits textures, so that its plan
//! does not depend on the order they were registered in.
//!
//! Wherever two textures are worth exactly the same to the fit (the same
//! error removed per byte), the one visited first wins. Visiting by slot
//! made the plan depend on the order textures were registered (two
//! streamers with the same scene registered in another order could settle
//! a level apart). Chains are built by
//! [`PlanTexture::tie_key`](super::PlanTexture::tie_key) instead, then by
//! slot among equal keys (the same file registered twice), and the
//! streamer grows the fit's textures of equal priority by the same key (the
//! engine rules' by slot: `streamer::work::Context::ties_by_key`). The
//! spare floor's extra levels (`floor.rs`) still go by slot among equally
//! near textures: see the comment there.

/// Slots by tie key, rebuilt when a texture comes or goes.
#[derive(Debug, Clone, Default)]
pub(super) struct TieOrder {
    /// By slot: the key (`None`: no texture).
    keys: Vec<Option<u64>>,
    /// The live slots by (key, slot).
    order: Vec<usize>,
    fresh: bool,
}

impl TieOrder {
    /// The texture in `slot` has `key`.
    pub(super) fn set(&mut self, slot: usize, key: u64) {
        if self.keys.len() <= slot {
            self.keys.resize(slot + 1, None);
        }
        self.keys[slot] = Some(key);
        self.fresh = false;
    }

    /// `slot` holds no texture.
    pub(super) fn remove(&mut self, slot: usize) {
        if let Some(k) = self.keys.get_mut(slot) {
            *k = None;
            self.fresh = false;
        }
    }

    /// The live slots, by key, then slot.
    pub(super) fn slots(&mut self) -> &[usize] {
        if !self.fresh {
            self.order.clear();
            self.order
                .extend((0..self.keys.len()).filter(|&s| self.keys[s].is_some()));
            let keys = &self.keys;
            self.order.sort_unstable_by_key(|&s| (keys[s], s));
            self.fresh = true;
        }
        &self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_by_key_then_slot_and_follow_removals() {
        let mut t = TieOrder::default();
        t.set(0, 30);
        t.set(2, 10);
        t.set(1, 20);
        t.set(3, 10);
        assert_eq!(t.slots(), &[2, 3, 1, 0]);
        t.remove(2);
        t.set(5, 0);
        assert_eq!(t.slots(), &[5, 3, 1, 0]);
        t.set(3, 40);
        assert_eq!(t.slots(), &[5, 1, 0, 3]);
    }
}
