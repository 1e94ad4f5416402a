//! Shrinks after a refused one: the others give up more, and the refused
//! texture tries its tail when they are not enough.

use super::*;

#[test]
fn after_a_refused_shrink_the_others_give_up_more_until_the_books_fit() {
    // after a budget cut the plan shrank three textures from level 0 to 1;
    // the first one's shrink was refused and it holds level 0: the others
    // give up more, fewest pixels on screen per byte first, until it fits
    let mut ts: Vec<Tex> = (0..3).map(|i| Tex::new(i, 6, 4).planned(1, 0.0)).collect();
    ts[0].first = 0;
    ts[1].first = 1;
    ts[2].first = 1;
    ts[1].plan.coverage = 10.0;
    ts[2].plan.coverage = 1000.0;
    let g = ts[0].g;
    let (level0, level1, tail) = (
        g.shape(0, Tier::Full).bytes(),
        g.shape(1, Tier::Full).bytes(),
        g.shape(4, Tier::Full).bytes(),
    );
    // room for the refused one, one other at level 1 and one at its tail
    let mut c = ctx(
        Books {
            textures: level0 + 2 * level1,
            ..books(0)
        },
        level0 + level1 + tail,
    );
    let refused: Refused = [(ts[0].id, 1)].into();
    let facts: Vec<TextureFacts<'_>> = ts.iter().map(Tex::facts).collect();
    let steps = shrink_further(&facts, &mut c, &mut UploadRoom::new(1 << 30, 32), &refused);
    assert_eq!(steps.len(), 1, "one was enough: {steps:?}");
    assert!(
        matches!(steps[0].op, Some(Op::ShrinkTexture { id, to: 4 }) if id == ts[1].id),
        "the one with fewer pixels per byte, to its tail: {steps:?}"
    );
    assert_eq!(c.books.accounted(), level0 + level1 + tail);
    // within the budget: nothing more is given up
    let mut c = ctx(
        Books {
            textures: level0 + 2 * level1,
            ..books(0)
        },
        level0 + 2 * level1,
    );
    assert!(shrink_further(&facts, &mut c, &mut UploadRoom::new(1 << 30, 32), &refused).is_empty());
}

#[test]
fn when_the_others_cannot_make_room_a_refused_texture_goes_to_its_tail() {
    // the refused texture holds nearly everything: the other one at its
    // tail is not enough, so the refused one tries a smaller copy than the
    // one refused, its tail, after the other
    let mut ts: Vec<Tex> = (0..2).map(|i| Tex::new(i, 6, 4).planned(1, 1.0)).collect();
    ts[0].first = 0;
    ts[1].first = 3;
    let g = ts[0].g;
    let (level0, level3, tail) = (
        g.shape(0, Tier::Full).bytes(),
        g.shape(3, Tier::Full).bytes(),
        g.shape(4, Tier::Full).bytes(),
    );
    let facts: Vec<TextureFacts<'_>> = ts.iter().map(Tex::facts).collect();
    // the refused copy started at level 1: its level 1 freed nothing
    let budget = level0 + level3 - g.shape(1, Tier::Full).bytes();
    let held = || {
        ctx(
            Books {
                textures: level0 + level3,
                ..books(0)
            },
            budget,
        )
    };
    let refused: Refused = [(ts[0].id, 1)].into();
    let mut c = held();
    let steps = shrink_further(&facts, &mut c, &mut UploadRoom::new(1 << 30, 32), &refused);
    let shrinks: Vec<(TextureId, u32)> = steps
        .iter()
        .filter_map(|s| match s.op {
            Some(Op::ShrinkTexture { id, to }) => Some((id, to)),
            _ => None,
        })
        .collect();
    assert_eq!(shrinks, [(ts[1].id, 4), (ts[0].id, 4)], "{steps:?}");
    assert_eq!(c.books.accounted(), 2 * tail);
    // refused at its tail already: nothing smaller to try, and the other
    // alone gives what it has
    let refused: Refused = [(ts[0].id, 4)].into();
    let mut c = held();
    let steps = shrink_further(&facts, &mut c, &mut UploadRoom::new(1 << 30, 32), &refused);
    assert!(
        matches!(steps[..], [Step { op: Some(Op::ShrinkTexture { id, to: 4 }), .. }] if id == ts[1].id),
        "{steps:?}"
    );
}
