//! What the streamer holds and why: [`ResidencyReport`], [`OomEvent`], and the
//! result of [`crate::streamer::Streamer::check_invariants`].

use crate::gpu::memory::{human_bytes, AllocatorSummary, DriverBudget, GpuCounters};
use crate::ids::{MeshId, TextureId};
use crate::kinds::{TextureClass, Tier};
use std::fmt;
use std::time::Duration;

/// Where a texture is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResidencyState {
    /// Its resident levels are what the plan wants.
    Resident,
    /// Levels it needs are being read and transcoded.
    Loading {
        /// Levels in flight.
        levels: u32,
    },
    /// Levels have arrived and wait for upload room.
    Uploading {
        /// Levels waiting.
        levels: u32,
    },
    /// Its last load failed; it keeps what it has and retries later.
    Failed {
        /// The error.
        error: String,
        /// Frame of the next attempt.
        retry_at_frame: u64,
    },
}

/// Why a texture is coarser than it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BelowReason {
    /// The budget leaves no room.
    Budget,
    /// Its levels are loaded but this frame's upload cap was spent.
    UploadCap,
    /// Its levels are still being read and transcoded.
    Loading,
    /// Its maximum resolution.
    MaxResolution,
    /// Loading failed; retrying.
    Error(String),
    /// The GPU ran out of memory recently; growth is paused.
    OutOfMemoryBackoff,
}

impl fmt::Display for BelowReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BelowReason::Budget => f.write_str("budget"),
            BelowReason::UploadCap => f.write_str("upload cap"),
            BelowReason::Loading => f.write_str("loading"),
            BelowReason::MaxResolution => f.write_str("max resolution"),
            BelowReason::Error(e) => write!(f, "error: {e}"),
            BelowReason::OutOfMemoryBackoff => f.write_str("out-of-memory backoff"),
        }
    }
}

/// One texture in a report.
#[derive(Debug, Clone, PartialEq)]
pub struct TextureReport {
    /// Its id.
    pub id: TextureId,
    /// Its label.
    pub label: String,
    /// Its class.
    pub class: TextureClass,
    /// Level 0 size.
    pub size: (u32, u32),
    /// Levels in the file.
    pub levels: u32,
    /// Level the views need (after hysteresis and maximum resolution).
    pub wanted: u32,
    /// Level the budget plan gives it.
    pub planned: u32,
    /// Tier the budget plan gives it (the resident levels may still be in
    /// the other: `tier`).
    pub planned_tier: Tier,
    /// Finest resident level.
    pub resident: u32,
    /// Tier of the resident levels.
    pub tier: Tier,
    /// Format of the resident levels.
    pub format: wgpu::TextureFormat,
    /// Bytes resident.
    pub bytes: u64,
    /// Weighted screen coverage in pixels.
    pub coverage: f32,
    /// State.
    pub state: ResidencyState,
    /// Why `resident` is coarser than `wanted`, if it is.
    pub below: Option<BelowReason>,
    /// Which error model judges it.
    pub loss: LossSource,
}

/// Which error model the planner judges a texture (or mesh) by.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossSource {
    /// Its measured loss ([`crate::loss`]).
    Measured,
    /// The geometric model: the file carries no measured loss (run
    /// `mipstream annotate`), or the planner was asked for the geometric
    /// model ([`crate::plan::LossModel::Geometric`]).
    Geometric,
    /// The geometric model, because the measured loss the file carries
    /// cannot be used: why.
    Invalid(String),
}

impl LossSource {
    /// A short word for tables: `measured`, `geometric` or `invalid`.
    pub fn key(&self) -> &'static str {
        match self {
            LossSource::Measured => "measured",
            LossSource::Geometric => "geometric",
            LossSource::Invalid(_) => "invalid",
        }
    }
}

