//! Deciding the frame's GPU work, on the CPU alone.
//!
//! From each texture's and mesh's plan, what it holds and what has arrived
//! for it, and a copy of the store's books ([`Books`]), the decisions list
//! what to do ([`Op`]) and what waits and why. `apply.rs` carries the ops out
//! on the GPU store; nothing here touches a device, so the rules below are
//! tested with no adapter (see the tests at the end).
//!
//! Three phases, each decided on the books as the previous phase left them:
//! 1. [`shrink_textures`]: a texture whose plan is coarser than what it holds
//!    drops levels at once (GPU copies free memory and need no upload), up
//!    to the frame's share of shrinks while the books are within the budget
//!    (a camera cut can ask dozens at once, each a new texture and its
//!    copies; those freeing the most go first, the rest the next frames). A
//!    tier switch keeps its old tier shown until the new one has arrived
//!    (growth elsewhere waits for those bytes); only when the budget is
//!    exceeded does it first shrink in its current tier to what the plan
//!    pays for. Where the
//!    backend cannot copy compressed textures, the kept levels are uploaded
//!    again: that waits for upload room unless the budget is exceeded.
//! 2. [`shrink_meshes`]: a mesh planned at its coarsest LOD drops its detail
//!    (fading out if cross-fades are on); with the budget exceeded, detail
//!    finer than planned goes at once unless the planned LOD has arrived.
//! 3. [`grow`]: textures below their plan and meshes whose planned LOD has
//!    arrived, in one order by the plan's benefit per byte. A texture grows
//!    by the arrived levels next to its finest resident one (as far as the
//!    finest of them that fits, when the planned one does), a tier switch
//!    rebuilds from the new tier's tail up, within this frame's upload cap
//!    (one level larger than the cap goes alone, first in a frame), and only
//!    once the new tier reaches the detail shown (no pop to its coarse
//!    levels); a switch to at least the detail held that does not fit
//!    beside its old copy shrinks that copy a level first
//!    ([`switch`]). Every
//!    new texture or mesh must fit the budget beside everything held (the
//!    recycle pool is dropped first if that makes it fit), or it waits; a
//!    wait for room the plan does not leave asks later plans for headroom.
//!    After an out-of-memory event growth pauses.

use super::BelowReason;
use crate::gpu::books::Books;
use crate::ids::{MeshId, TextureId};
use crate::kinds::Tier;
use crate::plan::{MeshPlan, TexturePlan};
use crate::transcode::LevelImage;
use std::collections::BTreeMap;

mod geometry;
mod meshes;
mod switch;

pub(crate) use geometry::Geometry;
use meshes::grow_mesh;
pub(crate) use meshes::{drop_meshes_further, shrink_meshes};
use switch::rebuild;

/// What this frame may still upload, and copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UploadRoom {
    bytes: u64,
    levels: u32,
    used: bool,
    /// The whole frame's room (what `new` was given).
    cap: (u64, u32),
    /// Texture levels the frame may still write, each one copy command
    /// (uploaded, or copied on the GPU from a texture's old copy), and
    /// whether any was ([`crate::streamer::StreamerOptions::copies_per_frame`]).
    copies: u32,
    copied: bool,
}

impl UploadRoom {
    /// A frame's room: `bytes` and `levels` at most, copies unlimited.
    pub(crate) fn new(bytes: u64, levels: u32) -> Self {
        Self {
            bytes,
            levels,
            used: false,
            cap: (bytes, levels),
            copies: u32::MAX,
            copied: false,
        }
    }

    /// The same room with at most `copies` texture levels written (0: no
    /// limit).
    pub(crate) fn with_copies(self, copies: u32) -> Self {
        Self {
            copies: if copies == 0 { u32::MAX } else { copies },
            ..self
        }
    }

    /// Whether a texture of `levels` levels can be written now: within
    /// what is left of the frame's copies, or the frame's first write
    /// (which always can, so no texture waits for ever).
    pub(crate) fn copies_fit(&self, levels: u32) -> bool {
        levels <= self.copies || !self.copied
    }

