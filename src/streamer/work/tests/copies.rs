//! The frame's copies ([`crate::streamer::StreamerOptions::copies_per_frame`]): every
//! level of a texture built or shrunk is one copy command, kept levels
//! included; a frame's first write always goes, and so does a frame's
//! first shrink the budget forces (the rest of a cut follows at that pace).

use super::*;

fn copies(steps: &[Step]) -> u32 {
    steps.iter().map(|s| s.copies).sum()
}

/// A 64-texel texture (levels 0..=6) at its tail, levels 3..=6.
fn at_tail(slot: u32) -> Tex {
    Tex::new(slot, 6, 3)
}

/// One frame with room for `copies` texture levels (0: no limit) and no
/// other limit that binds.
fn frame_with_copies(ts: &mut [Tex], c: &mut Context, copies: u32) -> Vec<Step> {
    frame(ts, c, &mut UploadRoom::new(1 << 30, 32).with_copies(copies))
}

fn within_budget(ts: &[Tex]) -> Context {
    ctx(
        Books {
            textures: ts.iter().map(Tex::bytes).sum(),
            ..books(0)
        },
        u64::MAX / 4,
    )
}

#[test]
fn a_growth_writes_its_kept_levels_too_and_waits_for_the_frames_copies() {
    let fresh = || {
        vec![
            at_tail(0).planned(0, 2.0).arrived(0..3),
            at_tail(1).planned(1, 1.0).arrived(1..3),
        ]
    };
    // room for 12 levels: texture 0 grows to level 0, writing all 7 of its
    // levels (3 arrived, 4 kept); texture 1 has 5 left, enough for level 2
    // (5 levels) but not level 1 (6)
    let mut ts = fresh();
    let mut c = within_budget(&ts);
    let steps = frame_with_copies(&mut ts, &mut c, 12);
    assert_eq!((ts[0].first, ts[1].first), (0, 2));
    assert_eq!(copies(&steps), 7 + 5);
    assert_eq!(held(&steps, ts[1].id), Some(BelowReason::UploadCap));
    // the next frame takes the rest: 6 levels
    let steps = frame_with_copies(&mut ts, &mut c, 12);
    assert_eq!(ts[1].first, 1);
    assert_eq!(copies(&steps), 6);

    // room for 3: the frame's first write goes whole (7 levels), and
    // nothing after it
    let mut ts = fresh();
    let mut c = within_budget(&ts);
    let steps = frame_with_copies(&mut ts, &mut c, 3);
    assert_eq!((ts[0].first, ts[1].first), (0, 3));
    assert_eq!(copies(&steps), 7);
    assert_eq!(held(&steps, ts[1].id), Some(BelowReason::UploadCap));

    // 0 is no limit: both grow in one frame, 13 levels written
    let mut ts = fresh();
    let mut c = within_budget(&ts);
    let steps = frame_with_copies(&mut ts, &mut c, 0);
    assert_eq!((ts[0].first, ts[1].first), (0, 1));
    assert_eq!(copies(&steps), 7 + 6);
}

#[test]
fn shrinks_within_the_budget_wait_for_the_frames_copies_forced_ones_at_the_cuts_pace() {
    // two textures hold level 0 and are planned at their tails: each shrink
    // writes the 4 tail levels
    let fresh = || -> Vec<Tex> {
        (0..2)
            .map(|i| {
                let mut t = at_tail(i).planned(3, 0.0);
                t.first = 0;
                t
            })
            .collect()
    };
    // within the budget: one shrink, the other waits for the next frame
    let mut ts = fresh();
    let mut c = within_budget(&ts);
    let steps = frame_with_copies(&mut ts, &mut c, 5);
    assert_eq!(copies(&steps), 4);
    assert_eq!((ts[0].first, ts[1].first), (3, 0));
    assert!(
        c.shrinks_deferred,
        "a growth blocked meanwhile asks no headroom"
    );
    frame_with_copies(&mut ts, &mut c, 5);
    assert_eq!(ts[1].first, 3);
    // over the budget until both shrank: the first goes whatever the
    // frame's copies, the second in the next frame, the cut paced
    let mut ts = fresh();
    let held_now: u64 = ts.iter().map(Tex::bytes).sum();
    let over = |ts: &[Tex]| {
        ctx(
            Books {
                textures: ts.iter().map(Tex::bytes).sum(),
                ..books(0)
            },
            held_now / 4,
        )
    };
    let mut c = over(&ts);
    let steps = frame_with_copies(&mut ts, &mut c, 5);
    assert_eq!((ts[0].first, ts[1].first), (3, 0));
    assert_eq!(copies(&steps), 4);
    assert!(c.cut_paced && c.shrinks_deferred);
    let mut c = over(&ts);
    frame_with_copies(&mut ts, &mut c, 5);
    assert_eq!(ts[1].first, 3);
    assert!(!c.cut_paced);
    // with room for both (or no limit), both at once
    for room in [8, 0] {
        let mut ts = fresh();
        let mut c = over(&ts);
        let steps = frame_with_copies(&mut ts, &mut c, room);
        assert_eq!((ts[0].first, ts[1].first), (3, 3));
        assert_eq!(copies(&steps), 8);
        assert!(!c.cut_paced);
    }
}