/// One mesh in a report.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshReport {
    /// Its id.
    pub id: MeshId,
    /// Its label.
    pub label: String,
    /// LODs in the file.
    pub lods: u32,
    /// LOD the views need (projected error within the target, after hysteresis).
    pub wanted: u32,
    /// LOD the budget plan gives it.
    pub planned: u32,
    /// Finest resident LOD (the one drawn).
    pub resident: u32,
    /// Triangles of the resident LOD.
    pub triangles: u32,
    /// Projected geometric error of the resident LOD at the nearest view, pixels.
    pub screen_error_px: f32,
    /// Bytes resident (the coarsest LOD plus the drawn one).
    pub bytes: u64,
    /// Weighted screen coverage in pixels.
    pub coverage: f32,
    /// State.
    pub state: ResidencyState,
    /// Why `resident` is coarser than `wanted`, if it is.
    pub below: Option<BelowReason>,
}

/// The GPU ran out of memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomEvent {
    /// Frame it happened in.
    pub frame: u64,
    /// What was being allocated.
    pub what: String,
    /// Bytes it needed.
    pub bytes: u64,
    /// The budget at the time.
    pub budget: u64,
    /// Bytes mipstream held at the time.
    pub resident: u64,
    /// Bytes the allocator held but had not allocated, where known.
    pub reserved_unallocated: Option<u64>,
}

impl fmt::Display for OomEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of GPU memory (frame {}): tried to allocate {} for {}; budget {}; {} resident",
            self.frame,
            human_bytes(self.bytes),
            self.what,
            human_bytes(self.budget),
            human_bytes(self.resident)
        )?;
        match self.reserved_unallocated {
            Some(u) => write!(
                f,
                "; {} reserved by the allocator but unallocated",
                human_bytes(u)
            ),
            None => f.write_str("; allocator reserve unknown on this backend"),
        }
    }
}

/// Bytes by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Colour textures.
    pub color: u64,
    /// Normal maps.
    pub normal: u64,
    /// Other data textures.
    pub data: u64,
    /// Mesh vertex and index buffers.
    pub mesh: u64,
    /// Freed textures kept for reuse.
    pub pool: u64,
    /// Staging buffers the GPU has not finished reading.
    pub staging: u64,
    /// Staging set aside for the loader threads
    /// ([`crate::streamer::StreamerOptions::loader_staging_bytes`]), counted
    /// whole whether they have filled it or not.
    pub loader_staging: u64,
    /// Of that, bytes loader-staged levels hold now (not counted again).
    pub loader_staging_used: u64,
    /// Textures and buffers released that the GPU may still hold
    /// ([`crate::streamer::Streamer::retiring_bytes`]): not held, but counted in the
    /// budget until wgpu frees them.
    pub retiring: u64,
}

impl Totals {
    /// Everything mipstream holds (not what is retiring).
    pub fn accounted(&self) -> u64 {
        self.color
            + self.normal
            + self.data
            + self.mesh
            + self.pool
            + self.staging
            + self.loader_staging
    }

    /// What mipstream's resources take on the GPU: held and retiring,
    /// what the budget limits.
    pub fn on_gpu(&self) -> u64 {
        self.accounted() + self.retiring
    }
}

