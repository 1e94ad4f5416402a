//! The texture table: registered textures, what each holds and what has
//! arrived for it, its loads, its report rows and its half of the books'
//! check.
//!
//! A texture holds its resident levels `[first..n)` in one GPU texture (at
//! least its always-resident tail, loaded before `register_texture`
//! returns). Levels of its `pending_tier` are requested from the loader as
//! the plan asks for them and wait in `pending` once they arrive, until
//! this frame's decisions (`work.rs`) build them in.

use super::load_state::{why_below, Below, LoadState};
use super::prepare::{layout, Layout, PreparedTexture};
use super::work::{Geometry, TextureFacts};
use super::StaleId;
use super::{
    BelowReason, LossSource, ResidencyState, Streamer, TextureDesc, TextureRegisterError,
    TextureReport, Totals,
};
use crate::container::TextureFile;
use crate::format::TargetFormat;
use crate::gpu::GpuTexture;
use crate::ids::TextureId;
use crate::kinds::{TextureClass, Tier};
use crate::plan::{Limit, PlanTexture, ResidentState, TexturePlan};
use crate::transcode::{ChannelLayout, LevelImage, Output, TargetChoice, TranscodeOptions};
use crate::worker::{LoadKey, LoadRequest};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One registered texture.
#[derive(Debug)]
pub(super) struct TextureEntry {
    pub(super) label: String,
    pub(super) file: TextureFile,
    pub(super) class: TextureClass,
    pub(super) choice: TargetChoice,
    pub(super) geometry: Geometry,
    pub(super) plan: PlanTexture,
    /// The texture holding the resident levels (always at least the tail).
    pub(super) resident: GpuTexture,
    pub(super) tier: Tier,
    /// The frame its resident levels last changed.
    pub(super) since_frame: u64,
    /// Increases each time the view changes.
    pub(super) generation: u64,
    /// Arrived levels of `pending_tier`, waiting to be built in.
    pub(super) pending: BTreeMap<u32, LevelImage>,
    pub(super) pending_tier: Tier,
    /// Levels of `pending_tier` queued or running on the loader (or
    /// waiting to go back to it for staging: `Streamer::restage`).
    pub(super) requested: BTreeSet<u32>,
    /// Times each requested level came back refused by a full staging
    /// reserve.
    pub(super) restage_tries: BTreeMap<u32, u32>,
    pub(super) load: LoadState,
    /// CPU copies of the resident levels, kept where the backend cannot copy
    /// compressed textures GPU-side (wgpu's GL backend): building and
    /// shrinking then upload the kept levels again from here.
    pub(super) shadow: Option<BTreeMap<u32, LevelImage>>,
}

impl TextureEntry {
    /// What it holds, as the planner sees it.
    pub(super) fn state(&self) -> ResidentState {
        ResidentState {
            level: self.resident.first_level,
            tier: self.tier,
            since_frame: self.since_frame,
        }
    }

    /// Whether nothing of its is requested, arrived, failed or waiting for
    /// another tier (see `slots.rs`).
    pub(super) fn idle(&self) -> bool {
        self.requested.is_empty()
            && self.pending.is_empty()
            && self.pending_tier == self.tier
            && self.load.failure.is_none()
    }

    /// Bytes of its always-resident tail.
    pub(super) fn tail_bytes(&self) -> u64 {
        self.plan.bytes(self.plan.tail_level, Tier::Full)
    }

    /// Whether its full tier is RGBA8 only because the device lacks the
    /// compressed formats (a Basis payload transcoded, or a block-compressed
    /// one decoded, to 4 bytes per texel).
    pub(super) fn rgba8_fallback(&self, features: wgpu::Features) -> bool {
        let compressed = wgpu::Features::TEXTURE_COMPRESSION_BC
            | wgpu::Features::TEXTURE_COMPRESSION_ETC2
            | wgpu::Features::TEXTURE_COMPRESSION_ASTC;
        match self.choice.full {
            Output::DecodeToRgba8 => true,
            // (a texture whose size is no multiple of 4 is RGBA8 everywhere)
            Output::Transcode(TargetFormat::Rgba8) => !features.intersects(compressed),
            _ => false,
        }
    }

