//! What uploads cost the render thread (`mipstream bench-uploads`): a scene
//! whose every camera jump is a burst of loads, so that the upload cap,
//! not the loader threads or the plan, limits what each `update` uploads.
//!
//! Groups of ten spheres 1,000 units apart, each sphere with a texture of
//! a folder (the Sponza textures of the shared data by default; each
//! registered again for each group); the camera moves to the next group
//! every `jump_every` updates, close enough that the group's textures want
//! their finest levels. The budget holds two groups' detail, so every jump
//! loads a whole group while the last one shrinks. After each update the
//! run waits (untimed) for the loads it asked for
//! ([`Streamer::finish_loads`]), and levels per update are not capped, so
//! what an update uploads is bounded by the byte cap and by what the plan
//! can build within the budget that frame. Each cap runs with the texels
//! staged by `update` (`Queue::write_texture`) and, where asked, by the
//! loader threads ([`StreamerOptions::loader_staging_bytes`], twice the cap).
//! The timed updates follow a warm-up along the same path, timed apart
//! ([`UploadBenchOptions::warmup`]).

use super::update::spread;
use glam::{UVec2, Vec3};
use mipstream::container::TextureFile;
use mipstream::gpu;
use mipstream::streamer::{Budget, FrameStats, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{plan::View, streamer::Streamer};
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct UploadBenchOptions {
    /// Updates timed per run.
    pub frames: usize,
    /// Updates between camera jumps.
    pub jump_every: usize,
    /// Places the camera visits in turn, a group of ten textures each,
    /// over and over (the warm-up and the timed updates alike): the scene
    /// does not grow with `frames`.
    pub groups: usize,
    /// Updates run before the timed ones along the same path (the same
    /// groups in the same order), timed apart
    /// ([`UploadRun::warmup_update_ms`]): a process's first updates pay for
    /// the first touch of the driver's memory (see
    /// [`super::update::UpdateBenchOptions::warmup`]).
    pub warmup: usize,
    /// Upload caps, MiB per update.
    pub upload_caps_mib: Vec<u64>,
    /// Who stages the texels, a run per cap each: `false` `update`
    /// (`write_texture`), `true` the loader threads.
    pub staging_modes: Vec<bool>,
    /// [`StreamerOptions::copies_per_frame`] of every run (0: no limit).
    pub copies_per_frame: u32,
    /// The backends to pick the adapter from (`None`: any).
    pub backends: Option<wgpu::Backends>,
    /// The KTX2 textures (the first twenty are used).
    pub textures: Vec<PathBuf>,
}

/// One run.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadRun {
    /// The cap, MiB per update.
    pub upload_cap_mib: u64,
    /// The loader staging reserve (0: `update` staged the texels).
    pub loader_staging_bytes: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// `update` on the render thread, every update: p50, p99, max (ms).
    pub update_ms: [f64; 3],
    /// The same over the warm-up's updates (zeros without one).
    pub warmup_update_ms: [f64; 3],
    /// Of each timed update, what is not the plan's share
    /// ([`mipstream::streamer::FrameStats::plan_time`]): p50, p99, max (ms).
    pub apply_ms: [f64; 3],
    /// Of each timed update, the `Queue::submit`
    /// ([`mipstream::streamer::FrameStats::submit_time`]: on lavapipe and
    /// llvmpipe the driver copies the texels inside it): p50, p99, max (ms).
    pub submit_ms: [f64; 3],
    /// Each timed update less its submit: the render thread's own work,
    /// p50, p99, max (ms).
    pub without_submit_ms: [f64; 3],
    /// Textures grown per timed update: mean and most.
    pub grown_mean: f64,
    /// The most textures one timed update grew.
    pub grown_max: u32,
    /// [`StreamerOptions::copies_per_frame`] (0: no limit).
    pub copies_per_frame: u32,
    /// Texture levels written per timed update
    /// ([`mipstream::streamer::FrameStats::copies`]): mean.
    pub copies_mean: f64,
    /// The most one timed update wrote.
    pub copies_max: u32,
    /// Levels the plan holds that are not resident yet, summed over the
    /// textures after each timed update, mean: what the caps (and the
    /// budget) leave waiting, the burst's missing detail.
    pub behind_mean: f64,
    /// Updates that uploaded at least half the cap.
    pub at_cap_updates: usize,
    /// `update` in those: p50, p99, max (ms).
    pub at_cap_update_ms: [f64; 3],
    /// Bytes uploaded per update, mean.
    pub upload_bytes_mean: f64,
    /// The most one update uploaded.
    pub upload_bytes_max: u64,
    /// Of the bytes uploaded, those the loader threads staged (mean per update).
    pub loader_staged_bytes_mean: f64,
    /// Levels per update that came back refused by a full staging reserve
    /// and were sent back to the loaders (mean; 0 without loader staging).
    pub restaged_mean: f64,
    /// What the slowest 1% of the timed updates (at least one; the p99's
    /// and those above it) did.
    pub slowest: SlowestUpdates,
}

