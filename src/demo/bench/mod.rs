//! The streaming benchmark (feature `bench`, `mipstream bench`): mipstream
//! against the strategies engines use today, replayed over the same camera
//! path in one process on one adapter.
//!
//! Every strategy is the same [`Streamer`] (same loader threads, same upload
//! path and cap, same renderer); only the way levels are chosen differs
//! ([`Policy`]):
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
//!   ([`crate::plan::policy::unity_budget`]);
//! - `unreal_pool`: Unreal's texture streaming pool at Epic quality
//!   ([`crate::plan::policy::unreal_pool`]);
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
//! scene's bounds ([`crate::demo::scene::CameraPath::around`]).
//!
//! Per frame and strategy it records the bytes held, bytes uploaded, the time
//! `update()` took on the calling thread and, every `quality_every` frames,
//! the picture's PSNR and FLIP against `full` at the same camera.

pub mod planner;
mod plots;

pub use plots::write_plots;

use crate::demo::gltf_scene::{SceneLoadError, StreamedScene};
use crate::demo::render::{DrawBox, SceneRenderer, ViewMode};
use crate::demo::render_mesh::{MeshRenderer, BACKGROUND};
use crate::demo::scene::BuiltinScene;
use crate::demo::source::{PreparedScene, SceneSource, SourceError};
use crate::plan::Policy;
use crate::streamer::{Budget, InvariantViolation, StreamerError, StreamerOptions};
use crate::{gpu, Streamer, TextureId};
use glam::UVec2;
use image::RgbaImage;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

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
    /// mipstream's budget fit.
    Mipstream,
}

impl Strategy {
    /// All of them, `full` first (it makes the reference pictures).
    pub const ALL: [Strategy; 6] = [
        Strategy::Full,
        Strategy::UniformBias,
        Strategy::DistanceOnly,
        Strategy::UnityBudget,
        Strategy::UnrealPool,
        Strategy::Mipstream,
    ];

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::UniformBias => "uniform_bias",
            Strategy::DistanceOnly => "distance_only",
            Strategy::UnityBudget => "unity_budget",
            Strategy::UnrealPool => "unreal_pool",
            Strategy::Mipstream => "mipstream",
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
    /// Frames over the 20 s camera path. Default: 1200 (60 per second).
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
        }
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
    /// Bad options.
    #[error("{0}")]
    Options(String),
    /// Writing plots failed.
    #[error("plots: {0}")]
    Plot(String),
}

/// One frame of one strategy.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameRecord {
    /// Bytes held (textures, pool, staging).
    pub resident: u64,
    /// Bytes uploaded.
    pub uploaded: u64,
    /// Time `update()` took, ms.
    pub update_ms: f64,
    /// PSNR (RGB) against `full`, dB, capped at 100, on compared frames.
    pub psnr_db: Option<f64>,
    /// Mean squared error (RGB, 0-255 scale) against `full` on compared frames.
    pub mse: Option<f64>,
    /// Mean FLIP against `full` on compared frames.
    pub flip: Option<f32>,
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
    /// Median `update()` time.
    pub update_ms_p50: f64,
    /// 99th percentile `update()` time.
    pub update_ms_p99: f64,
    /// Frames after the cut until everything the strategy wants is resident;
    /// `None` if that never happened before the path ended.
    pub frames_to_converge_after_cut: Option<usize>,
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
    /// Every strategy, in [`Strategy::ALL`] order.
    pub strategies: Vec<StrategyResult>,
    /// The quality-vs-budget curve.
    pub sweep: Vec<SweepPoint>,
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

/// A scene registered with one strategy's streamer.
enum Registered {
    Boxes(Vec<DrawBox>, SceneRenderer),
    Meshes(Box<StreamedScene>, MeshRenderer),
}

