//! `mipstream soak`: hours of abuse in minutes, with nothing lost and nothing
//! over budget.
//!
//! [`run`] drives a [`Streamer`](mipstream::streamer::Streamer) over a scene with random camera teleports and
//! flights, random budget changes (down to a few MiB and back up), objects
//! added and removed, textures removed and registered again, and the chosen
//! faults ([`mipstream::fault`]): failing, short and slow reads, failing
//! transcodes, GPU allocations refused as out-of-memory. After every frame it
//! checks [`Streamer::check_invariants`](mipstream::streamer::Streamer::check_invariants) and the budget. Nothing is rendered:
//! the streamer's work (plans, loads, GPU copies and uploads) is what is under
//! test, so a frame is cheap and a soak can run tens of thousands of them.
//!
//! At the end the faults stop and the camera rests: the soaked streamer must
//! converge to what a fresh streamer without faults settles to for the same
//! textures, objects, view and budget. Then both streamers are dropped and
//! wgpu's registry is asked how many textures are still alive
//! (`leaked_textures`) and how many buffers (`leaked_buffers`).
//!
//! Meshes take part too: three generated LOD chains (written to the cache
//! folder once) read through the same fault layer, on a few boxes each, so
//! their loads fail, stall and have their allocations refused like textures',
//! and the recovery compares their LODs with the fresh streamer's as well.

mod abuse;
mod recovery;
mod world;

use crate::bench::percentile;
use crate::scene::BuiltinScene;
use crate::source::{PreparedScene, SceneSource, SourceError};
use glam::UVec2;
use mipstream::fault::{FaultCounts, FaultRates};
use mipstream::streamer::StreamerError;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use world::{live_buffers, live_textures};

/// Which faults a soak injects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultSet {
    /// Failing and short reads, and failing transcodes (what a bad disk or a
    /// corrupt download gives).
    pub io: bool,
    /// Reads that take 200 ms.
    pub slow: bool,
    /// GPU allocations refused as out-of-memory.
    pub oom: bool,
    /// Random budget changes, down to a few MiB and up past full residency.
    pub budget: bool,
}

impl FaultSet {
    /// Parses a comma-separated list of `io`, `slow`, `oom`, `budget` (`all`
    /// for every one, `none` or an empty list for none).
    pub fn parse(list: &str) -> Result<Self, SoakError> {
        let mut set = Self::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "io" => set.io = true,
                "slow" => set.slow = true,
                "oom" => set.oom = true,
                "budget" => set.budget = true,
                "all" => {
                    set = Self {
                        io: true,
                        slow: true,
                        oom: true,
                        budget: true,
                    }
                }
                "none" => {}
                other => {
                    return Err(SoakError::Options(format!(
                        "unknown fault `{other}`: expected io, slow, oom, budget, all or none"
                    )))
                }
            }
        }
        Ok(set)
    }

    /// The list as `parse` reads it.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.io, "io"),
            (self.slow, "slow"),
            (self.oom, "oom"),
            (self.budget, "budget"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// What [`run`] does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// The scene.
    pub scene: SceneSource,
    /// Frames of abuse (the recovery phase comes after these).
    pub frames: u64,
    /// Seed of every random choice: camera, budgets, objects, faults.
    pub seed: u64,
    /// The faults to inject.
    pub faults: FaultSet,
    /// Fault rates used for the kinds in `faults`. Default: reads fail 8% of
    /// the time and come back short 4%, transcodes fail 4%, 3% of reads take
    /// 200 ms, 5% of GPU allocations are refused.
    pub rates: FaultRates,
    /// Backends to pick the adapter from (None: `WGPU_BACKEND`, else any).
    pub backends: Option<wgpu::Backends>,
    /// Where the built-in scene's textures are cooked.
    pub cache_dir: PathBuf,
    /// The viewport the views are planned for.
    pub viewport: UVec2,
    /// Each frame lasts at least this long (the render thread sleeps out the
    /// rest), so loads, slow reads and back-off relate to frames as they would
    /// in an application. Default: 5 ms.
    pub frame_time: Duration,
    /// Most frames the recovery phase may take before it counts as failed.
    pub recovery_frames: u64,
    /// The abused streamer's loader staging reserve
    /// ([`mipstream::streamer::StreamerOptions::loader_staging_bytes`]). Default: 0.
    pub loader_staging_bytes: u64,
    /// The abused streamer's cap on texture levels written per update
    /// ([`mipstream::streamer::StreamerOptions::copies_per_frame`]). Default: 0
    /// (no limit).
    pub copies_per_frame: u32,
    /// Where the abused streamer and its fault-free twin plan
    /// ([`mipstream::streamer::StreamerOptions::plan_thread`]). Default: the
    /// streamer's default (inside `update` on the built-in scene).
    pub plan_thread: mipstream::streamer::PlanThread,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            scene: SceneSource::Builtin,
            frames: 2000,
            seed: 1,
            faults: FaultSet::default(),
            rates: FaultRates {
                io_error: 0.08,
                short_read: 0.04,
                slow_read: 0.03,
                slow_delay: Duration::from_millis(200),
                transcode_error: 0.04,
                out_of_memory: 0.05,
            },
            backends: None,
            cache_dir: BuiltinScene::default_cache_dir(),
            viewport: UVec2::new(1280, 720),
            frame_time: Duration::from_millis(5),
            recovery_frames: 6000,
            loader_staging_bytes: 0,
            copies_per_frame: 0,
            plan_thread: mipstream::streamer::PlanThread::default(),
        }
    }
}

