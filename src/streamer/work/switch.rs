//! Tier switches: rebuilding a texture in its planned tier from the new
//! tier's arrived levels, stepping the old copy down a level first when
//! the switch does not fit beside it.

use super::{
    build, build_bytes, shrink_op, Asset, BelowReason, Context, Step, TextureFacts, UploadRoom,
};

/// Rebuilds a texture in another tier from the new tier's arrived levels,
/// from its tail up towards the target. The texture keeps showing its old
/// tier until the new one reaches at least the detail held now (or the
/// target, when that is coarser): a tier switch never shows the new tier's
/// coarse levels first. Only where those levels could never pass one
/// frame's upload cap together does it build what this frame allows.
pub(super) fn rebuild(
    t: &TextureFacts<'_>,
    ctx: &mut Context,
    room: &mut UploadRoom,
) -> Option<Step> {
    let tier = t.plan.tier;
    if t.pending_tier != tier {
        return None;
    }
    let n = t.geometry.levels;
    let (mut take, mut bytes, mut count, mut hold) = (n, 0u64, 0u32, None);
    while take > t.plan.target {
        let Some(img) = t.pending.get(&(take - 1)) else {
            break;
        };
        if !room.fits(img.byte_len(), bytes, count) || !room.copies_fit(count + 1) {
            hold = Some(BelowReason::UploadCap);
            break;
        }
        bytes += img.byte_len();
        count += 1;
        take -= 1;
    }
    if take > t.tail {
        // the new tier's tail has not arrived (or does not fit) yet
        return hold.map(|r| Step::hold(Asset::Texture(t.id), r));
    }
    let detail = t.first.max(t.plan.target);
    if take > detail {
        // the new tier is still coarser than what is shown: wait for its
        // levels (or next frame's upload room) unless they can never pass
        // one frame's cap together
        let needed: Option<(u64, u32)> = (detail..n)
            .map(|l| t.pending.get(&l).map(|img| img.byte_len()))
            .sum::<Option<u64>>()
            .map(|b| (b, n - detail));
        let wait = match needed {
            None => Some(BelowReason::Loading),
            Some((b, k)) if room.fits_a_frame(b, k) => Some(BelowReason::UploadCap),
            Some(_) => None,
        };
        if let Some(reason) = wait {
            return Some(Step::hold(Asset::Texture(t.id), hold.unwrap_or(reason)));
        }
    }
    if let Some(step) = shrink_for_switch(t, take, ctx, room) {
        return Some(step);
    }
    let mut step = build(t, take, tier, (take..n).collect(), false, ctx, room);
    step.hold = step.hold.or(hold);
    Some(step)
}

/// A tier switch to at least the detail held, ready to build from levels
/// `first..`, that does not fit beside its whole old copy first shrinks that
/// copy a level in its own tier, when that leaves the switch room once the
/// old copy has gone back. The switch follows in a later update (the old
/// copy retires first: two or three updates in lockstep), showing the old
/// tier a level coarser meanwhile, as a growth from there would. Switching
/// back from the compact tier at the same level needs the old copy (half
/// the new one) beside the new one and its staging; a level down, an
/// eighth. The plan leaves room for the whole old copy, so this is the way
/// out when that room went elsewhere; counting the cheaper room in the plan
/// too was tried and not kept (docs/limitations.md). A switch to a coarser
/// level keeps its finer old copy shown until it fits: stepping that down
/// showed less than either tier (annotated Sponza, 960x540, half its
/// working set: `vase_round_spec` shown in the compact tier at level 1
/// where it held level 0, frame 130, 36.1 against 46.4 dB). `None`: the
/// switch fits as it is, or no such shrink makes it fit (it waits, as any
/// growth).
fn shrink_for_switch(
    t: &TextureFacts<'_>,
    first: u32,
    ctx: &mut Context,
    room: &mut UploadRoom,
) -> Option<Step> {
    let n = t.geometry.levels;
    // only a switch to at least the detail held: one to a coarser level
    // keeps its finer old copy shown until the switch fits (stepping it
    // down to the target in its old tier showed less than either)
    if t.plan.target > t.first || ctx.shrinks_left == 0 {
        return None;
    }
    let need = build_bytes(&ctx.books, t, first, t.plan.tier, first..n, false);
    // the build may drop the pool to make room
    let without_pool = ctx.books.accounted() - ctx.books.pool.bytes();
    if without_pool + need <= ctx.hard_budget {
        return None;
    }
    let to = t.first + 1;
    if to > t.tail {
        return None;
    }
    let held = ctx.books.pool.size(t.geometry.shape(t.first, t.tier));
    let smaller = ctx.books.pool.size(t.geometry.shape(to, t.tier));
    let (reupload, _) = t.reupload_from(to);
    // the smaller copy fits beside everything now, and the switch fits
    // beside it once the old copy is back
    let fits = ctx.books.accounted() + smaller + reupload <= ctx.hard_budget
        && without_pool - held + smaller + need <= ctx.hard_budget
        && (reupload == 0 || room.fits(reupload, 0, 0))
        && room.copies_fit(n - to);
    if !fits {
        return None;
    }
    ctx.shrinks_left -= 1;
    let mut step = shrink_op(t, to, ctx, room);
    step.hold = Some(BelowReason::Budget);
    Some(step)
}
