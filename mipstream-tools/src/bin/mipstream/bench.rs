//! `mipstream bench` and `mipstream bench-planner`.

use indicatif::{ProgressBar, ProgressStyle};
use mipstream_tools::bench::{self, BenchOptions, BudgetBasis};
use mipstream_tools::source::SceneSource;
use std::path::PathBuf;

/// Arguments of `mipstream bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// `default` (the built-in scene), `sponza` (the 51 Sponza textures in
    /// ../shared/data on the built-in boxes), a folder of KTX2 textures, a
    /// glTF scene (.gltf/.glb, cooked into the cache on first use; meshes
    /// stream too) or a scene.json from `mipstream cook-gltf`.
    #[arg(long, default_value = "default")]
    scene: String,
    /// A folder of KTX2 textures (same as giving it to --scene).
    #[arg(long, conflicts_with = "scene")]
    textures: Option<PathBuf>,
    /// The budget as a fraction of what --budget-of names.
    #[arg(long, default_value_t = 0.5, conflicts_with = "budget_mb")]
    budget_fraction: f64,
    /// What budget fractions (and the sweep's) are of: `working-set` (the
    /// peak bytes, over the camera path at this resolution, of everything at
    /// exactly the level its views want: below 1 the budget binds) or `full`
    /// (full residency).
    #[arg(long, default_value = "working-set", value_parser = ["working-set", "full"])]
    budget_of: String,
    /// The budget in MiB.
    #[arg(long)]
    budget_mb: Option<f64>,
    /// Frames over the camera path, per strategy (the path is 20 s; along a glTF scene's animated camera, its animation's length and a quarter)
    #[arg(long, default_value_t = 1200)]
    frames: usize,
    /// Render width.
    #[arg(long, default_value_t = 640)]
    width: u32,
    /// Render height.
    #[arg(long, default_value_t = 360)]
    height: u32,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
    /// Compare pictures against full resolution every this many frames.
    #[arg(long, default_value_t = 10)]
    quality_every: usize,
    /// Upload MiB per frame, for every strategy.
    #[arg(long, default_value_t = 8.0)]
    upload_cap_mb: f64,
    /// distance_only's and unity_budget's largest mip reduction (Unity's
    /// streamingMipmapsMaxLevelReduction).
    #[arg(long, default_value_t = 2)]
    max_reduction: u32,
    /// mipstream's transient reserve: a fraction of the budget (0 to 0.5)
    /// kept free beside the plan so more textures can grow at once.
    #[arg(long, default_value_t = 0.0)]
    transient_reserve: f32,
    /// Also run the quality-vs-budget curve: fractions 0.1 to 1.5 of the
    /// working set (0.1 to 1.0 of full residency with --budget-of full).
    #[arg(long)]
    sweep: bool,
    /// The sweep's budget fractions instead of the default ones, comma
    /// separated (implies --sweep).
    #[arg(long, value_delimiter = ',')]
    sweep_fractions: Option<Vec<f64>>,
    /// Frames per sweep run (default: a quarter of --frames).
    #[arg(long)]
    sweep_frames: Option<usize>,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Append one JSON line per compared frame and strategy to this file:
    /// every texture's and mesh's wanted, planned and resident level, bytes
    /// and coverage, with the frame's PSNR and FLIP.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write PNG charts and the side-by-side picture into this folder.
    #[arg(long)]
    plots: Option<PathBuf>,
    /// How mipstream judges visible error: `measured` (the loss each
    /// texture carries, see `mipstream annotate`; geometric for those
    /// without; the planner's default), `geometric` (content-blind), or
    /// `both` (the `mipstream` row measured, a `mipstream_geometric` row
    /// beside it).
    #[arg(long, default_value = "measured", value_parser = ["measured", "geometric", "both"])]
    error_model: String,
    /// Frames a newly loaded level of the budget-fit strategies is kept
    /// (locked) before it may be given up while its views still want it;
    /// default: the planner's (30). `mipstream certify` shows what the
    /// locks cost per frame.
    #[arg(long)]
    min_residency_frames: Option<u64>,
    /// The strategies to run, comma separated (`full` always runs: it makes
    /// the reference pictures): uniform_bias, distance_only, unity_budget,
    /// unreal_pool, mipstream, mipstream_geometric, mipstream_feedback (GPU feedback),
    /// mipstream_oracle (exact feedback of each frame, from an id pass).
    /// Default: all but mipstream_feedback, mipstream_oracle and
    /// mipstream_geometric (which `--error-model both` adds).
    #[arg(long, value_delimiter = ',')]
    strategies: Option<Vec<String>>,
    /// Deterministic runs: each frame waits for the loads it asked for
    /// (still within the upload cap) and every strategy starts from a
    /// canonical settle, so repeated runs give the same numbers and the
    /// strategies differ only by what they choose.
    #[arg(long)]
    lockstep: bool,
    /// Run every strategy on the books that drop a released texture at
    /// once instead of counting it until the GPU gives it back
    /// (`StreamerOptions::count_retiring: false`, the books before the
    /// memory guarantee): what waiting for the GPU costs in quality.
    #[arg(long)]
    release_at_once: bool,
    /// Write each compared frame's budget-fit problem (the mipstream
    /// strategies') into this folder as JSON, for `mipstream certify`.
    #[arg(long)]
    dump_plans: Option<PathBuf>,
}

