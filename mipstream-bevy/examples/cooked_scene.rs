//! A cooked glTF scene (FlightHelmet from `../shared/data/scenes` by
//! default) spawned with `SpawnStreamedScene`: its textures stream mip by
//! mip and its meshes LOD by LOD under one budget, while the camera comes
//! in from far away.
//!
//! ```sh
//! # headless: 240 frames of the approach, then a screenshot
//! cargo run -p mipstream-bevy --ignore-rust-version --release --example cooked_scene -- --headless --screenshot out.png
//! # a window (X11): `[` / `]` halve / double the budget
//! cargo run -p mipstream-bevy --ignore-rust-version --release --features window --example cooked_scene
//! ```
//!
//! Options: `--scene FILE` (a `scene.json` from `mipstream cook-gltf`, or a
//! `.gltf`/`.glb`, cooked on first use into `target/mipstream-cache`),
//! `--budget-mib N` (default 6), `--frames N`, `--size WxH`,
//! `--screenshot FILE`, `--headless`, `--no-pipelining` (as in
//! `sponza_boxes`: Bevy renders each frame before the next update).

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::view::screenshot::{save_to_disk, Screenshot};
use mipstream::mesh::scene_file::SceneFile;
use mipstream_bevy::{MipstreamPlugin, SpawnStreamedScene, StreamingBudget};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
struct Args {
    headless: bool,
    frames: u32,
    size: UVec2,
    budget_mib: u64,
    scene: Option<PathBuf>,
    screenshot: Option<PathBuf>,
    pipelined: bool,
}

fn fail(m: String) -> ! {
    eprintln!("error: {m}");
    std::process::exit(2)
}

fn args() -> Args {
    let mut a = Args {
        headless: !cfg!(feature = "window"),
        frames: 240,
        size: UVec2::new(1280, 720),
        budget_mib: 6,
        scene: None,
        screenshot: None,
        pipelined: true,
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
            "--scene" => a.scene = Some(value().into()),
            "--screenshot" => a.screenshot = Some(value().into()),
            other => fail(format!(
                "unknown option {other} (see the example's doc comment)"
            )),
        }
    }
    if !a.headless && !cfg!(feature = "window") {
        fail("a window needs `--features window`; or run with --headless".into());
    }
    a
}

/// The `scene.json`: the one given (a glTF is cooked first), else
/// FlightHelmet from the shared data, cooked on first use.
fn scene_file(args: &Args) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source = args.scene.clone().unwrap_or_else(|| {
        let helmet = root.join("../shared/data/scenes/FlightHelmet/FlightHelmet.gltf");
        if !helmet.is_file() {
            fail(format!(
                "{} is not here: pass --scene FILE (a scene.json from `mipstream cook-gltf`, or a .gltf)",
                helmet.display()
            ));
        }
        helmet
    });
    let cache = root.join("target/mipstream-cache");
    mipstream::demo::gltf_scene::cooked_scene(&source, &cache, |p| {
        eprintln!("cooking {}: {p:?}", source.display())
    })
    .unwrap_or_else(|e| fail(format!("{}: {e}", source.display())))
}

/// Where the camera orbits: the scene's centre and radius.
#[derive(Resource, Clone, Copy)]
struct Orbit {
    center: Vec3,
    radius: f32,
}

#[derive(Component)]
struct Flyer;

/// Frames of the approach.
#[derive(Resource)]
struct Frames(u32);

fn main() {
    let args = args();
    let scene = scene_file(&args);
    let file = SceneFile::load(&scene).unwrap_or_else(|e| fail(e.to_string()));
    let [lo, hi] = file.bounds.map(Vec3::from_array);
    let mut app = App::new();
    let window = (!args.headless).then(|| Window {
        resolution: (args.size.x, args.size.y).into(),
        title: "mipstream-bevy: cooked_scene ([ / ] halve / double the budget)".into(),
        ..default()
    });
    let mut plugins = DefaultPlugins.build();
    if !args.pipelined {
        plugins = plugins.disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>();
    }
    app.add_plugins(plugins.set(bevy::window::WindowPlugin {
        primary_window: window,
        exit_condition: if args.headless {
            bevy::window::ExitCondition::DontExit
        } else {
            bevy::window::ExitCondition::OnPrimaryClosed
        },
        ..default()
    }))
    .add_plugins(MipstreamPlugin {
        budget: args.budget_mib << 20,
        ..default()
    });
    let target = args.headless.then(|| {
        let mut image = Image::new_target_texture(
            args.size.x,
            args.size.y,
            TextureFormat::Rgba8UnormSrgb,
            None,
        );
        image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        image.asset_usage = RenderAssetUsages::RENDER_WORLD;
        app.world_mut().resource_mut::<Assets<Image>>().add(image)
    });
    let orbit = Orbit {
        center: (lo + hi) * 0.5,
        radius: ((hi - lo).length() * 0.5).max(1e-3),
    };
    let camera_target = target.clone();
    let frames = args.frames;
    app.insert_resource(orbit)
        .add_systems(Startup, move |mut commands: Commands| {
            let mut camera = commands.spawn((
                Camera3d::default(),
                // the default (TonyMcMapFace) needs Bevy's `tonemapping_luts`
                bevy::render::view::Tonemapping::Reinhard,
                Transform::from_translation(orbit.center + Vec3::Z * orbit.radius * 12.0)
                    .looking_at(orbit.center, Vec3::Y),
                Flyer,
            ));
            if let Some(t) = &camera_target {
                camera.insert(bevy::camera::RenderTarget::Image(t.clone().into()));
            }
            commands.spawn((
                DirectionalLight {
                    illuminance: 6_000.0,
                    ..default()
                },
                Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
            ));
            commands.insert_resource(bevy::light::GlobalAmbientLight {
                brightness: 800.0,
                ..default()
            });
            commands.queue(SpawnStreamedScene::new(scene.clone()));
        })
        .insert_resource(Frames(frames))
        .add_systems(Update, (fly, keys));
    if args.headless {
        run_headless(app, &args, target.unwrap());
    } else {
        app.run();
    }
}

