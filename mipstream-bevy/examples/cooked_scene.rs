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
//! `--screenshot FILE`, `--headless`, `--feedback` (plan from GPU feedback), `--no-pipelining` (as in
//! `sponza_boxes`: Bevy renders each frame before the next update).

use bevy::prelude::*;
use mipstream::mesh::scene_file::SceneFile;
use mipstream_bevy::{MipstreamPlugin, SpawnStreamedScene};
use std::path::{Path, PathBuf};

mod shared;

use shared::fail;

#[derive(Debug, Clone)]
struct Args {
    common: shared::Common,
    scene: Option<PathBuf>,
}

fn args() -> Args {
    let mut scene = None;
    let common = shared::parse(6, |k, value| match k {
        "--scene" => {
            scene = Some(value().into());
            true
        }
        _ => false,
    });
    Args { common, scene }
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
    mipstream_tools::gltf_scene::cooked_scene(&source, &cache, |p| {
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
    let c = &args.common;
    let mut app = App::new();
    app.add_plugins(shared::plugins(
        c,
        "mipstream-bevy: cooked_scene ([ / ] halve / double the budget)",
    ))
    .add_plugins(MipstreamPlugin {
        budget: c.budget_mib << 20,
        feedback: c.feedback,
        ..default()
    });
    let target = shared::headless_target(&mut app, c);
    let orbit = Orbit {
        center: (lo + hi) * 0.5,
        radius: ((hi - lo).length() * 0.5).max(1e-3),
    };
    let camera_target = target.clone();
    let frames = c.frames;
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
        .add_systems(Update, (fly, shared::keys));
    if c.headless {
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

/// Runs the frames by hand, prints what is held and what the plugin cost,
/// and saves the last frame.
fn run_headless(mut app: App, args: &Args, target: Handle<Image>) {
    let c = &args.common;
    let times = shared::run_frames(&mut app, c.frames);
    let plugin = &times.plugin;
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
        c.budget_mib,
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
    let (p50, p99, max, _) = shared::percentiles(plugin);
    println!(
        "plugin per frame (main world, update included), frames 30 on: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms; mesh checks {} (not current {}, not drawable {}, size mismatches {})",
        audit.mesh_checks,
        audit.meshes_not_current,
        audit.meshes_not_drawable,
        audit.mesh_size_mismatches,
    );
    shared::print_frame_times(&times);
    shared::print_feedback(ms);
    if let Some(path) = &c.screenshot {
        shared::save_screenshot(&mut app, target, path);
    }
}
