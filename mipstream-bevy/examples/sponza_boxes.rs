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
//! `--textures DIR`, `--screenshot FILE`, `--headless`, `--no-pipelining`
//! (Bevy renders each frame before the next update instead of beside it; on
//! lavapipe a submit holds wgpu's device locks for the whole software
//! render, so with pipelining the plugin's `update` waits for it).

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::view::screenshot::{save_to_disk, Screenshot};
use bevy::render::view::Tonemapping;
use mipstream_bevy::{ImageClass, MipstreamPlugin, StreamedImageSettings, StreamingBudget};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
struct Args {
    headless: bool,
    frames: u32,
    size: UVec2,
    budget_mib: u64,
    textures: Option<PathBuf>,
    screenshot: Option<PathBuf>,
    pipelined: bool,
}

fn args() -> Args {
    let mut a = Args {
        headless: !cfg!(feature = "window"),
        frames: 240,
        size: UVec2::new(1280, 720),
        budget_mib: 6,
        textures: None,
        screenshot: None,
        pipelined: true,
    };
    let mut it = std::env::args().skip(1);
    let fail = |m: String| -> ! {
        eprintln!("error: {m}");
        std::process::exit(2)
    };
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
            "--textures" => a.textures = Some(value().into()),
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
            mipstream::demo::scene::BuiltinScene::load_or_cook(
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
    let mut app = App::new();
    let window = (!args.headless).then(|| Window {
        resolution: (args.size.x, args.size.y).into(),
        title: "mipstream-bevy: sponza_boxes ([ / ] halve / double the budget)".into(),
        ..default()
    });
    let mut plugins = DefaultPlugins.build();
    if !args.pipelined {
        plugins = plugins.disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>();
    }
    app.add_plugins(
        plugins
            .set(AssetPlugin {
                file_path: dir.to_string_lossy().into_owned(),
                ..default()
            })
            .set(bevy::window::WindowPlugin {
                primary_window: window,
                exit_condition: if args.headless {
                    bevy::window::ExitCondition::DontExit
                } else {
                    bevy::window::ExitCondition::OnPrimaryClosed
                },
                ..default()
            }),
    )
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
    app.insert_resource(Setup {
        files: files
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_path_buf())
            .collect(),
        target: target.clone(),
    })
    .add_systems(Startup, spawn)
    .add_systems(Update, (fly, keys));
    if args.headless {
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
        .filter(|p| mipstream::demo::scene::guess_class(p) == mipstream::TextureClass::Color)
        .collect();
    let cube = meshes.add(Cuboid::new(3.0, 3.0, 3.0));
    let n = 9;
    for i in 0..n * n {
        let file = colour[i % colour.len()];
        let normal = setup.files.iter().find(|p| {
            mipstream::demo::scene::guess_class(p) == mipstream::TextureClass::Normal
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

/// Runs the frames by hand (no window, no event loop), prints what the
/// plugin cost, and saves the last frame.
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
    let below = report.textures.iter().filter(|t| t.below.is_some()).count();
    // the first frames register every texture (the tails' textures and
    // uploads): reported apart from the frames after
    let settled: Vec<Duration> = plugin.iter().skip(30).copied().collect();
    let mut all = plugin.clone();
    all.sort();
    let mut plugin = if settled.is_empty() {
        all.clone()
    } else {
        settled
    };
    plugin.sort();
    let pct = |p: f64| plugin[((plugin.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    let audit = app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    println!(
        "{} textures streamed, {} objects; held {:.1} MiB of a {} MiB budget; the view wants {:.1} MiB ({:.1} MiB at full resolution); {below} textures below what the view wants",
        ms.streamed_images(),
        s.object_count(),
        s.held_bytes() as f64 / (1u64 << 20) as f64,
        args.budget_mib,
        wanted as f64 / (1u64 << 20) as f64,
        report.textures.iter().map(|t| s.full_bytes(t.id).unwrap_or(0)).sum::<u64>() as f64 / (1u64 << 20) as f64,
    );
    println!(
        "plugin per frame (main world, update included), frames 30 on: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over {} frames (all frames: max {:.3} ms); render-world swap {:.3} ms per frame",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        plugin.len(),
        all.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        audit.render_time.as_secs_f64() * 1e3 / audit.frames.max(1) as f64,
    );
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
