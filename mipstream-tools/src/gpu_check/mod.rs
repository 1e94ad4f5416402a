//! `mipstream gpu-check`: the proof on a GPU, in one run of a binary built
//! beforehand (`.ci/gpu-check --build` bundles it with a subset of the
//! Sponza textures), with no compiler and no network on the machine.
//!
//! It prints the adapter, its driver and compressed formats, then runs:
//! - **checks** that do not depend on timing: the soak (invariants every
//!   frame, wgpu's count never above the books or, outside an update giving
//!   back, the budget; injected I/O errors, out-of-memory events and budget
//!   changes), and the engine loop of `bench-frame`, whose updates must
//!   never wait for the GPU;
//! - **memory four ways** at budgets that bind: mipstream's books, wgpu's
//!   counters, the allocator's allocated and reserved bytes and the
//!   driver's heap usage (`VK_EXT_memory_budget`), with their differences;
//! - **[`Budget::Auto`](mipstream::streamer::Budget::Auto)** on the driver's
//!   budget while a second allocation takes memory mid-run (on a driver
//!   without the extension, lavapipe, through a stand-in heap whose usage
//!   is wgpu's count);
//! - **the render loop's frame time** with streaming on and frozen, at
//!   upload caps of 2, 8 and 32 MiB (`bench-frame`);
//! - **`mipstream bench`** on the Sponza textures and the built-in scene at
//!   1920x1080 and 3840x2160.
//!
//! Everything lands in the output folder as `gpu-check.json` and
//! `gpu-check.md`. [`Size::Short`] (`--short`, what `.ci/gpu-check --local`
//! runs on lavapipe in CI) runs the same sections at small sizes.

pub mod memory;

use crate::bench::frame::{bench_frame, texture_files, FrameBenchOptions};
use crate::bench::{self, BenchOptions};
use crate::soak::{self, FaultSet, SoakOptions};
use crate::source::SceneSource;
use glam::UVec2;
use mipstream::gpu;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How big a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// The real GPU's: full sizes, in about five minutes on a desktop GPU.
    Full,
    /// CI's on lavapipe: every section, small.
    Short,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct GpuCheckOptions {
    /// Where `gpu-check.json` and `gpu-check.md` go.
    pub out: PathBuf,
    /// A folder of `.ktx2` textures (the bundle's Sponza subset); `None`:
    /// the built-in scene's, and the Sponza bench is skipped.
    pub textures_dir: Option<PathBuf>,
    /// How big.
    pub size: Size,
    /// The backends to pick the adapter from (`None`: any).
    pub backends: Option<wgpu::Backends>,
    /// Where the built-in scene's cooked textures are cached.
    pub cache_dir: PathBuf,
}

