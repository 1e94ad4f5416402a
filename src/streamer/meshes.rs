//! Meshes in the streamer: registration (the coarsest LOD loaded before it
//! returns, so a mesh is never missing), LOD loads on the loader threads,
//! swaps at `update` (frame boundaries) under the upload cap and the one
//! budget, and the mesh half of the report and the invariants.
//!
//! A mesh holds its coarsest LOD's buffers from registration to removal and
//! at most one finer LOD's ("detail"), the one drawn. Moving to another
//! finer LOD loads it whole, builds its buffers beside the old ones, then
//! swaps; moving to the coarsest drops the detail at once. A detail finer
//! than planned is kept until the planned LOD has arrived, unless the budget
//! in force is exceeded, when it goes at once.

use super::load_state::{why_below, Below, LoadState};
use super::work::{MeshFacts, PendingLod};
use super::StaleId;
use super::{BelowReason, MeshRegisterError, Streamer};
use crate::gpu::GpuMesh;
use crate::ids::MeshId;
use crate::ids::Slots;
use crate::mesh::{LodInfo, MeshFile, MeshLod};
use crate::plan::{MeshPlan, MeshResident, Plan, PlanMesh};
use crate::streamer::report::{MeshReport, ResidencyState};
use crate::streamer::{MeshDesc, MeshStorage, PreparedMesh};
use crate::worker::{LoadKey, Loader, MeshLoadError, MeshLoadRequest, MeshLoadResult};

/// The meshes' side of the streamer: the entries and the LODs handed to
/// or taken back from an engine that holds them (`MeshStorage::Engine`).
#[derive(Debug)]
pub(super) struct MeshTable {
    pub(super) entries: Slots<MeshEntry>,
    /// Engine-held meshes' uploads and releases since `take_mesh_events`.
    pub(super) events: Vec<MeshEvent>,
}

impl MeshTable {
    pub(super) fn new(owner: u32) -> Self {
        Self {
            entries: Slots::owned_by(owner),
            events: Vec::new(),
        }
    }

    /// The plan's entry for mesh `id`, within its chain (its coarsest LOD
    /// when the plan predates it).
    pub(super) fn plan_of(&self, plan: &Plan, id: MeshId) -> MeshPlan {
        let e = self.entries.get(id);
        plan.meshes
            .get(id.index())
            .copied()
            .filter(|p| p.target <= e.map_or(0, |e| e.plan.coarsest()))
            .unwrap_or_else(|| {
                let c = e.map_or(0, |e| e.plan.coarsest());
                MeshPlan {
                    wanted: c,
                    target: c,
                    ..MeshPlan::default()
                }
            })
    }

    /// Submits to `loader` the loads `plan` needs: the planned LOD when it
    /// is finer than the coarsest and not the one drawn; cancels and drops
    /// what no longer is. Returns the loads asked for.
    pub(super) fn request_loads(&mut self, plan: &Plan, loader: &mut Loader, frame: u64) -> u32 {
        let mut requested = 0;
        let ids: Vec<MeshId> = self.entries.iter::<MeshId>().map(|(id, _)| id).collect();
        for id in ids {
            let p = self.plan_of(plan, id);
            let e = self.entries.get_mut(id).expect("live id");
            let want = (p.target < e.plan.coarsest() && p.target != e.lod()).then_some(p.target);
            if let Some(lod) = e.requested.filter(|&l| Some(l) != want) {
                loader.cancel(mesh_key(id), lod);
                e.requested = None;
            }
            if e.pending.as_ref().is_some_and(|d| Some(d.lod) != want) {
                e.pending = None;
            }
            let Some(lod) = want else {
                e.load.failure = None;
                continue;
            };
            if e.pending.as_ref().is_some_and(|d| d.lod == lod) {
                // the wanted LOD arrived and waits for room: nothing is
                // failing any more (see the textures' rule)
                e.load.failure = None;
            }
            if e.requested.is_some() || e.pending.is_some() || e.load.backing_off(frame) {
                continue;
            }
            loader.submit_mesh(MeshLoadRequest {
                key: mesh_key(id),
                file: e.file.clone(),
                lod,
                priority: p.priority.max(1e-30),
            });
            e.requested = Some(lod);
            requested += 1;
        }
        requested
    }
}