    pub(super) fn levels(&self) -> u32 {
        self.plan.level_count
    }

    /// Bytes of its resident levels.
    pub(super) fn bytes(&self) -> u64 {
        // what the store counted when it made it (the allocation bound
        // with `count_retiring`, the texels without)
        self.resident.bytes
    }

    /// What `work::decide` needs of it.
    pub(super) fn facts(&self, id: TextureId, plan: TexturePlan) -> TextureFacts<'_> {
        TextureFacts {
            id,
            plan,
            geometry: self.geometry,
            first: self.resident.first_level,
            tier: self.tier,
            tail: self.plan.tail_level,
            tie_key: self.plan.tie_key,
            pending_tier: self.pending_tier,
            pending: &self.pending,
            shadow: self.shadow.as_ref(),
        }
    }
}

/// A texture's levels in brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextureStatus {
    /// Finest resident level.
    pub resident: u32,
    /// Tier of the resident levels.
    pub tier: Tier,
    /// Level the views want.
    pub wanted: u32,
    /// Level the budget plan gives it.
    pub planned: u32,
}

/// The loader key of a texture's loads in a tier.
pub(super) fn load_key(id: TextureId, tier: Tier) -> LoadKey {
    LoadKey::Texture {
        slot: id.index() as u32,
        generation: id.generation(),
        tier,
    }
}

impl Streamer {
    /// Registers a texture: loads its tail (waiting for the loader threads),
    /// so its view is never blank. To keep the reading and transcoding off
    /// the render thread, prepare on another thread with
    /// [`preparer`](Self::preparer) and call
    /// [`register_prepared`](Self::register_prepared) here.
    pub fn register_texture(
        &mut self,
        desc: TextureDesc,
    ) -> Result<TextureId, TextureRegisterError> {
        let Layout {
            choice,
            geometry,
            plan,
            label,
        } = layout(&desc, self.gpu.features(), self.options.tail_size)?;
        let tail = self.load_now(
            &desc.file,
            &choice,
            plan.tail_level..plan.level_count,
            &label,
        )?;
        self.install(PreparedTexture {
            desc,
            features: self.gpu.features(),
            choice,
            geometry,
            plan,
            label,
            tail,
        })
    }

    pub(super) fn install(
        &mut self,
        prepared: PreparedTexture,
    ) -> Result<TextureId, TextureRegisterError> {
        let PreparedTexture {
            desc,
            choice,
            geometry,
            mut plan,
            label,
            tail: tail_levels,
            ..
        } = prepared;
        if self.options.count_retiring {
            // the plan sees the bytes the books count: the allocation bound
            for (tier, bytes) in [Tier::Full, Tier::Compact]
                .into_iter()
                .zip(&mut plan.resident_bytes)
            {
                for (l, b) in bytes.iter_mut().enumerate() {
                    *b = geometry.shape(l as u32, tier).alloc_bytes();
                }
            }
        }
        plan.tie_key = tie_key(&label, &plan, &tail_levels);
        let (resident, shadow) =
            self.tail_texture(&label, &desc.file, &geometry, &plan, &tail_levels)?;
        self.textures.tails += plan.bytes(plan.tail_level, Tier::Full);
        let id: TextureId = self.textures.entries.insert(TextureEntry {
            label,
            file: desc.file,
            class: desc.class,
            choice,
            geometry,
            plan: plan.clone(),
            resident,
            tier: Tier::Full,
            since_frame: self.frame.number,
            generation: 0,
            pending: BTreeMap::new(),
            pending_tier: Tier::Full,
            requested: BTreeSet::new(),
            restage_tries: BTreeMap::new(),
            load: LoadState::default(),
            shadow,
        });
        self.textures.slots.set(
            id.index(),
            self.textures.entries.get(id).expect("inserted").state(),
        );
        let tail_level = plan.tail_level;
        self.planner.get().set_texture(id.index(), plan);
        self.planner.hold_new_texture(id.index(), tail_level);
        self.planner.note_loss(id.index());
        self.textures.changed.push(id);
        Ok(id)
    }

