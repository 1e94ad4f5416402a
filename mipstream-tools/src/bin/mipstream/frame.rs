//! `mipstream bench-frame`: what streaming and budget cuts cost an engine's
//! render loop ([`mipstream_tools::bench::frame`]).

use indicatif::{ProgressBar, ProgressStyle};
use mipstream_tools::bench::frame::{bench_frame, FrameBenchOptions};
use std::path::PathBuf;

/// Arguments of `mipstream bench-frame`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchFrameArgs {
    /// A directory of `.ktx2` textures (the first `--textures` by name;
    /// default: the built-in scene's).
    #[arg(long)]
    textures_dir: Option<PathBuf>,
    /// Textures streamed.
    #[arg(long, default_value_t = 20)]
    textures: usize,
    /// Frames per run; the budget is cut at a quarter, half and three
    /// quarters of them.
    #[arg(long, default_value_t = 200)]
    frames: usize,
    /// Runs per upload cap.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Upload caps, MiB per frame, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "8")]
    upload_caps_mb: Vec<u64>,
    /// The engine's target, WIDTHxHEIGHT.
    #[arg(long, default_value = "320x180")]
    size: String,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
    /// Write the results here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub(crate) fn parse_size(s: &str) -> Result<glam::UVec2, String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("--size {s}: expected WIDTHxHEIGHT"))?;
    let n = |v: &str| {
        v.parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("--size {s}: expected WIDTHxHEIGHT"))
    };
    Ok(glam::UVec2::new(n(w)?, n(h)?))
}

pub(crate) fn run(args: BenchFrameArgs) -> Result<(), String> {
    let opts = FrameBenchOptions {
        textures_dir: args.textures_dir.clone(),
        textures: args.textures,
        frames: args.frames,
        runs: args.runs,
        upload_caps_mib: args.upload_caps_mb.clone(),
        size: parse_size(&args.size)?,
        backends: super::bench::backends(&args.backend)?,
        ..Default::default()
    };
    let bar = ProgressBar::new((args.frames * args.runs * args.upload_caps_mb.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} frames")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let r = bench_frame(&opts, |cap, run, _| {
        bar.set_message(format!("upload cap {cap} MiB, run {}", run + 1));
        bar.inc(1);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    print!("{}", r.to_markdown());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r.to_json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