impl Registered {
    /// Registers `scene` with a strategy's streamer, with its renderer.
    fn new(
        scene: &PreparedScene,
        g: &gpu::HeadlessGpu,
        streamer: &mut Streamer,
    ) -> Result<Registered, BenchError> {
        let format = wgpu::TextureFormat::Rgba8UnormSrgb;
        Ok(match scene {
            PreparedScene::Boxes(scene) => {
                let ids = scene.register(streamer)?;
                let boxes = scene
                    .objects
                    .iter()
                    .map(|o| DrawBox {
                        center: o.center,
                        size: o.size,
                        tile: o.tile,
                        texture: ids[o.texture],
                        highlight: false,
                    })
                    .collect();
                Registered::Boxes(boxes, SceneRenderer::new(&g.device, format))
            }
            PreparedScene::Meshes { json, .. } => Registered::Meshes(
                Box::new(StreamedScene::load(streamer, json)?),
                MeshRenderer::new(&g.device, &g.queue, format),
            ),
        })
    }
}

impl Registered {
    /// Bytes at full detail: every texture level, every mesh at LOD 0
    /// (with its always-resident coarsest LOD).
    fn full_bytes(&self, streamer: &Streamer) -> u64 {
        self.bytes_at(streamer, 0)
    }

    /// Bytes with every texture `bias` mips and every mesh `bias` LODs
    /// below its finest.
    fn bytes_at(&self, streamer: &Streamer, bias: u32) -> u64 {
        let textures = streamer
            .texture_ids()
            .into_iter()
            .filter_map(|id| streamer.bytes_from_level(id, bias).ok())
            .sum::<u64>();
        let meshes = match self {
            Registered::Boxes(..) => 0,
            Registered::Meshes(scene, _) => scene
                .meshes
                .iter()
                .filter_map(|&id| streamer.mesh_bytes_at(id, bias).ok())
                .sum(),
        };
        textures + meshes
    }

    fn sync(&mut self, g: &gpu::HeadlessGpu, streamer: &Streamer, changed: &[TextureId]) {
        match self {
            Registered::Boxes(_, r) => r.sync(&g.device, streamer, changed),
            Registered::Meshes(scene, r) => scene.sync(&g.device, r, streamer, changed),
        }
    }

    fn render(
        &mut self,
        g: &gpu::HeadlessGpu,
        target: &wgpu::TextureView,
        size: UVec2,
        view: &crate::View,
        streamer: &Streamer,
    ) {
        match self {
            Registered::Boxes(boxes, r) => r.render(
                &g.device,
                &g.queue,
                target,
                size,
                view,
                boxes,
                streamer,
                ViewMode::Normal,
            ),
            Registered::Meshes(scene, r) => {
                let draws = scene.draws(streamer);
                r.render(&g.device, &g.queue, target, size, view, &draws, BACKGROUND)
            }
        }
    }
}

struct Ctx<'a> {
    g: &'a gpu::HeadlessGpu,
    scene: &'a PreparedScene,
    opts: &'a BenchOptions,
    cut_frame: usize,
    picture_frame: usize,
}

impl Ctx<'_> {
    /// Seconds into the path at frame `f` of a run of `frames`.
    fn t_of(&self, f: usize, frames: usize) -> f32 {
        f as f32 / frames as f32 * self.scene.path().duration
    }
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
    let strategies_n = Strategy::ALL.len();
    let total = opts.frames * strategies_n + opts.sweep.len() * sweep_frames * (strategies_n - 1);
    let mut done = 0;
    let mut references = HashMap::new();
    let mut strategies = Vec::new();
    for strategy in Strategy::ALL {
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
            for strategy in &Strategy::ALL[1..] {
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
        strategies,
        sweep,
    })
}

pub(crate) fn human(bytes: u64) -> String {
    crate::gpu::memory::human_bytes(bytes)
}

/// The smallest global mip drop whose total bytes fit `budget`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Mean squared error over RGB (0-255 scale).
pub fn mse_rgb(a: &RgbaImage, b: &RgbaImage) -> f64 {
    let (mut se, mut n) = (0f64, 0f64);
    for (p, q) in a.pixels().zip(b.pixels()) {
        for c in 0..3 {
            let d = p.0[c] as f64 - q.0[c] as f64;
            se += d * d;
            n += 1.0;
        }
    }
    se / n.max(1.0)
}

/// PSNR in dB for a mean squared error, capped at 100 dB (identical pictures).
pub fn psnr_from_mse(mse: f64) -> f64 {
    if mse <= 0.0 {
        100.0
    } else {
        (10.0 * (255.0f64 * 255.0 / mse).log10()).min(100.0)
    }
}

