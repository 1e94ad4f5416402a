//! Tier switches: the old tier shown until the new one has its detail,
//! upload room, the budget forcing a shrink first, and the step down a level
//! that makes room for a switch back.

use super::*;

/// A texture holding level 0 in the full tier, planned at level 1 in the
/// compact tier (a quarter of the bytes per texel).
fn switching() -> Tex {
    let mut t = Tex::new(0, 6, 3).planned(1, 1.0);
    t.g.formats[1] = wgpu::TextureFormat::R8Unorm;
    t.first = 0;
    t.plan.tier = Tier::Compact;
    t.pending_tier = Tier::Compact;
    t
}

fn arrive_compact(t: &mut Tex, levels: impl IntoIterator<Item = u32>) {
    let g = t.g;
    for l in levels {
        t.pending.insert(
            l,
            LevelImage {
                format: wgpu::TextureFormat::R8Unorm,
                ..level(&g, l)
            },
        );
    }
}

/// The decisions' setting for a store holding `t` alone, at `budget`.
fn holding(t: &Tex, budget: u64) -> Context {
    ctx(
        Books {
            textures: t.bytes(),
            ..books(0)
        },
        budget,
    )
}

/// Whether `steps` neither shrank nor built a texture.
fn changed_nothing(steps: &[Step]) -> bool {
    !steps.iter().any(|s| {
        matches!(
            s.op,
            Some(Op::ShrinkTexture { .. } | Op::BuildTexture { .. })
        )
    })
}

/// One update of the switch back `t` at `budget`: it waits, held back by
/// the budget, still at level `first` in the compact tier.
fn waits_as_it_was(t: Tex, budget: u64, first: u32) {
    let mut ts = vec![t];
    let mut c = holding(&ts[0], budget);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(changed_nothing(&steps));
    assert_eq!(held(&steps, ts[0].id), Some(BelowReason::Budget));
    assert_eq!((ts[0].first, ts[0].tier), (first, Tier::Compact));
}

#[test]
fn a_tier_switch_shows_the_old_tier_until_the_new_one_has_its_detail() {
    let mut ts = vec![switching()];
    let mut c = holding(&ts[0], u64::MAX / 4);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!(
        (ts[0].first, ts[0].tier),
        (0, Tier::Full),
        "within budget: no shrink"
    );
    assert!(!built(&steps, ts[0].id));
    // the new tier's tail and one more level: still coarser than the
    // target, so the old tier stays, waiting for its levels
    arrive_compact(&mut ts[0], [2, 3, 4, 5, 6]);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(!built(&steps, ts[0].id), "a pop to the new tier's level 2");
    assert_eq!(held(&steps, ts[0].id), Some(BelowReason::Loading));
    // every level down to the target: the switch, in one build
    arrive_compact(&mut ts[0], [1]);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(steps.iter().any(|s| matches!(
        &s.op,
        Some(Op::BuildTexture { tier: Tier::Compact, keep_old: false, first: 1, levels, .. }) if levels == &vec![1, 2, 3, 4, 5, 6]
    )));
    assert_eq!((ts[0].first, ts[0].tier), (1, Tier::Compact));
}

/// A texture holding level 1 in the compact tier (a quarter of the bytes
/// per texel), planned back at level 1 in the full tier, every full level
/// from 1 arrived.
fn switching_back() -> Tex {
    let mut t = Tex::new(0, 6, 3).planned(1, 1.0).arrived(1..=6);
    t.g.formats[1] = wgpu::TextureFormat::R8Unorm;
    t.first = 1;
    t.tier = Tier::Compact;
    t
}

/// What switching [`switching_back`]'s texture needs beside what it holds:
/// the new texture and every level of it staged.
fn switch_back_need(t: &Tex) -> u64 {
    t.g.shape(1, Tier::Full).bytes()
        + (1..=6)
            .map(|l| level(&t.g, l).data.len() as u64)
            .sum::<u64>()
}

#[test]
fn a_switch_back_that_does_not_fit_beside_its_old_copy_shrinks_it_a_level_first() {
    let mut ts = vec![switching_back()];
    let held_now = ts[0].bytes();
    let need = switch_back_need(&ts[0]);
    // a byte short of the switch beside the whole old copy
    let budget = held_now + need - 1;
    let mut c = holding(&ts[0], budget);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(!built(&steps, ts[0].id));
    assert!(steps.iter().any(|s| s.op
        == Some(Op::ShrinkTexture {
            id: ts[0].id,
            to: 2
        })));
    assert_eq!(held(&steps, ts[0].id), Some(BelowReason::Budget));
    assert_eq!((ts[0].first, ts[0].tier), (2, Tier::Compact));
    assert!(c.books.accounted() <= budget);
    // the next update switches, beside the old copy a level down
    c.books.staging = 0;
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(built(&steps, ts[0].id));
    assert_eq!((ts[0].first, ts[0].tier), (1, Tier::Full));
    assert!(c.books.accounted() <= budget);
}