    /// A texture holding the tail levels (staged), and their CPU copies
    /// where the backend cannot copy compressed textures.
    fn tail_texture(
        &mut self,
        label: &str,
        file: &TextureFile,
        geometry: &Geometry,
        plan: &PlanTexture,
        tail_levels: &[LevelImage],
    ) -> Result<(GpuTexture, Option<BTreeMap<u32, LevelImage>>), TextureRegisterError> {
        let (tail, levels) = (plan.tail_level, plan.level_count);
        let gpu_label = format!("mipstream {label} levels {tail}..{levels}");
        let dim = crate::gpu::upload::view_dimension(file.info());
        let shape = geometry.shape(tail, Tier::Full);
        let resident = self.gpu.create_texture(&gpu_label, shape, tail, dim)?;
        let uploads: Vec<_> = tail_levels
            .iter()
            .enumerate()
            .map(|(i, l)| (&resident.texture, i as u32, l))
            .collect();
        if let Err(e) = self.gpu.stage(&uploads, &gpu_label) {
            drop(uploads);
            self.gpu.release(resident);
            return Err(e.into());
        }
        drop(uploads);
        self.gpu.submit();
        let compressed = geometry
            .formats
            .iter()
            .any(|f| f.block_dimensions() != (1, 1));
        let shadow = (!self.textures.gpu_copies && compressed)
            .then(|| tail_levels.iter().map(|l| (l.level, l.clone())).collect());
        Ok((resident, shadow))
    }

    /// Puts a texture back to the state registration leaves it in: its tail
    /// alone, full tier, nothing requested or pending, no failure.
    pub(super) fn reset_texture_to_tail(
        &mut self,
        id: TextureId,
    ) -> Result<(), TextureRegisterError> {
        let e = self.textures.entries.get(id).expect("an id of the table");
        let (file, choice, geometry, plan, label) = (
            e.file.clone(),
            e.choice,
            e.geometry,
            e.plan.clone(),
            e.label.clone(),
        );
        let tail = self.load_now(&file, &choice, plan.tail_level..plan.level_count, &label)?;
        let (resident, shadow) = self.tail_texture(&label, &file, &geometry, &plan, &tail)?;
        let frame = self.frame.number;
        let e = self.textures.entries.get_mut(id).expect("checked above");
        let old = std::mem::replace(&mut e.resident, resident);
        e.tier = Tier::Full;
        e.since_frame = frame;
        e.generation += 1;
        e.pending.clear();
        e.pending_tier = Tier::Full;
        e.requested.clear();
        e.restage_tries.clear();
        e.load = LoadState::default();
        e.shadow = shadow;
        self.textures.slots.set(id.index(), e.state());
        self.gpu.release(old);
        self.textures.changed.push(id);
        Ok(())
    }

    /// Opens and registers a texture file with a class.
    pub fn register_texture_path(
        &mut self,
        path: impl AsRef<std::path::Path>,
        class: TextureClass,
    ) -> Result<TextureId, TextureRegisterError> {
        let file = TextureFile::open_path(path)?;
        self.register_texture(TextureDesc::new(file).with_class(class))
    }