    /// Records `n` texture levels written.
    pub(crate) fn take_copies(&mut self, n: u32) {
        self.copied |= n > 0;
        self.copies = self.copies.saturating_sub(n);
    }

    /// Whether `levels` levels of `bytes` in all fit a frame's whole room
    /// (so waiting for the next frame lets them through).
    pub(crate) fn fits_a_frame(&self, bytes: u64, levels: u32) -> bool {
        levels <= self.cap.1 && (bytes <= self.cap.0 || levels == 1)
    }

    /// Whether one more level of `bytes` fits after `taken_bytes` in `taken`
    /// levels of the same build (the first of a frame always does).
    pub(crate) fn fits(&self, bytes: u64, taken_bytes: u64, taken: u32) -> bool {
        if taken + 1 > self.levels {
            return false;
        }
        taken_bytes + bytes <= self.bytes || (!self.used && taken == 0)
    }

    /// Records an upload.
    pub(crate) fn take(&mut self, bytes: u64, levels: u32) {
        self.used = true;
        self.bytes = self.bytes.saturating_sub(bytes);
        self.levels = self.levels.saturating_sub(levels);
    }
}

/// A texture as the decisions see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextureFacts<'a> {
    pub(crate) id: TextureId,
    pub(crate) plan: TexturePlan,
    pub(crate) geometry: Geometry,
    /// Its finest resident level and their tier.
    pub(crate) first: u32,
    pub(crate) tier: Tier,
    /// Its always-resident tail.
    pub(crate) tail: u32,
    /// Orders it among textures of equal priority
    /// ([`PlanTexture::tie_key`](crate::plan::PlanTexture::tie_key)).
    pub(crate) tie_key: u64,
    /// Arrived levels of `pending_tier`.
    pub(crate) pending_tier: Tier,
    pub(crate) pending: &'a BTreeMap<u32, LevelImage>,
    /// CPU copies of its resident levels (backends without GPU copies).
    pub(crate) shadow: Option<&'a BTreeMap<u32, LevelImage>>,
}

impl TextureFacts<'_> {
    fn held_bytes(&self) -> u64 {
        self.geometry.shape(self.first, self.tier).bytes()
    }

    /// Bytes and count of the resident levels `from..` uploaded again from
    /// their CPU copies when the texture is rebuilt (backends without GPU
    /// copies of its format; nothing elsewhere).
    fn reupload_from(&self, from: u32) -> (u64, u32) {
        self.shadow.map_or((0, 0), |s| {
            s.range(from..)
                .fold((0, 0), |(b, n), (_, l)| (b + l.unstaged_bytes(), n + 1))
        })
    }
}

/// The texture shrunk to levels `to..` in its tier: the books and the
/// frame's room as the store's shrink will leave them (the smaller copy
/// made, the kept levels staged again without GPU copies, the old copy
/// released), and the step.
fn shrink_op(t: &TextureFacts<'_>, to: u32, ctx: &mut Context, room: &mut UploadRoom) -> Step {
    let (reupload, kept) = t.reupload_from(to);
    let copies = t.geometry.levels - to;
    ctx.books.create(t.geometry.shape(to, t.tier));
    ctx.books.stage(reupload);
    ctx.books.release(t.geometry.shape(t.first, t.tier));
    let upload = t.shadow.map(|_| (reupload, kept));
    if let Some((bytes, levels)) = upload {
        room.take(bytes, levels);
    }
    room.take_copies(copies);
    Step::op(
        Asset::Texture(t.id),
        Op::ShrinkTexture { id: t.id, to },
        upload,
    )
    .copying(copies)
}

/// An arrived mesh LOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingLod {
    pub(crate) lod: u32,
    /// Bytes of its buffers.
    pub(crate) bytes: u64,
    /// Bytes to upload into them.
    pub(crate) upload: u64,
}

