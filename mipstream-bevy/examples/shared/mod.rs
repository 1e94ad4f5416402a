//! What the examples share: their common options, Bevy's plugins set up for
//! a window or headless, the budget keys, the headless render target, the
//! cost percentiles and the screenshot.

use bevy::app::PluginGroupBuilder;
use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::view::screenshot::{save_to_disk, Screenshot};
use mipstream_bevy::StreamingBudget;
use std::path::PathBuf;
use std::time::Duration;

/// The options every example takes.
#[derive(Debug, Clone)]
pub struct Common {
    pub headless: bool,
    pub frames: u32,
    pub size: UVec2,
    pub budget_mib: u64,
    pub screenshot: Option<PathBuf>,
    pub pipelined: bool,
    /// Plan from GPU feedback (`MipstreamPlugin::feedback`).
    pub feedback: bool,
}

/// Prints the error and exits with status 2.
pub fn fail(m: String) -> ! {
    eprintln!("error: {m}");
    std::process::exit(2)
}

/// Parses the command line: `--headless`, `--no-pipelining`, `--feedback`,
/// `--frames N`, `--budget-mib N`, `--size WxH`, `--screenshot FILE`, and whatever
/// `extra(option, value)` accepts (it returns false for an unknown option;
/// `value()` takes the option's value).
pub fn parse(
    budget_mib: u64,
    mut extra: impl FnMut(&str, &mut dyn FnMut() -> String) -> bool,
) -> Common {
    let mut a = Common {
        headless: !cfg!(feature = "window"),
        frames: 240,
        size: UVec2::new(1280, 720),
        budget_mib,
        screenshot: None,
        pipelined: true,
        feedback: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| fail(format!("{k} needs a value")))
        };
        match k.as_str() {
            "--headless" => a.headless = true,
            "--no-pipelining" => a.pipelined = false,
            "--feedback" => a.feedback = true,
            "--frames" => {
                a.frames = value()
                    .parse()
                    .unwrap_or_else(|e| fail(format!("--frames: {e}")))
            }
            "--budget-mib" => {
                a.budget_mib = value()
                    .parse()
                    .unwrap_or_else(|e| fail(format!("--budget-mib: {e}")))
            }
            "--size" => {
                let v = value();
                let (w, h) = v
                    .split_once('x')
                    .unwrap_or_else(|| fail(format!("--size {v}: want WxH")));
                a.size = UVec2::new(
                    w.parse().unwrap_or_else(|e| fail(format!("--size: {e}"))),
                    h.parse().unwrap_or_else(|e| fail(format!("--size: {e}"))),
                );
            }
            "--screenshot" => a.screenshot = Some(value().into()),
            other => {
                if !extra(other, &mut value) {
                    fail(format!(
                        "unknown option {other} (see the example's doc comment)"
                    ))
                }
            }
        }
    }
    if !a.headless && !cfg!(feature = "window") {
        fail("a window needs `--features window`; or run with --headless".into());
    }
    a
}

/// Bevy's default plugins: a window titled `title`, or none (headless);
/// without pipelined rendering when asked.
pub fn plugins(a: &Common, title: &str) -> PluginGroupBuilder {
    let mut plugins = DefaultPlugins.build();
    if !a.pipelined {
        plugins = plugins.disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>();
    }
    let window = (!a.headless).then(|| Window {
        resolution: (a.size.x, a.size.y).into(),
        title: title.into(),
        ..default()
    });
    plugins.set(bevy::window::WindowPlugin {
        primary_window: window,
        exit_condition: if a.headless {
            bevy::window::ExitCondition::DontExit
        } else {
            bevy::window::ExitCondition::OnPrimaryClosed
        },
        ..default()
    })
}

/// Headless: the image the camera renders into (and the screenshot is of).
pub fn headless_target(app: &mut App, a: &Common) -> Option<Handle<Image>> {
    a.headless.then(|| {
        let mut image =
            Image::new_target_texture(a.size.x, a.size.y, TextureFormat::Rgba8UnormSrgb, None);
        image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        image.asset_usage = RenderAssetUsages::RENDER_WORLD;
        app.world_mut().resource_mut::<Assets<Image>>().add(image)
    })
}