/// PSNR over RGB, capped at 100 dB (identical pictures).
pub fn psnr_rgb(a: &RgbaImage, b: &RgbaImage) -> f64 {
    psnr_from_mse(mse_rgb(a, b))
}

/// Mean NVIDIA FLIP error (0 identical, 1 most different) over RGB.
pub fn flip_mean(reference: &RgbaImage, test: &RgbaImage) -> f32 {
    let (w, h) = reference.dimensions();
    let rgb = |i: &RgbaImage| {
        i.pixels()
            .flat_map(|p| [p.0[0], p.0[1], p.0[2]])
            .collect::<Vec<_>>()
    };
    let r = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(reference));
    let t = nv_flip::FlipImageRgb8::with_data(w, h, &rgb(test));
    let err = nv_flip::flip(r, t, nv_flip::DEFAULT_PIXELS_PER_DEGREE);
    nv_flip::FlipPool::from_image(&err).mean()
}

/// Appends one compared frame of `strategy` to the trace file (JSON lines).
fn trace_frame(
    path: &std::path::Path,
    strategy: Strategy,
    budget: u64,
    frame: usize,
    record: &FrameRecord,
    streamer: &Streamer,
) -> Result<(), BenchError> {
    use std::io::Write;
    let r = streamer.report();
    let textures: Vec<serde_json::Value> = r
        .textures
        .iter()
        .map(|t| {
            serde_json::json!([
                t.label,
                t.wanted,
                t.planned,
                t.resident,
                t.tier == crate::Tier::Compact,
                t.bytes,
                t.coverage
            ])
        })
        .collect();
    let meshes: Vec<serde_json::Value> = r
        .meshes
        .iter()
        .map(|m| serde_json::json!([m.label, m.wanted, m.planned, m.resident, m.bytes]))
        .collect();
    let line = serde_json::json!({
        "strategy": strategy.key(),
        "budget": budget,
        "frame": frame,
        "psnr": record.psnr_db,
        "flip": record.flip,
        "held": record.resident,
        "textures": textures,
        "meshes": meshes,
    });
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(f, "{line}")
    };
    write().map_err(|e| BenchError::Options(format!("--trace {}: {e}", path.display())))
}

/// GPU memory as wgpu sees it (not mipstream's ledger): its texture-memory
/// counter and the allocator report's allocated bytes, each `None` where the
/// backend has none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct DeviceMemory {
    texture_memory: Option<u64>,
    allocated: Option<u64>,
}

impl DeviceMemory {
    fn read(device: &wgpu::Device) -> Self {
        let counted = gpu::memory::counters(device).texture_memory;
        Self {
            // wgpu's GL backend never counts texture memory: 0 there means none
            texture_memory: (!gpu::memory::is_gl(device)).then_some(counted.max(0) as u64),
            allocated: gpu::memory::allocator_summary(device).map(|a| a.allocated),
        }
    }

    fn zip(self, o: Self, f: impl Fn(u64, u64) -> u64) -> Self {
        Self {
            texture_memory: self
                .texture_memory
                .zip(o.texture_memory)
                .map(|(a, b)| f(a, b)),
            allocated: self.allocated.zip(o.allocated).map(|(a, b)| f(a, b)),
        }
    }

    fn minus(self, o: Self) -> Self {
        self.zip(o, u64::saturating_sub)
    }

    fn plus(self, o: Self) -> Self {
        self.zip(o, u64::saturating_add)
    }

    /// The larger of each; a figure missing on either side stays missing
    /// unless the other is the empty start.
    fn max(self, o: Self) -> Self {
        if self == Self::default() {
            return o;
        }
        self.zip(o, u64::max)
    }
}