/// A mesh as the decisions see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MeshFacts {
    pub(crate) id: MeshId,
    pub(crate) plan: MeshPlan,
    pub(crate) coarsest: u32,
    /// The finer LOD drawn, if any, and its bytes.
    pub(crate) detail: Option<(u32, u64)>,
    /// Bytes of the LOD a cross-fade still draws (0: none).
    pub(crate) fading: u64,
    pub(crate) pending: Option<PendingLod>,
}

/// The frame's setting for the decisions.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// A copy of the store's books, updated as each op would.
    pub(crate) books: Books,
    /// The budget `update` keeps to.
    pub(crate) hard_budget: u64,
    /// Growth is paused after an out-of-memory event.
    pub(crate) paused: bool,
    /// Meshes cross-fade between LODs (the old LOD stays for a while).
    pub(crate) cross_fade: bool,
    /// Bytes of the plan (a blocked growth asks for headroom only when
    /// what is held is within the plan).
    pub(crate) plan_bytes: u64,
    /// Texture shrinks the frame may still carry out while the books are
    /// within the budget ([`crate::streamer::StreamerOptions::shrinks_per_frame`];
    /// `u32::MAX`: no limit). A shrink the budget forces is never held
    /// back, and counts too.
    pub(crate) shrinks_left: u32,
    /// Shrinks the plan asks were left for later frames, the frame's share
    /// spent: a growth blocked meanwhile asks later plans for no headroom,
    /// since the room it lacks is on its way (asking cost Sponza 8.7 dB at
    /// its full working set: the plans kept that room free for hundreds of
    /// frames).
    pub(crate) shrinks_deferred: bool,
    /// A planned shrink went over the budget: nothing retiring, staged or
    /// pooled could make its room later, so the update gives memory back.
    pub(crate) went_over: bool,
    /// Shrinks the budget forces were left for the next updates: the
    /// update's upload room (and copies, where capped) is what a cut's
    /// shrinks may write, beyond the first, so its render-thread work is
    /// bounded (the cut's pace; see [`Context::paced`]).
    pub(crate) cut_paced: bool,
    /// Forced shrinks carried out so far this update.
    pub(crate) forced_shrinks: u32,
    /// Growths of equal priority go by tie key (the budget fit: so
    /// registration order does not decide them), else by slot (the engine
    /// rules: the engines' own asset arrays are in registration order, and
    /// by tie key Unreal's pool on Sponza at half its working set moved from
    /// 43.31 to 42.83 dB, 960x540).
    pub(crate) ties_by_key: bool,
}

impl Context {
    /// Whether a shrink the budget forces waits for the next update: one
    /// went already this update, and writing the `reupload` bytes (kept
    /// levels uploaded again from their CPU copies, on backends without GPU
    /// copies of the format) or its `copies` levels would pass the update's
    /// room. GPU copies alone are not held back unless the copies are capped
    /// ([`crate::streamer::StreamerOptions::copies_per_frame`]): recording them costs
    /// the render thread microseconds. The textures freeing the most go
    /// first, so a cut gives most back in its first update.
    pub(crate) fn paced(&mut self, room: &UploadRoom, reupload: u64, copies: u32) -> bool {
        let paced = self.forced_shrinks > 0
            && ((reupload > 0 && !room.fits(reupload, 0, 0)) || !room.copies_fit(copies));
        if paced {
            self.cut_paced = true;
            self.shrinks_deferred = true;
        }
        paced
    }
}

/// What the GPU store is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Hold levels `to..` of a texture in its tier, dropping finer ones:
    /// GPU copies, or the kept levels uploaded again from the CPU copies.
    ShrinkTexture { id: TextureId, to: u32 },
    /// Hold levels `first..` of a texture in `tier`: the arrived `levels`
    /// uploaded, with the resident levels copied in (`keep_old`) or not (a
    /// tier switch); the recycle pool dropped first when `trim_pool`.
    BuildTexture {
        id: TextureId,
        first: u32,
        tier: Tier,
        levels: Vec<u32>,
        keep_old: bool,
        trim_pool: bool,
    },
    /// Drop the recycle pool (a build that still did not fit tried it).
    TrimPool,
    /// Drop a mesh's detail: at once, or fading out if fades are on.
    DropMeshDetail { id: MeshId, at_once: bool },
    /// Swap in a mesh's arrived LOD.
    SwapMeshLod { id: MeshId, trim_pool: bool },
}