/// `[` / `]` halve / double the budget.
pub fn keys(keys: Option<Res<ButtonInput<KeyCode>>>, mut budget: ResMut<StreamingBudget>) {
    let Some(keys) = keys else { return };
    if keys.just_pressed(KeyCode::BracketLeft) {
        budget.0 = (budget.0 / 2).max(1 << 20);
        info!("budget {} MiB", budget.0 >> 20);
    }
    if keys.just_pressed(KeyCode::BracketRight) {
        budget.0 = budget.0.saturating_mul(2);
        info!("budget {} MiB", budget.0 >> 20);
    }
}

/// Each frame's cost: the plugin's main-world time, and the wall time of
/// the whole `app.update()` (every schedule, rendering included; with
/// pipelined rendering it waits for the last frame's render world).
pub struct FrameTimes {
    pub plugin: Vec<Duration>,
    pub frame: Vec<Duration>,
}

/// Runs `frames` frames by hand (no window, no event loop) and times each.
pub fn run_frames(app: &mut App, frames: u32) -> FrameTimes {
    app.finish();
    app.cleanup();
    let mut times = FrameTimes {
        plugin: Vec::new(),
        frame: Vec::new(),
    };
    for _ in 0..frames {
        let start = std::time::Instant::now();
        app.update();
        times.frame.push(start.elapsed());
        let ms = app.world().resource::<mipstream_bevy::Mipstream>();
        times.plugin.push(ms.plugin_time());
        std::thread::sleep(Duration::from_millis(1));
    }
    times
}

/// Prints the whole frame's wall time (what `--feedback` is measured by:
/// run with and without it, docs/feedback.md).
pub fn print_frame_times(times: &FrameTimes) {
    let (p50, p99, max, n) = percentiles(&times.frame);
    println!(
        "frame (app.update, rendering included), frames 30 on: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms over {n} frames"
    );
}

/// p50, p99 and max in milliseconds of `times` from frame 30 on (the first
/// frames register everything), or of all of them when there are fewer.
pub fn percentiles(times: &[Duration]) -> (f64, f64, f64, usize) {
    let mut t: Vec<Duration> = times.iter().skip(30).copied().collect();
    if t.is_empty() {
        t = times.to_vec();
    }
    t.sort();
    let pct = |p: f64| t[((t.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    (pct(0.5), pct(0.99), pct(1.0), t.len())
}

/// Saves what `target` shows to `path` (waits up to 30 frames for it).
pub fn save_screenshot(app: &mut App, target: Handle<Image>, path: &std::path::Path) {
    let path = std::path::absolute(path).unwrap_or(path.to_path_buf());
    let _ = std::fs::remove_file(&path);
    app.world_mut()
        .spawn(Screenshot::image(target))
        .observe(save_to_disk(path.clone()));
    for _ in 0..30 {
        app.update();
        if path.is_file() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(path.is_file(), "the screenshot was not written");
    println!("wrote {}", path.display());
}

/// Prints what GPU feedback last told the streamer (with `--feedback`).
pub fn print_feedback(ms: &mipstream_bevy::Mipstream) {
    let stats = ms.frame_stats();
    match (ms.streamer().latest_feedback(), stats.feedback_age) {
        (Some(f), Some(age)) => println!(
            "GPU feedback: frame {} ({age} updates old), {} textures sampled; the plan fuses it",
            f.frame,
            f.seen()
        ),
        (Some(f), None) => println!(
            "GPU feedback: frame {}, too old to count at frame {}",
            f.frame, stats.frame
        ),
        (None, _) if ms.streamer().feedback_buffer().is_some() => println!(
            "GPU feedback: on, none taken yet (no frame is recorded while Bevy compiles pipelines)"
        ),
        (None, _) => println!("GPU feedback: off (--feedback turns it on)"),
    }
}