#[test]
fn a_switch_back_that_fits_beside_its_old_copy_or_that_no_shrink_lets_fit_shrinks_nothing() {
    // room for the switch beside the whole old copy: one build
    let mut ts = vec![switching_back()];
    let held_now = ts[0].bytes();
    let need = switch_back_need(&ts[0]);
    let mut c = holding(&ts[0], held_now + need);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(built(&steps, ts[0].id));
    assert!(!steps
        .iter()
        .any(|s| matches!(s.op, Some(Op::ShrinkTexture { .. }))));
    // not even the old copy a level down makes room: it waits, as it was
    let t = switching_back();
    let a_level_down = t.g.shape(2, Tier::Compact).bytes();
    waits_as_it_was(t, a_level_down + need - 1, 1);
}

#[test]
fn a_switch_to_a_coarser_level_keeps_its_finer_old_copy_until_it_fits() {
    // held at level 0 in the compact tier, planned at level 1 in the full
    // tier: stepping the old copy down would show level 1 in the compact
    // tier, less than either
    let mut t = switching_back();
    t.first = 0;
    let budget = t.bytes() + switch_back_need(&t) - 1;
    waits_as_it_was(t, budget, 0);
}

#[test]
fn a_tier_switch_waits_for_upload_room_rather_than_showing_less() {
    let mut ts = vec![switching()];
    arrive_compact(&mut ts[0], 1..=6);
    let mut c = holding(&ts[0], u64::MAX / 4);
    // this frame's room is nearly spent: the levels wait for the next frame
    let mut room = UploadRoom::new(1 << 20, 32);
    room.take((1 << 20) - 16, 1);
    let steps = frame(&mut ts, &mut c, &mut room);
    assert!(!built(&steps, ts[0].id));
    assert_eq!(held(&steps, ts[0].id), Some(BelowReason::UploadCap));
    assert_eq!(ts[0].first, 0);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 20, 32));
    assert!(built(&steps, ts[0].id));
    assert_eq!((ts[0].first, ts[0].tier), (1, Tier::Compact));
}

#[test]
fn a_tier_switch_over_budget_shrinks_in_its_tier_first() {
    let mut ts = vec![switching()];
    let held_now = ts[0].bytes();
    // the budget was cut below what is held
    let mut c = holding(&ts[0], held_now / 2);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    // the compact plan pays for what level 2 holds in full: shrink to it
    let planned = geometry(6).shape(1, Tier::Full).bytes() / 4;
    assert!(ts[0].g.shape(2, Tier::Full).bytes() <= planned);
    assert_eq!((ts[0].first, ts[0].tier), (2, Tier::Full));
    assert!(
        !built(&steps, ts[0].id),
        "nothing of the new tier has arrived"
    );
    // the new tier's levels below its tail are not enough: the tail first
    arrive_compact(&mut ts[0], [2]);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(!built(&steps, ts[0].id));
    arrive_compact(&mut ts[0], [1, 3, 4, 5, 6]);
    let steps = frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(steps.iter().any(|s| matches!(
        &s.op,
        Some(Op::BuildTexture {
            tier: Tier::Compact,
            keep_old: false,
            first: 1,
            ..
        })
    )));
    assert_eq!((ts[0].first, ts[0].tier), (1, Tier::Compact));
}

#[test]
fn a_tier_switch_over_budget_to_a_plan_smaller_than_its_old_tail_shrinks_to_the_tail() {
    // planned at the tail in the compact tier: a quarter of what the old
    // tier's tail holds, so no level of the old tier is as small as the
    // plan; over the budget it still frees all it can, down to its tail
    let mut ts = vec![switching()];
    ts[0].plan.target = 3;
    let held_now = ts[0].bytes();
    let mut c = holding(&ts[0], held_now / 2);
    let planned = ts[0].g.shape(3, Tier::Compact).bytes();
    assert!(ts[0].g.shape(3, Tier::Full).bytes() > planned);
    frame(&mut ts, &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!((ts[0].first, ts[0].tier), (3, Tier::Full));
}
