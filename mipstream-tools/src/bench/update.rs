//! The whole `Streamer::update` at scale (`mipstream bench-update`): a
//! headless adapter, `textures` textures (the built-in scene's twenty cooked
//! files, each registered many times over, sharing one source each) on
//! `objects` boxes scattered over a square field as `bench-planner` lays
//! them out, one moving camera at 1920x1080 whose path cuts back every 100
//! frames, a quarter of full residency for budget. Each upload cap is its
//! own streamer; each update's render-thread time is split into the plan's
//! share ([`mipstream::streamer::FrameStats::plan_time`]) and the rest (draining loads,
//! requesting, recording copies and uploads). The timed updates follow a warm-up
//! along the same path, timed apart ([`UpdateBenchOptions::warmup`]).

use super::planner::synthetic_view;
use crate::scene::BuiltinScene;
use glam::Vec3;
use mipstream::container::TextureFile;
use mipstream::gpu;
use mipstream::streamer::Streamer;
use mipstream::streamer::{Budget, ObjectDesc, PlanThread, StreamerOptions, TextureDesc};
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct UpdateBenchOptions {
    /// Objects in the field.
    pub objects: usize,
    /// Textures they share.
    pub textures: usize,
    /// Updates timed per upload cap.
    pub frames: usize,
    /// Updates run before the timed ones along the same path, timed apart
    /// ([`UpdateRun::warmup_update_ms`]). The first updates of a process
    /// pay for the driver's memory the first time it is touched: on
    /// lavapipe, `Queue::write_texture`'s staging lands on pages of the
    /// allocator's host block no one has written yet, and each such page
    /// faults in (measured at 10,000 textures: the same 49 MiB uploaded
    /// per 300 updates, the updates uploading 0.5 MiB or more spent 1.1 ms
    /// outside the plan in the first 600 updates and 0.5 ms after).
    pub warmup: usize,
    /// Upload caps to run, MiB per frame.
    pub upload_caps_mib: Vec<u64>,
    /// Where the plan runs, each a run per cap: `false` inside `update`
    /// ([`PlanThread::Inline`]), `true` on the planner thread
    /// ([`PlanThread::Background`]).
    pub plan_modes: Vec<bool>,
    /// Where the texels reach GPU staging, each a run per cap and plan
    /// mode: `false` through `Queue::write_texture` in `update`, `true`
    /// filled by the loader threads
    /// ([`StreamerOptions::loader_staging_bytes`], a reserve of twice the
    /// cap).
    pub staging_modes: Vec<bool>,
    /// Wait after each update (untimed) until the loads it asked for have
    /// arrived ([`Streamer::finish_loads`]), so that the upload cap, not
    /// the loader threads' speed, limits what a frame uploads; else updates
    /// are paced 2 ms apart and loads arrive as they can.
    pub ready_loads: bool,
    /// [`StreamerOptions::copies_per_frame`] of every run (0: no limit).
    pub copies_per_frame: u32,
    /// The backends to pick the adapter from (`None`: any).
    pub backends: Option<wgpu::Backends>,
    /// Where the built-in scene's cooked textures are cached.
    pub cache_dir: PathBuf,
}

