//! What streaming costs an engine's render loop (`mipstream bench-frame`),
//! budget cuts included: the [`Engine`] of docs/embedding.md's example
//! draws every streamed texture into its target and submits its frame, then
//! calls [`Streamer::update`], then waits for its frame (one frame in
//! flight, as a renderer pacing on its swap chain does). Twenty textures
//! (a directory's `.ktx2` files, or the built-in scene's) on spheres down
//! the view axis; the camera flies in and out; the budget is half of full
//! residency and is cut three times (to a tenth, a twentieth and an eighth
//! of full residency, at frames 50, 100 and 150 of 200, each held 25
//! frames). Each upload cap is run `runs` times, each run beside a loop of
//! the same frames with streaming frozen (no `update`), whose frame time
//! is the engine's GPU frame the update is compared with.
//!
//! wgpu's counters are read right after every `update()` and every submit:
//! where the backend counts memory (Vulkan), the frames over the budget
//! outside a cut's recovery and the updates each cut took to be within the
//! new budget by wgpu's count are reported too.

use super::engine::Engine;
use super::update::spread;
use crate::scene::BuiltinScene;
use glam::{UVec2, Vec3};
use mipstream::container::TextureFile;
use mipstream::gpu::{self, memory};
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{plan::View, streamer::Streamer};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct FrameBenchOptions {
    /// A directory of `.ktx2` textures (the first `textures` by name), or
    /// `None` for the built-in scene's cooked ones.
    pub textures_dir: Option<PathBuf>,
    /// Textures streamed (each on its own sphere).
    pub textures: usize,
    /// Frames per run (the cuts fall at a quarter, half and three quarters).
    pub frames: usize,
    /// Runs per upload cap.
    pub runs: usize,
    /// Upload caps, MiB per frame.
    pub upload_caps_mib: Vec<u64>,
    /// The engine's target, pixels (every texture is drawn over all of it).
    pub size: UVec2,
    /// The backends to pick the adapter from (`None`: any).
    pub backends: Option<wgpu::Backends>,
    /// Where the built-in scene's cooked textures are cached.
    pub cache_dir: PathBuf,
}

impl Default for FrameBenchOptions {
    fn default() -> Self {
        Self {
            textures_dir: None,
            textures: 20,
            frames: 200,
            runs: 3,
            upload_caps_mib: vec![8],
            size: UVec2::new(320, 180),
            backends: None,
            cache_dir: BuiltinScene::default_cache_dir(),
        }
    }
}

/// One upload cap's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameCapRun {
    /// The cap, MiB per frame.
    pub upload_cap_mib: u64,
    /// `update()` on the render thread, every frame of every run: p50, p99,
    /// max (ms).
    pub update_ms: [f64; 3],
    /// The same over the updates of a cut: the cut's and the four after.
    pub cut_update_ms: [f64; 3],
    /// Of those, the time in `Queue::submit` (lavapipe's submit waits
    /// while its queue thread still runs the engine's frame).
    pub cut_submit_ms: [f64; 3],
    /// Each run's slowest update (ms).
    pub update_max_per_run_ms: Vec<f64>,
    /// The engine's frame with streaming on (submit, `update`, wait):
    /// p50, p99, max (ms).
    pub frame_ms: [f64; 3],
    /// The engine's frame with streaming frozen: p50, p99, max (ms).
    pub frozen_frame_ms: [f64; 3],
    /// Updates that took over half the frozen frame's median.
    pub updates_over_half_frame: usize,
    /// Updates in all.
    pub updates: usize,
    /// Blocking waits for the GPU inside `update` ([`mipstream::streamer::FrameStats::gpu_waits`]).
    pub gpu_waits: u64,
    /// Moments (after an update or a submit) wgpu counted more of
    /// mipstream's memory than the budget outside a cut's recovery
    /// (`None` where the backend counts no memory).
    pub moments_over_budget_by_wgpu: Option<usize>,
    /// Per cut, updates until wgpu's count was within the new budget (0:
    /// when the cut's update returned; `None` where the backend counts no
    /// memory).
    pub cut_recovery_updates: Option<Vec<u32>>,
    /// Bytes each cut asked to free: what the GPU held (held and
    /// retiring) at the cut less the new budget.
    pub cut_bytes: Vec<u64>,
    /// Texture shrinks the budget forced, in all.
    pub forced_shrinks: u64,
    /// Updates that left forced shrinks to the next ([`mipstream::streamer::FrameStats::cut_paced`]).
    pub paced_updates: usize,
}