/// A texture or a mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Asset {
    Texture(TextureId),
    Mesh(MeshId),
}

/// One decision: an op to carry out, why the asset waits, or both (a
/// texture that grows by fewer levels than planned for want of upload room).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) asset: Asset,
    pub(crate) op: Option<Op>,
    pub(crate) hold: Option<BelowReason>,
    /// Upload bytes and levels the op takes from the frame's room, if it
    /// uploads (even nothing: a frame's first upload lets one level through
    /// whatever its size, and any upload ends that).
    pub(crate) upload: Option<(u64, u32)>,
    /// Texture levels the op writes (uploaded or copied on the GPU).
    pub(crate) copies: u32,
    /// Headroom later plans should leave, asked by a growth that waits.
    pub(crate) headroom: Option<u64>,
}

impl Step {
    fn hold(asset: Asset, reason: BelowReason) -> Self {
        Self {
            asset,
            op: None,
            hold: Some(reason),
            upload: None,
            copies: 0,
            headroom: None,
        }
    }

    fn op(asset: Asset, op: Op, upload: Option<(u64, u32)>) -> Self {
        Self {
            asset,
            op: Some(op),
            hold: None,
            upload,
            copies: 0,
            headroom: None,
        }
    }

    /// The same step, writing `n` texture levels.
    fn copying(self, n: u32) -> Self {
        Self { copies: n, ..self }
    }
}

/// Textures whose shrink the device refused this frame, each with the
/// first level of the smaller copy it refused.
pub(crate) type Refused = BTreeMap<TextureId, u32>;

/// Phase 1: textures above their plan shrink (see the module docs). `skip`:
/// textures whose shrink failed this frame.
pub(crate) fn shrink_textures(
    textures: &[TextureFacts<'_>],
    ctx: &mut Context,
    room: &mut UploadRoom,
    skip: &Refused,
) -> Vec<Step> {
    let mut order: Vec<&TextureFacts<'_>> = textures
        .iter()
        .filter(|t| !skip.contains_key(&t.id))
        .collect();
    let coarser = |t: &TextureFacts<'_>| t.plan.tier == t.tier && t.plan.target > t.first;
    let forced_at_start = ctx.books.held() - ctx.books.pool.bytes() > ctx.hard_budget;
    if forced_at_start || order.iter().filter(|t| coarser(t)).count() > ctx.shrinks_left as usize {
        // more than the frame's share, or a cut paced over updates: those
        // freeing the most go first (a tier switch frees nothing until the
        // budget forces it)
        let freed = |t: &TextureFacts<'_>| {
            if coarser(t) {
                t.held_bytes()
                    .saturating_sub(t.geometry.shape(t.plan.target, t.tier).bytes())
            } else {
                0
            }
        };
        order.sort_by_key(|t| std::cmp::Reverse(freed(t)));
    }
    let mut steps = Vec::new();
    for t in order {
        let p = &t.plan;
        let to = if coarser(t) {
            Some(p.target)
        } else if p.tier != t.tier && ctx.books.held() > ctx.hard_budget {
            // a tier switch frees nothing until the new tier has loaded; it
            // keeps showing the old tier meanwhile (growth elsewhere waits
            // for those bytes), unless the budget is exceeded: then shrink
            // in the current tier to what the plan pays for now
            // (or to its tail, the most it can free, when even that holds
            // more than the plan pays for)
            let planned = t.geometry.shape(p.target, p.tier).bytes();
            Some(
                (t.first..=t.tail)
                    .find(|&l| t.geometry.shape(l, t.tier).bytes() <= planned)
                    .unwrap_or(t.tail),
            )
            .filter(|&l| l > t.first)
        } else {
            None
        };
        let Some(mut to) = to else { continue };
        let reupload_from = |l: u32| t.reupload_from(l).0;
        let over_budget = ctx.books.held() > ctx.hard_budget;
        let reupload = reupload_from(to);
        if reupload > 0 && !over_budget && !room.fits(reupload, 0, 0) {
            continue; // not forced by the budget: wait for upload room
        }
        // the pool (a cache trimmed after the shrinks) forces none; nor
        // does what is retiring, which no shrink frees sooner
        let forced = ctx.books.held() - ctx.books.pool.bytes() > ctx.hard_budget;
        if (ctx.shrinks_left == 0 || !room.copies_fit(t.geometry.levels - to)) && !forced {
            ctx.shrinks_deferred = true;
            continue; // not forced by the budget: a later frame's
        }
        if forced && ctx.paced(room, reupload, t.geometry.levels - to) {
            continue; // forced, but the update's share of the cut is spent
        }
        // the smaller copy is made beside the old one, which retires: an
        // unforced shrink waits for room while something is on its way
        // back; with nothing to wait for, it goes as far down as makes a
        // copy that fits (the plan's level comes back as growth), and only
        // when not even its tail fits does it go over
        let new = |l: u32| ctx.books.pool.size(t.geometry.shape(l, t.tier)) + reupload_from(l);
        let free = ctx.hard_budget.saturating_sub(ctx.books.accounted());
        if ctx.books.count_retiring && !forced && new(to) > free {
            let b = &ctx.books;
            if b.retiring > 0 || b.staging > 0 || b.pool.bytes() > 0 {
                ctx.shrinks_deferred = true;
                continue;
            }
            match (to..=t.tail).find(|&l| new(l) <= free) {
                Some(l) => to = l,
                None => ctx.went_over = true,
            }
        }
        ctx.shrinks_left = ctx.shrinks_left.saturating_sub(1);
        ctx.forced_shrinks += u32::from(forced);
        steps.push(shrink_op(t, to, ctx, room));
    }
    steps
}