/// One upload cap's run.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRun {
    /// The cap, MiB per frame.
    pub upload_cap_mib: u64,
    /// Whether the plan ran on the planner thread.
    pub plan_in_background: bool,
    /// The loader staging reserve (0: texels staged by `write_texture`).
    pub loader_staging_bytes: u64,
    /// Whether each update waited for its loads (untimed).
    pub ready_loads: bool,
    /// The budget (a quarter of full residency).
    pub budget_bytes: u64,
    /// Render-thread time of `update`: p50, p99, max (ms).
    pub update_ms: [f64; 3],
    /// The same over the warm-up's updates (zeros without one).
    pub warmup_update_ms: [f64; 3],
    /// Bytes uploaded per warm-up update, mean (0 without one).
    pub warmup_upload_bytes_mean: f64,
    /// Of that, the plan's: p50, p99, max (ms).
    pub plan_ms: [f64; 3],
    /// The rest: p50, p99, max (ms).
    pub apply_ms: [f64; 3],
    /// Of the rest, the frame's `Queue::submit`
    /// ([`mipstream::streamer::FrameStats::submit_time`]; on lavapipe and
    /// llvmpipe the driver carries out the copies inside it): p50, p99, max
    /// (ms).
    pub submit_ms: [f64; 3],
    /// The planner thread's time on each plan it finished, p50, p99, max
    /// (ms; zeros when the plan ran inside `update`).
    pub plan_worker_ms: [f64; 3],
    /// Updates since the carried-out plan's inputs were taken
    /// ([`mipstream::streamer::FrameStats::plan_age`]): p50, p99, max.
    pub plan_age: [f64; 3],
    /// Bytes uploaded per update, mean and most.
    pub upload_bytes_mean: f64,
    /// The most bytes one update uploaded.
    pub upload_bytes_max: u64,
    /// Of the bytes uploaded per update, those the loader threads had
    /// staged (mean).
    pub loader_staged_bytes_mean: f64,
    /// [`StreamerOptions::copies_per_frame`] (0: no limit).
    pub copies_per_frame: u32,
    /// Texture levels written per update
    /// ([`mipstream::streamer::FrameStats::copies`]): mean.
    pub copies_mean: f64,
    /// The most one update wrote.
    pub copies_max: u32,
    /// Seconds registering every texture took (tails read and transcoded on
    /// the calling thread).
    pub register_s: f64,
}