/// From twelve scene radii away in to two, turning a little (by frame, not
/// clock: the same path however fast frames render).
fn fly(
    frame: Res<bevy::diagnostic::FrameCount>,
    orbit: Res<Orbit>,
    frames: Res<Frames>,
    mut q: Query<&mut Transform, With<Flyer>>,
) {
    let t = (frame.0 as f32 / frames.0.max(1) as f32).min(1.0);
    let distance = 12.0 * (2.0f32 / 12.0).powf(t);
    let angle = 0.6 * t;
    let dir = Vec3::new(angle.sin(), 0.15, angle.cos()).normalize();
    for mut tr in &mut q {
        *tr = Transform::from_translation(orbit.center + dir * orbit.radius * distance)
            .looking_at(orbit.center, Vec3::Y);
    }
}

fn keys(keys: Option<Res<ButtonInput<KeyCode>>>, mut budget: ResMut<StreamingBudget>) {
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

/// Runs the frames by hand, prints what is held and what the plugin cost,
/// and saves the last frame.
fn run_headless(mut app: App, args: &Args, target: Handle<Image>) {
    app.finish();
    app.cleanup();
    let mut plugin = Vec::new();
    for _ in 0..args.frames {
        app.update();
        let ms = app.world().resource::<mipstream_bevy::Mipstream>();
        plugin.push(ms.plugin_time());
        std::thread::sleep(Duration::from_millis(1));
    }
    let wanted = app
        .world_mut()
        .resource_mut::<mipstream_bevy::Mipstream>()
        .wanted_bytes();
    let ms = app.world().resource::<mipstream_bevy::Mipstream>();
    let s = ms.streamer();
    let report = ms.report();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let below = report.textures.iter().filter(|t| t.below.is_some()).count();
    let meshes_below = report.meshes.iter().filter(|m| m.below.is_some()).count();
    let finest: Vec<String> = report
        .meshes
        .iter()
        .map(|m| format!("{}", m.resident))
        .collect();
    println!(
        "{} textures, {} meshes ({} LODs in Bevy), {} objects; held {:.1} MiB ({:.1} MiB textures, {:.1} MiB meshes) of a {} MiB budget; the view wants {:.1} MiB; {below} textures and {meshes_below} meshes below what the view wants; mesh LODs drawn: {}",
        ms.streamed_images(),
        report.meshes.len(),
        ms.held_mesh_lods(),
        s.object_count(),
        mib(s.held_bytes()),
        mib(report.totals.color + report.totals.normal + report.totals.data),
        mib(report.totals.mesh),
        args.budget_mib,
        mib(wanted),
        finest.join(" "),
    );
    println!(
        "full detail: {:.1} MiB of textures",
        mib(report
            .textures
            .iter()
            .map(|t| s.full_bytes(t.id).unwrap_or(0))
            .sum::<u64>()),
    );
    let audit = app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    let mut settled: Vec<Duration> = plugin.iter().skip(30).copied().collect();
    settled.sort();
    if !settled.is_empty() {
        let pct = |p: f64| settled[((settled.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
        println!(
            "plugin per frame (main world, update included), frames 30 on: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; mesh checks {} (not current {}, not drawable {}, size mismatches {})",
            pct(0.5),
            pct(0.99),
            pct(1.0),
            audit.mesh_checks,
            audit.meshes_not_current,
            audit.meshes_not_drawable,
            audit.mesh_size_mismatches,
        );
    }
    if let Some(path) = &args.screenshot {
        let path = std::path::absolute(path).unwrap_or(path.clone());
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
}