pub(crate) fn shared_data() -> PathBuf {
    std::env::var_os("MIPSTREAM_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/data"))
}

pub(crate) fn backends(name: &Option<String>) -> Result<Option<wgpu::Backends>, String> {
    match name.as_deref() {
        None => Ok(None),
        Some("vulkan") => Ok(Some(wgpu::Backends::VULKAN)),
        Some("gl") => Ok(Some(wgpu::Backends::GL)),
        Some("metal") => Ok(Some(wgpu::Backends::METAL)),
        Some("dx12") => Ok(Some(wgpu::Backends::DX12)),
        Some(b) => Err(format!("--backend {b}: expected vulkan, gl, metal or dx12")),
    }
}

fn scene(args: &BenchArgs) -> Result<SceneSource, String> {
    if let Some(dir) = &args.textures {
        return Ok(SceneSource::Textures(dir.clone()));
    }
    SceneSource::parse(&args.scene, &shared_data()).map_err(|e| format!("--scene {e}"))
}

fn strategies(args: &BenchArgs) -> Result<Vec<bench::Strategy>, String> {
    let mut list = match &args.strategies {
        None => bench::Strategy::default_set(),
        Some(names) => names
            .iter()
            .map(|n| {
                bench::Strategy::from_key(n.trim()).ok_or_else(|| {
                    format!(
                        "--strategies: unknown strategy {n:?} (expected one of {})",
                        bench::Strategy::ALL.map(|s| s.key()).join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if args.error_model == "both" && !list.contains(&bench::Strategy::MipstreamGeometric) {
        list.push(bench::Strategy::MipstreamGeometric);
    }
    Ok(list)
}

pub(crate) fn run(args: BenchArgs) -> Result<(), String> {
    let positive = |v: f64, what: &str| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("{what} must be a positive number"))
        }
    };
    if args.width < 16 || args.height < 16 || args.width > 8192 || args.height > 8192 {
        return Err("--width and --height must be 16 to 8192".into());
    }
    let opts = BenchOptions {
        scene: scene(&args)?,
        budget_fraction: positive(args.budget_fraction, "--budget-fraction")?,
        budget_bytes: match args.budget_mb {
            Some(mb) => Some((positive(mb, "--budget-mb")? * (1u64 << 20) as f64) as u64),
            None => None,
        },
        frames: args.frames,
        size: glam::UVec2::new(args.width, args.height),
        quality_every: args.quality_every,
        upload_cap: (positive(args.upload_cap_mb, "--upload-cap-mb")? * (1u64 << 20) as f64) as u64,
        max_reduction: args.max_reduction,
        transient_reserve: if (0.0..=0.5).contains(&args.transient_reserve) {
            args.transient_reserve
        } else {
            return Err("--transient-reserve must be 0 to 0.5".into());
        },
        budget_basis: if args.budget_of == "full" {
            BudgetBasis::Full
        } else {
            BudgetBasis::WorkingSet
        },
        sweep: match (args.sweep, args.budget_of.as_str()) {
            _ if args.sweep_fractions.is_some() => args.sweep_fractions.clone().unwrap_or_default(),
            (false, _) => Vec::new(),
            (true, "full") => (1..=10).map(|i| i as f64 / 10.0).collect(),
            (true, _) => vec![0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5],
        },
        sweep_frames: args.sweep_frames,
        backends: backends(&args.backend)?,
        trace: args.trace.clone(),
        strategies: strategies(&args)?,
        lockstep: args.lockstep,
        count_retiring: !args.release_at_once,
        dump_plans: args.dump_plans.clone(),
        min_residency_frames: args.min_residency_frames,
        error_model: if args.error_model == "geometric" {
            mipstream::plan::LossModel::Geometric
        } else {
            // `measured`, and `both` (whose geometric row is its own strategy)
            mipstream::plan::LossModel::Measured
        },
        ..Default::default()
    };
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} frames, {eta} left")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let result = bench::run(&opts, |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        if bar.message() != p.stage {
            bar.set_message(p.stage.to_string());
        }
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    print!("{}", result.table());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&result.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &args.plots {
        for f in bench::write_plots(&result, dir).map_err(|e| e.to_string())? {
            println!("wrote {}", f.display());
        }
    }
    Ok(())
}

/// Arguments of `mipstream bench-planner`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchPlannerArgs {
    /// Objects in the synthetic scene.
    #[arg(long)]
    objects: usize,
    /// Textures they share.
    #[arg(long)]
    textures: usize,
    /// Re-plans to time.
    #[arg(long, default_value_t = 200)]
    frames: usize,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Plan without the per-plan LP certificate (what it costs is the
    /// difference).
    #[arg(long)]
    no_certify: bool,
}

pub(crate) fn run_planner(args: BenchPlannerArgs) -> Result<(), String> {
    if args.objects == 0 || args.textures == 0 || args.frames == 0 {
        return Err("--objects, --textures and --frames must be at least 1".into());
    }
    let r =
        bench::planner::bench_planner(args.objects, args.textures, args.frames, !args.no_certify);
    println!(
        "{} objects, {} textures{}: re-plan p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over {} frames",
        r.objects,
        r.textures,
        if r.certify { ", certified" } else { ", no certificate" },
        r.update_ms_p50,
        r.update_ms_p99,
        r.update_ms_max,
        r.frames
    );
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Arguments of `mipstream bench-update`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchUpdateArgs {
    /// Objects in the field.
    #[arg(long, default_value_t = 100_000)]
    objects: usize,
    /// Textures they share (the built-in scene's twenty, registered over
    /// and over).
    #[arg(long, default_value_t = 10_000)]
    textures: usize,
    /// Updates to time per upload cap (the p99 is the 10th slowest of 1000).
    #[arg(long, default_value_t = 1000)]
    frames: usize,
    /// Updates run first along the same path and timed apart (the JSON's
    /// `warmup_update_ms`): the first updates of a process pay for the
    /// driver's memory the first time it is touched.
    #[arg(long, default_value_t = 300)]
    warmup: usize,
    /// Upload caps to run, MiB per frame, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "2,8,32")]
    upload_caps_mb: Vec<u64>,
    /// Where the plan runs: `inline` (inside `update`,
    /// `PlanThread::Inline`), `background` (on the planner thread,
    /// `PlanThread::Background`: the default streamer's choice from 2,048
    /// textures), or `both`, each a run per cap.
    #[arg(long, value_enum, default_value_t = PlanThread::Both)]
    plan: PlanThread,
    /// Who puts texels into GPU staging: `render` (`Queue::write_texture`
    /// in `update`, the default streamer), `loaders` (the loader threads,
    /// `StreamerOptions::loader_staging_bytes` at twice the cap), or `both`,
    /// each a run per cap and plan mode.
    #[arg(long, value_enum, default_value_t = Staging::Render)]
    staging: Staging,
    /// `paced`: updates 2 ms apart, loads arrive as fast as the loader
    /// threads go; `ready`: after each update (untimed) wait for the loads
    /// it asked for, so that the upload cap limits what each update uploads.
    #[arg(long, value_enum, default_value_t = Loads::Paced)]
    loads: Loads,
    /// Texture levels written per update, uploaded or copied on the GPU
    /// (`StreamerOptions::copies_per_frame`; 0: no limit).
    #[arg(long, default_value_t = 0)]
    copies_per_frame: u32,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Where `bench-update` runs the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PlanThread {
    Inline,
    Background,
    Both,
}

/// Who fills upload staging in `bench-update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Staging {
    Render,
    Loaders,
    Both,
}

/// How loads arrive in `bench-update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Loads {
    Paced,
    Ready,
}

pub(crate) fn run_update(args: BenchUpdateArgs) -> Result<(), String> {
    let opts = bench::update::UpdateBenchOptions {
        objects: args.objects,
        textures: args.textures,
        frames: args.frames,
        warmup: args.warmup,
        upload_caps_mib: args.upload_caps_mb.clone(),
        plan_modes: match args.plan {
            PlanThread::Inline => vec![false],
            PlanThread::Background => vec![true],
            PlanThread::Both => vec![false, true],
        },
        staging_modes: match args.staging {
            Staging::Render => vec![false],
            Staging::Loaders => vec![true],
            Staging::Both => vec![false, true],
        },
        ready_loads: args.loads == Loads::Ready,
        copies_per_frame: args.copies_per_frame,
        backends: backends(&args.backend)?,
        cache_dir: mipstream_tools::scene::BuiltinScene::default_cache_dir(),
    };
    let bar = ProgressBar::new(args.frames as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} updates")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let r = bench::update::bench_update(&opts, |cap, done, _| {
        bar.set_message(format!("upload cap {cap} MiB"));
        bar.set_position(done as u64);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    println!(
        "{} objects, {} textures, {} updates per cap after {} of warm-up on {} ({}), loads {}",
        r.objects,
        r.textures,
        r.frames,
        r.warmup,
        r.adapter,
        r.backend,
        if args.loads == Loads::Ready {
            "ready before each update"
        } else {
            "paced"
        }
    );
    println!(
        "the default streamer (PlanThread::Auto) plans {} at {} textures",
        if r.default_plan_in_background {
            "on the planner thread (the background rows)"
        } else {
            "inside update (the inline rows)"
        },
        r.textures
    );
    let mib = |b: f64| format!("{:.2} MiB", b / (1u64 << 20) as f64);
    println!(
        "plan       | staging | cap MiB | update p50 / p99 / max ms | plan p50 / p99 ms | rest p50 / p99 ms | of it submit p50 / p99 ms | planner thread p50 / p99 ms | plan age p50 / p99 / max | uploaded per update mean / max | loader-staged mean | levels written per update mean / max | warm-up update p50 / p99 ms, uploaded mean"
    );
    for run in &r.runs {
        println!(
            "{:<10} | {:<7} | {:>7} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {} / {} / {} | {} / {} | {} | {:.1} / {} | {:.3} / {:.3}, {}",
            if run.plan_in_background { "background" } else { "inline" },
            if run.loader_staging_bytes > 0 { "loaders" } else { "render" },
            run.upload_cap_mib,
            run.update_ms[0],
            run.update_ms[1],
            run.update_ms[2],
            run.plan_ms[0],
            run.plan_ms[1],
            run.apply_ms[0],
            run.apply_ms[1],
            run.submit_ms[0],
            run.submit_ms[1],
            run.plan_worker_ms[0],
            run.plan_worker_ms[1],
            run.plan_age[0],
            run.plan_age[1],
            run.plan_age[2],
            mib(run.upload_bytes_mean),
            mib(run.upload_bytes_max as f64),
            mib(run.loader_staged_bytes_mean),
            run.copies_mean,
            run.copies_max,
            run.warmup_update_ms[0],
            run.warmup_update_ms[1],
            mib(run.warmup_upload_bytes_mean),
        );
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Arguments of `mipstream bench-uploads`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchUploadsArgs {
    /// Updates to time per run.
    #[arg(long, default_value_t = 300)]
    frames: usize,
    /// Updates between camera jumps (each a burst of loads).
    #[arg(long, default_value_t = 30)]
    jump_every: usize,
    /// Places the camera visits in turn (ten textures each), over and over:
    /// the scene stays the same size whatever --frames is.
    #[arg(long, default_value_t = 30)]
    groups: usize,
    /// Updates run first along the same path (the same groups) and timed
    /// apart (the JSON's `warmup_update_ms`): the first updates of a
    /// process pay for the driver's memory the first time it is touched.
    #[arg(long, default_value_t = 300)]
    warmup: usize,
    /// A folder of KTX2 textures (the first twenty, by name, are used).
    #[arg(long, default_value = "../shared/data/sponza-textures")]
    textures: PathBuf,
    /// Upload caps to run, MiB per update, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "2,8,32")]
    upload_caps_mb: Vec<u64>,
    /// Who puts texels into GPU staging: `render` (`Queue::write_texture`
    /// in `update`), `loaders` (the loader threads,
    /// `StreamerOptions::loader_staging_bytes` at twice the cap), or `both`.
    #[arg(long, value_enum, default_value_t = Staging::Both)]
    staging: Staging,
    /// Texture levels written per update, uploaded or copied on the GPU
    /// (`StreamerOptions::copies_per_frame`; 0: no limit).
    #[arg(long, default_value_t = 0)]
    copies_per_frame: u32,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The `.ktx2` files in `dir`, sorted by name.
fn ktx2_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ktx2"))
        .collect();
    files.sort();
    Ok(files)
}

pub(crate) fn run_uploads(args: BenchUploadsArgs) -> Result<(), String> {
    let opts = bench::uploads::UploadBenchOptions {
        frames: args.frames,
        jump_every: args.jump_every,
        groups: args.groups,
        warmup: args.warmup,
        upload_caps_mib: args.upload_caps_mb.clone(),
        staging_modes: match args.staging {
            Staging::Render => vec![false],
            Staging::Loaders => vec![true],
            Staging::Both => vec![false, true],
        },
        copies_per_frame: args.copies_per_frame,
        backends: backends(&args.backend)?,
        textures: ktx2_files(&args.textures)?,
    };
    let runs = opts.staging_modes.len() * opts.upload_caps_mib.len();
    let bar = ProgressBar::new((runs * args.frames) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} updates")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let frames = args.frames;
    let r = bench::uploads::bench_uploads(&opts, |run, done| {
        let warming = if done == 0 { " (warm-up)" } else { "" };
        bar.set_message(format!("run {} of {runs}{warming}", run + 1));
        bar.set_position((run * frames + done) as u64);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let copies = match args.copies_per_frame {
        0 => "no limit".to_string(),
        n => n.to_string(),
    };
    println!(
        "{} updates per run after {} untimed along the same path, on {} ({}), the camera jumping every {} updates, each update's loads waited for (untimed), texture levels written per update: {copies}",
        r.frames, r.warmup, r.adapter, r.backend, args.jump_every
    );
    let mib = |b: f64| format!("{:.2} MiB", b / (1u64 << 20) as f64);
    println!(
        "staging | cap MiB | update p50 / p99 / max ms | besides the plan p50 / p99 ms | submit p50 / p99 ms | less the submit p50 / p99 / max ms | updates at >= half the cap: count, p50 / p99 / max ms | uploaded per update mean / max | loader-staged mean | sent back for staging per update | grown per update mean / max | levels written per update mean / max | levels behind the plan, mean | warm-up's update p50 / p99 ms | slowest 1%: count, update ms (of it submit), grown + shrunk, levels written, uploaded (loader-staged)"
    );
    for run in &r.runs {
        println!(
            "{:<7} | {:>7} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} / {:.3} | {}, {:.3} / {:.3} / {:.3} | {} / {} | {} | {:.2} | {:.2} / {} | {:.1} / {} | {:.1} | {:.3} / {:.3} | {}, {:.3} ({:.3}), {:.1} + {:.1}, {:.1}, {} ({})",
            if run.loader_staging_bytes > 0 {
                "loaders"
            } else {
                "render"
            },
            run.upload_cap_mib,
            run.update_ms[0],
            run.update_ms[1],
            run.update_ms[2],
            run.apply_ms[0],
            run.apply_ms[1],
            run.submit_ms[0],
            run.submit_ms[1],
            run.without_submit_ms[0],
            run.without_submit_ms[1],
            run.without_submit_ms[2],
            run.at_cap_updates,
            run.at_cap_update_ms[0],
            run.at_cap_update_ms[1],
            run.at_cap_update_ms[2],
            mib(run.upload_bytes_mean),
            mib(run.upload_bytes_max as f64),
            mib(run.loader_staged_bytes_mean),
            run.restaged_mean,
            run.grown_mean,
            run.grown_max,
            run.copies_mean,
            run.copies_max,
            run.behind_mean,
            run.warmup_update_ms[0],
            run.warmup_update_ms[1],
            run.slowest.updates,
            run.slowest.update_ms,
            run.slowest.submit_ms,
            run.slowest.grown,
            run.slowest.shrunk,
            run.slowest.copies,
            mib(run.slowest.upload_bytes),
            mib(run.slowest.loader_staged_bytes),
        );
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Arguments of `mipstream bench-transcode`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchTranscodeArgs {
    /// The image (PNG or JPEG) encoded to ETC1S and to UASTC for the run.
    /// Default: Kodak's kodim23 from the shared test data.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Seconds each transcoder runs per source/target pair.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Print the results as JSON on stdout instead of a table; with a path,
    /// write them there too.
    #[arg(long, num_args = 0..=1)]
    json: Option<Option<PathBuf>>,
}

pub(crate) fn run_transcode(args: BenchTranscodeArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds <= 600.0) {
        return Err("--seconds must be more than 0 and at most 600".into());
    }
    let image = args.image.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/data/ktx2-samples/basis-universal/kodim23.png")
    });
    if !image.is_file() {
        return Err(format!(
            "{}: no such image; pass one with --image (any PNG or JPEG)",
            image.display()
        ));
    }
    let total = bench::transcode::TARGETS.len() as u64 * 2;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("encoding, then timing [{bar:40}] {pos}/{len} pairs")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    bar.tick();
    let r = bench::transcode::bench_transcode(&image, args.seconds, |done, _| {
        bar.set_position(done as u64)
    })?;
    bar.finish_and_clear();
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r.to_json()).map_err(|e| e.to_string())?;
        println!("{text}");
        if let Some(path) = path {
            std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        return Ok(());
    }
    println!(
        "{} ({}x{}), one level, one core, output MiB/s, median of alternating rounds ({} s per transcoder and pair)",
        r.image, r.width, r.height, r.seconds
    );
    println!("source -> target | shipped (transcoder) | C++ 1.16 reference | ratio | basisu's own path | no chroma filter (ratio)");
    for p in &r.pairs {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        println!(
            "{} -> {} | {:.1} ({}) | {:.1} | {:.2} | {} | {}",
            p.source,
            p.target.name(),
            p.shipped_mib_s,
            p.shipped_transcoder,
            p.reference_mib_s,
            p.ratio(),
            opt(p.rust_mib_s),
            p.same_output_mib_s.map_or("-".to_string(), |v| format!(
                "{v:.1} ({:.2})",
                p.ratio_same_output()
            )),
        );
    }
    Ok(())
}