/// What the slowest updates of a run did, means over them: what makes the
/// p99.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SlowestUpdates {
    /// How many updates.
    pub updates: usize,
    /// `update` (ms).
    pub update_ms: f64,
    /// Textures grown.
    pub grown: f64,
    /// Textures shrunk.
    pub shrunk: f64,
    /// Texture levels written (uploaded or copied on the GPU).
    pub copies: f64,
    /// Bytes uploaded.
    pub upload_bytes: f64,
    /// Of those, bytes the loader threads staged.
    pub loader_staged_bytes: f64,
    /// Of the update, the `Queue::submit` (ms;
    /// [`mipstream::streamer::FrameStats::submit_time`]).
    pub submit_ms: f64,
}

impl SlowestUpdates {
    /// The slowest 1% of `updates` (time in ms and the frame's stats).
    fn of(updates: &mut [(f64, FrameStats)]) -> Self {
        updates.sort_by(|a, b| b.0.total_cmp(&a.0));
        let n = updates.len().div_ceil(100).min(updates.len());
        if n == 0 {
            return Self::default();
        }
        let mean = |f: &dyn Fn(&(f64, FrameStats)) -> f64| {
            updates[..n].iter().map(f).sum::<f64>() / n as f64
        };
        Self {
            updates: n,
            update_ms: mean(&|u| u.0),
            grown: mean(&|u| f64::from(u.1.grown)),
            shrunk: mean(&|u| f64::from(u.1.shrunk)),
            copies: mean(&|u| f64::from(u.1.copies)),
            upload_bytes: mean(&|u| u.1.upload_bytes as f64),
            loader_staged_bytes: mean(&|u| u.1.loader_staged_bytes as f64),
            submit_ms: mean(&|u| u.1.submit_time.as_secs_f64() * 1e3),
        }
    }
}

/// Every run, on one adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadBench {
    /// The adapter's name.
    pub adapter: String,
    /// The backend.
    pub backend: String,
    /// Updates per run.
    pub frames: usize,
    /// Untimed updates before them, per run.
    pub warmup: usize,
    /// The runs, caps within staging modes.
    pub runs: Vec<UploadRun>,
}

/// The camera at group `group`, drifting a little each update.
fn camera(group: usize, f: usize) -> View {
    let x = group as f32 * 1000.0 + (f % 7) as f32 * 0.05;
    let eye = Vec3::new(x, 0.0, 3.0);
    View::look_at(
        eye,
        eye - Vec3::Z,
        Vec3::Y,
        1.0,
        UVec2::new(1920, 1080),
        0.1,
        1e4,
    )
}

