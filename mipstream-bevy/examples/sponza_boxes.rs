//! A field of boxes wearing streamed textures (the 51 Sponza textures from
//! `../shared/data/sponza-textures` where they are, else mipstream's 20
//! built-in ones, cooked on first use) under a budget below what they need.
//!
//! ```sh
//! # headless: 240 frames of a fly-over, then a screenshot
//! cargo run -p mipstream-bevy --ignore-rust-version --release --example sponza_boxes -- --headless --screenshot out.png
//! # a window (X11): `[` / `]` halve / double the budget
//! cargo run -p mipstream-bevy --ignore-rust-version --release --features window --example sponza_boxes
//! ```
//!
//! Options: `--budget-mib N` (default 6), `--frames N`, `--size WxH`,
//! `--textures DIR`, `--screenshot FILE`, `--headless`, `--feedback` (plan from GPU feedback), `--no-pipelining`
//! (Bevy renders each frame before the next update instead of beside it; on
//! lavapipe a submit holds wgpu's device locks for the whole software
//! render, so with pipelining the plugin's `update` waits for it).

use bevy::prelude::*;
use bevy::render::view::Tonemapping;
use mipstream_bevy::{ImageClass, MipstreamPlugin, StreamedImageSettings};
use std::path::{Path, PathBuf};

mod shared;

#[derive(Debug, Clone)]
struct Args {
    common: shared::Common,
    textures: Option<PathBuf>,
}

fn args() -> Args {
    let mut textures = None;
    let common = shared::parse(6, |k, value| match k {
        "--textures" => {
            textures = Some(value().into());
            true
        }
        _ => false,
    });
    Args { common, textures }
}

/// The textures: a folder given, Sponza's where the shared data is, else
/// the built-in ones (cooked into `target/mipstream-cache` on first use).
fn texture_files(args: &Args) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = args
        .textures
        .clone()
        .or_else(|| Some(root.join("../shared/data/sponza-textures")).filter(|d| d.is_dir()));
    match dir {
        Some(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ktx2"))
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{}: no .ktx2 files", dir.display());
            files
        }
        None => {
            eprintln!("cooking the built-in textures (first run only)...");
            mipstream_tools::scene::BuiltinScene::load_or_cook(
                &root.join("target/mipstream-cache"),
                |_, _| {},
            )
            .expect("cooking the built-in textures")
            .textures
        }
    }
}

#[derive(Resource)]
struct Setup {
    files: Vec<PathBuf>,
    target: Option<Handle<Image>>,
}

#[derive(Component)]
struct Flyer;

fn main() {
    let args = args();
    let files = texture_files(&args);
    let dir = files[0].parent().unwrap().to_path_buf();
    let c = &args.common;
    let mut app = App::new();
    app.add_plugins(
        shared::plugins(
            c,
            "mipstream-bevy: sponza_boxes ([ / ] halve / double the budget)",
        )
        .set(AssetPlugin {
            file_path: dir.to_string_lossy().into_owned(),
            ..default()
        }),
    )
    .add_plugins(MipstreamPlugin {
        budget: c.budget_mib << 20,
        feedback: c.feedback,
        ..default()
    });
    let target = shared::headless_target(&mut app, c);
    app.insert_resource(Setup {
        files: files
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_path_buf())
            .collect(),
        target: target.clone(),
    })
    .add_systems(Startup, spawn)
    .add_systems(Update, (fly, shared::keys));
    if c.headless {
        run_headless(app, &args, target.unwrap());
    } else {
        app.run();
    }
}

