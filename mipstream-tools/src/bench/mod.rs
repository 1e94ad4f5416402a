//! The streaming benchmark (feature `bench`, `mipstream bench`): mipstream
//! against the strategies engines use today, replayed over the same camera
//! path in one process on one adapter.
//!
//! Every strategy is the same [`Streamer`] (same loader threads, same upload
//! path and cap, same renderer); only the way levels are chosen differs
//! ([`Policy`](mipstream::plan::Policy)):
//!
//! - `full`: every texture at full resolution, loaded before the path starts:
//!   the reference pictures and the memory a naive loader needs;
//! - `uniform_bias`: every texture the same number of mips below its finest,
//!   the smallest drop whose total fits the budget, loaded up front (a game's
//!   texture-quality setting);
//! - `distance_only`: each texture at the mip its screen size asks for, never
//!   more than `max_reduction` mips below its finest, no budget fitting
//!   (Unity's mipmap streaming without a memory budget); it may go over the
//!   budget, and that is counted;
//! - `unity_budget`: Unity's mipmap streaming with its memory budget
//!   ([`mipstream::plan::policy::unity_budget`]);
//! - `unreal_pool`: Unreal's texture streaming pool at Epic quality
//!   ([`mipstream::plan::policy::unreal_pool`]);
//! - `mipstream`: the budget fit.
//!
//! Fairness: every strategy that has a budget plans within the same bytes
//! (the budget less the recycle pool and any headroom a blocked growth asked
//! for), and the streamer keeps every one of them to the budget the same way
//! (a growth that would not fit beside everything held waits). Only a rule
//! that holds more on purpose (Unity's floors) goes over, and is counted.
//! Each rule orders its own loads. The budget is a fraction of the path's
//! working set ([`BudgetBasis::WorkingSet`]: the peak bytes of every texture
//! and mesh at exactly what its views want), so it binds, or of full
//! residency.
//!
//! Memory is measured twice: by mipstream's ledger (`peak_resident_bytes`)
//! and by wgpu (the peak of its texture-memory counter and of the allocator
//! report's allocated bytes, over what the strategy's streamer added; Vulkan
//! only, `None` on backends without them).
//!
//! A glTF scene (`SceneSource::Gltf`) streams its meshes too: the fixed
//! policies then hold every mesh at LOD 0 (`full`), `bias` LODs down
//! (`uniform_bias`) or at the LOD its screen error asks for
//! (`distance_only`), and the camera path is the same three moves around the
//! scene's bounds ([`crate::scene::CameraPath::around`]).
//!
//! Per frame and strategy it records the bytes held, bytes uploaded, the time
//! `update()` took on the calling thread and, every `quality_every` frames,
//! the picture's PSNR and FLIP against `full` at the same camera.

pub mod dump;
pub mod engine;
pub mod frame;
mod metrics;
pub mod planner;
mod plots;
mod registered;
mod report;
mod strategy;
pub mod transcode;
pub mod update;
pub mod uploads;

pub use plots::write_plots;

pub use metrics::{flip_mean, mse_rgb, psnr_from_mse, psnr_rgb};
pub(crate) use metrics::{human, percentile};

use crate::gltf_scene::SceneLoadError;
use crate::scene::BuiltinScene;
use crate::source::{SceneSource, SourceError};
use glam::UVec2;
use image::RgbaImage;
use mipstream::gpu::regions::RegionBytes;
use mipstream::streamer::{InvariantViolation, StreamerError, StreamerOptions};
use mipstream::{gpu, streamer::Streamer};
use registered::Registered;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use strategy::{run_strategy, Ctx};

/// The strategies, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Everything at full resolution.
    Full,
    /// One global mip bias that fits the budget.
    UniformBias,
    /// Per-texture mip from screen size, capped reduction, no budget.
    DistanceOnly,
    /// Unity's mipmap streaming with a memory budget.
    UnityBudget,
    /// Unreal's texture streaming pool.
    UnrealPool,
    /// mipstream's budget fit (with the error model of
    /// [`BenchOptions::error_model`]).
    Mipstream,
    /// mipstream's budget fit judged by the geometric error model, beside a
    /// `mipstream` judging by measured loss (`--error-model both`).
    MipstreamGeometric,
    /// mipstream's budget fit with GPU feedback: the renderer reports what
    /// it samples every frame and the plan fuses it (`docs/feedback.md`).
    /// The engine rules stay the CPU rules their engines ship.
    MipstreamFeedback,
    /// The same fusion fed exact feedback of the very frame it plans: each
    /// texture's pixels and lods from an id pass of that frame's view
    /// (every pixel, no delay): what one-frame-late, subsampled feedback
    /// loses against it is `mipstream_feedback`'s distance from this (glTF
    /// scenes: two id passes, the materials' base colour textures and
    /// their normal maps).
    MipstreamOracle,
}

