//! The apply step of `update`: shrink, grow and rebuild resident textures.
//!
//! Shrinks come first (they free memory and need no upload), then growth in
//! the planner's priority order. A texture grows by the arrived levels
//! adjacent to its finest resident one, as many as this frame's upload cap
//! allows (a single level larger than the cap goes alone, first in a frame);
//! a texture whose planned tier differs is rebuilt once the new tier's levels
//! from its tail up have arrived. Every new texture must fit the budget next to
//! everything already held, or the texture waits and reports why.

use super::{BelowReason, Entry, Streamer, TextureId};
use crate::gpu::AllocError;
use crate::gpu::GpuTexture;
use crate::kinds::Tier;

/// A texture or a mesh to grow this frame.
#[derive(Debug, Clone, Copy)]
enum Grow {
    Texture(TextureId),
    Mesh(super::MeshId),
}

/// What this frame may still upload.
pub(super) struct UploadRoom {
    bytes: u64,
    levels: u32,
    used: bool,
}

impl UploadRoom {
    /// Whether one more level of `bytes` fits (the first of a frame always does).
    pub(super) fn fits(&self, bytes: u64, taken_bytes: u64, taken: u32) -> bool {
        if taken + 1 > self.levels {
            return false;
        }
        taken_bytes + bytes <= self.bytes || (!self.used && taken == 0)
    }

    /// Records an upload.
    pub(super) fn take(&mut self, bytes: u64, levels: u32) {
        self.used = true;
        self.bytes = self.bytes.saturating_sub(bytes);
        self.levels = self.levels.saturating_sub(levels);
    }
}