fn spawn(
    mut commands: Commands,
    setup: Res<Setup>,
    assets: Res<AssetServer>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let mut camera = commands.spawn((
        Camera3d::default(),
        Tonemapping::Reinhard,
        Transform::from_xyz(0.0, 6.0, 30.0).looking_at(Vec3::ZERO, Vec3::Y),
        Flyer,
    ));
    if let Some(target) = &setup.target {
        camera.insert(bevy::camera::RenderTarget::Image(target.clone().into()));
    }
    commands.spawn((
        DirectionalLight {
            illuminance: 8_000.0,
            ..default()
        },
        Transform::from_xyz(4.0, 10.0, 6.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.insert_resource(bevy::light::GlobalAmbientLight {
        brightness: 600.0,
        ..default()
    });
    // colour textures on the boxes; a normal map (name says so) goes with
    // the colour texture of the same stem where there is one
    let colour: Vec<&PathBuf> = setup
        .files
        .iter()
        .filter(|p| mipstream_tools::scene::guess_class(p) == mipstream::TextureClass::Color)
        .collect();
    let cube = meshes.add(Cuboid::new(3.0, 3.0, 3.0));
    let n = 9;
    for i in 0..n * n {
        let file = colour[i % colour.len()];
        let normal = setup.files.iter().find(|p| {
            mipstream_tools::scene::guess_class(p) == mipstream::TextureClass::Normal
                && p.to_string_lossy()
                    .starts_with(file.with_extension("").to_string_lossy().as_ref())
        });
        let material = materials.add(StandardMaterial {
            base_color_texture: Some(assets.load(file.clone())),
            normal_map_texture: normal.map(|p| {
                assets
                    .load_builder()
                    .with_settings(|s: &mut StreamedImageSettings| s.class = ImageClass::Normal)
                    .load(p.clone())
            }),
            perceptual_roughness: 0.8,
            ..default()
        });
        let (x, z) = ((i % n) as f32 - 4.0, (i / n) as f32 - 4.0);
        commands.spawn((
            Mesh3d(cube.clone()),
            MeshMaterial3d(material),
            Transform::from_xyz(x * 4.0, 1.5, z * 4.0),
        ));
    }
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(50.0, 50.0))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.35, 0.33, 0.3),
            ..default()
        })),
    ));
}

/// A slow fly-over: high and far, then down between the boxes (by frame,
/// not clock: the same path however fast frames render).
fn fly(frame: Res<bevy::diagnostic::FrameCount>, mut q: Query<&mut Transform, With<Flyer>>) {
    let t = frame.0 as f32 / 60.0 * 0.5;
    for mut tr in &mut q {
        let r = 22.0 - 16.0 * (t * 0.5).sin().abs();
        let eye = Vec3::new(r * t.cos(), 5.0 + 6.0 * (t * 0.7).cos().abs(), r * t.sin());
        *tr = Transform::from_translation(eye).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
    }
}

/// Runs the frames by hand (no window, no event loop), prints what the
/// plugin cost, and saves the last frame.
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
    let below = report.textures.iter().filter(|t| t.below.is_some()).count();
    let (p50, p99, max, n) = shared::percentiles(plugin);
    let all_max = plugin.iter().max().map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let audit = app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    println!(
        "{} textures streamed, {} objects; held {:.1} MiB of a {} MiB budget; the view wants {:.1} MiB ({:.1} MiB at full resolution); {below} textures below what the view wants",
        ms.streamed_images(),
        s.object_count(),
        s.held_bytes() as f64 / (1u64 << 20) as f64,
        c.budget_mib,
        wanted as f64 / (1u64 << 20) as f64,
        report.textures.iter().map(|t| s.full_bytes(t.id).unwrap_or(0)).sum::<u64>() as f64 / (1u64 << 20) as f64,
    );
    println!(
        "plugin per frame (main world, update included), frames 30 on: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms over {n} frames (all frames: max {all_max:.3} ms); render-world swap {:.3} ms per frame",
        audit.render_time.as_secs_f64() * 1e3 / audit.frames.max(1) as f64,
    );
    shared::print_frame_times(&times);
    shared::print_feedback(ms);
    if let Some(path) = &c.screenshot {
        shared::save_screenshot(&mut app, target, path);
    }
}