/// Why the check could not run (a check that ran and failed is a result).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// No adapter.
    #[error(transparent)]
    Gpu(#[from] gpu::GpuInitError),
    /// Textures could not be read or cooked.
    #[error("textures: {0}")]
    Textures(String),
    /// The streamer refused the scene.
    #[error(transparent)]
    Streamer(#[from] mipstream::streamer::StreamerError),
    /// A section could not run.
    #[error("{0}: {1}")]
    Section(&'static str, String),
    /// The output folder.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

from_streamer_errors!(CheckError);

/// One section's outcome.
#[derive(Debug, Clone)]
pub struct Section {
    /// Its name.
    pub name: &'static str,
    /// Whether what it checks held.
    pub passed: bool,
    /// Seconds it took.
    pub seconds: f64,
    /// Its summary.
    pub markdown: String,
    /// Its numbers.
    pub json: serde_json::Value,
}

/// The whole run.
#[derive(Debug, Clone)]
pub struct GpuCheckReport {
    /// The adapter, its driver and formats.
    pub adapter: serde_json::Value,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

impl GpuCheckReport {
    /// Whether every section passed.
    pub fn passed(&self) -> bool {
        self.sections.iter().all(|s| s.passed)
    }

    /// The report as markdown.
    pub fn markdown(&self) -> String {
        let a = &self.adapter;
        let mut md = format!(
            "# mipstream gpu-check\n\n- adapter: {} ({}, {})\n- driver: {} {}\n- compressed formats: {}\n- driver budget: {}\n- mipstream {}, commit {}\n\n",
            a["name"].as_str().unwrap_or(""),
            a["backend"].as_str().unwrap_or(""),
            a["device_type"].as_str().unwrap_or(""),
            a["driver"].as_str().unwrap_or(""),
            a["driver_info"].as_str().unwrap_or(""),
            a["compressed_formats"],
            a["driver_budget"].as_str().unwrap_or(""),
            env!("CARGO_PKG_VERSION"),
            option_env!("MIPSTREAM_COMMIT").unwrap_or("unknown"),
        );
        md.push_str("| section | result | seconds |\n|---|---|---|\n");
        for s in &self.sections {
            md.push_str(&format!(
                "| {} | {} | {:.1} |\n",
                s.name,
                if s.passed { "passed" } else { "FAILED" },
                s.seconds
            ));
        }
        for s in &self.sections {
            md.push_str(&format!("\n## {}\n\n{}", s.name, s.markdown));
        }
        md
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "adapter": self.adapter,
            "mipstream": env!("CARGO_PKG_VERSION"),
            "commit": option_env!("MIPSTREAM_COMMIT"),
            "passed": self.passed(),
            "sections": self.sections.iter().map(|s| serde_json::json!({
                "name": s.name,
                "passed": s.passed,
                "seconds": s.seconds,
                "results": s.json,
            })).collect::<Vec<_>>(),
        })
    }

    /// Writes `gpu-check.json` and `gpu-check.md` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), CheckError> {
        std::fs::create_dir_all(dir).map_err(|e| CheckError::Io(dir.into(), e))?;
        let json = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        for (name, text) in [("gpu-check.json", json), ("gpu-check.md", self.markdown())] {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| CheckError::Io(p, e))?;
        }
        Ok(())
    }
}

/// The adapter as the report shows it.
fn adapter(g: &gpu::HeadlessGpu) -> serde_json::Value {
    let info = g.adapter.get_info();
    let f = g.device.features();
    let formats: Vec<&str> = [
        (wgpu::Features::TEXTURE_COMPRESSION_BC, "BC"),
        (wgpu::Features::TEXTURE_COMPRESSION_ETC2, "ETC2"),
        (wgpu::Features::TEXTURE_COMPRESSION_ASTC, "ASTC"),
    ]
    .into_iter()
    .filter(|(feature, _)| f.contains(*feature))
    .map(|(_, name)| name)
    .collect();
    let driver = gpu::memory::driver_budget(&g.device);
    let budget = match driver.as_ref().and_then(|d| d.device_local_budget()) {
        Some(b) => format!(
            "{} device-local (VK_EXT_memory_budget)",
            gpu::memory::human_bytes(b)
        ),
        None => "not reported".to_string(),
    };
    serde_json::json!({
        "name": info.name,
        "backend": format!("{:?}", info.backend),
        "device_type": format!("{:?}", info.device_type),
        "driver": info.driver,
        "driver_info": info.driver_info,
        "compressed_formats": formats,
        "driver_budget": budget,
        "allocator_report": gpu::memory::allocator_summary(&g.device).is_some(),
    })
}

fn timed(
    name: &'static str,
    progress: &mut dyn FnMut(&str),
    f: impl FnOnce() -> Result<(bool, String, serde_json::Value), CheckError>,
) -> Result<Section, CheckError> {
    progress(name);
    let start = Instant::now();
    let (passed, markdown, json) = f()?;
    Ok(Section {
        name,
        passed,
        seconds: start.elapsed().as_secs_f64(),
        markdown,
        json,
    })
}

/// The report so far, written after every section, so a run cut short
/// (the bundle's 5-minute limit) leaves what it measured.
struct Sections<'a> {
    report: GpuCheckReport,
    out: &'a Path,
}

impl Sections<'_> {
    fn push(&mut self, s: Section) -> Result<(), CheckError> {
        self.report.sections.push(s);
        self.report.write(self.out)
    }
}

