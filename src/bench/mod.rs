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
//! - `mipstream`: the budget fit.
//!
//! A glTF scene (`BenchScene::Gltf`) streams its meshes too: the fixed
//! policies then hold every mesh at LOD 0 (`full`), `bias` LODs down
//! (`uniform_bias`) or at the LOD its screen error asks for
//! (`distance_only`), and the camera path is the same three moves around the
//! scene's bounds ([`crate::scene::CameraPath::around`]).
//!
//! Per frame and strategy it records the bytes held, bytes uploaded, the time
//! `update()` took on the calling thread and, every `quality_every` frames,
//! the picture's PSNR and FLIP against `full` at the same camera.

pub mod planner;
mod plots;

pub use plots::write_plots;

use crate::mesh::scene::{SceneLoadError, StreamedScene};
use crate::plan::Policy;
use crate::render::{DrawBox, SceneRenderer, ViewMode};
use crate::render_mesh::{MeshRenderer, BACKGROUND};
use crate::scene::{BuiltinScene, CameraPath, SceneError};
use crate::streamer::{Budget, InvariantViolation, StreamerError, StreamerOptions};
use crate::{gpu, Streamer, TextureId};
use glam::UVec2;
use image::RgbaImage;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// Which scene the benchmark streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchScene {
    /// The built-in generated scene.
    Builtin,
    /// The built-in boxes and path wearing a folder of KTX2 textures
    /// (`sponza`: the 51 Sponza textures in `../shared/data`).
    Textures(PathBuf),
    /// A glTF scene: a `.gltf`/`.glb` (cooked into the cache folder on first
    /// use) or the `scene.json` of one cooked with `mipstream cook-gltf`.
    Gltf(PathBuf),
}

/// The four strategies, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Everything at full resolution.
    Full,
    /// One global mip bias that fits the budget.
    UniformBias,
    /// Per-texture mip from screen size, capped reduction, no budget.
    DistanceOnly,
    /// mipstream's budget fit.
    Mipstream,
}

impl Strategy {
    /// All of them, `full` first (it makes the reference pictures).
    pub const ALL: [Strategy; 4] = [
        Strategy::Full,
        Strategy::UniformBias,
        Strategy::DistanceOnly,
        Strategy::Mipstream,
    ];

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::UniformBias => "uniform_bias",
            Strategy::DistanceOnly => "distance_only",
            Strategy::Mipstream => "mipstream",
        }
    }
}