/// One registered mesh.
#[derive(Debug)]
pub(super) struct MeshEntry {
    pub(super) label: String,
    pub(super) file: MeshFile,
    pub(super) plan: PlanMesh,
    /// The coarsest LOD, resident from registration to removal.
    pub(super) base: GpuMesh,
    /// A finer LOD, when one is resident: the one drawn.
    pub(super) detail: Option<GpuMesh>,
    /// During a cross-fade: the LOD drawn before the last swap (`None`: the
    /// coarsest, which stays resident anyway) and the frame of the swap.
    pub(super) fading: Option<(Option<GpuMesh>, u64)>,
    pub(super) since_frame: u64,
    /// The LOD being read, if any.
    pub(super) requested: Option<u32>,
    /// A LOD that arrived and waits for upload room or budget.
    pub(super) pending: Option<MeshLod>,
    pub(super) load: LoadState,
}

impl MeshEntry {
    /// The LOD drawn.
    pub(super) fn lod(&self) -> u32 {
        self.detail.as_ref().map_or(self.base.lod, |d| d.lod)
    }

    /// Bytes of every buffer the mesh holds.
    pub(super) fn bytes(&self) -> u64 {
        self.base.bytes
            + self.detail.as_ref().map_or(0, |d| d.bytes)
            + self
                .fading
                .as_ref()
                .and_then(|(f, _)| f.as_ref())
                .map_or(0, |f| f.bytes)
    }
}

/// Bytes `GpuStore::create_mesh` allocates for a LOD.
fn gpu_bytes(l: &LodInfo) -> u64 {
    crate::gpu::store::mesh_buffer_sizes(l.vertex_count as u64, l.index_count as u64)
        .iter()
        .sum()
}

/// The loader key of a mesh's LOD loads.
fn mesh_key(id: MeshId) -> LoadKey {
    LoadKey::Mesh {
        slot: id.index() as u32,
        generation: id.generation(),
    }
}

impl MeshEntry {
    /// What `work::decide` needs of it.
    pub(super) fn facts(&self, id: MeshId, plan: MeshPlan) -> MeshFacts {
        MeshFacts {
            id,
            plan,
            coarsest: self.plan.coarsest(),
            detail: self.detail.as_ref().map(|d| (d.lod, d.bytes)),
            fading: self
                .fading
                .as_ref()
                .and_then(|(f, _)| f.as_ref())
                .map_or(0, |f| f.bytes),
            pending: self.pending.as_ref().map(|d| {
                let info = self.file.info().lods[d.lod as usize];
                PendingLod {
                    lod: d.lod,
                    bytes: gpu_bytes(&info),
                    upload: info.bytes(),
                }
            }),
        }
    }
}

/// What an engine holding mesh LODs itself
/// ([`MeshStorage::Engine`](crate::streamer::MeshStorage::Engine)) must do,
/// in order, from [`Streamer::take_mesh_events`].
#[derive(Debug, Clone, PartialEq)]
pub enum MeshEvent {
    /// Upload this LOD and keep it until its `Release`; from now on, draw
    /// `mesh` with it whenever [`Streamer::mesh_buffers`]' `serial` is
    /// this one.
    Upload {
        /// The mesh.
        mesh: MeshId,
        /// The key of this copy (`crate::gpu::GpuMesh::serial`).
        serial: u64,
        /// The LOD's vertices and indices.
        data: MeshLod,
    },
    /// The copy `serial` is no longer drawn or counted: free it.
    Release {
        /// The mesh.
        mesh: MeshId,
        /// The copy.
        serial: u64,
    },
}

/// A mesh's state in brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeshStatus {
    /// The LOD drawn.
    pub resident: u32,
    /// The LOD the plan gives it.
    pub planned: u32,
    /// The LOD the views want.
    pub wanted: u32,
    /// Its coarsest LOD.
    pub coarsest: u32,
}