/// Why a soak could not run (a soak that runs and finds problems returns a
/// [`SoakReport`] that did not pass).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// Bad options.
    #[error("{0}")]
    Options(String),
    /// No adapter or device.
    #[error(transparent)]
    Gpu(#[from] mipstream::gpu::GpuInitError),
    /// The scene could not be prepared.
    #[error(transparent)]
    Scene(#[from] SourceError),
    /// Registering the scene failed with faults off.
    #[error(transparent)]
    Streamer(#[from] StreamerError),
    /// A settle of the recovery timed out: which step, which streamer, and
    /// what was still not at its plan.
    #[error("{step}: the {which} streamer {error}; not at its plan: {}", unsettled.join("; "))]
    Settle {
        /// The recovery step.
        step: &'static str,
        /// `soaked` or `fresh`.
        which: &'static str,
        /// The streamer's error.
        error: Box<mipstream::streamer::SettleError>,
        /// Textures and meshes not at their plan, and what is in flight.
        unsettled: Vec<String>,
    },
}

from_streamer_errors!(SoakError);

/// What a soak found. [`passed`](Self::passed) is the verdict.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Frames of abuse run.
    pub frames: u64,
    /// The seed.
    pub seed: u64,
    /// The faults asked for.
    pub faults: Vec<&'static str>,
    /// The adapter.
    pub adapter: String,
    /// The backend.
    pub backend: String,
    /// Frames where `check_invariants` failed.
    pub invariant_violations: u64,
    /// The first few violations, as text.
    pub violation_messages: Vec<String>,
    /// Frames where the bytes held exceeded the budget set.
    pub frames_over_budget: u64,
    /// Frames that ended over the budget because the device refused the
    /// shrinks that would have freed it, with no texture left to give way
    /// ([`mipstream::streamer::FrameStats::stuck_over_budget`]): counted, not
    /// failures (the next update tries again).
    pub frames_stuck_over_budget: u64,
    /// Frames where wgpu's own count of the memory the streamer made (its
    /// texture and buffer memory counters, less what the device held
    /// before), read right after `update()`, exceeded the budget in force
    /// outside an update that was giving memory back, or the streamer's
    /// books (held and retiring); `None` where wgpu counts no memory (GL).
    pub frames_over_budget_by_wgpu: Option<u64>,
    /// The most wgpu counted against the budget in force, as a ratio;
    /// `None` where wgpu counts no memory.
    pub wgpu_peak_ratio: Option<f64>,
    /// Shrinks the device refused ([`mipstream::streamer::FrameStats::refused_shrinks`]).
    pub refused_shrinks: u64,
    /// Faults injected, by kind (budget changes not included).
    pub fault_counts: FaultCounts,
    /// Budget changes made.
    pub budget_changes: u64,
    /// Out-of-memory events the streamer recorded.
    pub oom_events: u64,
    /// Panics: on the render thread (caught around `update`) plus loader
    /// threads that panicked (caught by the loader).
    pub panics: u64,
    /// Loads that came back failed.
    pub failed_loads: u64,
    /// Registrations that failed (faults on) and were retried.
    pub failed_registrations: u64,
    /// Camera teleports.
    pub teleports: u64,
    /// Objects added and removed.
    pub objects_added: u64,
    /// Objects removed.
    pub objects_removed: u64,
    /// Textures removed and registered again.
    pub textures_reregistered: u64,
    /// Textures still alive in wgpu's registry after both streamers were
    /// dropped and the device went idle (against the count before).
    pub leaked_textures: i64,
    /// Buffers (mesh LODs) still alive in wgpu's registry after teardown.
    pub leaked_buffers: i64,
    /// Times a mesh's drawn LOD changed during the abuse.
    pub mesh_lod_changes: u64,
    /// Most bytes held in any frame.
    pub peak_resident_bytes: u64,
    /// Bytes uploaded from staging the loader threads filled
    /// ([`SoakOptions::loader_staging_bytes`]), abuse and recovery.
    pub loader_staged_bytes: u64,
    /// The oldest plan an update carried out, in updates
    /// ([`mipstream::streamer::FrameStats::plan_age`]; 0 when
    /// the plan is made inside `update`), abuse and recovery.
    pub plan_age_max: u64,
    /// The largest budget set.
    pub budget_bytes_max: u64,
    /// The smallest budget set.
    pub budget_bytes_min: u64,
    /// `update` time, milliseconds: median, 99th percentile, worst.
    pub update_ms_p50: f64,
    /// See `update_ms_p50`.
    pub update_ms_p99: f64,
    /// See `update_ms_p50`.
    pub update_ms_max: f64,
    /// Whether, after the faults stopped, the streamer settled at the last
    /// budget (every texture at its planned level, no failure left), and then,
    /// with room for everything, came to exactly the levels and tiers a fresh
    /// streamer without faults settles to.
    pub recovered: bool,
    /// Frames until the streamer settled at the last budget.
    pub frames_to_settle: u64,
    /// Frames the whole recovery took.
    pub frames_to_recover: u64,
    /// Textures that differ from the fresh streamer when recovery gave up.
    pub unrecovered: Vec<String>,
    /// When the streamer never settled at the last budget: the textures and
    /// meshes not at their plan, and why.
    pub unsettled: Vec<String>,
    /// The comparison with a fresh streamer at a budget that binds (half of
    /// what the last view wants), once the soaked one recovered.
    pub binding: Option<BindingComparison>,
    /// Wall time of the whole soak.
    pub seconds: f64,
}

/// The soaked and a fresh streamer at a budget that binds, same camera.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BindingComparison {
    /// The budget: half of what the view wants.
    pub budget_bytes: u64,
    /// Bytes the soaked streamer held once settled there.
    pub soaked_held_bytes: u64,
    /// Bytes the fresh streamer held once settled there.
    pub fresh_held_bytes: u64,
    /// Textures whose level or tier differ after the plain settle (history
    /// is sticky: both are valid fits of the budget).
    pub textures_differing: usize,
    /// Textures compared.
    pub textures: usize,
    /// The largest level difference of any texture after the plain settle.
    pub max_level_difference: u32,
    /// The budget in force for each (the soaked one's stays lower for a
    /// while after an out-of-memory event).
    pub soaked_effective_bytes: u64,
    /// See `soaked_effective_bytes`.
    pub fresh_effective_bytes: u64,
    /// What differs after both `settle_canonical`: nothing, or the
    /// soak fails. (Not compared, and failed, when the soaked streamer's
    /// budget in force, lowered by out-of-memory events, did not come back
    /// to the fresh one's within the recovery frames.) The fit's ties break
    /// by `PlanTexture::tie_key`, not by slot, so the order the two
    /// registered in does not decide them.
    pub canonical_differences: Vec<String>,
    /// The largest level difference after both `settle_canonical`.
    pub canonical_max_level_difference: u32,
    /// Bytes each held after `settle_canonical`: soaked, fresh.
    pub canonical_held_bytes: (u64, u64),
}