/// How the benchmark runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// The scene.
    pub scene: BenchScene,
    /// The budget as a fraction of full residency (used when `budget_bytes`
    /// is `None`). Default: 0.25.
    pub budget_fraction: f64,
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
    /// `distance_only`'s largest mip reduction. Default: 2 (Unity's default).
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
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            scene: BenchScene::Builtin,
            budget_fraction: 0.25,
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
    Scene(#[from] SceneError),
    /// Cooking a glTF scene failed.
    #[error(transparent)]
    Cook(#[from] crate::cook::gltf::GltfCookError),
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

/// Mean PSNR per strategy at one budget of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Fraction of full residency.
    pub fraction: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// `(strategy, mean PSNR, peak resident bytes, frames over budget)` for
    /// every strategy but `full`.
    pub results: Vec<(Strategy, f64, u64, usize)>,
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
    /// Bytes with everything at full resolution.
    pub full_residency_bytes: u64,
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

/// The scene a benchmark streams.
#[derive(Debug)]
enum Loaded {
    Boxes(BuiltinScene),
    /// A cooked glTF scene and the path around it.
    Meshes(PathBuf, CameraPath),
}

/// A scene registered with one strategy's streamer.
enum Registered {
    Boxes(Vec<DrawBox>, SceneRenderer),
    Meshes(Box<StreamedScene>, MeshRenderer),
}

impl Loaded {
    fn path(&self) -> CameraPath {
        match self {
            Loaded::Boxes(s) => s.path,
            Loaded::Meshes(_, p) => *p,
        }
    }

    fn register(
        &self,
        g: &gpu::HeadlessGpu,
        streamer: &mut Streamer,
    ) -> Result<Registered, BenchError> {
        let format = wgpu::TextureFormat::Rgba8UnormSrgb;
        Ok(match self {
            Loaded::Boxes(scene) => {
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
            Loaded::Meshes(json, _) => Registered::Meshes(
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
    scene: &'a Loaded,
    opts: &'a BenchOptions,
    cut_frame: usize,
    picture_frame: usize,
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
    let (scene, scene_name) = match &opts.scene {
        BenchScene::Builtin => (
            Loaded::Boxes(BuiltinScene::load_or_cook(&opts.cache_dir, |_, _| {})?),
            "default".to_string(),
        ),
        BenchScene::Textures(dir) => (
            Loaded::Boxes(BuiltinScene::from_texture_dir(dir)?),
            dir.file_name()
                .map(|n| n.to_string_lossy().replace("-textures", ""))
                .unwrap_or_else(|| dir.display().to_string()),
        ),
        BenchScene::Gltf(p) => {
            let json = crate::mesh::scene::cooked_scene(p, &opts.cache_dir, |_| {})?;
            // the path goes around the scene's bounds
            let mut s = Streamer::new(&g.device, &g.queue);
            let loaded = StreamedScene::load(&mut s, &json)?;
            let (lo, hi) = loaded.bounds;
            let path = CameraPath::around((lo + hi) * 0.5, (hi - lo).length() * 0.5);
            // a cooked scene.json is named by its folder
            let named = if p
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
            {
                p.parent().and_then(|d| d.file_name())
            } else {
                p.file_stem()
            };
            let name =
                named.map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into());
            (Loaded::Meshes(json, path), name)
        }
    };
    let path = scene.path();
    let frame_at = |t: f32| ((t / path.duration) * opts.frames as f32).ceil() as usize;
    let ctx = Ctx {
        g: &g,
        scene: &scene,
        opts,
        cut_frame: frame_at(path.cut_at).min(opts.frames - 1),
        picture_frame: frame_at((path.fly_end + path.cut_at) * 0.5).min(opts.frames - 1),
    };
    let full = {
        let mut s = Streamer::new(&g.device, &g.queue);
        let registered = scene.register(&g, &mut s)?;
        registered.full_bytes(&s)
    };
    let budget = opts
        .budget_bytes
        .unwrap_or((full as f64 * opts.budget_fraction) as u64);
    let sweep_frames = opts.sweep_frames.unwrap_or(opts.frames / 4).max(2);
    let total = opts.frames * 4 + opts.sweep.len() * sweep_frames * 3;
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
            let b = (full as f64 * fraction) as u64;
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
                results.push((
                    *strategy,
                    r.psnr_db_mean,
                    r.peak_resident_bytes,
                    r.frames_over_budget,
                ));
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
        full_residency_bytes: full,
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

fn run_strategy(
    ctx: &Ctx<'_>,
    strategy: Strategy,
    budget: u64,
    frames: usize,
    references: &mut HashMap<usize, RgbaImage>,
    progress: &mut dyn FnMut(usize),
) -> Result<StrategyResult, BenchError> {
    let (g, opts, path) = (ctx.g, ctx.opts, ctx.scene.path());
    // fixed policies get room for whatever they ask for; the budget is
    // what they are judged against
    let unlimited = Budget::Bytes(u64::MAX / 4);
    let mut streamer = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: if strategy == Strategy::Mipstream {
                Budget::Bytes(budget)
            } else {
                unlimited
            },
            upload_bytes_per_frame: opts.upload_cap,
            // the recycle pool mipstream's budget would allow, so held bytes
            // compare like for like
            recycle_pool_bytes: (4u64 << 20).min(budget / 16),
            transient_reserve: opts.transient_reserve,
            ..Default::default()
        },
    );
    let mut registered = ctx.scene.register(g, &mut streamer)?;
    let setting = match strategy {
        Strategy::Full => {
            streamer.set_policy(Policy::UniformBias { bias: 0 });
            "all levels".to_string()
        }
        Strategy::UniformBias => {
            let bias = (0..16)
                .find(|&b| registered.bytes_at(&streamer, b) <= budget)
                .unwrap_or(16);
            streamer.set_policy(Policy::UniformBias { bias });
            format!("bias {bias}")
        }
        Strategy::DistanceOnly => {
            let max_reduction = opts.max_reduction;
            streamer.set_policy(Policy::DistanceOnly { max_reduction });
            format!("max reduction {max_reduction}")
        }
        Strategy::Mipstream if opts.transient_reserve > 0.0 => {
            format!("budget fit, reserve {:.0}%", opts.transient_reserve * 100.0)
        }
        Strategy::Mipstream => "budget fit".to_string(),
    };
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
    let t_of = |f: usize| f as f32 / frames as f32 * path.duration;
    // a loading screen: every strategy starts settled at the first camera
    streamer.settle(&[path.view(0.0, size)], Duration::from_secs(120))?;
    let mut records = Vec::with_capacity(frames);
    let (mut converged_at, mut picture) = (None, None);
    for f in 0..frames {
        let view = path.view(t_of(f), size);
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
                        "max_upload_bytes_in_a_frame": s.max_upload_bytes_in_a_frame,
                        "update_ms_p50": s.update_ms_p50,
                        "update_ms_p99": s.update_ms_p99,
                        "frames_to_converge_after_cut": s.frames_to_converge_after_cut,
                        "resident_bytes_per_frame": s.frames.iter().map(|r| r.resident).collect::<Vec<_>>(),
                        "upload_bytes_per_frame": s.frames.iter().map(|r| r.uploaded).collect::<Vec<_>>(),
                        "psnr_db_per_frame": s.frames.iter().map(|r| r.psnr_db).collect::<Vec<_>>(),
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
                for (s, psnr, peak, over) in &p.results {
                    o[s.key()] = serde_json::json!({
                        "psnr_db_mean": psnr,
                        "peak_resident_bytes": peak,
                        "frames_over_budget": over,
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
            "full_residency_bytes": self.full_residency_bytes,
            "cut_frame": self.cut_frame,
            "strategies": strategies,
            "sweep": sweep,
        })
    }

    /// The short table printed at the end.
    pub fn table(&self) -> String {
        use crate::gpu::memory::human_bytes;
        let mut out = format!(
            "{} on {} ({}), {} frames at {}x{}, budget {} of {} full residency\n",
            self.scene,
            self.adapter,
            self.backend,
            self.frames,
            self.size.x,
            self.size.y,
            human_bytes(self.budget_bytes),
            human_bytes(self.full_residency_bytes)
        );
        out += &format!(
            "{:<14} {:<18} {:>11} {:>5} {:>7} {:>7} {:>6} {:>11} {:>12} {:>9}\n",
            "strategy",
            "setting",
            "peak",
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
                "{:<14} {:<18} {:>11} {:>5} {:>7.2} {:>7.2} {:>6.3} {:>11} {:>5.2}/{:<6.2} {:>9}\n",
                s.strategy.key(),
                s.setting,
                human_bytes(s.peak_resident_bytes),
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
            out += "\nquality vs budget (PSNR of the mean error, dB; * went over the budget):\nfraction";
            for (s, _, _, _) in &self.sweep[0].results {
                out += &format!(" {:>14}", s.key());
            }
            out += "\n";
            for p in &self.sweep {
                out += &format!("{:>8.2}", p.fraction);
                for (_, psnr, _, over) in &p.results {
                    let mark = if *over > 0 { "*" } else { " " };
                    out += &format!(" {psnr:>13.2}{mark}");
                }
                out += "\n";
            }
        }
        out
    }
}