    /// Loads `levels` through the loader threads and waits for them.
    fn load_now(
        &mut self,
        file: &TextureFile,
        choice: &TargetChoice,
        levels: std::ops::Range<u32>,
        label: &str,
    ) -> Result<Vec<LevelImage>, TextureRegisterError> {
        // a key of its own per registration: results of an earlier failed
        // registration still in flight must not be taken for this one's
        self.textures.tail_loads += 1;
        let key = LoadKey::Tail(self.textures.tail_loads);
        for level in levels.clone() {
            self.loader.submit(LoadRequest {
                key,
                file: file.clone(),
                level,
                options: TranscodeOptions::for_choice(choice, choice.full)
                    .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
                priority: f32::MAX,
                // the tail is uploaded at once, from this thread
                stage: false,
            });
        }
        let mut got: BTreeMap<u32, LevelImage> = BTreeMap::new();
        let mut failed = None;
        while got.len() < levels.len() && failed.is_none() {
            for r in self.loader.wait(Duration::from_secs(60)) {
                if r.key != key {
                    // another texture's level reaches its texture even when
                    // this registration fails, or it would wait for it forever
                    self.accept_load(r);
                    continue;
                }
                match r.result {
                    Ok(img) => {
                        got.insert(r.level, img);
                    }
                    Err(source) => failed = failed.or(Some(source)),
                }
            }
        }
        if let Some(source) = failed {
            // the tail's other levels finish on their own; their results are
            // dropped as they arrive (the key matches no texture)
            return Err(TextureRegisterError::Tail {
                label: label.to_owned(),
                source: Box::new(source),
            });
        }
        Ok(got.into_values().collect())
    }

    /// Removes a texture; objects that showed it stop counting it.
    pub fn remove_texture(&mut self, id: TextureId) -> Result<(), StaleId> {
        let e = self
            .textures
            .entries
            .remove(id)
            .ok_or(StaleId::Texture(id))?;
        self.textures.tails -= e.tail_bytes();
        self.gpu.release(e.resident);
        for level in e.requested {
            self.loader.cancel(load_key(id, e.pending_tier), level);
        }
        self.planner.get().remove_texture(id.index());
        self.planner.note_loss(id.index());
        self.textures.slots.free(id.index());
        let affected: Vec<crate::ids::ObjectId> = self
            .objects
            .iter::<crate::ids::ObjectId>()
            .filter(|(_, o)| o.desc.textures.iter().any(|(t, _)| *t == id))
            .map(|(o, _)| o)
            .collect();
        for o in affected {
            let mut desc = self.objects.get(o).expect("listed").desc.clone();
            desc.textures.retain(|(t, _)| *t != id);
            self.set_object(o, desc)?;
        }
        Ok(())
    }

    fn texture(&self, id: TextureId) -> Result<&TextureEntry, StaleId> {
        self.textures.entries.get(id).ok_or(StaleId::Texture(id))
    }

    /// The view to bind for a texture. It changes when the resident levels do
    /// (see [`take_changed`](Self::take_changed)).
    pub fn texture_view(&self, id: TextureId) -> Result<&wgpu::TextureView, StaleId> {
        Ok(&self.texture(id)?.resident.view)
    }

    /// The resident texture (its first level, format and bytes).
    pub fn resident(&self, id: TextureId) -> Result<&GpuTexture, StaleId> {
        Ok(&self.texture(id)?.resident)
    }

    /// Resident, wanted and planned levels of a texture (cheap; for per-frame
    /// debug views).
    pub fn texture_status(&self, id: TextureId) -> Result<TextureStatus, StaleId> {
        let e = self.texture(id)?;
        let p = self.texture_plan(id);
        Ok(TextureStatus {
            resident: e.resident.first_level,
            tier: e.tier,
            wanted: if p.lod.is_finite() || p.wanted > 0 {
                p.wanted
            } else {
                e.plan.tail_level
            },
            planned: p.target,
        })
    }

    /// What the texture's file says of it: its full-resolution size
    /// (`width`, `height`: what GPU feedback's `size` is), levels and format.
    pub fn texture_info(&self, id: TextureId) -> Result<&crate::container::TextureInfo, StaleId> {
        Ok(self.texture(id)?.file.info())
    }