impl Streamer {
    /// Registers a mesh: reads its coarsest LOD and builds its buffers before
    /// returning, so [`mesh_buffers`](Self::mesh_buffers) always has
    /// something to draw. Finer LODs stream in as objects showing the mesh
    /// come near.
    pub fn register_mesh(&mut self, desc: MeshDesc) -> Result<MeshId, MeshRegisterError> {
        self.register_prepared_mesh(PreparedMesh::prepare(desc)?)
    }

    /// Registers a mesh whose coarsest LOD was read on another thread
    /// ([`PreparedMesh::prepare`]): builds its buffers (or, with
    /// [`MeshStorage::Engine`], hands the LOD over) with no file access, and
    /// is otherwise [`register_mesh`](Self::register_mesh). Prepared meshes
    /// register in the order this is called.
    pub fn register_prepared_mesh(
        &mut self,
        prepared: PreparedMesh,
    ) -> Result<MeshId, MeshRegisterError> {
        let PreparedMesh {
            desc,
            label,
            base: data,
        } = prepared;
        let info = desc.file.info().clone();
        let base = match self.make_mesh(&label, &data) {
            Ok(b) => b,
            Err(e) => {
                self.alloc_failed(e.clone());
                return Err(e.into());
            }
        };
        self.submit_uploads();
        let plan = PlanMesh {
            lod_bytes: info.lods.iter().map(gpu_bytes).collect(),
            lod_errors: info.lods.iter().map(|l| l.error).collect(),
            image_errors: info
                .lods
                .iter()
                .map(|l| l.image_error)
                .collect::<Option<_>>()
                .unwrap_or_default(),
            boost: desc.priority,
        };
        let serial = base.serial;
        let id: MeshId = self.meshes.entries.insert(MeshEntry {
            label,
            file: desc.file,
            plan: plan.clone(),
            base,
            detail: None,
            fading: None,
            since_frame: self.frame.number,
            requested: None,
            pending: None,
            load: LoadState::default(),
        });
        let coarsest = plan.coarsest();
        self.planner.get().set_mesh(id.index(), plan);
        self.planner.hold_new_mesh(id.index(), coarsest);
        self.handed_over(id, serial, data);
        Ok(id)
    }

    /// Buffers for a LOD, or its count when the engine holds it.
    pub(super) fn make_mesh(
        &mut self,
        label: &str,
        data: &MeshLod,
    ) -> Result<GpuMesh, crate::gpu::AllocError> {
        match self.options.mesh_storage {
            MeshStorage::Buffers => self.gpu.create_mesh(label, data),
            MeshStorage::Engine => self.gpu.count_engine_mesh(label, data),
        }
    }

    /// A LOD made by `make_mesh` and now held: the engine hears of it.
    pub(super) fn handed_over(&mut self, mesh: MeshId, serial: u64, data: MeshLod) {
        if self.options.mesh_storage == MeshStorage::Engine {
            self.meshes
                .events
                .push(MeshEvent::Upload { mesh, serial, data });
        }
    }

    /// Gives a mesh LOD back: its bytes stop counting, and an engine that
    /// holds it hears it may free it.
    pub(super) fn free_mesh(&mut self, mesh: MeshId, m: GpuMesh) {
        if self.options.mesh_storage == MeshStorage::Engine {
            self.meshes.events.push(MeshEvent::Release {
                mesh,
                serial: m.serial,
            });
        }
        self.gpu.release_mesh(m);
    }

    /// With [`MeshStorage::Engine`]: the LODs to upload and to free since
    /// the last call, in order (registration and `update` add to them).
    /// Apply them all before drawing: the LOD to draw a mesh with is the
    /// copy whose serial [`mesh_buffers`](Self::mesh_buffers) names. Empty
    /// with [`MeshStorage::Buffers`].
    pub fn take_mesh_events(&mut self) -> Vec<MeshEvent> {
        std::mem::take(&mut self.meshes.events)
    }

