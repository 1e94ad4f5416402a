//! `mipstream soak`.

use indicatif::{ProgressBar, ProgressStyle};
use mipstream_tools::soak::{self, FaultSet, SoakOptions};
use mipstream_tools::source::SceneSource;
use std::path::PathBuf;

/// Arguments of `mipstream soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakArgs {
    /// `default` (the built-in scene), `sponza` (the 51 Sponza textures in
    /// ../shared/data) or a folder of KTX2 textures.
    #[arg(long, default_value = "default")]
    scene: String,
    /// Frames of abuse.
    #[arg(long, default_value_t = 2000)]
    frames: u64,
    /// Seed of every random choice (camera, budgets, objects, faults).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Faults to inject, comma-separated: io (failing and short reads,
    /// failing transcodes), slow (200 ms reads), oom (refused GPU
    /// allocations), budget (random budget changes); `all` or `none`.
    #[arg(long, default_value = "none")]
    faults: String,
    /// The loader staging reserve in MiB (`StreamerOptions::loader_staging_bytes`;
    /// 0: off).
    #[arg(long, default_value_t = 0)]
    loader_staging_mb: u64,
    /// Texture levels written per update (`StreamerOptions::copies_per_frame`;
    /// 0: no limit).
    #[arg(long, default_value_t = 0)]
    copies_per_frame: u32,
    /// Plan on the streamer's planner thread (`PlanThread::Background`;
    /// without it the default, `PlanThread::Auto`, plans inside `update` on
    /// the built-in scene).
    #[arg(long)]
    plan_in_background: bool,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub(crate) fn run(args: SoakArgs) -> Result<(), String> {
    let scene = SceneSource::parse(&args.scene, &crate::bench::shared_data())
        .map_err(|e| format!("--scene {e}"))?;
    let options = SoakOptions {
        scene,
        frames: args.frames,
        seed: args.seed,
        faults: FaultSet::parse(&args.faults).map_err(|e| format!("--faults: {e}"))?,
        backends: crate::bench::backends(&args.backend)?,
        loader_staging_bytes: args.loader_staging_mb << 20,
        copies_per_frame: args.copies_per_frame,
        plan_thread: if args.plan_in_background {
            mipstream::streamer::PlanThread::Background
        } else {
            mipstream::streamer::PlanThread::default()
        },
        ..SoakOptions::default()
    };
    let bar = ProgressBar::new(args.frames);
    bar.set_style(
        ProgressStyle::with_template("soak [{bar:40}] {pos}/{len} frames, {eta} left")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let report =
        soak::run(&options, |done, _| bar.set_position(done)).map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    println!("{}", report.summary());
    for m in &report.violation_messages {
        println!("  {m}");
    }
    for m in &report.unrecovered {
        println!("  not recovered: {m}");
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if report.passed() {
        Ok(())
    } else {
        Err(format!(
            "soak failed: {} invariant violations, {} frames over budget, {} panics, {} leaked textures, {} leaked buffers, recovered: {}",
            report.invariant_violations,
            report.frames_over_budget,
            report.panics,
            report.leaked_textures,
            report.leaked_buffers,
            report.recovered
        ))
    }
}
