//! The frame's share of shrinks: a burst spread over frames, largest first,
//! forced ones at once.

use super::*;

/// Within the budget a frame shrinks at most its share of textures, those
/// freeing the most first, and the rest in the next frames; over the
/// budget every shrink the plan asks runs at once.
#[test]
fn a_burst_of_shrinks_goes_a_share_a_frame_largest_first_unless_over_budget() {
    // five textures hold level 0 and are planned at their tails; texture 3
    // and texture 1 are the largest
    let tops = [5, 7, 5, 8, 6];
    let fresh = || -> Vec<Tex> {
        tops.iter()
            .enumerate()
            .map(|(i, &top)| {
                let mut t = Tex::new(i as u32, top, 3).planned(3, 0.0);
                t.first = 0;
                t
            })
            .collect()
    };
    let held = |ts: &[Tex]| ts.iter().map(Tex::bytes).sum::<u64>();
    let shrunk = |steps: &[Step]| -> Vec<u32> {
        steps
            .iter()
            .filter_map(|s| match s.op {
                Some(Op::ShrinkTexture { id, .. }) => Some(id.index() as u32),
                _ => None,
            })
            .collect()
    };
    // one frame on `ts` at `budget` with `share` shrinks (`u32::MAX`: no
    // limit): the textures shrunk, in order, and the books after
    let run = |ts: &mut Vec<Tex>, budget: u64, share: u32| -> (Vec<u32>, Context) {
        let mut c = Context {
            shrinks_left: share,
            ..ctx(
                Books {
                    textures: held(ts),
                    ..books(0)
                },
                budget,
            )
        };
        let steps = frame(ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
        (shrunk(&steps), c)
    };
    // within the budget: two a frame, the two freeing the most first
    let mut ts = fresh();
    let budget = held(&ts);
    let mut frames = Vec::new();
    while ts.iter().any(|t| t.first != t.tail) {
        let (order, c) = run(&mut ts, budget, 2);
        assert!(c.books.accounted() <= budget);
        // the flag says whether any waits for a later frame
        assert_eq!(c.shrinks_deferred, ts.iter().any(|t| t.first != t.tail));
        frames.push(order);
        assert!(frames.len() <= 3, "{frames:?}");
    }
    assert_eq!(frames, [vec![3, 1], vec![4, 0], vec![2]]);
    // over the budget until the last has shrunk: all five at once,
    // whatever the share, largest first
    let tails: u64 = tops
        .iter()
        .map(|&top| geometry(top).shape(3, Tier::Full).bytes())
        .sum();
    let (order, c) = run(&mut fresh(), tails, 2);
    assert_eq!(order, [3, 1, 4, 0, 2]);
    assert!(c.books.accounted() <= tails);
    // over the budget until the largest has shrunk: that one is forced and
    // counts, and the share's other goes to the next largest
    let half = held(&fresh()) / 2;
    let (order, c) = run(&mut fresh(), half, 2);
    assert_eq!(order, [3, 1]);
    assert!(c.books.accounted() <= half);
    // with no limit the order is the textures' own
    let (order, _) = run(&mut fresh(), held(&fresh()), u32::MAX);
    assert_eq!(order, [0, 1, 2, 3, 4]);
}