    /// Bytes the texture takes with every level resident in its full tier.
    pub fn full_bytes(&self, id: TextureId) -> Result<u64, StaleId> {
        Ok(self.texture(id)?.plan.bytes(0, Tier::Full))
    }

    /// Bytes the texture takes with levels `first..` resident in its full
    /// tier (`first` clamped to its always-resident tail).
    pub fn bytes_from_level(&self, id: TextureId, first: u32) -> Result<u64, StaleId> {
        let e = self.texture(id)?;
        Ok(e.plan.bytes(first.min(e.plan.tail_level), Tier::Full))
    }

    /// How shaders should read the texture's channels.
    pub fn channel_layout(&self, id: TextureId) -> Result<ChannelLayout, StaleId> {
        Ok(self.texture(id)?.choice.layout)
    }

    /// A counter that increases each time the texture's view changes.
    pub fn view_generation(&self, id: TextureId) -> Result<u64, StaleId> {
        Ok(self.texture(id)?.generation)
    }

    /// Every registered texture's id.
    pub fn texture_ids(&self) -> Vec<TextureId> {
        self.textures
            .entries
            .iter::<TextureId>()
            .map(|(id, _)| id)
            .collect()
    }

    /// The last plan's entry for a texture (defaults before the first plan).
    pub(super) fn texture_plan(&self, id: TextureId) -> TexturePlan {
        self.planner
            .last_plan()
            .textures
            .get(id.index())
            .copied()
            .unwrap_or_default()
    }

    /// Bytes of every texture's always-resident tail.
    pub(super) fn texture_tail_bytes(&self) -> u64 {
        debug_assert_eq!(
            self.textures.tails,
            self.textures
                .entries
                .iter::<TextureId>()
                .map(|(_, e)| e.tail_bytes())
                .sum::<u64>()
        );
        self.textures.tails
    }

    /// Debug builds check the dense slot arrays against the entries every
    /// plan: each live slot's state as the entry has it, and no idle-marked
    /// texture with anything in flight.
    pub(super) fn check_slots(&self) {
        if cfg!(debug_assertions) {
            for (id, e) in self.textures.entries.iter::<TextureId>() {
                debug_assert_eq!(
                    self.textures.slots.resident()[id.index()],
                    e.state(),
                    "{id:?}"
                );
                debug_assert!(
                    self.textures.slots.needs_attention(id.index()) || e.idle(),
                    "{id:?}"
                );
            }
        }
    }

    /// Asks the loaders for the levels the last plan needs
    /// ([`super::texture_table::TextureTable::request_loads`]).
    pub(super) fn request_loads(&mut self) {
        let plan = self.planner.last_plan();
        let frame = self.frame.number;
        self.frame.stats.requested += self.textures.request_loads(plan, &mut self.loader, frame);
    }

    /// Whether every texture holds its plan (see [`Streamer::converged`]).
    pub(super) fn textures_converged(&self, settled: bool, fixed: bool) -> bool {
        let plan = self.planner.last_plan();
        self.textures.entries.iter::<TextureId>().all(|(id, e)| {
            let p = plan.textures.get(id.index());
            e.load.failure.is_some()
                || p.is_some_and(|p| p.target == e.resident.first_level && p.tier == e.tier)
                // spare-budget detail (or a fixed rule's target) that does
                // not fit beside the plan waits
                || (settled
                    && p.is_some_and(|p| p.prefetch || fixed)
                    && e.load.held_back == Some(BelowReason::Budget))
        })
    }

