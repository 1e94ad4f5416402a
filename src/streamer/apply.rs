//! Carrying out the frame's decisions (`work.rs`) on the GPU store: each
//! [`Op`] made real (textures created, copied, filled and swapped in; mesh
//! buffers made or dropped), each wait recorded, the upload room and the
//! headroom taken for what ran. An allocation that fails stops the run and
//! is recorded as an out-of-memory event; what to do with the steps after it
//! is the caller's (see [`Streamer::carry_out`]).

use super::slots::Facts;
use super::work::{self, Asset, Context, Op, Step, UploadRoom};
use super::{BelowReason, Streamer, TextureId};
use crate::gpu::{AllocError, GpuTexture};
use crate::ids::MeshId;
use crate::kinds::Tier;
use crate::transcode::LevelImage;

/// What a run of steps did.
#[derive(Debug, Default)]
pub(super) struct Carried {
    /// Something was recorded for the GPU.
    pub(super) work: bool,
    /// The asset whose allocation failed, if one did.
    pub(super) failed: Option<Asset>,
    /// When that was a texture's shrink, the first level of the copy
    /// refused.
    pub(super) refused_from: Option<u32>,
}

impl Streamer {
    /// While the books exceed the budget, textures give up more than the
    /// plan asked, the least valuable first ([`work::shrink_further`]).
    pub(super) fn shrink_further_while_over(
        &mut self,
        room: &mut UploadRoom,
        failed: &mut work::Refused,
        deferred: &mut bool,
    ) -> bool {
        self.gpu.held_bytes() > self.hard_budget()
            && self.shrink_textures_with(room, failed, true, deferred, work::shrink_further)
    }

    /// Lets go of pooled textures (oldest first) while the books, what the
    /// GPU still holds included, exceed the budget: they retire, and leave
    /// the books sooner than a texture released later would.
    pub(super) fn keep_pool_within_budget(&mut self) {
        let excess = self
            .gpu
            .accounted_bytes()
            .saturating_sub(self.hard_budget());
        if excess > 0 {
            self.gpu
                .trim_pool(self.gpu.pool_bytes().saturating_sub(excess));
        }
    }

    /// The decisions' setting: a copy of the books and the frame's limits.
    pub(super) fn context(&self) -> Context {
        Context {
            books: self.gpu.books(),
            hard_budget: self.hard_budget(),
            paused: self.budget.growth_paused(self.frame.number),
            cross_fade: self.options.mesh_cross_fade_frames > 0,
            plan_bytes: self.planner.last_plan().bytes,
            shrinks_left: self.shrink_share(),
            shrinks_deferred: false,
            went_over: false,
            cut_paced: false,
            forced_shrinks: self.frame.stats.forced_shrinks,
            ties_by_key: self.planner.policy() == crate::plan::Policy::Budget,
        }
    }

    /// The shrinks an update may carry out within the budget
    /// ([`crate::streamer::StreamerOptions::shrinks_per_frame`], 0 for no limit).
    fn shrink_share(&self) -> u32 {
        match self.options.shrinks_per_frame {
            0 => u32::MAX,
            n => n,
        }
    }

    pub(super) fn mesh_facts(&self) -> Vec<work::MeshFacts> {
        self.meshes
            .entries
            .iter::<MeshId>()
            .map(|(id, e)| e.facts(id, self.mesh_plan(id)))
            .collect()
    }