/// Phase 1b, after refused shrinks left the books over the budget: the
/// other textures give up more than the plan asked, down to their tails,
/// those with the fewest pixels on screen per byte held first, until the
/// books fit. A refused shrink freed nothing (its smaller copy is the
/// allocation that failed), so when the others are not enough, the refused
/// textures go last, each to its tail, a smaller copy than the one refused
/// (none whose tail is what was refused). The next plan, on the budget the
/// out-of-memory event lowered, gives back what fits.
pub(crate) fn shrink_further(
    textures: &[TextureFacts<'_>],
    ctx: &mut Context,
    room: &mut UploadRoom,
    refused: &Refused,
) -> Vec<Step> {
    let mut order: Vec<&TextureFacts<'_>> = textures
        .iter()
        .filter(|t| t.first < t.tail && refused.get(&t.id).is_none_or(|&l| l < t.tail))
        .collect();
    let value =
        |t: &TextureFacts<'_>| t.plan.coverage.max(0.0) as f64 / t.held_bytes().max(1) as f64;
    order.sort_by(|a, b| {
        let (ra, rb) = (refused.contains_key(&a.id), refused.contains_key(&b.id));
        ra.cmp(&rb).then(value(a).total_cmp(&value(b)))
    });
    let mut steps = Vec::new();
    for t in order {
        if ctx.books.held() <= ctx.hard_budget {
            break;
        }
        let (reupload, _) = t.reupload_from(t.tail);
        if ctx.paced(room, reupload, t.geometry.levels - t.tail) {
            continue; // the update's share of giving back is spent
        }
        ctx.forced_shrinks += 1;
        steps.push(shrink_op(t, t.tail, ctx, room));
    }
    steps
}

/// Phase 3: textures and meshes grow, highest benefit per byte first.
pub(crate) fn grow(
    textures: &[TextureFacts<'_>],
    meshes: &[MeshFacts],
    ctx: &mut Context,
    room: &mut UploadRoom,
) -> Vec<Step> {
    // one order for textures and meshes: the plan's benefit per byte (ties:
    // textures by tie key or by slot, `Context::ties_by_key`, then meshes by
    // id)
    let key = |t: &TextureFacts<'_>| if ctx.ties_by_key { t.tie_key } else { 0 };
    let mut order: Vec<(f32, bool, u64, usize)> = textures
        .iter()
        .enumerate()
        .filter(|(_, t)| t.plan.tier != t.tier || t.plan.target < t.first)
        .map(|(i, t)| (t.plan.priority, false, key(t), i))
        .collect();
    order.extend(
        meshes
            .iter()
            .enumerate()
            .filter(|(_, m)| m.pending.is_some_and(|d| d.lod == m.plan.target))
            .map(|(i, m)| (m.plan.priority, true, 0, i)),
    );
    order.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let mut steps = Vec::new();
    for (_, mesh, _, i) in order {
        let step = if mesh {
            grow_mesh(&meshes[i], ctx, room)
        } else {
            let t = &textures[i];
            if ctx.paused {
                Some(Step::hold(
                    Asset::Texture(t.id),
                    BelowReason::OutOfMemoryBackoff,
                ))
            } else if t.plan.tier != t.tier {
                rebuild(t, ctx, room)
            } else {
                grow_texture(t, ctx, room)
            }
        };
        steps.extend(step);
    }
    steps
}

/// Grows a texture by its arrived levels next to its finest resident one.
fn grow_texture(t: &TextureFacts<'_>, ctx: &mut Context, room: &mut UploadRoom) -> Option<Step> {
    // without GPU copies the kept levels are uploaded again with the new ones
    let reupload: u64 = t
        .shadow
        .map_or(0, |s| s.values().map(|l| l.unstaged_bytes()).sum());
    let (mut take, mut bytes, mut count, mut hold) = (t.first, reupload, 0u32, None);
    while take > t.plan.target {
        let Some(img) = t.pending.get(&(take - 1)) else {
            break;
        };
        // the new texture's levels are all written: the kept ones too
        let copies = t.geometry.levels - (take - 1);
        if !room.fits(img.byte_len(), bytes, count) || !room.copies_fit(copies) {
            hold = Some(BelowReason::UploadCap);
            break;
        }
        bytes += img.byte_len();
        count += 1;
        take -= 1;
    }
    if take == t.first {
        return hold.map(|r| Step::hold(Asset::Texture(t.id), r));
    }
    // The finest arrived level that fits beside everything held (and
    // retiring, where a given-up pool makes no room at once): a planned
    // level that does not fit (a prefetch the floor asked for, often) must
    // not keep the coarser arrived ones out. When none fits, the finest waits.
    let pool = (!ctx.books.count_retiring) as u64 * ctx.books.pool.bytes();
    let held = ctx.books.accounted() - pool;
    let fits = |first: u32| {
        let new = build_bytes(&ctx.books, t, first, t.tier, first..t.first, true);
        held + new <= ctx.hard_budget
    };
    let finest = take;
    while take < t.first && !fits(take) {
        take += 1;
    }
    if take == t.first {
        take = finest;
    }
    let mut step = build(t, take, t.tier, (take..t.first).collect(), true, ctx, room);
    step.hold = step.hold.or(hold);
    Some(step)
}

/// Bytes building levels `first..` of `t` in `tier` from the arrived
/// `levels` takes beside what is held: the new texture, the staging of the
/// uploaded levels (beyond what a loader staged) and, without GPU copies
/// (`keep_old`), the kept levels staged again.
fn build_bytes(
    books: &Books,
    t: &TextureFacts<'_>,
    first: u32,
    tier: Tier,
    levels: impl IntoIterator<Item = u32>,
    keep_old: bool,
) -> u64 {
    let upload: u64 = levels
        .into_iter()
        .map(|l| t.pending[&l].unstaged_bytes())
        .sum();
    let kept = match (t.shadow, keep_old) {
        (Some(s), true) => s.values().map(|l| l.unstaged_bytes()).sum(),
        _ => 0,
    };
    books.pool.size(t.geometry.shape(first, tier)) + upload + kept
}

/// A texture for levels `first..` in `tier` from the arrived `levels` (and
/// the resident ones when `keep_old`), if it fits beside everything held.
fn build(
    t: &TextureFacts<'_>,
    first: u32,
    tier: Tier,
    levels: Vec<u32>,
    keep_old: bool,
    ctx: &mut Context,
    room: &mut UploadRoom,
) -> Step {
    let asset = Asset::Texture(t.id);
    let shape = t.geometry.shape(first, tier);
    // bytes copied this frame (the upload cap), and the staging they take
    // beyond the loaders' reserve (bytes a loader staged are in it already)
    let copied: u64 = levels.iter().map(|l| t.pending[l].byte_len()).sum();
    let upload: u64 = levels.iter().map(|l| t.pending[l].unstaged_bytes()).sum();
    // without GPU copies the kept levels are staged again beside the new ones
    let kept: (u64, u32) = match (t.shadow, keep_old) {
        (Some(s), true) => (s.values().map(|l| l.unstaged_bytes()).sum(), s.len() as u32),
        _ => (0, 0),
    };
    let need = build_bytes(&ctx.books, t, first, tier, levels.iter().copied(), keep_old);
    let hard_budget = ctx.hard_budget;
    let fits = |books: &Books| books.accounted() + need <= hard_budget;
    let trim_pool = !fits(&ctx.books) && (!ctx.books.count_retiring || ctx.books.pool.bytes() > 0);
    if trim_pool {
        ctx.books.trim_pool(0);
    }
    if !fits(&ctx.books) {
        let mut step = Step::hold(asset, BelowReason::Budget);
        step.op = trim_pool.then_some(Op::TrimPool);
        // a prefetch that does not fit waits; only what the views need
        // makes later plans leave room
        if !t.plan.prefetch {
            step.headroom = headroom(ctx, &ctx.books, ctx.books.accounted() + need);
        }
        return step;
    }
    ctx.books.create(shape);
    ctx.books.stage(upload + kept.0);
    ctx.books.release(t.geometry.shape(t.first, t.tier));
    let taken = (copied + kept.0, levels.len() as u32 + kept.1);
    room.take(taken.0, taken.1);
    room.take_copies(shape.mips);
    Step::op(
        asset,
        Op::BuildTexture {
            id: t.id,
            first,
            tier,
            levels,
            keep_old,
            trim_pool,
        },
        Some(taken),
    )
    .copying(shape.mips)
}

/// The headroom a blocked growth that needs `need` bytes in all asks later
/// plans for: what it lacks, only when nothing else explains the block (no
/// upload staged this frame, nothing held above the plan, no shrink left
/// for a later frame); the plan keeps
/// room for one growth, not for all of a frame's. The plan already kept
/// room for the growth it chose, so only the shortfall is asked (the
/// upload's row padding, say, or a second growth in the frame), on top of
/// what the plan in force already left free (`carry_out` adds that: a
/// shortfall smaller than the transient reserve, asked alone, lowered no
/// plan and the growth waited for ever): asking for the whole growth again
/// took a tier switch that missed by 2 KiB a third of a plan's budget for
/// [`super::budget::STICKY_FRAMES`]. The loaders' staging reserve is held
/// beside the plan (plans are made on the budget less it), so it counts
/// with the plan, not as something held above it.
pub(super) fn headroom(ctx: &Context, books: &Books, need: u64) -> Option<u64> {
    let plan = ctx.plan_bytes + books.pool.bytes() + books.reserve;
    let short = need.saturating_sub(ctx.hard_budget);
    // memory retiring is room on its way, as a deferred shrink's is
    let waiting = books.staging > 0 || books.retiring > 0 || ctx.shrinks_deferred;
    (!waiting && books.accounted() <= plan && short > 0).then_some(short)
}

#[cfg(test)]
mod tests;