impl Strategy {
    /// All of them, `full` first (it makes the reference pictures).
    pub const ALL: [Strategy; 9] = [
        Strategy::Full,
        Strategy::UniformBias,
        Strategy::DistanceOnly,
        Strategy::UnityBudget,
        Strategy::UnrealPool,
        Strategy::Mipstream,
        Strategy::MipstreamGeometric,
        Strategy::MipstreamFeedback,
        Strategy::MipstreamOracle,
    ];

    /// What a run compares by default: every one but `mipstream_geometric`,
    /// `mipstream_feedback` and `mipstream_oracle`.
    pub fn default_set() -> Vec<Strategy> {
        Self::ALL[..6].to_vec()
    }

    /// The strategy with JSON key `key`.
    pub fn from_key(key: &str) -> Option<Strategy> {
        Self::ALL.into_iter().find(|s| s.key() == key)
    }

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::UniformBias => "uniform_bias",
            Strategy::DistanceOnly => "distance_only",
            Strategy::UnityBudget => "unity_budget",
            Strategy::UnrealPool => "unreal_pool",
            Strategy::Mipstream => "mipstream",
            Strategy::MipstreamGeometric => "mipstream_geometric",
            Strategy::MipstreamFeedback => "mipstream_feedback",
            Strategy::MipstreamOracle => "mipstream_oracle",
        }
    }

    /// Whether the streamer keeps this strategy to the budget (`full` and
    /// `distance_only` have none; they are judged against it).
    fn has_budget(self) -> bool {
        !matches!(self, Strategy::Full | Strategy::DistanceOnly)
    }
}

/// What a budget fraction is a fraction of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetBasis {
    /// The peak, over the camera path at the run's resolution, of the bytes
    /// held with every texture and mesh at exactly the level its views want
    /// (no cap on reduction, no prefetch, no look-ahead): below 1 the budget
    /// binds.
    #[default]
    WorkingSet,
    /// Every level of every texture and every mesh at LOD 0.
    Full,
}

impl BudgetBasis {
    /// The JSON word: `working-set` or `full`.
    pub fn key(self) -> &'static str {
        match self {
            BudgetBasis::WorkingSet => "working-set",
            BudgetBasis::Full => "full",
        }
    }
}