/// The whole bench.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameBench {
    /// The adapter's name.
    pub adapter: String,
    /// Its backend.
    pub backend: String,
    /// The engine's target.
    pub size: UVec2,
    /// Textures streamed.
    pub textures: usize,
    /// Full residency of them all (bytes).
    pub full_bytes: u64,
    /// Frames per run.
    pub frames: usize,
    /// Runs per cap.
    pub runs: usize,
    /// One entry per upload cap.
    pub caps: Vec<FrameCapRun>,
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum FrameBenchError {
    /// No adapter.
    #[error(transparent)]
    Gpu(#[from] gpu::GpuInitError),
    /// The textures could not be read.
    #[error("textures: {0}")]
    Textures(String),
    /// The streamer refused the scene.
    #[error(transparent)]
    Streamer(#[from] mipstream::streamer::StreamerError),
    /// Nonsensical options.
    #[error("{0}")]
    Options(String),
}

from_streamer_errors!(FrameBenchError);

/// The budget at `frame` of `frames`, as a share of full residency: half,
/// cut to a tenth, a twentieth and an eighth at a quarter, half and three
/// quarters of the run, each cut held an eighth of the run.
pub fn budget_share(frame: usize, frames: usize) -> f64 {
    let q = frames / 4;
    let hold = (frames / 8).max(1);
    for (i, share) in [0.1, 0.05, 0.125].into_iter().enumerate() {
        let at = q * (i + 1);
        if frame >= at && frame < at + hold {
            return share;
        }
    }
    0.5
}

/// The camera at `frame`: flying in and out along the axis every 80 frames.
pub fn view(frame: usize, size: UVec2) -> View {
    let z = 9.0 + 7.0 * (frame as f32 * std::f32::consts::TAU / 80.0).cos();
    View::look_at(
        Vec3::new(0.0, 1.0, z),
        Vec3::new(0.0, 0.0, z - 10.0),
        Vec3::Y,
        1.0,
        size,
        0.1,
        1e4,
    )
}

/// `count` textures: `dir`'s `.ktx2` files by name (over again from the
/// first when there are fewer), or the built-in scene's, cooked into
/// `cache_dir` on first use. Errors are the message to show.
pub(crate) fn texture_files(
    dir: Option<&std::path::Path>,
    count: usize,
    cache_dir: &std::path::Path,
) -> Result<Vec<TextureFile>, String> {
    let paths: Vec<PathBuf> = match dir {
        Some(dir) => {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ktx2"))
                .collect();
            paths.sort();
            paths
        }
        None => {
            BuiltinScene::load_or_cook(cache_dir, |_, _| {})
                .map_err(|e| e.to_string())?
                .textures
        }
    };
    if paths.is_empty() {
        return Err("no .ktx2 file".into());
    }
    paths
        .iter()
        .cycle()
        .take(count)
        .map(|p| TextureFile::open_path(p).map_err(|e| format!("{}: {e}", p.display())))
        .collect()
}

/// wgpu's count of texture and buffer memory on the device.
fn device_bytes(device: &wgpu::Device) -> u64 {
    memory::counters(device).bytes()
}

/// Runs every cap `runs` times; `progress(cap, run, frame)` after each frame.
pub fn bench_frame(
    opts: &FrameBenchOptions,
    mut progress: impl FnMut(u64, usize, usize),
) -> Result<FrameBench, FrameBenchError> {
    if opts.textures == 0 || opts.frames < 8 || opts.runs == 0 || opts.upload_caps_mib.is_empty() {
        return Err(FrameBenchError::Options(
            "at least 1 texture, 8 frames, 1 run and 1 upload cap".into(),
        ));
    }
    let g = gpu::headless(opts.backends)?;
    let files = texture_files(opts.textures_dir.as_deref(), opts.textures, &opts.cache_dir)
        .map_err(FrameBenchError::Textures)?;
    let info = g.adapter.get_info();
    let counts_memory = !memory::is_gl(&g.device);
    let mut caps = Vec::new();
    let mut full_bytes = 0;
    for &cap in &opts.upload_caps_mib {
        let mut update = Vec::new();
        let mut cut_update = Vec::new();
        let mut cut_submit = Vec::new();
        let mut per_run_max = Vec::new();
        let mut frame = Vec::new();
        let mut frozen = Vec::new();
        let mut gpu_waits = 0u64;
        let mut over = 0usize;
        let mut recoveries = Vec::new();
        let mut cut_bytes = Vec::new();
        let (mut forced, mut paced) = (0u64, 0usize);
        for run in 0..opts.runs {
            let mut engine = Engine::new(&g.device, &g.queue, opts.size.x, opts.size.y);
            engine.frame();
            let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
            let base = device_bytes(&g.device);
            let mut s = Streamer::with_options(
                &g.device,
                &g.queue,
                StreamerOptions {
                    upload_bytes_per_frame: cap << 20,
                    ..Default::default()
                },
            );
            let mut full = 0;
            for (i, file) in files.iter().enumerate() {
                let mut desc = TextureDesc::new(file.clone());
                desc.label = Some(format!("t{i}"));
                let t = s.register_texture(desc)?;
                full += s
                    .full_bytes(t)
                    .map_err(mipstream::streamer::StreamerError::from)?;
                let x = (i % 5) as f32 * 3.0 - 6.0;
                let z = -4.0 - (i / 5) as f32 * 6.0;
                s.register_object(
                    ObjectDesc::sphere(Vec3::new(x, 0.0, z), 1.5).with_texture(t, 3.0),
                )?;
            }
            full_bytes = full;
            let budget_at = |f: usize| (full as f64 * budget_share(f, opts.frames)) as u64;
            s.set_budget(Budget::Bytes(budget_at(0)));
            s.settle(&[view(0, opts.size)], Duration::from_secs(120))?;
            engine.rebind(&mut s);
            // the frozen loop: the engine's frame alone
            for _ in 0..opts.frames.min(60) {
                let t0 = Instant::now();
                engine.frame();
                let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
                frozen.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            let mut run_max = 0f64;
            let mut recovering: Option<u32> = None;
            let mut in_force = budget_at(0);
            let mut last_cut = None;
            for f in 0..opts.frames {
                let b = budget_at(f);
                if b < in_force {
                    last_cut = Some(f);
                    cut_bytes.push(s.gpu_bytes().saturating_sub(b));
                    recovering = Some(0);
                }
                in_force = b;
                s.set_budget(Budget::Bytes(b));
                let t0 = Instant::now();
                engine.rebind(&mut s);
                engine.frame();
                let mut check = |recovering: &mut Option<u32>| {
                    if !counts_memory {
                        return;
                    }
                    let counted = device_bytes(&g.device).saturating_sub(base);
                    match recovering {
                        None if counted > in_force => over += 1,
                        Some(n) if counted <= in_force => {
                            recoveries.push(*n);
                            *recovering = None;
                        }
                        _ => {}
                    }
                };
                check(&mut recovering);
                let t1 = Instant::now();
                let stats = s.update(&[view(f, opts.size)]);
                let ms = t1.elapsed().as_secs_f64() * 1e3;
                check(&mut recovering);
                if let Some(n) = &mut recovering {
                    *n += 1;
                }
                gpu_waits += u64::from(stats.gpu_waits);
                forced += u64::from(stats.forced_shrinks);
                paced += usize::from(stats.cut_paced);
                let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
                frame.push(t0.elapsed().as_secs_f64() * 1e3);
                if std::env::var_os("MIPSTREAM_BENCH_DEBUG").is_some() && ms > 3.0 {
                    eprintln!(
                        "frame {f}: update {ms:.2} ms (plan {:.2}, submit {:.2}), uploaded {} B in {}, copies {}, shrunk {}, grown {}, giving back {}",
                        stats.plan_time.as_secs_f64() * 1e3,
                        stats.submit_time.as_secs_f64() * 1e3,
                        stats.upload_bytes,
                        stats.uploads,
                        stats.copies,
                        stats.shrunk,
                        stats.grown,
                        stats.giving_back
                    );
                }
                update.push(ms);
                run_max = run_max.max(ms);
                if last_cut.is_some_and(|c| f - c < 5) {
                    cut_update.push(ms);
                    cut_submit.push(stats.submit_time.as_secs_f64() * 1e3);
                }
                progress(cap, run, f + 1);
            }
            per_run_max.push(run_max);
        }
        let half = spread_sorted(&mut frozen)[0] / 2.0;
        let over_half = update.iter().filter(|&&u| u > half).count();
        caps.push(FrameCapRun {
            upload_cap_mib: cap,
            update_ms: spread_sorted(&mut update),
            cut_update_ms: spread_sorted(&mut cut_update),
            cut_submit_ms: spread_sorted(&mut cut_submit),
            update_max_per_run_ms: per_run_max,
            frame_ms: spread_sorted(&mut frame),
            frozen_frame_ms: spread_sorted(&mut frozen),
            updates_over_half_frame: over_half,
            updates: update.len(),
            gpu_waits,
            moments_over_budget_by_wgpu: counts_memory.then_some(over),
            cut_recovery_updates: counts_memory.then_some(recoveries),
            cut_bytes,
            forced_shrinks: forced,
            paced_updates: paced,
        });
    }
    Ok(FrameBench {
        adapter: info.name,
        backend: format!("{:?}", info.backend),
        size: opts.size,
        textures: files.len(),
        full_bytes,
        frames: opts.frames,
        runs: opts.runs,
        caps,
    })
}

fn spread_sorted(v: &mut [f64]) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    spread(v)
}

impl FrameBench {
    /// The results as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "adapter": self.adapter,
            "backend": self.backend,
            "size": [self.size.x, self.size.y],
            "textures": self.textures,
            "full_bytes": self.full_bytes,
            "frames": self.frames,
            "runs": self.runs,
            "caps": self.caps.iter().map(|c| serde_json::json!({
                "upload_cap_mib": c.upload_cap_mib,
                "update_ms_p50_p99_max": c.update_ms,
                "cut_update_ms_p50_p99_max": c.cut_update_ms,
                "cut_submit_ms_p50_p99_max": c.cut_submit_ms,
                "update_max_per_run_ms": c.update_max_per_run_ms,
                "frame_ms_p50_p99_max": c.frame_ms,
                "frozen_frame_ms_p50_p99_max": c.frozen_frame_ms,
                "updates_over_half_frame": c.updates_over_half_frame,
                "updates": c.updates,
                "gpu_waits": c.gpu_waits,
                "moments_over_budget_by_wgpu": c.moments_over_budget_by_wgpu,
                "cut_recovery_updates": c.cut_recovery_updates,
                "cut_bytes": c.cut_bytes,
                "forced_shrinks": c.forced_shrinks,
                "paced_updates": c.paced_updates,
            })).collect::<Vec<_>>(),
        })
    }

    /// The results as a markdown table.
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "{} textures ({:.1} MiB in full) on {} ({}), {}x{} target, {} frames x {} runs per cap, budget cut at frames {}, {} and {}\n\n",
            self.textures,
            self.full_bytes as f64 / (1u64 << 20) as f64,
            self.adapter,
            self.backend,
            self.size.x,
            self.size.y,
            self.frames,
            self.runs,
            self.frames / 4,
            self.frames / 2,
            3 * self.frames / 4,
        );
        s.push_str("| upload cap MiB | update p50 / p99 / max ms | cut updates p99 / max ms (of it submit) | slowest update per run ms | frame on p50 / p99 / max ms | frame frozen p50 / p99 / max ms | updates over half a frame | waits in update | wgpu over budget (moments) | cut recovery (updates) | forced shrinks, updates paced |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for c in &self.caps {
            let f3 = |v: [f64; 3]| format!("{:.2} / {:.2} / {:.2}", v[0], v[1], v[2]);
            s.push_str(&format!(
                "| {} | {} | {:.2} / {:.2} ({:.2} / {:.2}) | {} | {} | {} | {} of {} | {} | {} | {} | {}, {} |\n",
                c.upload_cap_mib,
                f3(c.update_ms),
                c.cut_update_ms[1],
                c.cut_update_ms[2],
                c.cut_submit_ms[1],
                c.cut_submit_ms[2],
                c.update_max_per_run_ms
                    .iter()
                    .map(|m| format!("{m:.2}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                f3(c.frame_ms),
                f3(c.frozen_frame_ms),
                c.updates_over_half_frame,
                c.updates,
                c.gpu_waits,
                c.moments_over_budget_by_wgpu
                    .map_or("not counted".into(), |n| n.to_string()),
                c.cut_recovery_updates
                    .as_ref()
                    .map_or("not counted".into(), |r| format!("{r:?}")),
                c.forced_shrinks,
                c.paced_updates,
            ));
        }
        s
    }
}