/// Runs every section, writing the report into `opts.out` after each;
/// `progress(section)` as each starts.
pub fn run(
    opts: &GpuCheckOptions,
    mut progress: impl FnMut(&str),
) -> Result<GpuCheckReport, CheckError> {
    let progress: &mut dyn FnMut(&str) = &mut progress;
    let short = opts.size == Size::Short;
    let g = gpu::headless(opts.backends)?;
    // the folder's first 20 by name, or the built-in scene's
    let files = texture_files(opts.textures_dir.as_deref(), 20, &opts.cache_dir)
        .map_err(CheckError::Textures)?;
    let backends = Some(g.adapter.get_info().backend.into());
    let mut sections = Sections {
        report: GpuCheckReport {
            adapter: adapter(&g),
            sections: Vec::new(),
        },
        out: &opts.out,
    };
    let scene = || match &opts.textures_dir {
        Some(dir) => SceneSource::Textures(dir.clone()),
        None => SceneSource::Builtin,
    };
    sections.push(timed("soak", progress, || {
        let o = SoakOptions {
            scene: scene(),
            frames: if short { 300 } else { 1500 },
            seed: 7,
            faults: FaultSet::parse("io,oom,budget")
                .map_err(|e| CheckError::Section("soak", e.to_string()))?,
            backends,
            cache_dir: opts.cache_dir.clone(),
            ..Default::default()
        };
        let r = soak::run(&o, |_, _| {}).map_err(|e| CheckError::Section("soak", e.to_string()))?;
        Ok((r.passed(), format!("{}\n", r.summary()), r.to_json()))
    })?)?;
    let size = if short {
        UVec2::new(160, 90)
    } else {
        UVec2::new(1920, 1080)
    };
    sections.push(timed("memory four ways", progress, || {
        memory::four_ways(&g, &files, &[0.25, 0.5], if short { 60 } else { 240 }, size)
    })?)?;
    sections.push(timed("Budget::Auto", progress, || {
        memory::auto_budget(&g, &files, if short { 150 } else { 300 }, 1 << 30, size)
    })?)?;
    sections.push(timed("render loop", progress, || {
        let o = FrameBenchOptions {
            textures_dir: opts.textures_dir.clone(),
            textures: 20,
            frames: if short { 64 } else { 200 },
            runs: if short { 1 } else { 3 },
            upload_caps_mib: vec![2, 8, 32],
            size,
            backends,
            cache_dir: opts.cache_dir.clone(),
        };
        let r = bench_frame(&o, |_, _, _| {})
            .map_err(|e| CheckError::Section("render loop", e.to_string()))?;
        let passed = r
            .caps
            .iter()
            .all(|c| c.gpu_waits == 0 && c.moments_over_budget_by_wgpu.unwrap_or(0) == 0);
        Ok((passed, r.to_markdown(), r.to_json()))
    })?)?;
    let mut scenes = vec![("built-in scene", SceneSource::Builtin)];
    if let Some(dir) = &opts.textures_dir {
        scenes.insert(0, ("Sponza textures", SceneSource::Textures(dir.clone())));
    }
    let sizes = if short {
        vec![UVec2::new(320, 180)]
    } else {
        vec![UVec2::new(1920, 1080), UVec2::new(3840, 2160)]
    };
    sections.push(timed("bench", progress, || {
        let (mut md, mut runs, mut passed) = (String::new(), Vec::new(), true);
        for (name, source) in &scenes {
            for &size in &sizes {
                let o = BenchOptions {
                    scene: source.clone(),
                    frames: if short { 60 } else { 180 },
                    quality_every: if short { 20 } else { 60 },
                    size,
                    backends,
                    cache_dir: opts.cache_dir.clone(),
                    ..Default::default()
                };
                let r = bench::run(&o, |_| {})
                    .map_err(|e| CheckError::Section("bench", e.to_string()))?;
                // mipstream never over the budget by wgpu's count
                passed &= r
                    .strategies
                    .iter()
                    .filter(|s| s.strategy == bench::Strategy::Mipstream)
                    .all(|s| s.frames_over_budget_by_wgpu.unwrap_or(0) == 0);
                md.push_str(&format!(
                    "### {name} at {}x{}\n\n```\n{}```\n\n",
                    size.x,
                    size.y,
                    r.table()
                ));
                runs.push(r.to_json());
            }
        }
        Ok((passed, md, serde_json::Value::Array(runs)))
    })?)?;
    Ok(sections.report)
}