/// How the benchmark runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// The scene.
    pub scene: SceneSource,
    /// The budget as a fraction of `budget_basis` (used when `budget_bytes`
    /// is `None`). Default: 0.5.
    pub budget_fraction: f64,
    /// What the fractions are of. Default: the working set.
    pub budget_basis: BudgetBasis,
    /// The budget in bytes, overriding the fraction.
    pub budget_bytes: Option<u64>,
    /// Frames over the camera path (20 s; a scene camera's: its animation's
    /// length and a quarter). Default: 1200 (60 per second of a 20 s path).
    pub frames: usize,
    /// Render size. Default: 640x360.
    pub size: UVec2,
    /// Compare pictures every this many frames (and at the frame after the
    /// cut). Default: 10.
    pub quality_every: usize,
    /// Upload bytes per frame for every strategy. Default: the streamer's (8 MiB).
    pub upload_cap: u64,
    /// `distance_only`'s and `unity_budget`'s largest mip reduction.
    /// Default: 2 (Unity's default).
    pub max_reduction: u32,
    /// mipstream's `StreamerOptions::transient_reserve`: a fraction of the
    /// budget kept free beside the plan so more textures can grow at once.
    /// Default: the streamer's (0).
    pub transient_reserve: f32,
    /// Budget fractions for the quality-vs-budget curve; empty: no sweep.
    pub sweep: Vec<f64>,
    /// Frames per sweep run. Default: a quarter of `frames`.
    pub sweep_frames: Option<usize>,
    /// Where the built-in scene's textures are cached.
    pub cache_dir: PathBuf,
    /// Pause per frame, as a renderer's frame time would leave the loader
    /// threads. Default: 2 ms.
    pub frame_pause: Duration,
    /// Backends to open an adapter on. Default: `WGPU_BACKEND`, else any.
    pub backends: Option<wgpu::Backends>,
    /// Append one JSON line per compared frame and strategy to this file:
    /// the frame's PSNR and FLIP and every texture's and mesh's wanted,
    /// planned and resident level, bytes and coverage (to trace where a
    /// strategy gains or loses). Default: none.
    pub trace: Option<PathBuf>,
    /// The strategies to run, `full` first whether listed or not (it makes
    /// the reference pictures). Default: [`Strategy::default_set`].
    pub strategies: Vec<Strategy>,
    /// The error model the `mipstream` strategy plans with. Default:
    /// measured, the planner's (`mipstream_geometric` always uses the
    /// geometric one: beside a measured `mipstream`, the comparison).
    pub error_model: mipstream::plan::LossModel,
    /// Frames a newly resident state of the budget-fit strategies is kept
    /// before it may be given up ([`mipstream::plan::PlannerOptions::min_residency_frames`]);
    /// `None`: the planner's default. Default: `None`.
    pub min_residency_frames: Option<u64>,
    /// Lockstep: after every frame, wait for the loads it asked for
    /// ([`Streamer::finish_loads`]), and start from
    /// [`Streamer::settle_canonical`]: every run of the same options gives
    /// the same pictures, uploads and scores, whatever the machine's speed,
    /// and strategies differ only by what they choose (a load still takes
    /// one frame; the upload cap still applies). The bytes held include
    /// upload staging, which the GPU frees when it gets to it: a frame's
    /// figure may differ by that frame's upload. Off: the loader threads race the frames (paced
    /// by `frame_pause`), as in a renderer. Default: off.
    pub lockstep: bool,
    /// The books every strategy's streamer keeps
    /// ([`StreamerOptions::count_retiring`]): false runs them on the books
    /// that drop a release at once, to measure what waiting for the GPU
    /// costs. Default: the streamer's.
    pub count_retiring: bool,
    /// Write each compared frame's budget-fit problem (the `mipstream`
    /// strategies') into this folder, one JSON file per frame, for
    /// `mipstream certify`. Default: none.
    pub dump_plans: Option<PathBuf>,
}

impl BenchOptions {
    /// The budget-fit strategies' minimum residency: the option, or the
    /// planner's default.
    pub fn min_residency_frames(&self) -> u64 {
        self.min_residency_frames
            .unwrap_or_else(|| mipstream::plan::PlannerOptions::default().min_residency_frames)
    }
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            scene: SceneSource::Builtin,
            budget_fraction: 0.5,
            budget_basis: BudgetBasis::WorkingSet,
            budget_bytes: None,
            frames: 1200,
            size: UVec2::new(640, 360),
            quality_every: 10,
            upload_cap: StreamerOptions::default().upload_bytes_per_frame,
            max_reduction: 2,
            transient_reserve: StreamerOptions::default().transient_reserve,
            sweep: Vec::new(),
            sweep_frames: None,
            cache_dir: BuiltinScene::default_cache_dir(),
            frame_pause: Duration::from_millis(2),
            backends: None,
            trace: None,
            strategies: Strategy::default_set(),
            error_model: mipstream::plan::LossModel::Measured,
            min_residency_frames: None,
            lockstep: false,
            count_retiring: StreamerOptions::default().count_retiring,
            dump_plans: None,
        }
    }
}