    /// Carries out the shrinks `decide` picks until none fails: a texture
    /// whose allocation is refused joins `failed` (with the level of the
    /// copy refused; `stats.refused_shrinks` counts it) and the rest are decided
    /// again on the books as they now stand, with what is left of the
    /// frame's shrinks (those decided after the refused one, though not
    /// carried out, stay counted); `deferred` is set when shrinks were left
    /// for later frames. Returns whether any GPU work was recorded.
    pub(super) fn shrink_textures_with(
        &mut self,
        room: &mut UploadRoom,
        failed: &mut work::Refused,
        all: bool,
        deferred: &mut bool,
        decide: impl Fn(
            &[work::TextureFacts<'_>],
            &mut work::Context,
            &mut UploadRoom,
            &work::Refused,
        ) -> Vec<work::Step>,
    ) -> bool {
        let mut work = false;
        let mut shrinks_left = self.shrink_share();
        loop {
            let steps = {
                let which = if all { Facts::All } else { Facts::Shrinking };
                let facts = self.textures.facts(self.planner.last_plan(), which);
                let mut ctx = self.context();
                ctx.shrinks_left = shrinks_left;
                let steps = decide(&facts, &mut ctx, &mut room.clone(), failed);
                shrinks_left = ctx.shrinks_left;
                *deferred |= ctx.shrinks_deferred;
                self.frame.stats.giving_back |= ctx.went_over;
                self.frame.stats.forced_shrinks = ctx.forced_shrinks;
                self.frame.stats.cut_paced |= ctx.cut_paced;
                steps
            };
            let carried = self.carry_out(steps, room, false);
            work |= carried.work;
            match (carried.failed, carried.refused_from) {
                (Some(Asset::Texture(id)), Some(to)) => {
                    failed.insert(id, to);
                    self.frame.stats.refused_shrinks += 1;
                }
                _ => return work,
            }
        }
    }

    /// Carries out `steps` in order. After a failed allocation, the rest is
    /// left undone, or, with `pause_after_failure` (growth), held back as an
    /// out-of-memory back-off, as growth pauses.
    pub(super) fn carry_out(
        &mut self,
        steps: Vec<Step>,
        room: &mut UploadRoom,
        pause_after_failure: bool,
    ) -> Carried {
        let mut carried = Carried::default();
        for step in steps {
            if carried.failed.is_some() {
                if pause_after_failure {
                    self.hold(step.asset, BelowReason::OutOfMemoryBackoff);
                    continue;
                }
                break;
            }
            if let Some(reason) = step.hold {
                self.hold(step.asset, reason);
            }
            if let Some(short) = step.headroom {
                // what the plan in force already left free, in the
                // planner's terms (`plan_inputs` takes the loaders'
                // staging off after the headroom): the shortfall goes on top
                let reserved = self
                    .budget
                    .effective(self.tail_bytes())
                    .saturating_sub(self.planner.last_plan().budget)
                    .saturating_sub(self.gpu.staging_reserve().accounted());
                self.budget
                    .ask_headroom(reserved + short, self.frame.number);
            }
            let Some(op) = step.op else { continue };
            let shrink_to = match op {
                Op::ShrinkTexture { to, .. } => Some(to),
                _ => None,
            };
            match self.execute(op) {
                Ok(work) => {
                    carried.work |= work;
                    if let Some((bytes, levels)) = step.upload {
                        room.take(bytes, levels);
                    }
                    room.take_copies(step.copies);
                }
                Err(err) => {
                    self.alloc_failed(err);
                    carried.failed = Some(step.asset);
                    carried.refused_from = shrink_to;
                }
            }
        }
        carried
    }

    /// Clears the reasons last frame's work held assets back for.
    pub(super) fn release_holds(&mut self) {
        for asset in std::mem::take(&mut self.frame.held) {
            match asset {
                Asset::Texture(id) => {
                    if let Some(e) = self.textures.entries.get_mut(id) {
                        e.load.held_back = None;
                    }
                }
                Asset::Mesh(id) => {
                    if let Some(e) = self.meshes.entries.get_mut(id) {
                        e.load.held_back = None;
                    }
                }
            }
        }
    }

    fn hold(&mut self, asset: Asset, reason: BelowReason) {
        self.frame.held.push(asset);
        match asset {
            Asset::Texture(id) => {
                if let Some(e) = self.textures.entries.get_mut(id) {
                    e.load.held_back = Some(reason);
                }
            }
            Asset::Mesh(id) => {
                if let Some(e) = self.meshes.entries.get_mut(id) {
                    e.load.held_back = Some(reason);
                }
            }
        }
    }

    /// One op on the GPU store; whether it recorded GPU work.
    fn execute(&mut self, op: Op) -> Result<bool, AllocError> {
        match op {
            Op::ShrinkTexture { id, to } => self.shrink_texture(id, to).map(|()| true),
            Op::BuildTexture {
                id,
                first,
                tier,
                levels,
                keep_old,
                trim_pool,
            } => {
                if trim_pool {
                    self.gpu.trim_pool(0);
                }
                self.build_texture(id, first, tier, &levels, keep_old)
                    .map(|()| true)
            }
            Op::TrimPool => {
                self.gpu.trim_pool(0);
                Ok(false)
            }
            Op::DropMeshDetail { id, at_once } => {
                self.drop_mesh_detail(id, at_once);
                Ok(true)
            }
            Op::SwapMeshLod { id, trim_pool } => {
                if trim_pool {
                    self.gpu.trim_pool(0);
                }
                self.swap_mesh_lod(id).map(|()| true)
            }
        }
    }

    /// Replaces a texture's resident levels with `[to..)`: copied GPU-side,
    /// or uploaded again from the CPU copies where the backend cannot copy.
    fn shrink_texture(&mut self, id: TextureId, to: u32) -> Result<(), AllocError> {
        let e = self
            .textures
            .entries
            .get(id)
            .expect("decided on a live texture");
        let (tier, old_first) = (e.tier, e.resident.first_level);
        let shape = e.geometry.shape(to, tier);
        let label = format!("mipstream {} levels {to}..{}", e.label, e.levels());
        let dim = crate::gpu::upload::view_dimension(e.file.info());
        let texture = self.gpu.create_texture(&label, shape, to, dim)?;
        let e = self
            .textures
            .entries
            .get(id)
            .expect("decided on a live texture");
        // the CPU copies are staged where they lie (the books and the GPU
        // store are apart): no clone of their texels
        let staged = match &e.shadow {
            Some(shadow) => {
                let uploads: Vec<_> = shadow
                    .range(to..)
                    .map(|(_, l)| (&texture.texture, l.level - to, l))
                    .collect();
                let bytes = uploads.iter().map(|(_, _, l)| l.byte_len()).sum::<u64>();
                self.gpu
                    .stage(&uploads, &label)
                    .map(|_| (bytes, uploads.len() as u32))
            }
            None => {
                self.gpu
                    .copy_mips(&e.resident, to - old_first, &texture.texture, 0, shape.mips);
                Ok((0, 0))
            }
        };
        match staged {
            Ok((bytes, levels)) => {
                self.frame.stats.upload_bytes += bytes;
                self.frame.stats.uploads += levels;
            }
            Err(err) => {
                self.gpu.release(texture);
                return Err(err);
            }
        }
        self.swap(id, texture, tier);
        if let Some(shadow) = &mut self.textures.entries.get_mut(id).expect("swapped").shadow {
            shadow.retain(|l, _| *l >= to);
        }
        self.frame.stats.shrunk += 1;
        self.frame.stats.copies += shape.mips;
        Ok(())
    }

    /// Creates the texture for levels `first..` in `tier`, fills it from the
    /// old one (when `keep_old`) and from the arrived `levels`, and swaps it
    /// in. On failure the arrived levels wait again.
    fn build_texture(
        &mut self,
        id: TextureId,
        first: u32,
        tier: Tier,
        levels: &[u32],
        keep_old: bool,
    ) -> Result<(), AllocError> {
        let e = self
            .textures
            .entries
            .get_mut(id)
            .expect("decided on a live texture");
        let arrived: Vec<LevelImage> = levels.iter().filter_map(|l| e.pending.remove(l)).collect();
        let shape = e.geometry.shape(first, tier);
        let label = format!("mipstream {} levels {first}..{}", e.label, e.levels());
        let dim = crate::gpu::upload::view_dimension(e.file.info());
        let texture = match self.gpu.create_texture(&label, shape, first, dim) {
            Ok(t) => t,
            Err(err) => {
                self.put_back(id, arrived);
                return Err(err);
            }
        };
        let e = self
            .textures
            .entries
            .get(id)
            .expect("decided on a live texture");
        // the kept levels' CPU copies are staged where they lie, uncloned
        let kept: Vec<&LevelImage> = match (&e.shadow, keep_old) {
            (Some(shadow), true) => shadow.values().collect(),
            _ => Vec::new(),
        };
        if keep_old && e.shadow.is_none() {
            let old = &e.resident;
            let (at, count) = (old.first_level - first, old.level_count);
            self.gpu.copy_mips(old, 0, &texture.texture, at, count);
        }
        let uploads: Vec<_> = arrived
            .iter()
            .chain(kept.iter().copied())
            .map(|l| (&texture.texture, l.level - first, l))
            .collect();
        let staged = self.gpu.stage(&uploads, &label);
        let (kept_bytes, kept_levels) = (
            kept.iter().map(|l| l.byte_len()).sum::<u64>(),
            kept.len() as u32,
        );
        drop(uploads);
        if let Err(err) = staged {
            self.gpu.release(texture);
            self.put_back(id, arrived);
            return Err(err);
        }
        self.frame.stats.upload_bytes +=
            kept_bytes + arrived.iter().map(LevelImage::byte_len).sum::<u64>();
        self.frame.stats.loader_staged_bytes += arrived
            .iter()
            .filter(|l| l.staged.is_some())
            .map(LevelImage::byte_len)
            .sum::<u64>();
        self.frame.stats.uploads += arrived.len() as u32 + kept_levels;
        self.frame.stats.grown += 1;
        self.frame.stats.copies += shape.mips;
        self.swap(id, texture, tier);
        let e = self.textures.entries.get_mut(id).expect("swapped");
        if let Some(shadow) = &mut e.shadow {
            if !keep_old {
                shadow.clear();
            }
            // loads of textures with CPU copies are never staged
            debug_assert!(arrived.iter().all(|l| l.staged.is_none()));
            shadow.extend(arrived.into_iter().map(|l| (l.level, l)));
        } else {
            // the texels are in wgpu's staging now: their buffers are freed
            // off the render thread
            for l in arrived {
                self.loader.free(l.data);
            }
        }
        Ok(())
    }

    fn put_back(&mut self, id: TextureId, levels: Vec<LevelImage>) {
        let e = self
            .textures
            .entries
            .get_mut(id)
            .expect("decided on a live texture");
        for l in levels {
            e.pending.insert(l.level, l);
        }
        self.textures.slots.touch(id.index());
    }

    /// Puts `new` in place of a texture's resident levels and releases the old.
    fn swap(&mut self, id: TextureId, new: GpuTexture, tier: Tier) {
        let frame = self.frame.number;
        let e = self
            .textures
            .entries
            .get_mut(id)
            .expect("decided on a live texture");
        let old = std::mem::replace(&mut e.resident, new);
        e.tier = tier;
        e.since_frame = frame;
        e.generation += 1;
        self.textures.slots.set(id.index(), e.state());
        self.gpu.release(old);
        self.textures.changed.push(id);
        self.frame.stats.rebinds += 1;
    }

    /// Drops a mesh's detail: at once (the budget needs the bytes), or as a
    /// swap to the coarsest LOD (which fades if fades are on).
    fn drop_mesh_detail(&mut self, id: MeshId, at_once: bool) {
        if at_once {
            let frame = self.frame.number;
            let e = self
                .meshes
                .entries
                .get_mut(id)
                .expect("decided on a live mesh");
            if let Some(d) = e.detail.take() {
                e.since_frame = frame;
                self.free_mesh(id, d);
            }
        } else {
            self.swap_detail(id, None);
        }
        self.frame.stats.shrunk += 1;
    }

    /// Builds a mesh's arrived LOD and swaps it in; the old detail goes
    /// first unless a cross-fade keeps it (if the new one cannot be made,
    /// the mesh draws its coarsest LOD until a retry).
    fn swap_mesh_lod(&mut self, id: MeshId) -> Result<(), AllocError> {
        let fade = self.options.mesh_cross_fade_frames > 0;
        let e = self
            .meshes
            .entries
            .get_mut(id)
            .expect("decided on a live mesh");
        let data = e.pending.take().expect("decided on an arrived LOD");
        let label = format!("{} LOD {}", e.label, data.lod);
        let upload = e.file.info().lods[data.lod as usize].bytes();
        if !fade {
            self.swap_detail(id, None);
        }
        match self.make_mesh(&label, &data) {
            Ok(new) => {
                let serial = new.serial;
                self.handed_over(id, serial, data);
                self.swap_detail(id, Some(new));
                self.frame.stats.upload_bytes += upload;
                self.frame.stats.uploads += 1;
                self.frame.stats.grown += 1;
                self.frame.stats.copies += 1;
                Ok(())
            }
            Err(err) => {
                self.meshes.entries.get_mut(id).expect("live").pending = Some(data);
                Err(err)
            }
        }
    }

    /// Records a failed allocation as an out-of-memory event.
    pub(super) fn alloc_failed(&mut self, err: AllocError) {
        match err {
            AllocError::OutOfMemory { label, bytes } => self.record_oom(label, bytes),
            AllocError::Validation { label, message } => {
                // a descriptor wgpu rejects is a bug; treat it like a failed
                // allocation so the frame goes on
                self.record_oom(format!("{label} (rejected by wgpu: {message})"), 0)
            }
        }
    }
}