impl BindingComparison {
    /// The bound the soak enforces. After the plain settle the soaked
    /// streamer holds at least [`Self::MIN_HELD_SHARE`] of the bytes the
    /// fresh one holds (its leftovers do not waste the budget); which levels
    /// the two pick may differ (history is sticky): reported, not bounded.
    /// After both `settle_canonical`, at the same budget in force, every
    /// texture's level and tier and every mesh's LOD are identical.
    pub fn within_bound(&self) -> bool {
        let canonical_ok = self.soaked_effective_bytes == self.fresh_effective_bytes
            && self.canonical_differences.is_empty()
            && self.canonical_held_bytes.0 == self.canonical_held_bytes.1;
        canonical_ok
            && self.soaked_held_bytes as f64 >= Self::MIN_HELD_SHARE * self.fresh_held_bytes as f64
    }

    /// See [`within_bound`](Self::within_bound). 0.9 until e933097: since
    /// the fit makes room for growths its greedy pass rules out, the plain
    /// settle after `tests/faults.rs`'s loader-staging soak held 0.91 of
    /// the fresh streamer's 1.02 MiB in 2 of 6 runs (the parent held at
    /// least 0.96), with 11 of 20 textures at other levels; why its history
    /// leaves that much room unused is not traced (issue 48).
    pub const MIN_HELD_SHARE: f64 = 0.85;

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "budget_bytes": self.budget_bytes,
            "soaked_held_bytes": self.soaked_held_bytes,
            "fresh_held_bytes": self.fresh_held_bytes,
            "textures_differing": self.textures_differing,
            "textures": self.textures,
            "max_level_difference": self.max_level_difference,
            "soaked_effective_bytes": self.soaked_effective_bytes,
            "fresh_effective_bytes": self.fresh_effective_bytes,
            "canonical_differences": self.canonical_differences,
            "canonical_max_level_difference": self.canonical_max_level_difference,
            "canonical_held_bytes": [self.canonical_held_bytes.0, self.canonical_held_bytes.1],
            "within_bound": self.within_bound(),
        })
    }
}