/// Every cap's run, on one adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateBench {
    /// Objects.
    pub objects: usize,
    /// Textures.
    pub textures: usize,
    /// Updates timed per run.
    pub frames: usize,
    /// Untimed updates before them, per run.
    pub warmup: usize,
    /// The adapter's name and backend.
    pub adapter: String,
    /// The backend.
    pub backend: String,
    /// Whether the default streamer ([`PlanThread::default`]) plans on the
    /// planner thread at this many textures (the "background" runs are
    /// then its own).
    pub default_plan_in_background: bool,
    /// One run per cap.
    pub runs: Vec<UpdateRun>,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateBenchError {
    /// No adapter.
    #[error(transparent)]
    Gpu(#[from] gpu::GpuInitError),
    /// The built-in scene's textures could not be cooked or opened.
    #[error("the built-in scene: {0}")]
    Scene(String),
    /// Registering failed.
    #[error(transparent)]
    Streamer(#[from] mipstream::streamer::StreamerError),
    /// A count of 0.
    #[error("{0}")]
    Options(String),
}

from_streamer_errors!(UpdateBenchError);

/// p50, p99 and max of sorted values.
pub(super) fn spread(sorted: &[f64]) -> [f64; 3] {
    [
        super::percentile(sorted, 0.5),
        super::percentile(sorted, 0.99),
        sorted.last().copied().unwrap_or(0.0),
    ]
}

/// Runs every cap; `progress(cap, done, total)` after each update.
pub fn bench_update(
    opts: &UpdateBenchOptions,
    mut progress: impl FnMut(u64, usize, usize),
) -> Result<UpdateBench, UpdateBenchError> {
    if opts.objects == 0 || opts.textures == 0 || opts.frames == 0 {
        return Err(UpdateBenchError::Options(
            "--objects, --textures and --frames must be at least 1".into(),
        ));
    }
    let g = gpu::headless(opts.backends)?;
    let scene = BuiltinScene::load_or_cook(&opts.cache_dir, |_, _| {})
        .map_err(|e| UpdateBenchError::Scene(e.to_string()))?;
    let files: Vec<TextureFile> = scene
        .textures
        .iter()
        .map(TextureFile::open_path)
        .collect::<Result<_, _>>()
        .map_err(|e| UpdateBenchError::Scene(e.to_string()))?;
    let info = g.adapter.get_info();
    let mut runs = Vec::new();
    let mut runs_wanted = Vec::new();
    for &background in &opts.plan_modes {
        for &staging in &opts.staging_modes {
            for &cap in &opts.upload_caps_mib {
                runs_wanted.push((background, staging, cap));
            }
        }
    }
    for (background, staging, cap) in runs_wanted {
        let loader_staging_bytes = if staging { 2 * (cap << 20) } else { 0 };
        let options = StreamerOptions {
            upload_bytes_per_frame: cap << 20,
            plan_thread: if background {
                PlanThread::Background
            } else {
                PlanThread::Inline
            },
            loader_staging_bytes,
            copies_per_frame: opts.copies_per_frame,
            ..Default::default()
        };
        let mut s = Streamer::with_options(&g.device, &g.queue, options);
        let start = std::time::Instant::now();
        let mut ids = Vec::with_capacity(opts.textures);
        for t in 0..opts.textures {
            let mut desc = TextureDesc::new(files[t % files.len()].clone());
            desc.label = Some(format!("t{t}"));
            ids.push(s.register_texture(desc)?);
        }
        let register_s = start.elapsed().as_secs_f64();
        let full: u64 = ids.iter().filter_map(|&id| s.full_bytes(id).ok()).sum();
        for (o, (center, half, t)) in field(opts.objects, opts.textures).enumerate() {
            let desc = ObjectDesc::aabb(center - half, center + half);
            s.register_object(desc.with_texture(ids[t], 2.0))?;
            if o % 50_000 == 0 {
                progress(cap, 0, opts.frames);
            }
        }
        let budget = full / 4;
        s.set_budget(Budget::Bytes(budget));
        s.settle(&[synthetic_view(0)], Duration::from_secs(600))?;
        let mut warm = Vec::with_capacity(opts.warmup);
        let mut warm_uploaded = 0u64;
        for f in 0..opts.warmup {
            let stats = s.update(&[synthetic_view(f as u64)]);
            warm.push(stats.update_time.as_secs_f64() * 1e3);
            warm_uploaded += stats.upload_bytes;
            progress(cap, 0, opts.frames);
            pace(&mut s, opts.ready_loads)?;
        }
        warm.sort_by(f64::total_cmp);
        let mut update = Vec::with_capacity(opts.frames);
        let mut plan = Vec::with_capacity(opts.frames);
        let mut apply = Vec::with_capacity(opts.frames);
        let mut submit = Vec::with_capacity(opts.frames);
        let mut worker = Vec::with_capacity(opts.frames);
        let mut age = Vec::with_capacity(opts.frames);
        let (mut uploaded, mut upload_max, mut staged) = (0u64, 0u64, 0u64);
        let (mut copies, mut copies_max) = (0u64, 0u32);
        for f in 0..opts.frames {
            let stats = s.update(&[synthetic_view((opts.warmup + f) as u64)]);
            let (u, p) = (stats.update_time, stats.plan_time);
            update.push(u.as_secs_f64() * 1e3);
            plan.push(p.as_secs_f64() * 1e3);
            apply.push(u.saturating_sub(p).as_secs_f64() * 1e3);
            submit.push(stats.submit_time.as_secs_f64() * 1e3);
            age.push(stats.plan_age as f64);
            if stats.plan_worker_time > Duration::ZERO || !background {
                worker.push(stats.plan_worker_time.as_secs_f64() * 1e3);
            }
            uploaded += stats.upload_bytes;
            staged += stats.loader_staged_bytes;
            upload_max = upload_max.max(stats.upload_bytes);
            copies += u64::from(stats.copies);
            copies_max = copies_max.max(stats.copies);
            progress(cap, f + 1, opts.frames);
            pace(&mut s, opts.ready_loads)?;
        }
        for v in [
            &mut update,
            &mut plan,
            &mut apply,
            &mut submit,
            &mut worker,
            &mut age,
        ] {
            v.sort_by(f64::total_cmp);
        }
        runs.push(UpdateRun {
            upload_cap_mib: cap,
            plan_in_background: background,
            loader_staging_bytes: s.report().totals.loader_staging,
            ready_loads: opts.ready_loads,
            budget_bytes: budget,
            update_ms: spread(&update),
            warmup_update_ms: spread(&warm),
            warmup_upload_bytes_mean: warm_uploaded as f64 / opts.warmup.max(1) as f64,
            plan_ms: spread(&plan),
            apply_ms: spread(&apply),
            submit_ms: spread(&submit),
            plan_worker_ms: spread(&worker),
            plan_age: spread(&age),
            upload_bytes_mean: uploaded as f64 / opts.frames as f64,
            upload_bytes_max: upload_max,
            loader_staged_bytes_mean: staged as f64 / opts.frames as f64,
            copies_per_frame: opts.copies_per_frame,
            copies_mean: copies as f64 / opts.frames as f64,
            copies_max,
            register_s,
        });
    }
    Ok(UpdateBench {
        objects: opts.objects,
        textures: opts.textures,
        frames: opts.frames,
        warmup: opts.warmup,
        adapter: info.name,
        backend: format!("{:?}", info.backend),
        default_plan_in_background: PlanThread::default().in_background(opts.textures),
        runs,
    })
}

/// Between two updates: wait (untimed) for the loads the last asked for,
/// or pace like frames, so loads arrive between updates.
fn pace(s: &mut Streamer, ready_loads: bool) -> Result<(), UpdateBenchError> {
    if ready_loads {
        s.finish_loads(Duration::from_secs(60))?;
    } else {
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// The boxes of [`super::planner::synthetic_planner`]'s field: centre, half
/// extents and texture of each.
fn field(objects: usize, textures: usize) -> impl Iterator<Item = (Vec3, Vec3, usize)> {
    let side = (objects as f32).sqrt() * 4.0;
    (0..objects).map(move |o| super::planner::synthetic_box(o, side, textures))
}

impl UpdateBench {
    /// The JSON `mipstream bench-update --json` writes.
    pub fn to_json(&self) -> serde_json::Value {
        let ms = |v: [f64; 3]| serde_json::json!({"p50": v[0], "p99": v[1], "max": v[2]});
        serde_json::json!({
            "objects": self.objects,
            "textures": self.textures,
            "frames": self.frames,
            "warmup": self.warmup,
            "adapter": self.adapter,
            "backend": self.backend,
            "default_plan_in_background": self.default_plan_in_background,
            "runs": self.runs.iter().map(|r| serde_json::json!({
                "upload_cap_mib": r.upload_cap_mib,
                "plan_in_background": r.plan_in_background,
                "loader_staging_bytes": r.loader_staging_bytes,
                "ready_loads": r.ready_loads,
                "loader_staged_bytes_mean": r.loader_staged_bytes_mean,
                "copies_per_frame": r.copies_per_frame,
                "copies_mean": r.copies_mean,
                "copies_max": r.copies_max,
                "plan_worker_ms": ms(r.plan_worker_ms),
                "plan_age": ms(r.plan_age),
                "budget_bytes": r.budget_bytes,
                "update_ms": ms(r.update_ms),
                "warmup_update_ms": ms(r.warmup_update_ms),
                "warmup_upload_bytes_mean": r.warmup_upload_bytes_mean,
                "plan_ms": ms(r.plan_ms),
                "apply_ms": ms(r.apply_ms),
                "submit_ms": ms(r.submit_ms),
                "upload_bytes_mean": r.upload_bytes_mean,
                "upload_bytes_max": r.upload_bytes_max,
                "register_s": r.register_s,
            })).collect::<Vec<_>>(),
        })
    }
}