impl BenchOptions {
    /// The strategies to run, `full` first, each once, in [`Strategy::ALL`] order.
    pub fn strategies(&self) -> Vec<Strategy> {
        Strategy::ALL
            .into_iter()
            .filter(|s| *s == Strategy::Full || self.strategies.contains(s))
            .collect()
    }
}

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// No GPU.
    #[error(transparent)]
    Gpu(#[from] gpu::GpuInitError),
    /// The scene could not be prepared.
    #[error(transparent)]
    Scene(#[from] SourceError),
    /// Loading a cooked glTF scene failed.
    #[error(transparent)]
    Gltf(#[from] SceneLoadError),
    /// Registering the scene failed.
    #[error(transparent)]
    Streamer(#[from] StreamerError),
    /// A strategy's streamer broke an invariant (a mipstream bug).
    #[error("{strategy}, frame {frame}: {violation}")]
    Invariant {
        /// The strategy.
        strategy: &'static str,
        /// The frame.
        frame: usize,
        /// What broke.
        violation: InvariantViolation,
    },
    /// Reading a picture back failed.
    #[error(transparent)]
    Readback(#[from] gpu::ReadbackError),
    /// Writing a dumped plan failed.
    #[error(transparent)]
    Dump(#[from] dump::DumpError),
    /// Bad options.
    #[error("{0}")]
    Options(String),
    /// Writing plots failed.
    #[error("plots: {0}")]
    Plot(String),
}

from_streamer_errors!(BenchError);

/// One frame of one strategy.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameRecord {
    /// Bytes held (textures, pool, staging).
    pub resident: u64,
    /// Bytes uploaded.
    pub uploaded: u64,
    /// Time `update()` took, ms.
    pub update_ms: f64,
    /// Of it, the plan's certificates' time, ms
    /// ([`mipstream::streamer::FrameStats::certificate_time`]).
    pub certificate_ms: f64,
    /// PSNR (RGB) against `full`, dB, capped at 100, on compared frames.
    pub psnr_db: Option<f64>,
    /// Mean squared error (RGB, 0-255 scale) against `full` on compared frames.
    pub mse: Option<f64>,
    /// Mean FLIP against `full` on compared frames.
    pub flip: Option<f32>,
    /// The budget fit's certificate this frame ([`mipstream::streamer::FrameStats::fit_gap_lp`]).
    pub fit_gap: Option<f64>,
    /// The same against the integer problem's bound
    /// ([`mipstream::streamer::FrameStats::fit_gap_knapsack`]).
    pub fit_gap_knapsack: Option<f64>,
    /// wgpu's count of texture and buffer memory right after `update()`,
    /// above what the device held before the strategy's streamer existed
    /// (the renderer's own taken out); `None` where wgpu counts no memory.
    pub gpu_bytes: Option<u64>,
    /// Textures the GPU feedback the update took had seen sampled
    /// (`mipstream_feedback`; 0 for the others).
    pub feedback_textures: u32,
    /// `mipstream_feedback`: the bytes the textures the newest feedback saw
    /// hold, whole and as their sampled regions' 64 KiB tiles
    /// ([`mipstream::gpu::regions`]); `None` for the others.
    pub region_bytes: Option<RegionBytes>,
}

/// One strategy's run.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyResult {
    /// Which.
    pub strategy: Strategy,
    /// Its setting, for people (`bias 2`, `max reduction 2`).
    pub setting: String,
    /// Every frame.
    pub frames: Vec<FrameRecord>,
    /// The most bytes held in a frame.
    pub peak_resident_bytes: u64,
    /// Frames holding more than the budget.
    pub frames_over_budget: usize,
    /// Frames where wgpu counted more than the budget right after
    /// `update()` ([`FrameRecord::gpu_bytes`]), every rule alike; `None`
    /// where wgpu counts no memory (GL).
    pub frames_over_budget_by_wgpu: Option<usize>,
    /// The most wgpu counted in a frame against the budget, as a ratio.
    pub wgpu_peak_ratio: Option<f64>,
    /// PSNR of the mean squared error over all compared frames (a frame
    /// identical to `full` adds no error rather than a capped 100 dB), capped
    /// at 100 dB.
    pub psnr_db_mean: f64,
    /// Worst PSNR.
    pub psnr_db_min: f64,
    /// The most texture memory wgpu's counter (`wgpu-hal`'s `texture_memory`)
    /// showed above what it held before this strategy's streamer existed, the
    /// renderer's own depth buffer taken out; `None` on backends without the
    /// counter (wgpu's GL backend).
    pub gpu_texture_memory_peak_bytes: Option<u64>,
    /// The same for the allocator report's allocated bytes (textures, mesh
    /// buffers and wgpu's upload staging); `None` without a report.
    pub allocator_allocated_peak_bytes: Option<u64>,
    /// Mean FLIP.
    pub flip_mean: f64,
    /// The most bytes uploaded in one frame.
    pub max_upload_bytes_in_a_frame: u64,
    /// Median `update()` time, the certificates included.
    pub update_ms_p50: f64,
    /// 99th percentile `update()` time, the certificates included.
    pub update_ms_p99: f64,
    /// Median and 99th percentile of `update()` less its certificates: the
    /// streamer's own time, what a renderer without them pays.
    pub streamer_update_ms: [f64; 2],
    /// Median and 99th percentile of the certificates' time in `update()`
    /// (0 for the fixed rules, which have none).
    pub certificate_ms: [f64; 2],
    /// The mean over every frame of the budget fit's certificate (how far
    /// its plan is from the best within the budget at most, a share of its
    /// error); `None` for the fixed rules.
    pub fit_gap_lp_mean: Option<f64>,
    /// The largest over every frame.
    pub fit_gap_lp_max: Option<f64>,
    /// The mean and largest over every frame of the certificate against the
    /// integer problem ([`mipstream::plan::Plan::fit_bound_knapsack`]): where
    /// the LP gap is large but this one small, the plan is close to the
    /// best plan and the LP bound is what is loose.
    pub fit_gap_knapsack_mean: Option<f64>,
    /// The largest over every frame.
    pub fit_gap_knapsack_max: Option<f64>,
    /// Frames after the cut until everything the strategy wants is resident;
    /// `None` if that never happened before the path ended.
    pub frames_to_converge_after_cut: Option<usize>,
    /// `mipstream_feedback` only: the median frame time of the scene's
    /// renderer (boxes or glTF materials) over the compared frames, from recording to the GPU idle,
    /// with the GPU feedback call and without it (each frame drawn both
    /// ways in the same run), ms.
    pub feedback_frame_ms: Option<[f64; 2]>,
    /// `mipstream_feedback` only: over every frame, the bytes holding only
    /// the sampled regions of the seen textures' finest levels would take
    /// against whole levels at the same quality
    /// ([`mipstream::gpu::regions`]; 64 KiB tiles, as sparse residency
    /// binds them). Below 1: tiled streaming would hold less.
    pub region_bytes_ratio: Option<f64>,
    /// One picture from the slow walk, for the side-by-side image.
    pub picture: Option<RgbaImage>,
}

/// One strategy at one budget of the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepResult {
    /// Which.
    pub strategy: Strategy,
    /// PSNR of the mean error.
    pub psnr_db_mean: f64,
    /// Mean FLIP.
    pub flip_mean: f64,
    /// The most bytes held in a frame.
    pub peak_resident_bytes: u64,
    /// Frames holding more than the budget.
    pub frames_over_budget: usize,
    /// Frames over the budget by wgpu's count ([`StrategyResult::frames_over_budget_by_wgpu`]).
    pub frames_over_budget_by_wgpu: Option<usize>,
    /// [`StrategyResult::region_bytes_ratio`].
    pub region_bytes_ratio: Option<f64>,
}

impl SweepResult {
    /// Over the budget by the books or by wgpu's count.
    pub fn went_over(&self) -> bool {
        self.frames_over_budget > 0 || self.frames_over_budget_by_wgpu.unwrap_or(0) > 0
    }
}

/// Every strategy at one budget of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Fraction of the budget basis.
    pub fraction: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Every strategy but `full`.
    pub results: Vec<SweepResult>,
}

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// `default`, `sponza` or the folder.
    pub scene: String,
    /// wgpu backend.
    pub backend: String,
    /// Adapter name.
    pub adapter: String,
    /// Frames per strategy.
    pub frames: usize,
    /// Render size.
    pub size: UVec2,
    /// The budget.
    pub budget_bytes: u64,
    /// What budget fractions are of.
    pub budget_basis: BudgetBasis,
    /// Bytes with everything at full resolution.
    pub full_residency_bytes: u64,
    /// The peak over the path of the bytes with everything at exactly what
    /// its views want (see [`BudgetBasis::WorkingSet`]).
    pub working_set_bytes: u64,
    /// Frame index of the hard cut.
    pub cut_frame: usize,
    /// The camera path ([`crate::scene::CameraPath::describe`]).
    pub camera_path: String,
    /// Every strategy run, in [`Strategy::ALL`] order.
    pub strategies: Vec<StrategyResult>,
    /// The error model the `mipstream` strategy planned with.
    pub error_model: mipstream::plan::LossModel,
    /// The budget-fit strategies' minimum residency, in frames.
    pub min_residency_frames: u64,
    /// Whether it ran in lockstep ([`BenchOptions::lockstep`]).
    pub lockstep: bool,
    /// The books it ran on ([`BenchOptions::count_retiring`]).
    pub count_retiring: bool,
    /// The quality-vs-budget curve.
    pub sweep: Vec<SweepPoint>,
    /// Frames per sweep run.
    pub sweep_frames: usize,
}

