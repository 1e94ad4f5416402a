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
    // within the budget: two a frame, the two freeing the most first
    let mut ts = fresh();
    let budget = held(&ts);
    let mut frames = Vec::new();
    while ts.iter().any(|t| t.first != t.tail) {
        let mut c = Context {
            shrinks_left: 2,
            ..ctx(
                Books {
                    textures: held(&ts),
                    ..books(0)
                },
                budget,
            )
        };
        let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
        assert!(c.books.accounted() <= budget);
        // the flag says whether any waits for a later frame
        assert_eq!(c.shrinks_deferred, ts.iter().any(|t| t.first != t.tail));
        frames.push(shrunk(&steps));
        assert!(frames.len() <= 3, "{frames:?}");
    }
    assert_eq!(frames, [vec![3, 1], vec![4, 0], vec![2]]);
    // over the budget until the last has shrunk: all five at once,
    // whatever the share, largest first
    let mut ts = fresh();
    let tails: u64 = tops
        .iter()
        .map(|&top| geometry(top).shape(3, Tier::Full).bytes())
        .sum();
    let mut c = Context {
        shrinks_left: 2,
        ..ctx(
            Books {
                textures: held(&ts),
                ..books(0)
            },
            tails,
        )
    };
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!(shrunk(&steps), [3, 1, 4, 0, 2]);
    assert!(c.books.accounted() <= tails);
    // over the budget until the largest has shrunk: that one is forced and
    // counts, and the share's other goes to the next largest
    let mut ts = fresh();
    let mut c = Context {
        shrinks_left: 2,
        ..ctx(
            Books {
                textures: held(&ts),
                ..books(0)
            },
            held(&ts) / 2,
        )
    };
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!(shrunk(&steps), [3, 1]);
    assert!(c.books.accounted() <= held(&fresh()) / 2);
    // with no limit the order is the textures' own
    let mut ts = fresh();
    let mut c = ctx(
        Books {
            textures: held(&ts),
            ..books(0)
        },
        held(&ts),
    );
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!(shrunk(&steps), [0, 1, 2, 3, 4]);
}