/// Runs every cap and staging mode; `progress(run, done)` after each update.
pub fn bench_uploads(
    opts: &UploadBenchOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<UploadBench, super::update::UpdateBenchError> {
    use super::update::UpdateBenchError as E;
    if opts.frames == 0
        || opts.jump_every == 0
        || opts.groups == 0
        || opts.upload_caps_mib.contains(&0)
    {
        return Err(E::Options(
            "--frames, --jump-every, --groups and every upload cap must be at least 1".into(),
        ));
    }
    if opts.textures.len() < 2 {
        return Err(E::Options("at least two textures are needed".into()));
    }
    let g = gpu::headless(opts.backends)?;
    let files: Vec<TextureFile> = opts
        .textures
        .iter()
        .take(20)
        .map(|p| TextureFile::open_path(p).map_err(|e| E::Scene(format!("{}: {e}", p.display()))))
        .collect::<Result<_, _>>()?;
    let info = g.adapter.get_info();
    let mut runs = Vec::new();
    let wanted: Vec<(bool, u64)> = opts
        .staging_modes
        .iter()
        .flat_map(|&s| opts.upload_caps_mib.iter().map(move |&c| (s, c)))
        .collect();
    for (run, &(staging, cap)) in wanted.iter().enumerate() {
        let mut s = Streamer::with_options(
            &g.device,
            &g.queue,
            StreamerOptions {
                upload_bytes_per_frame: cap << 20,
                uploads_per_frame: 4096,
                copies_per_frame: opts.copies_per_frame,
                loader_staging_bytes: if staging { 2 * (cap << 20) } else { 0 },
                ..Default::default()
            },
        );
        // a group of ten spheres (5 x 2, 1.1 units apart, 3 units in front
        // of the camera) for every place the camera visits, each sphere's
        // texture spread wide enough that its finest levels are wanted;
        // the groups take the files in turn, each registered once per group
        // (group 0 is where the camera settles; it then visits the others
        // in turn, over and over)
        let groups = opts.groups + 1;
        let mut group_bytes = vec![0u64; groups];
        for (g, bytes) in group_bytes.iter_mut().enumerate() {
            for k in 0..10 {
                let file = &files[(g * 10 + k) % files.len()];
                let mut desc = TextureDesc::new(file.clone());
                desc.label = Some(format!("g{g}-{k}"));
                let id = s.register_texture(desc)?;
                *bytes += s
                    .full_bytes(id)
                    .map_err(mipstream::streamer::StreamerError::from)?;
                let centre = Vec3::new(
                    g as f32 * 1000.0 + ((k % 5) as f32 - 2.0) * 1.1,
                    ((k / 5) as f32 - 0.5) * 1.1,
                    0.0,
                );
                s.register_object(ObjectDesc::sphere(centre, 0.5).with_texture(id, 8.0))?;
            }
        }
        // room for two groups' detail and every tail (the same budget in
        // every run: a loader staging reserve comes out of it): the group
        // left behind shrinks while the next one grows
        // (the tails held: not the staging still in flight, whose figure
        // depends on how far the GPU has got, nor the reserve)
        let t = s.report().totals;
        let tails = t.color + t.normal + t.data + t.mesh + t.pool;
        let budget = 2 * group_bytes.iter().max().copied().unwrap_or(0) + tails;
        s.set_budget(Budget::Bytes(budget));
        s.settle(&[camera(0, 0)], Duration::from_secs(600))?;
        let place = |f: usize| f / opts.jump_every % opts.groups + 1;
        let mut warm = Vec::with_capacity(opts.warmup);
        for f in 0..opts.warmup {
            let st = s.update(&[camera(place(f), f)]);
            warm.push(st.update_time.as_secs_f64() * 1e3);
            progress(run, 0);
            s.finish_loads(Duration::from_secs(120))?;
        }
        let (mut update, mut at_cap, mut apply) = (Vec::new(), Vec::new(), Vec::new());
        let (mut submit, mut without_submit) = (Vec::new(), Vec::new());
        let (mut uploaded, mut most, mut staged) = (0u64, 0u64, 0u64);
        let (mut grown, mut grown_max, mut restaged) = (0u64, 0u32, 0u64);
        let (mut copies, mut copies_max, mut behind) = (0u64, 0u32, 0u64);
        let mut each = Vec::with_capacity(opts.frames);
        for f in 0..opts.frames {
            let st = s.update(&[camera(place(opts.warmup + f), f)]);
            let ms = st.update_time.as_secs_f64() * 1e3;
            update.push(ms);
            each.push((ms, st));
            apply.push(st.update_time.saturating_sub(st.plan_time).as_secs_f64() * 1e3);
            submit.push(st.submit_time.as_secs_f64() * 1e3);
            without_submit.push(st.update_time.saturating_sub(st.submit_time).as_secs_f64() * 1e3);
            if st.upload_bytes >= (cap << 20) / 2 {
                at_cap.push(ms);
            }
            uploaded += st.upload_bytes;
            staged += st.loader_staged_bytes;
            restaged += u64::from(st.restaged);
            most = most.max(st.upload_bytes);
            grown += u64::from(st.grown);
            grown_max = grown_max.max(st.grown);
            copies += u64::from(st.copies);
            copies_max = copies_max.max(st.copies);
            behind += s
                .report()
                .textures
                .iter()
                .map(|t| u64::from(t.resident.saturating_sub(t.planned)))
                .sum::<u64>();
            progress(run, f + 1);
            s.finish_loads(Duration::from_secs(120))?;
        }
        warm.sort_by(f64::total_cmp);
        apply.sort_by(f64::total_cmp);
        submit.sort_by(f64::total_cmp);
        without_submit.sort_by(f64::total_cmp);
        update.sort_by(f64::total_cmp);
        at_cap.sort_by(f64::total_cmp);
        runs.push(UploadRun {
            upload_cap_mib: cap,
            loader_staging_bytes: s.report().totals.loader_staging,
            budget_bytes: budget,
            update_ms: spread(&update),
            warmup_update_ms: spread(&warm),
            apply_ms: spread(&apply),
            submit_ms: spread(&submit),
            without_submit_ms: spread(&without_submit),
            grown_mean: grown as f64 / opts.frames as f64,
            grown_max,
            copies_per_frame: opts.copies_per_frame,
            copies_mean: copies as f64 / opts.frames as f64,
            copies_max,
            behind_mean: behind as f64 / opts.frames as f64,
            at_cap_updates: at_cap.len(),
            at_cap_update_ms: spread(&at_cap),
            upload_bytes_mean: uploaded as f64 / opts.frames as f64,
            upload_bytes_max: most,
            loader_staged_bytes_mean: staged as f64 / opts.frames as f64,
            restaged_mean: restaged as f64 / opts.frames as f64,
            slowest: SlowestUpdates::of(&mut each),
        });
    }
    Ok(UploadBench {
        adapter: info.name,
        backend: format!("{:?}", info.backend),
        frames: opts.frames,
        warmup: opts.warmup,
        runs,
    })
}

impl UploadBench {
    /// The JSON `mipstream bench-uploads --json` writes.
    pub fn to_json(&self) -> serde_json::Value {
        let ms = |v: [f64; 3]| serde_json::json!({"p50": v[0], "p99": v[1], "max": v[2]});
        serde_json::json!({
            "adapter": self.adapter,
            "backend": self.backend,
            "frames": self.frames,
            "warmup": self.warmup,
            "runs": self.runs.iter().map(|r| serde_json::json!({
                "upload_cap_mib": r.upload_cap_mib,
                "loader_staging_bytes": r.loader_staging_bytes,
                "budget_bytes": r.budget_bytes,
                "update_ms": ms(r.update_ms),
                "warmup_update_ms": ms(r.warmup_update_ms),
                "apply_ms": ms(r.apply_ms),
                "submit_ms": ms(r.submit_ms),
                "without_submit_ms": ms(r.without_submit_ms),
                "grown_mean": r.grown_mean,
                "grown_max": r.grown_max,
                "copies_per_frame": r.copies_per_frame,
                "copies_mean": r.copies_mean,
                "copies_max": r.copies_max,
                "behind_mean": r.behind_mean,
                "at_cap_updates": r.at_cap_updates,
                "at_cap_update_ms": ms(r.at_cap_update_ms),
                "upload_bytes_mean": r.upload_bytes_mean,
                "upload_bytes_max": r.upload_bytes_max,
                "loader_staged_bytes_mean": r.loader_staged_bytes_mean,
                "restaged_mean": r.restaged_mean,
                "slowest": {
                    "updates": r.slowest.updates,
                    "update_ms": r.slowest.update_ms,
                    "grown": r.slowest.grown,
                    "shrunk": r.slowest.shrunk,
                    "copies": r.slowest.copies,
                    "upload_bytes": r.slowest.upload_bytes,
                    "loader_staged_bytes": r.slowest.loader_staged_bytes,
                    "submit_ms": r.slowest.submit_ms,
                },
            })).collect::<Vec<_>>(),
        })
    }
}