impl Streamer {
    pub(super) fn apply(&mut self) {
        let plan = self.planner.last_plan().textures.clone();
        let ids = self.texture_ids();
        let mut work = false;
        let mut room = UploadRoom {
            bytes: self.options.upload_bytes_per_frame,
            levels: self.options.uploads_per_frame,
            used: false,
        };
        for &id in &ids {
            let p = plan[id.index()];
            let e = self.textures.get_mut(id).expect("live id");
            e.held_back = None;
            let first = e.resident.first_level;
            if p.tier == e.tier && p.target > first {
                work |= self.shrink(id, p.target, &mut room);
            } else if p.tier != e.tier {
                // a tier switch frees nothing until the new tier has loaded:
                // shrink in the current tier to what the plan budgets for now
                let planned = e.plan.bytes(p.target, p.tier);
                let fits =
                    (first..=e.plan.tail_level).find(|&l| e.plan.bytes(l, e.tier) <= planned);
                if let Some(level) = fits.filter(|&l| l > first) {
                    work |= self.shrink(id, level, &mut room);
                }
            }
        }
        work |= self.shrink_meshes();
        // one order for textures and meshes: the plan's benefit per byte
        let mut order: Vec<(f32, Grow)> = ids
            .into_iter()
            .filter(|id| {
                let (p, e) = (plan[id.index()], self.textures.get(*id).expect("live id"));
                p.tier != e.tier || p.target < e.resident.first_level
            })
            .map(|id| (plan[id.index()].priority, Grow::Texture(id)))
            .collect();
        order.extend(
            self.meshes_to_grow()
                .into_iter()
                .map(|(id, priority)| (priority, Grow::Mesh(id))),
        );
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, grow) in order {
            let id = match grow {
                Grow::Texture(id) => id,
                Grow::Mesh(id) => {
                    work |= self.grow_mesh(id, &mut room);
                    continue;
                }
            };
            if self.frame < self.grow_paused_until && self.oom_reduction > 0 {
                self.textures.get_mut(id).expect("live id").held_back =
                    Some(BelowReason::OutOfMemoryBackoff);
                continue;
            }
            let p = plan[id.index()];
            let tier = self.textures.get(id).expect("live id").tier;
            work |= if p.tier != tier {
                self.rebuild(id, p.target, p.tier, &mut room)
            } else {
                self.grow(id, p.target, &mut room)
            };
        }
        if work || self.gpu.has_unsubmitted() {
            self.gpu.submit();
        }
    }

    /// Replaces a texture's resident levels with `[target..)`: copied GPU-side,
    /// or re-uploaded from the CPU copies where the backend cannot copy.
    fn shrink(&mut self, id: TextureId, target: u32, room: &mut UploadRoom) -> bool {
        let e = self.textures.get(id).expect("live id");
        let (old_first, tier) = (e.resident.first_level, e.tier);
        let shape = e.shape(target, tier);
        let label = format!("mipstream {} levels {target}..{}", e.label, e.levels());
        let kept: Vec<crate::transcode::LevelImage> = match &e.shadow {
            Some(shadow) => shadow.range(target..).map(|(_, l)| l.clone()).collect(),
            None => Vec::new(),
        };
        let reupload: u64 = kept.iter().map(|l| l.data.len() as u64).sum();
        let over_budget = self.gpu.accounted_bytes() > self.hard_budget();
        if reupload > 0 && !over_budget && !room.fits(reupload, 0, 0) {
            return false; // not forced by the budget: wait for upload room
        }
        let dim = crate::gpu::upload::view_dimension(e.file.info());
        let texture = match self.gpu.create_texture(&label, shape, target, dim) {
            Ok(t) => t,
            Err(err) => {
                self.alloc_failed(err);
                return false;
            }
        };
        let e = self.textures.get(id).expect("live id");
        if e.shadow.is_some() {
            let uploads: Vec<_> = kept
                .iter()
                .map(|l| (&texture.texture, l.level - target, l))
                .collect();
            if let Err(err) = self.gpu.stage(&uploads, &label) {
                drop(uploads);
                self.gpu.release(texture);
                self.alloc_failed(err);
                return false;
            }
            room.take(reupload, kept.len() as u32);
            self.stats.upload_bytes += reupload;
            self.stats.uploads += kept.len() as u32;
        } else {
            let e = self.textures.get(id).expect("live id");
            self.gpu.copy_mips(
                &e.resident,
                target - old_first,
                &texture.texture,
                0,
                shape.mips,
            );
        }
        self.swap(id, texture, tier);
        if let Some(shadow) = &mut self.textures.get_mut(id).expect("live id").shadow {
            shadow.retain(|l, _| *l >= target);
        }
        self.stats.shrunk += 1;
        true
    }

    /// Grows a texture by its arrived levels next to its finest resident one.
    fn grow(&mut self, id: TextureId, target: u32, room: &mut UploadRoom) -> bool {
        let e = self.textures.get_mut(id).expect("live id");
        let first = e.resident.first_level;
        // without GPU copies the kept levels are uploaded again with the new ones
        let reupload: u64 = e
            .shadow
            .as_ref()
            .map_or(0, |s| s.values().map(|l| l.data.len() as u64).sum());
        let (mut take, mut bytes, mut count) = (first, reupload, 0u32);
        while take > target {
            let Some(img) = e.pending.get(&(take - 1)) else {
                break;
            };
            if !room.fits(img.data.len() as u64, bytes, count) {
                e.held_back = Some(BelowReason::UploadCap);
                break;
            }
            bytes += img.data.len() as u64;
            count += 1;
            take -= 1;
        }
        if take == first {
            return false;
        }
        let tier = e.tier;
        let levels: Vec<_> = (take..first).filter_map(|l| e.pending.remove(&l)).collect();
        self.build(id, take, tier, levels, room, true)
    }

    /// Rebuilds a texture in another tier from the new tier's arrived levels
    /// (from its tail up, as far towards `target` as this frame allows).
    fn rebuild(&mut self, id: TextureId, target: u32, tier: Tier, room: &mut UploadRoom) -> bool {
        let e = self.textures.get_mut(id).expect("live id");
        if e.pending_tier != tier {
            return false;
        }
        let n = e.levels();
        let (mut take, mut bytes, mut count) = (n, 0u64, 0u32);
        while take > target {
            let Some(img) = e.pending.get(&(take - 1)) else {
                break;
            };
            if !room.fits(img.data.len() as u64, bytes, count) {
                e.held_back = Some(BelowReason::UploadCap);
                break;
            }
            bytes += img.data.len() as u64;
            count += 1;
            take -= 1;
        }
        if take > e.plan.tail_level {
            return false; // the new tier's tail has not arrived (or does not fit) yet
        }
        let levels: Vec<_> = (take..n).filter_map(|l| e.pending.remove(&l)).collect();
        self.build(id, take, tier, levels, room, false)
    }

    /// Creates the texture for levels `first..` in `tier`, fills it from the old
    /// one (when `keep_old`) and from `levels`, and swaps it in.
    #[allow(clippy::too_many_arguments)]
    fn build(
        &mut self,
        id: TextureId,
        first: u32,
        tier: Tier,
        levels: Vec<crate::transcode::LevelImage>,
        room: &mut UploadRoom,
        keep_old: bool,
    ) -> bool {
        let e = self.textures.get(id).expect("live id");
        let shape = e.shape(first, tier);
        let upload_bytes: u64 = levels.iter().map(|l| l.data.len() as u64).sum();
        let budget = self.hard_budget();
        if self.gpu.accounted_bytes() + shape.bytes() + upload_bytes > budget {
            self.gpu.trim_pool(0);
        }
        if self.gpu.accounted_bytes() + shape.bytes() + upload_bytes > budget {
            let old = e.shape(e.resident.first_level, e.tier).bytes();
            // a prefetch that does not fit waits; only what the views need
            // makes later plans leave room
            if !self.planner.last_plan().textures[id.index()].prefetch {
                self.need_headroom(old + upload_bytes);
            }
            let e = self.textures.get_mut(id).expect("live id");
            e.held_back = Some(BelowReason::Budget);
            put_back(e, levels);
            return false;
        }
        let label = format!("mipstream {} levels {first}..{}", e.label, e.levels());
        let dim = crate::gpu::upload::view_dimension(e.file.info());
        let texture = match self.gpu.create_texture(&label, shape, first, dim) {
            Ok(t) => t,
            Err(err) => {
                self.alloc_failed(err);
                put_back(self.textures.get_mut(id).expect("live id"), levels);
                return false;
            }
        };
        let e = self.textures.get(id).expect("live id");
        let kept: Vec<crate::transcode::LevelImage> = match (&e.shadow, keep_old) {
            (Some(shadow), true) => shadow.values().cloned().collect(),
            _ => Vec::new(),
        };
        if keep_old && e.shadow.is_none() {
            let old = &e.resident;
            let (first_old, count) = (old.first_level, old.level_count);
            let e = self.textures.get(id).expect("live id");
            self.gpu
                .copy_mips(&e.resident, 0, &texture.texture, first_old - first, count);
        }
        let uploads: Vec<_> = levels
            .iter()
            .chain(&kept)
            .map(|l| (&texture.texture, l.level - first, l))
            .collect();
        if let Err(err) = self.gpu.stage(&uploads, &label) {
            drop(uploads);
            self.gpu.release(texture);
            self.alloc_failed(err);
            put_back(self.textures.get_mut(id).expect("live id"), levels);
            return false;
        }
        drop(uploads);
        let kept_bytes: u64 = kept.iter().map(|l| l.data.len() as u64).sum();
        room.take(
            upload_bytes + kept_bytes,
            (levels.len() + kept.len()) as u32,
        );
        self.stats.upload_bytes += upload_bytes + kept_bytes;
        self.stats.uploads += (levels.len() + kept.len()) as u32;
        self.stats.grown += 1;
        self.swap(id, texture, tier);
        let e = self.textures.get_mut(id).expect("live id");
        if let Some(shadow) = &mut e.shadow {
            if !keep_old {
                shadow.clear();
            }
            shadow.extend(levels.into_iter().map(|l| (l.level, l)));
        }
        true
    }

    /// Puts `new` in place of a texture's resident levels and releases the old.
    fn swap(&mut self, id: TextureId, new: GpuTexture, tier: Tier) {
        let frame = self.frame;
        let e = self.textures.get_mut(id).expect("live id");
        let old = std::mem::replace(&mut e.resident, new);
        e.tier = tier;
        e.since_frame = frame;
        e.generation += 1;
        self.gpu.release(old);
        self.changed.push(id);
        self.stats.rebinds += 1;
    }

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

fn put_back(e: &mut Entry, levels: Vec<crate::transcode::LevelImage>) {
    for l in levels {
        e.pending.insert(l.level, l);
    }
}