    /// The texture rows of the report; adds their bytes to `totals`.
    pub(super) fn texture_reports(&self, totals: &mut Totals) -> Vec<TextureReport> {
        let paused = self.frame.number < self.budget.paused_until();
        self.textures
            .entries
            .iter::<TextureId>()
            .map(|(id, e)| {
                let p = self.texture_plan(id);
                let bytes = e.bytes();
                match e.class {
                    TextureClass::Color => totals.color += bytes,
                    TextureClass::Normal => totals.normal += bytes,
                    TextureClass::Data => totals.data += bytes,
                }
                let state = if let Some(f) = &e.load.failure {
                    ResidencyState::Failed {
                        error: f.message.clone(),
                        retry_at_frame: f.retry_at,
                    }
                } else if !e.requested.is_empty() {
                    ResidencyState::Loading {
                        levels: e.requested.len() as u32,
                    }
                } else if !e.pending.is_empty() {
                    ResidencyState::Uploading {
                        levels: e.pending.len() as u32,
                    }
                } else {
                    ResidencyState::Resident
                };
                let first = e.resident.first_level;
                let planned_below = (p.target > first || (p.target == first && p.tier == e.tier))
                    .then_some(match p.limit {
                        Some(Limit::MaxResolution) => BelowReason::MaxResolution,
                        _ => BelowReason::Budget,
                    });
                let below = why_below(Below {
                    at_wanted: first <= p.wanted && e.tier == Tier::Full,
                    failure: e.load.failure.as_ref(),
                    planned_below,
                    held_back: e.load.held_back.as_ref(),
                    paused,
                    loading: !e.requested.is_empty(),
                });
                TextureReport {
                    id,
                    label: e.label.clone(),
                    class: e.class,
                    size: (e.geometry.width, e.geometry.height),
                    levels: e.levels(),
                    wanted: p.wanted,
                    planned: p.target,
                    planned_tier: p.tier,
                    resident: first,
                    tier: e.tier,
                    format: e.resident.format,
                    bytes,
                    coverage: p.coverage,
                    below,
                    state,
                    loss: self.loss_source(id, e),
                }
            })
            .collect()
    }

    /// Which error model judges texture `id`.
    pub(super) fn loss_source(&self, id: TextureId, e: &TextureEntry) -> LossSource {
        if self.planner.uses_measured_loss(id.index()) {
            return LossSource::Measured;
        }
        if self.options.planner.error_model != crate::plan::LossModel::Measured {
            return LossSource::Geometric;
        }
        match crate::loss::TextureLoss::from_info(e.file.info()) {
            Some(Err(err)) => LossSource::Invalid(err.to_string()),
            _ => LossSource::Geometric,
        }
    }

    /// The texture half of `check_invariants`: the books' texture bytes are
    /// the live textures', and every texture holds its tail.
    pub(super) fn check_texture_invariants(&self) -> Result<(), super::InvariantViolation> {
        let live: u64 = self
            .textures
            .entries
            .iter::<TextureId>()
            .map(|(_, e)| e.bytes())
            .sum();
        let accounted = self.gpu.texture_bytes();
        if live != accounted {
            return Err(super::InvariantViolation::Accounting { accounted, live });
        }
        for (id, e) in self.textures.entries.iter::<TextureId>() {
            let (first, end) = (
                e.resident.first_level,
                e.resident.first_level + e.resident.level_count,
            );
            if first > e.plan.tail_level || end != e.levels() {
                return Err(super::InvariantViolation::MissingTail {
                    id,
                    first,
                    end,
                    tail: e.plan.tail_level,
                    levels: e.levels(),
                });
            }
        }
        Ok(())
    }
}

/// The texture's [`PlanTexture::tie_key`]: a hash of its label, its shape
/// and its tail's texels (those in memory: a tail the loader staged into a
/// GPU buffer counts by its shape), which do not depend on the order
/// textures are registered in.
fn tie_key(label: &str, plan: &PlanTexture, tail: &[LevelImage]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    label.hash(&mut h);
    (plan.size, plan.level_count, plan.tail_level).hash(&mut h);
    plan.resident_bytes.hash(&mut h);
    for l in tail {
        (l.level, l.width, l.height, l.images, &l.data).hash(&mut h);
    }
    h.finish()
}