impl SoakReport {
    /// Zero violations, over-budget frames, panics and leaks, recovered, and
    /// within the bound at a binding budget.
    pub fn passed(&self) -> bool {
        self.binding.as_ref().is_none_or(|b| b.within_bound())
            && self.invariant_violations == 0
            && self.frames_over_budget == 0
            && self.frames_over_budget_by_wgpu.unwrap_or(0) == 0
            && self.panics == 0
            && self.leaked_textures == 0
            && self.leaked_buffers == 0
            && self.recovered
    }

    /// The report as JSON (keys of issue 7 at the top level).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "frames": self.frames,
            "seed": self.seed,
            "faults": self.faults,
            "adapter": self.adapter,
            "backend": self.backend,
            "invariant_violations": self.invariant_violations,
            "violation_messages": self.violation_messages,
            "frames_over_budget": self.frames_over_budget,
            "frames_stuck_over_budget": self.frames_stuck_over_budget,
            "frames_over_budget_by_wgpu": self.frames_over_budget_by_wgpu,
            "wgpu_peak_ratio": self.wgpu_peak_ratio,
            "refused_shrinks": self.refused_shrinks,
            "faults_injected": self.fault_counts.total() + self.budget_changes,
            "faults_by_kind": {
                "io_errors": self.fault_counts.io_errors,
                "short_reads": self.fault_counts.short_reads,
                "slow_reads": self.fault_counts.slow_reads,
                "transcode_errors": self.fault_counts.transcode_errors,
                "out_of_memory": self.fault_counts.out_of_memory,
                "budget_changes": self.budget_changes,
            },
            "oom_events": self.oom_events,
            "panics": self.panics,
            "failed_loads": self.failed_loads,
            "failed_registrations": self.failed_registrations,
            "teleports": self.teleports,
            "objects_added": self.objects_added,
            "objects_removed": self.objects_removed,
            "textures_reregistered": self.textures_reregistered,
            "leaked_textures": self.leaked_textures,
            "leaked_buffers": self.leaked_buffers,
            "mesh_lod_changes": self.mesh_lod_changes,
            "peak_resident_bytes": self.peak_resident_bytes,
            "loader_staged_bytes": self.loader_staged_bytes,
            "plan_age_max": self.plan_age_max,
            "budget_bytes_max": self.budget_bytes_max,
            "budget_bytes_min": self.budget_bytes_min,
            "update_ms_p50": self.update_ms_p50,
            "update_ms_p99": self.update_ms_p99,
            "update_ms_max": self.update_ms_max,
            "recovered": self.recovered,
            "frames_to_settle": self.frames_to_settle,
            "frames_to_recover": self.frames_to_recover,
            "unrecovered": self.unrecovered,
            "unsettled": self.unsettled,
            "binding": self.binding.as_ref().map(BindingComparison::to_json),
            "seconds": self.seconds,
            "passed": self.passed(),
        })
    }

    /// A few lines for a terminal.
    pub fn summary(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "{} frames, seed {}, faults [{}] on {} ({})\n\
             invariant violations {}, frames over budget {} (and {} over it because every shrink was refused; {} shrinks refused), by wgpu's count {} (peak {} of the budget), panics {}, leaked textures {}, buffers {}\n\
             faults injected: {} io errors, {} short reads, {} slow reads, {} transcode errors, \
             {} refused allocations, {} budget changes ({:.1}-{:.1} MiB)\n\
             {} out-of-memory events, {} failed loads, {} failed registrations; \
             {} teleports, {} objects added, {} removed, {} textures re-registered, \
             {} mesh LOD changes\n\
             peak held {:.2} MiB; update() p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n\
             recovery after the faults stopped: settled in {} frames, {} in {} frames\n\
             {}\n\
             {}",
            self.frames,
            self.seed,
            self.faults.join(","),
            self.adapter,
            self.backend,
            self.invariant_violations,
            self.frames_over_budget,
            self.frames_stuck_over_budget,
            self.refused_shrinks,
            self.frames_over_budget_by_wgpu
                .map_or("not counted (no memory counter)".to_string(), |n| n.to_string()),
            self.wgpu_peak_ratio
                .map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0)),
            self.panics,
            self.leaked_textures,
            self.leaked_buffers,
            self.fault_counts.io_errors,
            self.fault_counts.short_reads,
            self.fault_counts.slow_reads,
            self.fault_counts.transcode_errors,
            self.fault_counts.out_of_memory,
            self.budget_changes,
            mib(self.budget_bytes_min),
            mib(self.budget_bytes_max),
            self.oom_events,
            self.failed_loads,
            self.failed_registrations,
            self.teleports,
            self.objects_added,
            self.objects_removed,
            self.textures_reregistered,
            self.mesh_lod_changes,
            mib(self.peak_resident_bytes),
            self.update_ms_p50,
            self.update_ms_p99,
            self.update_ms_max,
            self.frames_to_settle,
            if self.recovered {
                "converged to the fault-free picture"
            } else {
                "DID NOT CONVERGE"
            },
            self.frames_to_recover,
            match &self.binding {
                Some(b) => format!(
                    "at a binding budget ({:.2} MiB): held {:.2} MiB (fault-free {:.2}), {} of {} textures at other levels (at most {} apart); after settle_canonical {}",
                    mib(b.budget_bytes),
                    mib(b.soaked_held_bytes),
                    mib(b.fresh_held_bytes),
                    b.textures_differing,
                    b.textures,
                    b.max_level_difference,
                    if b.soaked_effective_bytes != b.fresh_effective_bytes {
                        "NOT COMPARED (out-of-memory events still lowered the soaked budget when the recovery frames ran out)".to_owned()
                    } else if b.canonical_differences.is_empty() {
                        "identical".to_owned()
                    } else {
                        format!(
                            "{} differ (at most {} level apart), held {:.2} vs {:.2} MiB",
                            b.canonical_differences.len(),
                            b.canonical_max_level_difference,
                            mib(b.canonical_held_bytes.0),
                            mib(b.canonical_held_bytes.1)
                        )
                    }
                ),
                None => "no binding-budget comparison (the recovery did not settle)".to_owned(),
            },
            if self.passed() { "PASSED" } else { "FAILED" },
        )
    }
}