/// This frame's work.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameStats {
    /// Frame number.
    pub frame: u64,
    /// Bytes of texel data uploaded.
    pub upload_bytes: u64,
    /// Of those, bytes the loader threads had already put in staging
    /// buffers ([`crate::streamer::StreamerOptions::loader_staging_bytes`]):
    /// copied on the GPU, not touched by `update`.
    pub loader_staged_bytes: u64,
    /// Levels handed back to the loaders for staging this update: they
    /// had come back unstaged because the staging reserve was full, and
    /// wait for its room rather than be copied by `update` (at most a few
    /// times each).
    pub restaged: u32,
    /// Textures whose shrink the device refused this update (out of
    /// memory, an [`crate::streamer::OomEvent`] each): the other textures gave up
    /// detail instead, and the refused ones a smaller copy (their tail).
    pub refused_shrinks: u32,
    /// Whether this update ended above the budget in force because the
    /// device refused the shrinks that would have freed the bytes, with no
    /// texture left that could give way; the next update tries again.
    /// [`crate::streamer::Streamer::check_invariants`] does not count it a violation.
    pub stuck_over_budget: bool,
    /// Whether this update began above the budget in force by what the GPU
    /// holds (held and retiring: a budget cut, an out-of-memory event, a
    /// lower driver budget, tails registered): it gave memory back and
    /// grew nothing.
    pub giving_back: bool,
    /// Texture shrinks the budget forced this update (a cut, an
    /// out-of-memory event).
    pub forced_shrinks: u32,
    /// The budget forced more shrinks than this update's upload room
    /// carries: the rest follow in the next updates, the textures freeing
    /// the most first (a cut's pace: its render-thread work is bounded by
    /// [`crate::streamer::StreamerOptions::upload_bytes_per_frame`] and
    /// [`crate::streamer::StreamerOptions::uploads_per_frame`], and by
    /// [`crate::streamer::StreamerOptions::copies_per_frame`] where set; the first
    /// shrink of an update always goes). Meanwhile the books stay above the
    /// budget by what is still to shrink, and the next updates give back
    /// and grow nothing.
    pub cut_paced: bool,
    /// When the update returned: bytes mipstream released that the GPU may
    /// still hold ([`crate::streamer::Streamer::retiring_bytes`]).
    pub retiring_bytes: u64,
    /// When the update returned: held and retiring together, what the
    /// budget limits ([`crate::streamer::Streamer::gpu_bytes`]).
    pub gpu_bytes: u64,
    /// Times this update blocked until the GPU was idle: 0 with
    /// [`crate::streamer::StreamerOptions::count_retiring`] (without it, a forced
    /// shrink's staging over the budget is waited for).
    pub gpu_waits: u32,
    /// Updates since the frame whose GPU feedback the streamer holds
    /// ([`crate::streamer::Streamer::latest_feedback`]); `None` without
    /// feedback (not enabled, or nothing mapped yet).
    pub feedback_age: Option<u64>,
    /// Texture slots that feedback saw sampled.
    pub feedback_textures: u32,
    /// Levels uploaded.
    pub uploads: u32,
    /// Texture levels written, each one copy command the frame's submit
    /// carries: every level of each texture built or shrunk (uploaded, or
    /// copied on the GPU from its old copy), and one per mesh LOD swapped
    /// in. What [`crate::streamer::StreamerOptions::copies_per_frame`] caps.
    pub copies: u32,
    /// Texture views that changed (bind groups to rebuild).
    pub rebinds: u32,
    /// Textures grown.
    pub grown: u32,
    /// Textures shrunk.
    pub shrunk: u32,
    /// Load requests submitted.
    pub requested: u32,
    /// Loads that came back failed (read, transcode or injected errors).
    pub failed_loads: u32,
    /// Of those, loads whose worker panicked (caught; a bug to report).
    pub panicked_loads: u32,
    /// Render-thread time `update` took.
    pub update_time: Duration,
    /// Of that, the plan's (the planner's pass over objects and textures,
    /// its fit and certificate); the rest is draining loads, requesting and
    /// carrying out the frame's GPU work. With the plan on the planner thread
    /// ([`crate::streamer::StreamerOptions::plan_thread`]), only what the render
    /// thread spent on it: taking the finished plan and handing the next
    /// one its inputs (it never waits for the planner thread).
    pub plan_time: Duration,
    /// Of `update_time`, the time the frame's one `Queue::submit` took. On
    /// the software drivers (lavapipe, llvmpipe) the driver carries out the
    /// recorded copies inside it, on the calling thread; on a GPU it only
    /// hands the commands over.
    pub submit_time: Duration,
    /// With the plan on the planner thread
    /// ([`crate::streamer::StreamerOptions::plan_thread`]), that thread's time on the
    /// plan finished for this frame (zero otherwise, and on a frame that
    /// carried out the last plan again).
    pub plan_worker_time: Duration,
    /// Updates since the inputs of the plan this frame carried out were
    /// taken: 0 for a plan made inside `update`; on the planner thread
    /// ([`crate::streamer::StreamerOptions::plan_thread`]) 1, or more while the
    /// planner thread is still busy with the next.
    pub plan_age: u64,
    /// Views `update` skipped because they fail [`crate::plan::View::validate`]
    /// (zero viewport, non-finite numbers); the report's `warnings` say why.
    pub rejected_views: u32,
    /// The total visible error of the budget fit's plan this frame
    /// ([`crate::plan::Plan::fit_error`]; 0 under a fixed policy).
    pub fit_error: f64,
    /// The certificate: at most how far that plan is from the best plan
    /// within the budget, as a share of its error
    /// ([`crate::plan::Plan::fit_gap`]); `None` under a fixed policy, with
    /// [`crate::plan::PlannerOptions::certify`] off, or when the tails alone
    /// exceed the budget.
    pub fit_gap_lp: Option<f64>,
    /// The same against the integer problem's bound
    /// ([`crate::plan::Plan::fit_gap_knapsack`]), with
    /// [`crate::plan::PlannerOptions::knapsack_certificate`] on.
    pub fit_gap_knapsack: Option<f64>,
    /// Of [`Self::plan_time`], what the plan's certificates took
    /// ([`crate::plan::PlannerOptions::certify`] and
    /// `knapsack_certificate`), when the plan was made in this update (0
    /// when it was made on the planner thread): `update_time` less this is
    /// the streamer's own time.
    pub certificate_time: Duration,
}

