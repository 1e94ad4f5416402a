//! The demo viewer: the built-in scene streamed under a GPU memory budget you
//! drag, with live charts, a texture table and a mip heat-map.
//!
//! ```text
//! cargo run --release --example viewer                 # a window
//! cargo run --release --example viewer -- --headless --frames 120 --screenshot out.png
//! ```
//!
//! Options:
//!   --scene PATH         a folder of KTX2 textures on the built-in boxes
//!                        (e.g. ../shared/data/sponza-textures), a glTF scene
//!                        (.gltf/.glb, cooked on first use) or a cooked scene.json
//!   --cross-fade N       frames of dithered cross-fade between mesh LODs (default 8; 0: pop)
//!   --budget-mb MB       starting budget (default: a third of full residency)
//!   --budget-of-working-set F
//!                        budget F times the camera path's working set at the
//!                        scene's size (below 1 it binds)
//!   --upload-cap-mb MB   upload bytes per frame (default 2)
//!   --size WxH           window or image size (default 1600x900)
//!   --path               play the camera path (loops; a glTF scene's own animated
//!                        camera where it has one)
//!   --at SECONDS         start where the camera path is at this time
//!   --mode normal|heatmap|split-unreal|split-unity|split-full|error
//!                        split-*: mipstream on the left, an engine's rule (or
//!                        full resolution) on the right, both scored against
//!                        full resolution; error: FLIP heat map against full
//!   --render-scale F     scene resolution as a fraction of its screen area
//!                        (default 1; 0.5 in a window on a software adapter)
//!   --headless           render offscreen (no display needed)
//!   --frames N           stop after N frames (headless default 120; window: run until closed)
//!   --screenshot FILE    write the last frame as PNG
//!   --settle             before the screenshot, stream until converged
//!   --no-ui              hide the panel
//!   --lockstep           every frame waits for its loads (repeatable pictures)
//!   --feedback           the renderer reports GPU feedback; the panel shows
//!                        per texture the level the GPU sampled beside the plan's
//!   --fuse-feedback      the plan fuses the feedback (implies --feedback)
//!
//! `WGPU_BACKEND=vulkan` or `gl` chooses the adapter. Without a display the
//! window cannot open; the error says to use `--headless` or `xvfb-run`.

use glam::UVec2;
use mipstream_tools::source::SceneSource;
use mipstream_tools::viewer::{run_headless, run_window, Mode, ViewerOptions};

const USAGE: &str = "usage: viewer [--scene PATH] [--cross-fade N] [--budget-mb MB] [--upload-cap-mb MB] [--size WxH] [--path] \
[--at SECONDS] [--mode normal|heatmap|split-unreal|split-unity|split-full|error] [--render-scale F] [--headless] [--frames N] [--screenshot FILE] \
[--settle] [--no-ui] [--lockstep] [--budget-of-working-set F] [--feedback] [--fuse-feedback]";

fn parse(args: &[String]) -> Result<(ViewerOptions, bool), String> {
    let mut o = ViewerOptions {
        frames: 0,
        ..Default::default()
    };
    let mut headless = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or(format!("{a} needs a value\n{USAGE}"))
        };
        let positive = |v: String, what: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or(format!("{a} {v}: expected {what}"))
        };
        match a.as_str() {
            "--budget-mb" => o.budget_mb = Some(positive(value()?, "a positive number of MiB")?),
            "--upload-cap-mb" => o.upload_cap_mb = positive(value()?, "a positive number of MiB")?,
            "--size" => {
                let v = value()?;
                let (w, h) = v
                    .split_once('x')
                    .ok_or(format!("--size {v}: expected WxH"))?;
                let dim = |s: &str| s.parse::<u32>().ok().filter(|d| (16..=8192).contains(d));
                o.size = UVec2::new(
                    dim(w).ok_or(format!("--size {v}: width 16 to 8192"))?,
                    dim(h).ok_or(format!("--size {v}: height 16 to 8192"))?,
                );
            }
            "--scene" => {
                let shared = std::env::var_os("MIPSTREAM_SHARED_DATA")
                    .map_or_else(|| "../shared/data".into(), std::path::PathBuf::from);
                o.scene =
                    SceneSource::parse(&value()?, &shared).map_err(|e| format!("--scene {e}"))?;
            }
            "--path" => o.path = true,
            "--at" => {
                let v = value()?;
                o.path_start = Some(
                    v.parse::<f32>()
                        .ok()
                        .filter(|t| t.is_finite() && *t >= 0.0)
                        .ok_or(format!("--at {v}: expected seconds along the path"))?,
                )
            }
            "--mode" => {
                let m = value()?;
                o.mode = match Mode::parse(&m) {
                    Some(mode) => mode,
                    None => {
                        return Err(format!(
                            "--mode {m}: expected one of {}",
                            Mode::ALL.map(Mode::key).join(", ")
                        ))
                    }
                }
            }
            "--render-scale" => {
                let v = value()?;
                o.render_scale = Some(
                    v.parse::<f32>()
                        .ok()
                        .filter(|s| (0.1..=1.0).contains(s))
                        .ok_or(format!("--render-scale {v}: expected 0.1 to 1"))?,
                )
            }
            "--cross-fade" => {
                let v = value()?;
                o.cross_fade_frames = v
                    .parse()
                    .map_err(|_| format!("--cross-fade {v}: expected a number of frames"))?;
            }
            "--headless" => headless = true,
            "--frames" => {
                let v = value()?;
                o.frames = v
                    .parse()
                    .map_err(|_| format!("--frames {v}: expected a frame count"))?
            }
            "--screenshot" => o.screenshot = Some(value()?.into()),
            "--settle" => o.settle = true,
            "--no-ui" => o.ui = false,
            "--lockstep" => o.lockstep = true,
            "--feedback" => o.feedback = true,
            "--fuse-feedback" => o.fuse_feedback = true,
            "--budget-of-working-set" => {
                let v = value()?;
                o.budget_of_working_set = Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite() && *f > 0.0)
                        .ok_or(format!(
                            "--budget-of-working-set {v}: expected a positive fraction"
                        ))?,
                )
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    if headless && o.frames == 0 {
        o.frames = 120;
    }
    Ok((o, headless))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (options, headless) = match parse(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let result = if headless {
        run_headless(&options)
    } else {
        run_window(&options)
    };
    match result {
        Ok(summary) => {
            println!("{summary}");
            if let Some(p) = &options.screenshot {
                println!("wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