/// Runs a soak; `progress(frame, total)` is called every frame.
pub fn run(
    options: &SoakOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<SoakReport, SoakError> {
    let start = Instant::now();
    if options.frames == 0 {
        return Err(SoakError::Options("--frames must be at least 1".into()));
    }
    let scene = match options.scene.prepare(&options.cache_dir, |_, _, _| {})? {
        PreparedScene::Boxes(scene) => scene,
        PreparedScene::Meshes { .. } => {
            return Err(SoakError::Options(
                "the soak runs on boxes: default, sponza or a folder of textures (its meshes \
                 are generated)"
                    .into(),
            ))
        }
    };
    let gpu = mipstream::gpu::headless(options.backends)?;
    let info = gpu.adapter.get_info();
    let report = SoakReport {
        frames: options.frames,
        seed: options.seed,
        faults: options.faults.names(),
        adapter: info.name.clone(),
        backend: format!("{:?}", info.backend).to_lowercase(),
        budget_bytes_min: u64::MAX,
        ..SoakReport::default()
    };
    let textures_before = live_textures(&gpu.instance);
    let buffers_before = live_buffers(&gpu.instance);
    let mut soak = abuse::Soak::new(options, &gpu, &scene, report)?;
    for frame in 1..=options.frames {
        if !soak.frame(frame) {
            break;
        }
        progress(frame, options.frames);
    }
    let fresh = soak.recover(&gpu)?;
    let abuse::Soak {
        streamer,
        mut report,
        mut times,
        ..
    } = soak;
    // teardown: drop both while nothing special is going on, wait for the GPU
    drop(streamer);
    drop(fresh);
    let _ = gpu.device.poll(wgpu::PollType::wait_indefinitely());
    report.leaked_textures = live_textures(&gpu.instance) - textures_before;
    report.leaked_buffers = live_buffers(&gpu.instance) - buffers_before;
    times.sort_by(f64::total_cmp);
    report.update_ms_p50 = percentile(&times, 0.5);
    report.update_ms_p99 = percentile(&times, 0.99);
    report.update_ms_max = times.last().copied().unwrap_or(0.0);
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