fn run_strategy(
    ctx: &Ctx<'_>,
    strategy: Strategy,
    budget: u64,
    frames: usize,
    references: &mut HashMap<usize, RgbaImage>,
    progress: &mut dyn FnMut(usize),
) -> Result<StrategyResult, BenchError> {
    let (g, opts, path) = (ctx.g, ctx.opts, ctx.scene.path());
    // what earlier strategies' streamers held is freed before this one starts
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let mut streamer = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            // `full` and `distance_only` have no budget: they get room for
            // whatever they ask for and are judged against the budget
            budget: Budget::Bytes(if strategy.has_budget() {
                budget
            } else {
                u64::MAX / 4
            }),
            upload_bytes_per_frame: opts.upload_cap,
            // the recycle pool mipstream's budget would allow, for every
            // strategy; each plans within the budget less what it holds
            recycle_pool_bytes: (4u64 << 20).min(budget / 16),
            transient_reserve: if strategy == Strategy::Mipstream {
                opts.transient_reserve
            } else {
                0.0
            },
            ..Default::default()
        },
    );
    let size = opts.size;
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let target = g.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("mipstream bench target"),
        size: wgpu::Extent3d {
            width: size.x,
            height: size.y,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let target_view = target.create_view(&Default::default());
    let before = DeviceMemory::read(&g.device);
    let mut registered = Registered::new(ctx.scene, g, &mut streamer)?;
    let setting = match strategy {
        Strategy::Full => {
            streamer.set_policy(Policy::UniformBias { bias: 0 });
            "all levels".to_string()
        }
        Strategy::UniformBias => {
            // a quality setting chosen to fit: the smallest bias whose bytes
            // fit beside the largest recycle pool the budget allows
            let room =
                budget.saturating_sub(streamer.options().recycle_pool_bytes.min(budget / 16));
            let bias = (0..16)
                .find(|&b| registered.bytes_at(&streamer, b) <= room)
                .unwrap_or(16);
            streamer.set_policy(Policy::UniformBias { bias });
            format!("bias {bias}")
        }
        Strategy::DistanceOnly => {
            let max_reduction = opts.max_reduction;
            streamer.set_policy(Policy::DistanceOnly { max_reduction });
            format!("max reduction {max_reduction}")
        }
        Strategy::UnityBudget => {
            let max_level_reduction = opts.max_reduction;
            streamer.set_policy(Policy::UnityBudget {
                max_level_reduction,
            });
            format!("max reduction {max_level_reduction}")
        }
        Strategy::UnrealPool => {
            let frames_per_second = (frames as f32 / path.duration).round().max(1.0) as u32;
            streamer.set_policy(Policy::UnrealPool { frames_per_second });
            "Epic, mip bias 0".to_string()
        }
        Strategy::Mipstream if opts.transient_reserve > 0.0 => {
            format!("budget fit, reserve {:.0}%", opts.transient_reserve * 100.0)
        }
        Strategy::Mipstream => "budget fit".to_string(),
    };
    // the renderer's own depth buffer is made at its first frame: measured
    // apart so the memory figures are the streamer's
    let first = path.view(0.0, size);
    let registered_at = DeviceMemory::read(&g.device);
    registered.render(g, &target_view, size, &first, &streamer);
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let renderer_own = DeviceMemory::read(&g.device).minus(registered_at);
    let baseline = before.plus(renderer_own);
    let mut memory_peak = DeviceMemory::default();
    // a loading screen: every strategy starts settled at the first camera
    streamer.settle(&[first], Duration::from_secs(120))?;
    let mut records = Vec::with_capacity(frames);
    let (mut converged_at, mut picture) = (None, None);
    for f in 0..frames {
        let view = path.view(ctx.t_of(f, frames), size);
        let stats = streamer.update(&[view]);
        streamer
            .check_invariants()
            .map_err(|violation| BenchError::Invariant {
                strategy: strategy.key(),
                frame: f,
                violation,
            })?;
        let changed = streamer.take_changed();
        registered.sync(g, &streamer, &changed);
        memory_peak = memory_peak.max(DeviceMemory::read(&g.device).minus(baseline));
        let mut record = FrameRecord {
            resident: streamer.report().totals.accounted(),
            uploaded: stats.upload_bytes,
            update_ms: stats.update_time.as_secs_f64() * 1e3,
            ..Default::default()
        };
        if f >= ctx.cut_frame && converged_at.is_none() && streamer.converged() {
            converged_at = Some(f - ctx.cut_frame);
        }
        let compare = f % opts.quality_every == 0 || f == ctx.cut_frame;
        if compare || f == ctx.picture_frame {
            registered.render(g, &target_view, size, &view, &streamer);
            let px = gpu::read_rgba8(&g.device, &g.queue, &target, 0, 0)?;
            let img = RgbaImage::from_raw(size.x, size.y, px)
                .ok_or_else(|| BenchError::Options("readback size".into()))?;
            if strategy == Strategy::Full {
                references.insert(f, img.clone());
            } else if let Some(reference) = references.get(&f) {
                let mse = mse_rgb(reference, &img);
                record.mse = Some(mse);
                record.psnr_db = Some(psnr_from_mse(mse));
                record.flip = Some(flip_mean(reference, &img));
                if let Some(path) = &opts.trace {
                    trace_frame(path, strategy, budget, f, &record, &streamer)?;
                }
            }
            if f == ctx.picture_frame {
                picture = Some(img);
            }
        }
        records.push(record);
        progress(f + 1);
        std::thread::sleep(opts.frame_pause);
    }
    if strategy == Strategy::Full {
        for r in &mut records {
            r.psnr_db = None;
        }
    }
    let mut times: Vec<f64> = records.iter().map(|r| r.update_ms).collect();
    times.sort_by(f64::total_cmp);
    let psnrs: Vec<f64> = records.iter().filter_map(|r| r.psnr_db).collect();
    let mses: Vec<f64> = records.iter().filter_map(|r| r.mse).collect();
    let flips: Vec<f64> = records
        .iter()
        .filter_map(|r| r.flip.map(f64::from))
        .collect();
    let mean = |v: &[f64], empty: f64| {
        if v.is_empty() {
            empty
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let full = strategy == Strategy::Full;
    Ok(StrategyResult {
        strategy,
        setting,
        peak_resident_bytes: records.iter().map(|r| r.resident).max().unwrap_or(0),
        frames_over_budget: records.iter().filter(|r| r.resident > budget).count(),
        psnr_db_mean: if full {
            100.0
        } else {
            psnr_from_mse(mean(&mses, 0.0))
        },
        psnr_db_min: if full {
            100.0
        } else {
            psnrs.iter().copied().fold(f64::INFINITY, f64::min)
        },
        gpu_texture_memory_peak_bytes: memory_peak.texture_memory,
        allocator_allocated_peak_bytes: memory_peak.allocated,
        flip_mean: if full { 0.0 } else { mean(&flips, 0.0) },
        max_upload_bytes_in_a_frame: records.iter().map(|r| r.uploaded).max().unwrap_or(0),
        update_ms_p50: percentile(&times, 0.5),
        update_ms_p99: percentile(&times, 0.99),
        frames_to_converge_after_cut: converged_at,
        picture,
        frames: records,
    })
}

impl BenchResult {
    /// The JSON other tools read (keys as documented in README.md).
    pub fn to_json(&self) -> serde_json::Value {
        let strategies: serde_json::Map<String, serde_json::Value> = self
            .strategies
            .iter()
            .map(|s| {
                (
                    s.strategy.key().to_string(),
                    serde_json::json!({
                        "setting": s.setting,
                        "peak_resident_bytes": s.peak_resident_bytes,
                        "frames_over_budget": s.frames_over_budget,
                        "psnr_db_mean": s.psnr_db_mean,
                        "psnr_db_min": s.psnr_db_min,
                        "flip_mean": s.flip_mean,
                        "gpu_texture_memory_peak_bytes": s.gpu_texture_memory_peak_bytes,
                        "allocator_allocated_peak_bytes": s.allocator_allocated_peak_bytes,
                        "max_upload_bytes_in_a_frame": s.max_upload_bytes_in_a_frame,
                        "update_ms_p50": s.update_ms_p50,
                        "update_ms_p99": s.update_ms_p99,
                        "frames_to_converge_after_cut": s.frames_to_converge_after_cut,
                        "resident_bytes_per_frame": s.frames.iter().map(|r| r.resident).collect::<Vec<_>>(),
                        "upload_bytes_per_frame": s.frames.iter().map(|r| r.uploaded).collect::<Vec<_>>(),
                        "psnr_db_per_frame": s.frames.iter().map(|r| r.psnr_db).collect::<Vec<_>>(),
                        "flip_per_frame": s.frames.iter().map(|r| r.flip).collect::<Vec<_>>(),
                        "update_ms_per_frame": s.frames.iter().map(|r| r.update_ms).collect::<Vec<_>>(),
                    }),
                )
            })
            .collect();
        let sweep: Vec<serde_json::Value> = self
            .sweep
            .iter()
            .map(|p| {
                let mut o = serde_json::json!({
                    "budget_fraction": p.fraction,
                    "budget_bytes": p.budget_bytes,
                });
                for r in &p.results {
                    o[r.strategy.key()] = serde_json::json!({
                        "psnr_db_mean": r.psnr_db_mean,
                        "flip_mean": r.flip_mean,
                        "peak_resident_bytes": r.peak_resident_bytes,
                        "frames_over_budget": r.frames_over_budget,
                    });
                }
                o
            })
            .collect();
        serde_json::json!({
            "scene": self.scene,
            "backend": self.backend,
            "adapter": self.adapter,
            "frames": self.frames,
            "width": self.size.x,
            "height": self.size.y,
            "budget_bytes": self.budget_bytes,
            "budget_basis": self.budget_basis.key(),
            "working_set_bytes": self.working_set_bytes,
            "full_residency_bytes": self.full_residency_bytes,
            "compared_frames": self.compared_frames(),
            "cut_frame": self.cut_frame,
            "strategies": strategies,
            "sweep": sweep,
        })
    }

    /// The frames compared with `full`: every `quality_every`-th and the one
    /// at the cut.
    pub fn compared_frames(&self) -> Vec<usize> {
        self.strategies
            .iter()
            .find(|s| s.strategy != Strategy::Full)
            .map(|s| {
                s.frames
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.psnr_db.is_some())
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The short table printed at the end.
    pub fn table(&self) -> String {
        use crate::gpu::memory::human_bytes;
        let opt = |b: Option<u64>| b.map_or("n/a".to_string(), human_bytes);
        let mut out = format!(
            "{} on {} ({}), {} frames at {}x{}, budget {} ({:.2} of the working set {}; full residency {})\n",
            self.scene,
            self.adapter,
            self.backend,
            self.frames,
            self.size.x,
            self.size.y,
            human_bytes(self.budget_bytes),
            self.budget_bytes as f64 / self.working_set_bytes.max(1) as f64,
            human_bytes(self.working_set_bytes),
            human_bytes(self.full_residency_bytes)
        );
        out += &format!(
            "{:<14} {:<18} {:>11} {:>11} {:>11} {:>5} {:>7} {:>7} {:>8} {:>11} {:>12} {:>9}\n",
            "strategy",
            "setting",
            "peak",
            "wgpu tex",
            "allocated",
            "over",
            "PSNR",
            "min",
            "FLIP",
            "max upload",
            "update p50/99",
            "converge"
        );
        for s in &self.strategies {
            out += &format!(
                "{:<14} {:<18} {:>11} {:>11} {:>11} {:>5} {:>7.2} {:>7.2} {:>8.5} {:>11} {:>5.2}/{:<6.2} {:>9}\n",
                s.strategy.key(),
                s.setting,
                human_bytes(s.peak_resident_bytes),
                opt(s.gpu_texture_memory_peak_bytes),
                opt(s.allocator_allocated_peak_bytes),
                s.frames_over_budget,
                s.psnr_db_mean,
                s.psnr_db_min,
                s.flip_mean,
                human_bytes(s.max_upload_bytes_in_a_frame),
                s.update_ms_p50,
                s.update_ms_p99,
                s.frames_to_converge_after_cut
                    .map_or("never".to_string(), |f| f.to_string())
            );
        }
        if !self.sweep.is_empty() {
            out += &format!(
                "\nquality vs budget (fractions of the {}; PSNR of the mean error dB / mean FLIP; * went over the budget):\nfraction",
                match self.budget_basis {
                    BudgetBasis::WorkingSet => "working set",
                    BudgetBasis::Full => "full residency",
                }
            );
            for r in &self.sweep[0].results {
                out += &format!(" {:>22}", r.strategy.key());
            }
            out += "\n";
            for p in &self.sweep {
                out += &format!("{:>8.2}", p.fraction);
                for r in &p.results {
                    let mark = if r.frames_over_budget > 0 { "*" } else { " " };
                    out += &format!(" {:>12.2} / {:.5}{mark}", r.psnr_db_mean, r.flip_mean);
                }
                out += "\n";
            }
        }
        out
    }
}