/// What the progress callback is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress<'a> {
    /// What is running (`full`, `sweep 0.30 mipstream`...).
    pub stage: &'a str,
    /// Frames done of all frames the benchmark will run.
    pub done: usize,
    /// All frames.
    pub total: usize,
}

/// Runs the benchmark; `progress` is called every frame.
pub fn run(
    opts: &BenchOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<BenchResult, BenchError> {
    if opts.frames < 2 || opts.quality_every == 0 {
        return Err(BenchError::Options(
            "--frames must be at least 2 and --quality-every at least 1".into(),
        ));
    }
    if opts.sweep.iter().any(|f| !(*f > 0.0 && *f <= 4.0)) {
        return Err(BenchError::Options(
            "--sweep fractions must be above 0 and at most 4".into(),
        ));
    }
    let g = gpu::headless(opts.backends)?;
    let scene = opts.scene.prepare(&opts.cache_dir, |_, _, _| {})?;
    let scene_name = opts.scene.name();
    let path = scene.path();
    let frame_at = |t: f32| ((t / path.duration) * opts.frames as f32).ceil() as usize;
    let ctx = Ctx {
        g: &g,
        scene: &scene,
        opts,
        cut_frame: frame_at(path.cut_at).min(opts.frames - 1),
        picture_frame: frame_at((path.fly_end + path.cut_at) * 0.5).min(opts.frames - 1),
    };
    let (full, working_set) = {
        let mut s = Streamer::new(&g.device, &g.queue);
        let registered = Registered::new(&scene, &g, &mut s)?;
        let working_set = (0..opts.frames)
            .map(|f| s.wanted_bytes(&[path.view(ctx.t_of(f, opts.frames), opts.size)]))
            .max()
            .unwrap_or(0);
        (registered.full_bytes(&s), working_set)
    };
    let basis = match opts.budget_basis {
        BudgetBasis::WorkingSet => working_set,
        BudgetBasis::Full => full,
    };
    let budget = opts
        .budget_bytes
        .unwrap_or((basis as f64 * opts.budget_fraction) as u64);
    let sweep_frames = opts.sweep_frames.unwrap_or(opts.frames / 4).max(2);
    let to_run = opts.strategies();
    let strategies_n = to_run.len();
    let total = opts.frames * strategies_n + opts.sweep.len() * sweep_frames * (strategies_n - 1);
    let mut done = 0;
    let mut references = HashMap::new();
    let mut strategies = Vec::new();
    for &strategy in &to_run {
        let r = run_strategy(
            &ctx,
            strategy,
            budget,
            opts.frames,
            &mut references,
            &mut |d| {
                progress(Progress {
                    stage: strategy.key(),
                    done: done + d,
                    total,
                })
            },
        )?;
        done += opts.frames;
        strategies.push(r);
    }
    // the sweep: shorter runs at each budget, against references of their own
    let mut sweep = Vec::new();
    if !opts.sweep.is_empty() {
        let mut refs = HashMap::new();
        let sweep_ctx = Ctx {
            cut_frame: ctx.cut_frame * sweep_frames / opts.frames,
            picture_frame: usize::MAX,
            ..ctx
        };
        run_strategy(
            &sweep_ctx,
            Strategy::Full,
            full,
            sweep_frames,
            &mut refs,
            &mut |_| {},
        )?;
        for &fraction in &opts.sweep {
            let b = (basis as f64 * fraction) as u64;
            let mut results = Vec::new();
            for strategy in &to_run[1..] {
                let stage = format!("sweep {fraction:.2} {}", strategy.key());
                let r = run_strategy(
                    &sweep_ctx,
                    *strategy,
                    b,
                    sweep_frames,
                    &mut refs,
                    &mut |d| {
                        progress(Progress {
                            stage: &stage,
                            done: done + d,
                            total,
                        })
                    },
                )?;
                done += sweep_frames;
                results.push(SweepResult {
                    strategy: *strategy,
                    psnr_db_mean: r.psnr_db_mean,
                    flip_mean: r.flip_mean,
                    peak_resident_bytes: r.peak_resident_bytes,
                    frames_over_budget: r.frames_over_budget,
                    region_bytes_ratio: r.region_bytes_ratio,
                    frames_over_budget_by_wgpu: r.frames_over_budget_by_wgpu,
                });
            }
            sweep.push(SweepPoint {
                fraction,
                budget_bytes: b,
                results,
            });
        }
    }
    let info = g.adapter.get_info();
    Ok(BenchResult {
        scene: scene_name,
        backend: format!("{:?}", info.backend).to_lowercase(),
        adapter: info.name,
        frames: opts.frames,
        size: opts.size,
        budget_bytes: budget,
        budget_basis: opts.budget_basis,
        full_residency_bytes: full,
        working_set_bytes: working_set,
        cut_frame: ctx.cut_frame,
        camera_path: path.describe(),
        strategies,
        sweep,
        sweep_frames,
        error_model: opts.error_model,
        min_residency_frames: opts.min_residency_frames(),
        lockstep: opts.lockstep,
        count_retiring: opts.count_retiring,
    })
}
