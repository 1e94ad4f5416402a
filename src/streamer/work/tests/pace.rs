//! A cut's pace: on backends without GPU copies of a format, a shrink
//! uploads its kept levels again from their CPU copies, render-thread work
//! that grows with the cut. Beyond an update's first forced shrink, the
//! upload room bounds it: the textures freeing the most go first, the rest
//! follow in the next updates, and the cut is done within
//! `ceil(re-uploaded bytes / room) + 1` updates.

use super::*;

/// `n` textures of `2^top` texels holding level 0, planned at level 3,
/// with CPU copies of every level (a backend without GPU copies).
struct Table {
    ts: Vec<Tex>,
    shadows: Vec<BTreeMap<u32, LevelImage>>,
}

impl Table {
    fn new(tops: &[u32]) -> Self {
        let ts: Vec<Tex> = tops
            .iter()
            .enumerate()
            .map(|(i, &top)| {
                let mut t = Tex::new(i as u32, top, top.min(3)).planned(top.min(3), 0.0);
                t.first = 0;
                t
            })
            .collect();
        let shadows = ts
            .iter()
            .map(|t| (0..t.g.levels).map(|l| (l, level(&t.g, l))).collect())
            .collect();
        Self { ts, shadows }
    }

    fn held(&self) -> u64 {
        self.ts.iter().map(Tex::bytes).sum()
    }

    /// One update's shrinks at `budget` with `room` upload bytes: the
    /// shrunk textures in order, the bytes re-uploaded, the context after.
    fn update(&mut self, budget: u64, room: u64) -> (Vec<u32>, u64, Context) {
        let mut c = ctx(
            Books {
                textures: self.held(),
                ..books(0)
            },
            budget,
        );
        let facts: Vec<TextureFacts<'_>> = self
            .ts
            .iter()
            .zip(&self.shadows)
            .map(|(t, s)| TextureFacts {
                shadow: Some(s),
                ..t.facts()
            })
            .collect();
        let steps = shrink_textures(
            &facts,
            &mut c,
            &mut UploadRoom::new(room, 32),
            &Refused::new(),
        );
        drop(facts);
        apply_fake(&mut self.ts, &steps);
        let order = steps
            .iter()
            .filter_map(|s| match s.op {
                Some(Op::ShrinkTexture { id, .. }) => Some(id.index() as u32),
                _ => None,
            })
            .collect();
        let uploaded = steps.iter().filter_map(|s| s.upload).map(|u| u.0).sum();
        (order, uploaded, c)
    }
}

#[test]
fn a_cut_without_gpu_copies_goes_at_the_upload_rooms_pace_largest_first() {
    let tops = [6, 8, 7, 8, 5, 7];
    let mut table = Table::new(&tops);
    // the kept levels 3.. of each, uploaded again
    let kept: Vec<u64> = table
        .ts
        .iter()
        .zip(&table.shadows)
        .map(|(t, s)| s.range(t.tail..).map(|(_, l)| l.data.len() as u64).sum())
        .collect();
    let budget: u64 = table
        .ts
        .iter()
        .map(|t| t.g.shape(t.tail, t.tier).bytes())
        .sum();
    // room for a bit more than one of the largest textures' kept levels
    let room = kept.iter().max().unwrap() + 1000;
    let bound = kept.iter().sum::<u64>().div_ceil(room) + 1;
    let mut updates = Vec::new();
    while table.held() > budget {
        let (order, uploaded, c) = table.update(budget, room);
        assert!(
            !order.is_empty(),
            "an update over the budget shrinks something"
        );
        // beyond the first shrink, what it re-uploads fits the room
        let first = kept[order[0] as usize];
        assert!(uploaded <= first.max(room), "{uploaded} > {room}");
        assert_eq!(c.cut_paced, table.held() > budget);
        assert_eq!(c.forced_shrinks as usize, order.len());
        updates.push(order);
        assert!(
            updates.len() as u64 <= bound,
            "{updates:?} over {bound} updates"
        );
    }
    assert!(
        updates.len() > 1,
        "the room should pace this cut: {updates:?}"
    );
    // the largest first: the two 256-texel ones lead the first two
    // updates (smaller ones fill what room is left behind them)
    assert_eq!((updates[0][0], updates[1][0]), (1, 3));
    // with room for everything, the whole cut in one update
    let mut table = Table::new(&tops);
    let (order, _, c) = table.update(budget, u64::MAX / 4);
    assert_eq!(order.len(), tops.len());
    assert!(!c.cut_paced);
    // within the budget nothing is forced, so nothing is paced
    let mut table = Table::new(&tops);
    let (_, _, c) = table.update(table.held(), room);
    assert!(!c.cut_paced && c.forced_shrinks == 0);
}
