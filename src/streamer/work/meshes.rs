//! The decisions about meshes: detail dropped where the plan or the budget
//! no longer pays for it (phase 2), and an arrived LOD swapped in (phase 3,
//! in the textures' benefit order).

use super::{headroom, Asset, Context, MeshFacts, Op, Step, UploadRoom};
use crate::gpu::books::Books;
use crate::streamer::BelowReason;

/// Phase 2: meshes drop detail the plan or the budget no longer pays for.
pub(crate) fn shrink_meshes(meshes: &[MeshFacts], ctx: &mut Context) -> Vec<Step> {
    let mut steps = Vec::new();
    for m in meshes {
        let Some((lod, bytes)) = m.detail else {
            continue;
        };
        let p = &m.plan;
        let over = ctx.books.held() > ctx.hard_budget;
        let ready = m.pending.is_some_and(|d| d.lod == p.target);
        if p.target > lod && (p.target >= m.coarsest || (over && !ready)) {
            if over {
                // the budget needs the bytes now: no fade
                ctx.books.release_mesh(bytes);
            } else {
                ctx.books.release_mesh(m.fading);
                if !ctx.cross_fade {
                    ctx.books.release_mesh(bytes);
                }
            }
            steps.push(Step::op(
                Asset::Mesh(m.id),
                Op::DropMeshDetail {
                    id: m.id,
                    at_once: over,
                },
                None,
            ));
        }
    }
    steps
}

/// Phase 2b's last resort, when `shrink_further` left the textures at their
/// tails and the books still over the budget: mesh detail goes too, at
/// once (no fade), the largest first.
pub(crate) fn drop_meshes_further(meshes: &[MeshFacts], ctx: &mut Context) -> Vec<Step> {
    let mut order: Vec<(&MeshFacts, u64)> = meshes
        .iter()
        .filter_map(|m| m.detail.map(|(_, bytes)| (m, bytes)))
        .collect();
    order.sort_by_key(|&(m, bytes)| (std::cmp::Reverse(bytes), m.id));
    let mut steps = Vec::new();
    for (m, bytes) in order {
        if ctx.books.held() <= ctx.hard_budget {
            break;
        }
        ctx.books.release_mesh(bytes);
        let op = Op::DropMeshDetail {
            id: m.id,
            at_once: true,
        };
        steps.push(Step::op(Asset::Mesh(m.id), op, None));
    }
    steps
}

/// Swaps in a mesh's arrived LOD if the upload room and the budget allow.
pub(super) fn grow_mesh(m: &MeshFacts, ctx: &mut Context, room: &mut UploadRoom) -> Option<Step> {
    let asset = Asset::Mesh(m.id);
    if ctx.paused {
        return Some(Step::hold(asset, BelowReason::OutOfMemoryBackoff));
    }
    let d = m.pending?;
    if !room.fits(d.upload, 0, 0) || !room.copies_fit(1) {
        return Some(Step::hold(asset, BelowReason::UploadCap));
    }
    // the new buffers and staging beside all held (and retiring: the old detail)
    let old = m.detail.map_or(0, |(_, b)| b);
    let retires = ctx.books.count_retiring;
    let freed = (!retires) as u64 * old;
    let kept = (!retires && ctx.cross_fade) as u64 * old;
    let fits = |books: &Books| {
        books.accounted().saturating_sub(freed) + kept + d.bytes + d.upload <= ctx.hard_budget
    };
    let trim_pool = !fits(&ctx.books) && ctx.books.pool.bytes() > 0;
    if trim_pool {
        let mut books = ctx.books.clone();
        books.trim_pool(0);
        if retires || fits(&books) {
            ctx.books = books;
        }
    }
    let trimmed = trim_pool && (retires || fits(&ctx.books));
    if !fits(&ctx.books) {
        let mut step = Step::hold(asset, BelowReason::Budget);
        // the new buffers are in the plan; the staging and a kept old
        // detail are not. Detail finer than the views want is spare: it
        // waits instead of making later plans leave room.
        if m.plan.target >= m.plan.wanted {
            let need = ctx.books.accounted().saturating_sub(freed) + kept + d.bytes + d.upload;
            step.headroom = headroom(ctx, &ctx.books, need);
        }
        step.op = (retires && trimmed).then_some(Op::TrimPool);
        // the old detail retires before the new LOD is made beside it: where
        // the two never fit together, it goes first (the coarsest LOD shows
        // until the GPU has given it back)
        let alone = ctx.books.accounted() - old + d.bytes + d.upload <= ctx.hard_budget;
        if retires && !ctx.cross_fade && !trimmed && old > 0 && alone {
            ctx.books.release_mesh(old);
            let at_once = true;
            step.op = Some(Op::DropMeshDetail { id: m.id, at_once });
        }
        return Some(step);
    }
    if ctx.cross_fade {
        ctx.books.release_mesh(m.fading);
    } else {
        ctx.books.release_mesh(old);
    }
    ctx.books.create_mesh(d.bytes, d.upload);
    room.take(d.upload, 1);
    room.take_copies(1);
    Some(
        Step::op(
            asset,
            Op::SwapMeshLod {
                id: m.id,
                trim_pool: trimmed,
            },
            Some((d.upload, 1)),
        )
        .copying(1),
    )
}
