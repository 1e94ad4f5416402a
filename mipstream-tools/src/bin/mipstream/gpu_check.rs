//! `mipstream gpu-check`: the proof on a GPU ([`mipstream_tools::gpu_check`]).

use mipstream_tools::gpu_check::{self, GpuCheckOptions, Size};
use std::path::PathBuf;

/// Arguments of `mipstream gpu-check`.
#[derive(Debug, clap::Args)]
pub(crate) struct GpuCheckArgs {
    /// Where `gpu-check.json` and `gpu-check.md` go (default: `$OUT`, else
    /// `gpu-check-out`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A folder of `.ktx2` textures (the bundle's Sponza subset; default:
    /// the built-in scene's textures, and no Sponza bench).
    #[arg(long)]
    textures: Option<PathBuf>,
    /// Every section at small sizes (CI on lavapipe).
    #[arg(long)]
    short: bool,
    /// `vulkan` or `gl` (default: WGPU_BACKEND, else any).
    #[arg(long)]
    backend: Option<String>,
}

pub(crate) fn run(args: GpuCheckArgs) -> Result<(), String> {
    let out = args
        .out
        .or_else(|| std::env::var_os("OUT").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("gpu-check-out"));
    let opts = GpuCheckOptions {
        out: out.clone(),
        textures_dir: args.textures,
        size: if args.short { Size::Short } else { Size::Full },
        backends: crate::bench::backends(&args.backend)?,
        cache_dir: mipstream_tools::scene::BuiltinScene::default_cache_dir(),
    };
    let start = std::time::Instant::now();
    let report = gpu_check::run(&opts, |section| {
        eprintln!("[{:6.1} s] {section}", start.elapsed().as_secs_f64());
    })
    .map_err(|e| e.to_string())?;
    report.write(&out).map_err(|e| e.to_string())?;
    print!("{}", report.markdown());
    println!("\nwrote {}", out.join("gpu-check.md").display());
    if report.passed() {
        Ok(())
    } else {
        let failed: Vec<&str> = report
            .sections
            .iter()
            .filter(|s| !s.passed)
            .map(|s| s.name)
            .collect();
        Err(format!("gpu-check failed: {}", failed.join(", ")))
    }
}