/// A snapshot of what the streamer holds and why.
#[derive(Debug, Clone)]
pub struct ResidencyReport {
    /// The configured budget in bytes.
    pub budget: u64,
    /// The budget in force (lowered after out-of-memory events).
    pub effective_budget: u64,
    /// Bytes the tails alone need.
    pub tail_bytes: u64,
    /// Bytes by kind.
    pub totals: Totals,
    /// Every texture.
    pub textures: Vec<TextureReport>,
    /// Per mesh.
    pub meshes: Vec<MeshReport>,
    /// The last frame's work.
    pub frame: FrameStats,
    /// Recent out-of-memory events, oldest first.
    pub oom_events: Vec<OomEvent>,
    /// The driver's view, where the backend reports it.
    pub driver: Option<DriverBudget>,
    /// wgpu's allocator report, where the backend has one.
    pub allocator: Option<AllocatorSummary>,
    /// wgpu's internal counters.
    pub counters: GpuCounters,
    /// Load requests not yet finished.
    pub loads_outstanding: usize,
    /// What the caller may not expect, one line each: settings clamped,
    /// a budget below the tails, views skipped, textures held as RGBA8
    /// because the device lacks their compressed formats.
    pub warnings: Vec<String>,
}

impl fmt::Display for ResidencyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.totals;
        writeln!(
            f,
            "frame {}: {} on the GPU ({} held, {} retiring) of {} budget ({} effective); colour {}, normal {}, data {}, meshes {}, pool {}, staging {}",
            self.frame.frame,
            human_bytes(t.on_gpu()),
            human_bytes(t.accounted()),
            human_bytes(t.retiring),
            human_bytes(self.budget),
            human_bytes(self.effective_budget),
            human_bytes(t.color),
            human_bytes(t.normal),
            human_bytes(t.data),
            human_bytes(t.mesh),
            human_bytes(t.pool),
            human_bytes(t.staging)
        )?;
        if t.loader_staging > 0 {
            writeln!(
                f,
                "loader staging {} set aside, {} in use; {} of this frame's uploads staged by the loaders",
                human_bytes(t.loader_staging),
                human_bytes(t.loader_staging_used),
                human_bytes(self.frame.loader_staged_bytes)
            )?;
        }
        writeln!(
            f,
            "uploads {} ({} levels), rebinds {}, {} loads outstanding, update {:.3} ms{}",
            human_bytes(self.frame.upload_bytes),
            self.frame.uploads,
            self.frame.rebinds,
            self.loads_outstanding,
            self.frame.update_time.as_secs_f64() * 1e3,
            match self.frame.fit_gap_lp {
                Some(g) => format!(", plan within {:.2}% of optimal (LP bound)", g * 100.0),
                None => String::new(),
            }
        )?;
        match &self.allocator {
            Some(a) => writeln!(
                f,
                "allocator: {} allocated, {} reserved in {} blocks, fragmentation {:.0}%",
                human_bytes(a.allocated),
                human_bytes(a.reserved),
                a.blocks,
                a.fragmentation * 100.0
            )?,
            None => writeln!(f, "allocator: no report on this backend")?,
        }
        match self.driver.as_ref().and_then(|d| d.device_local_budget()) {
            Some(b) => writeln!(f, "driver budget: {}", human_bytes(b))?,
            None => writeln!(
                f,
                "driver budget: not reported; using the configured budget"
            )?,
        }
        writeln!(
            f,
            "{:<24} {:>11} {:>6} {:>8} {:>8} {:>10}  {:<22} why below",
            "texture", "size", "wanted", "resident", "tier", "bytes", "state"
        )?;
        for x in &self.textures {
            let state = state_text(&x.state);
            writeln!(
                f,
                "{:<24} {:>11} {:>6} {:>8} {:>8} {:>10}  {:<22} {}",
                x.label.chars().take(24).collect::<String>(),
                format!("{}x{}", x.size.0, x.size.1),
                x.wanted,
                x.resident,
                format!("{:?}", x.tier),
                human_bytes(x.bytes),
                state,
                x.below.as_ref().map_or(String::new(), |b| b.to_string())
            )?;
        }
        if !self.meshes.is_empty() {
            writeln!(
                f,
                "{:<24} {:>11} {:>6} {:>8} {:>8} {:>10}  {:<22} why below",
                "mesh", "triangles", "wanted", "resident", "error px", "bytes", "state"
            )?;
        }
        for x in &self.meshes {
            writeln!(
                f,
                "{:<24} {:>11} {:>6} {:>8} {:>8.2} {:>10}  {:<22} {}",
                x.label.chars().take(24).collect::<String>(),
                x.triangles,
                x.wanted,
                x.resident,
                x.screen_error_px,
                human_bytes(x.bytes),
                state_text(&x.state),
                x.below.as_ref().map_or(String::new(), |b| b.to_string())
            )?;
        }
        for e in &self.oom_events {
            writeln!(f, "{e}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

fn state_text(state: &ResidencyState) -> String {
    match state {
        ResidencyState::Resident => "resident".to_owned(),
        ResidencyState::Loading { levels } => format!("loading {levels}"),
        ResidencyState::Uploading { levels } => format!("uploading {levels}"),
        ResidencyState::Failed { retry_at_frame, .. } => {
            format!("failed, retry {retry_at_frame}")
        }
    }
}

/// A broken invariant, found by [`crate::streamer::Streamer::check_invariants`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvariantViolation {
    /// The byte accounting disagrees with the live resources.
    #[error("accounting says {accounted} texture bytes but live textures hold {live}")]
    Accounting {
        /// What the accounting says.
        accounted: u64,
        /// What the live resources add up to.
        live: u64,
    },
    /// Held bytes exceed the budget in force.
    #[error("{held} bytes held exceed the {budget}-byte budget")]
    OverBudget {
        /// Bytes held.
        held: u64,
        /// The budget in force.
        budget: u64,
    },
    /// An update that began within the budget ended above it by what the
    /// GPU holds (held and retiring together).
    #[error("{held} bytes held and {retiring} retiring exceed the {budget}-byte budget after an update that began within it")]
    OverBudgetOnGpu {
        /// Bytes held.
        held: u64,
        /// Bytes released that the GPU may still hold.
        retiring: u64,
        /// The budget in force.
        budget: u64,
    },
    /// Something grew in an update that was giving memory back.
    #[error("{grown} assets grew in an update that began over the budget")]
    GrewWhileGivingBack {
        /// Assets grown.
        grown: u32,
    },
    /// A texture lost its tail or its levels do not end at its last level.
    #[error("texture {id} holds levels {first}..{end} but must hold {tail}..{levels}")]
    MissingTail {
        /// The texture.
        id: TextureId,
        /// First resident level.
        first: u32,
        /// One past the last resident level.
        end: u32,
        /// First tail level.
        tail: u32,
        /// Levels in the file.
        levels: u32,
    },
    /// Mesh buffer accounting disagrees with the live buffers.
    #[error("accounting says {accounted} mesh bytes but live mesh buffers hold {live}")]
    MeshAccounting {
        /// What the accounting says.
        accounted: u64,
        /// What the live buffers add up to.
        live: u64,
    },
    /// A mesh lost its coarsest LOD or holds a detail LOD that is not finer.
    #[error("mesh {id} holds LODs {base} and {detail:?} but must hold {coarsest} and a finer one at most")]
    MissingBaseLod {
        /// The mesh.
        id: MeshId,
        /// The LOD of its always-resident buffers.
        base: u32,
        /// The LOD of its detail buffers, if any.
        detail: Option<u32>,
        /// Its coarsest LOD.
        coarsest: u32,
    },
}