    /// Registers the mesh in a `.msmesh` file.
    pub fn register_mesh_path(
        &mut self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<MeshId, MeshRegisterError> {
        let file = MeshFile::open_path(path).map_err(MeshRegisterError::Open)?;
        self.register_mesh(MeshDesc::new(file))
    }

    /// Removes a mesh; objects that showed it stop counting it.
    pub fn remove_mesh(&mut self, id: MeshId) -> Result<(), StaleId> {
        let e = self.meshes.entries.remove(id).ok_or(StaleId::Mesh(id))?;
        if let Some(lod) = e.requested {
            self.loader.cancel(mesh_key(id), lod);
        }
        self.free_mesh(id, e.base);
        for d in e.detail.into_iter().chain(e.fading.and_then(|(f, _)| f)) {
            self.free_mesh(id, d);
        }
        self.planner.get().remove_mesh(id.index());
        let affected: Vec<crate::ids::ObjectId> = self
            .objects
            .iter::<crate::ids::ObjectId>()
            .filter(|(_, o)| o.desc.meshes.iter().any(|(m, _)| *m == id))
            .map(|(o, _)| o)
            .collect();
        for o in affected {
            let mut desc = self.objects.get(o).expect("listed").desc.clone();
            desc.meshes.retain(|(m, _)| *m != id);
            self.set_object(o, desc)?;
        }
        Ok(())
    }

    /// The buffers to draw a mesh with this frame (the finest resident LOD).
    /// They change only in [`update`](Self::update).
    pub fn mesh_buffers(&self, id: MeshId) -> Result<&GpuMesh, StaleId> {
        let e = self.meshes.entries.get(id).ok_or(StaleId::Mesh(id))?;
        Ok(e.detail.as_ref().unwrap_or(&e.base))
    }

    /// During a cross-fade (`StreamerOptions::mesh_cross_fade_frames`): the
    /// buffers of the LOD drawn before the last swap and how far the fade
    /// is, from 0 (just swapped) to 1. Draw the new LOD on the share `t` of
    /// the pixels and the old one on the rest (`MeshDraw::fade` `t` and
    /// `-t`). `None` when no fade runs.
    pub fn mesh_fade(&self, id: MeshId) -> Result<Option<(&GpuMesh, f32)>, StaleId> {
        let e = self.meshes.entries.get(id).ok_or(StaleId::Mesh(id))?;
        let frames = self.options.mesh_cross_fade_frames.max(1) as f32;
        Ok(e.fading.as_ref().map(|(old, at)| {
            let t = (self.frame.number.saturating_sub(*at) as f32 + 1.0) / (frames + 1.0);
            (old.as_ref().unwrap_or(&e.base), t.clamp(0.0, 1.0))
        }))
    }

    /// Ends finished cross-fades, and every one when the budget in force is
    /// exceeded (the old LODs' bytes go first).
    pub(super) fn end_fades(&mut self) {
        let frames = self.options.mesh_cross_fade_frames as u64;
        let over = self.gpu.held_bytes() > self.hard_budget();
        for id in self.mesh_ids() {
            let frame = self.frame.number;
            let e = self.meshes.entries.get_mut(id).expect("live id");
            if e.fading
                .as_ref()
                .is_some_and(|(_, at)| over || frame >= at + frames)
            {
                if let Some((Some(old), _)) = e.fading.take() {
                    self.free_mesh(id, old);
                }
            }
        }
    }

    /// Replaces the LOD drawn (`new`: a finer LOD, or `None` for the
    /// coarsest); the old detail fades out or goes at once.
    pub(super) fn swap_detail(&mut self, id: MeshId, new: Option<GpuMesh>) {
        let frame = self.frame.number;
        let fade = self.options.mesh_cross_fade_frames > 0;
        let e = self.meshes.entries.get_mut(id).expect("live id");
        let old = std::mem::replace(&mut e.detail, new);
        e.since_frame = frame;
        // a fade still running ends now: one old LOD at a time
        let mut release: Vec<GpuMesh> = e.fading.take().and_then(|(f, _)| f).into_iter().collect();
        if fade {
            // from the coarsest LOD, the fade needs no buffers of its own
            e.fading = Some((old, frame));
        } else {
            release.extend(old);
        }
        for m in release {
            self.free_mesh(id, m);
        }
    }

    /// A mesh's LODs in brief.
    pub fn mesh_status(&self, id: MeshId) -> Result<MeshStatus, StaleId> {
        let e = self.meshes.entries.get(id).ok_or(StaleId::Mesh(id))?;
        let p = self.mesh_plan(id);
        Ok(MeshStatus {
            resident: e.lod(),
            planned: p.target,
            wanted: p.wanted,
            coarsest: e.plan.coarsest(),
        })
    }

    /// Bytes a mesh holds with `lod` drawn (its coarsest LOD included; LODs
    /// past the coarsest count as the coarsest).
    pub fn mesh_bytes_at(&self, id: MeshId, lod: u32) -> Result<u64, StaleId> {
        let e = self.meshes.entries.get(id).ok_or(StaleId::Mesh(id))?;
        Ok(e.plan.bytes(lod.min(e.plan.coarsest())))
    }

    /// Bytes of every mesh LOD held now (mipstream's buffers, or with
    /// [`MeshStorage::Engine`] the engine's copies it counts).
    pub fn mesh_bytes(&self) -> u64 {
        self.gpu.mesh_bytes()
    }

    /// The meshes registered now.
    pub fn mesh_ids(&self) -> Vec<MeshId> {
        self.meshes
            .entries
            .iter::<MeshId>()
            .map(|(id, _)| id)
            .collect()
    }

    pub(super) fn mesh_plan(&self, id: MeshId) -> MeshPlan {
        self.meshes.plan_of(self.planner.last_plan(), id)
    }

    pub(super) fn check_meshes(&self, desc: &super::ObjectDesc) -> Result<(), StaleId> {
        match desc
            .meshes
            .iter()
            .find(|(m, _)| self.meshes.entries.get(*m).is_none())
        {
            Some((m, _)) => Err(StaleId::Mesh(*m)),
            None => Ok(()),
        }
    }

    pub(super) fn mesh_bindings(desc: &super::ObjectDesc) -> Vec<(usize, f32)> {
        desc.meshes.iter().map(|(m, s)| (m.index(), *s)).collect()
    }

    /// What each mesh slot has resident now, for the planner.
    pub(super) fn mesh_resident(&self) -> Vec<MeshResident> {
        let n = self
            .meshes
            .entries
            .iter::<MeshId>()
            .map(|(id, _)| id.index() + 1)
            .max()
            .unwrap_or(0);
        let mut out = vec![
            MeshResident {
                lod: 0,
                since_frame: 0
            };
            n
        ];
        for (id, e) in self.meshes.entries.iter::<MeshId>() {
            out[id.index()] = MeshResident {
                lod: e.lod(),
                since_frame: e.since_frame,
            };
        }
        out
    }

    /// Bytes of every mesh's coarsest LOD (always resident).
    pub(super) fn mesh_base_bytes(&self) -> u64 {
        self.meshes
            .entries
            .iter::<MeshId>()
            .map(|(_, e)| e.base.bytes)
            .sum()
    }

    pub(super) fn accept_mesh_load(&mut self, r: MeshLoadResult) {
        let frame = self.frame.number;
        let backoff = self.options.retry_backoff_frames;
        let Some(id) = self.decode_mesh_key(r.key) else {
            return;
        };
        let e = self
            .meshes
            .entries
            .get_mut(id)
            .expect("decoded ids are live");
        if e.requested != Some(r.lod) {
            return; // a LOD no longer wanted
        }
        e.requested = None;
        match r.result {
            Ok(data) => {
                e.load.failure = None;
                e.pending = Some(data);
            }
            Err(err) => {
                self.frame.stats.failed_loads += 1;
                if matches!(err, MeshLoadError::Panicked { .. }) {
                    self.frame.stats.panicked_loads += 1;
                }
                e.load.fail(err.to_string(), frame, backoff);
            }
        }
    }

    fn decode_mesh_key(&self, key: LoadKey) -> Option<MeshId> {
        let LoadKey::Mesh { slot, generation } = key else {
            return None;
        };
        let id: MeshId = self.meshes.entries.id_at(slot as usize)?;
        (id.generation() == generation).then_some(id)
    }

    /// Submits the loads the plan needs ([`MeshTable::request_loads`]).
    pub(super) fn request_mesh_loads(&mut self) {
        let plan = self.planner.last_plan();
        let frame = self.frame.number;
        self.frame.stats.requested += self.meshes.request_loads(plan, &mut self.loader, frame);
    }

    /// Whether every mesh draws its planned LOD (failed ones count as settled).
    /// `settled`: no upload is staged, so spare detail blocked by the budget
    /// waits for room the plan does not have.
    pub(super) fn meshes_converged(&self, settled: bool) -> bool {
        let fixed = self.policy() != crate::plan::Policy::Budget;
        self.meshes.entries.iter::<MeshId>().all(|(id, e)| {
            let p = self.mesh_plan(id);
            e.load.failure.is_some()
                    || p.target == e.lod()
                    // spare detail (or a fixed rule's target) that does not
                    // fit beside the plan waits
                    || (settled
                        && (p.target < p.wanted || fixed)
                        && e.load.held_back == Some(BelowReason::Budget))
        })
    }

    pub(super) fn mesh_reports(&self, frame: u64) -> Vec<MeshReport> {
        self.meshes
            .entries
            .iter::<MeshId>()
            .map(|(id, e)| {
                let p = self.mesh_plan(id);
                let lod = e.lod();
                let state = if let Some(f) = &e.load.failure {
                    ResidencyState::Failed {
                        error: f.message.clone(),
                        retry_at_frame: f.retry_at,
                    }
                } else if e.requested.is_some() {
                    ResidencyState::Loading { levels: 1 }
                } else if e.pending.is_some() {
                    ResidencyState::Uploading { levels: 1 }
                } else {
                    ResidencyState::Resident
                };
                let below = why_below(Below {
                    at_wanted: lod <= p.wanted,
                    failure: e.load.failure.as_ref(),
                    planned_below: (p.target >= lod).then_some(BelowReason::Budget),
                    held_back: e.load.held_back.as_ref(),
                    paused: frame < self.budget.paused_until(),
                    loading: e.requested.is_some(),
                });
                MeshReport {
                    id,
                    label: e.label.clone(),
                    lods: e.plan.lod_bytes.len() as u32,
                    wanted: p.wanted,
                    planned: p.target,
                    resident: lod,
                    triangles: e.file.info().lods[lod as usize].triangles(),
                    screen_error_px: p.screen_error_px(&e.plan, lod),
                    bytes: e.bytes(),
                    coverage: p.coverage,
                    state,
                    below,
                }
            })
            .collect()
    }

    /// The mesh half of `check_invariants`.
    pub(super) fn check_mesh_invariants(&self) -> Result<(), super::InvariantViolation> {
        let live: u64 = self
            .meshes
            .entries
            .iter::<MeshId>()
            .map(|(_, e)| e.bytes())
            .sum();
        let accounted = self.gpu.mesh_bytes();
        if live != accounted {
            return Err(super::InvariantViolation::MeshAccounting { accounted, live });
        }
        for (id, e) in self.meshes.entries.iter::<MeshId>() {
            let coarsest = e.plan.coarsest();
            let detail = e.detail.as_ref().map(|d| d.lod);
            let fading = e
                .fading
                .as_ref()
                .and_then(|(f, _)| f.as_ref())
                .map(|f| f.lod);
            if e.base.lod != coarsest
                || detail.is_some_and(|d| d >= coarsest)
                || fading.is_some_and(|f| f >= coarsest)
            {
                return Err(super::InvariantViolation::MissingBaseLod {
                    id,
                    base: e.base.lod,
                    detail,
                    coarsest,
                });
            }
        }
        Ok(())
    }

    /// Submits uploads recorded outside `apply` (registration).
    pub(super) fn submit_uploads(&mut self) {
        if self.gpu.has_unsubmitted() {
            self.gpu.submit();
        }
    }
}
