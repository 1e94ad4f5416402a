//! A headless Bevy app on lavapipe (Vulkan) rendering streamed boxes into
//! an image that every frame is read back.
//!
//! Vulkan only: Bevy's GL path on llvmpipe does not compile its SSAO shader.

#![allow(dead_code)] // each test binary uses part of it

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::renderer::{RenderDevice, RenderQueue};
use bevy::render::settings::{RenderCreation, WgpuSettings};
use bevy::render::texture::GpuImage;
use bevy::render::view::Tonemapping;
use bevy::render::{Extract, ExtractSchedule, Render, RenderApp, RenderPlugin, RenderSystems};
use bevy::window::ExitCondition;
use mipstream_bevy::MipstreamPlugin;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The built-in scene's 20 cooked textures (cooked on first use into the
/// workspace's `target/mipstream-cache`, which the library's tests fill).
pub fn builtin_textures() -> Vec<PathBuf> {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mipstream-cache");
    mipstream_tools::scene::BuiltinScene::load_or_cook(&cache, |_, _| {})
        .expect("cooking the built-in textures")
        .textures
}

/// Fails (never skips) without a Vulkan adapter, saying what to install.
pub fn require_vulkan() {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    desc.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(desc);
    if pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
        .is_err()
    {
        panic!(
            "no Vulkan adapter: the Bevy plugin's tests run on lavapipe; install it with \
             `apt-get install -y mesa-vulkan-drivers` (a GPU driver works too)"
        );
    }
}

/// Frames read back from the render target: (main-world frame, RGBA8 pixels).
#[derive(Resource, Clone, Default)]
pub struct Captures(pub Arc<Mutex<Frames>>);

/// (main-world frame, RGBA8 pixels) per frame read back.
pub type Frames = Vec<(u32, Vec<u8>)>;

#[derive(Resource, Clone)]
struct Target(Handle<Image>);

#[derive(Resource, Default)]
struct ExtractedFrame(u32);

pub struct Harness {
    pub app: App,
    pub captures: Captures,
    pub size: UVec2,
}

/// Which of the four quads an entity is.
#[derive(Component, Debug, Clone, Copy)]
pub struct Quad(pub usize);

/// An app rendering the first four of `textures` on a wall of quads, unlit,
/// into a `size` image, with the plugin at `budget` bytes.
pub fn harness(textures: &[PathBuf], budget: u64, size: UVec2) -> Harness {
    harness_with(textures, budget, size, |_| {})
}

/// [`harness`], with `setup` run on the app before it finishes (systems for
/// the render world must be added then: pipelined rendering moves the
/// render app to its own thread when the app finishes).
pub fn harness_with(
    textures: &[PathBuf],
    budget: u64,
    size: UVec2,
    setup: impl FnOnce(&mut App),
) -> Harness {
    let dir = textures[0].parent().unwrap().to_path_buf();
    let names = file_names(textures);
    let plugin = MipstreamPlugin {
        budget,
        workers: 1,
        ..default()
    };
    let (mut app, target) = app(&dir, plugin, size);
    app.add_systems(
        Startup,
        move |mut commands: Commands,
              assets: Res<AssetServer>,
              mut meshes: ResMut<Assets<Mesh>>,
              mut materials: ResMut<Assets<StandardMaterial>>| {
            // a 2x2 wall of quads filling the view, one texture each
            commands.spawn(camera(&target, Vec3::new(0.0, 0.0, WALL_EYE)));
            let quad = meshes.add(Rectangle::new(2.0, 1.125));
            for (i, name) in names.iter().cycle().take(4).enumerate() {
                let material = materials.add(unlit(&assets, name));
                let (x, y) = wall_quad(i);
                commands.spawn((
                    Mesh3d(quad.clone()),
                    MeshMaterial3d(material),
                    Transform::from_xyz(x, y, 0.0),
                    Quad(i),
                ));
            }
        },
    );
    setup(&mut app);
    finish(app, size)
}

/// How far from the wall the wall's camera is (the wall fills its view).
pub const WALL_EYE: f32 = 2.7;

/// The centre of wall quad `i` (of four, 2 x 1.125 units each, row by row).
pub fn wall_quad(i: usize) -> (f32, f32) {
    ((i % 2) as f32 * 2.0 - 1.0, (i / 2) as f32 * 1.125 - 0.5625)
}

/// An unlit material wearing the streamed image `name`.
pub fn unlit(assets: &AssetServer, name: &str) -> StandardMaterial {
    StandardMaterial {
        base_color_texture: Some(assets.load(name.to_owned())),
        unlit: true,
        ..default()
    }
}

/// The files' names (the asset paths under their folder).
pub fn file_names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The test camera (looking at the origin).
#[derive(Component, Debug)]
pub struct TestCamera;

pub fn camera(target: &Handle<Image>, eye: Vec3) -> impl Bundle {
    (
        Camera3d::default(),
        bevy::camera::RenderTarget::Image(target.clone().into()),
        Tonemapping::None,
        Msaa::Off,
        Transform::from_translation(eye).looking_at(Vec3::ZERO, Vec3::Y),
        TestCamera,
    )
}

/// An app rendering the cooked scene at `scene` (spawned with
/// `SpawnStreamedScene`) lit by one light, from `eye` towards the origin.
pub fn scene_harness(scene: PathBuf, budget: u64, size: UVec2, eye: Vec3) -> Harness {
    let plugin = MipstreamPlugin {
        budget,
        workers: 1,
        ..default()
    };
    scene_harness_with(scene, plugin, size, eye)
}

/// [`scene_harness`] with `plugin`.
pub fn scene_harness_with(
    scene: PathBuf,
    plugin: MipstreamPlugin,
    size: UVec2,
    eye: Vec3,
) -> Harness {
    let dir = scene.parent().unwrap().to_path_buf();
    let (mut app, target) = app(&dir, plugin, size);
    app.add_systems(Startup, move |mut commands: Commands| {
        commands.spawn(camera(&target, eye));
        commands.spawn((
            DirectionalLight {
                illuminance: 8000.0,
                ..default()
            },
            Transform::from_xyz(1.0, 2.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
        ));
        commands.queue(mipstream_bevy::SpawnStreamedScene::new(scene.clone()));
    });
    finish(app, size)
}

/// The app with its asset root at `asset_dir`, `plugin`, and the `size`
/// render target every frame is read back from.
pub fn app(
    asset_dir: &std::path::Path,
    plugin: MipstreamPlugin,
    size: UVec2,
) -> (App, Handle<Image>) {
    app_compiling(asset_dir, plugin, size, true)
}

/// [`app`], with Bevy compiling its pipelines in the background unless
/// `synchronous` (as it does by default: the draws whose pipeline is not
/// ready are skipped).
pub fn app_compiling(
    asset_dir: &std::path::Path,
    plugin: MipstreamPlugin,
    size: UVec2,
    synchronous: bool,
) -> (App, Handle<Image>) {
    require_vulkan();
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(AssetPlugin {
                file_path: asset_dir.to_string_lossy().into_owned(),
                ..default()
            })
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                close_when_requested: false,
                ..default()
            })
            .set(RenderPlugin {
                render_creation: RenderCreation::Automatic(Box::new(WgpuSettings {
                    backends: Some(wgpu::Backends::VULKAN),
                    ..default()
                })),
                synchronous_pipeline_compilation: synchronous,
                ..default()
            }),
    )
    .add_plugins(plugin);
    let mut image = Image::new_target_texture(size.x, size.y, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    image.asset_usage = RenderAssetUsages::RENDER_WORLD;
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    app.insert_resource(Target(target.clone()));
    (app, target)
}

/// The app finished, with every frame read back.
pub fn finish(mut app: App, size: UVec2) -> Harness {
    let captures = Captures::default();
    let render = app.sub_app_mut(RenderApp);
    render
        .insert_resource(captures.clone())
        .init_resource::<ExtractedFrame>()
        .add_systems(ExtractSchedule, extract_target)
        .add_systems(Render, capture.in_set(RenderSystems::Cleanup));
    app.finish();
    app.cleanup();
    Harness {
        app,
        captures,
        size,
    }
}

fn extract_target(
    mut commands: Commands,
    target: Extract<Res<Target>>,
    frame: Extract<Res<bevy::diagnostic::FrameCount>>,
    mut out: ResMut<ExtractedFrame>,
) {
    commands.insert_resource(target.clone());
    out.0 = frame.0;
}

/// In the render world: no frame is read back (the readback's buffer would
/// count in the device's memory).
#[derive(Resource)]
pub struct NoCapture;

/// Copies the target to a buffer after the frame is submitted and waits for it.
fn capture(
    off: Option<Res<NoCapture>>,
    target: Option<Res<Target>>,
    frame: Res<ExtractedFrame>,
    images: Res<RenderAssets<GpuImage>>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    captures: Res<Captures>,
) {
    let Some(target) = target.filter(|_| off.is_none()) else {
        return;
    };
    let Some(gpu) = images.get(&target.0) else {
        return;
    };
    let pixels =
        mipstream::gpu::readback::read_rgba8(device.wgpu_device(), &queue, &gpu.texture, 0, 0)
            .expect("reading the render target back");
    captures.0.lock().unwrap().push((frame.0, pixels));
}

impl Harness {
    pub fn mipstream(&self) -> &mipstream_bevy::Mipstream {
        self.app.world().resource::<mipstream_bevy::Mipstream>()
    }

    /// Runs one frame; checks the streamer's books and budget after it.
    pub fn frame(&mut self) {
        self.app.update();
        let ms = self.mipstream();
        let s = ms.streamer();
        s.check_invariants().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            s.held_bytes() <= s.budget_bytes(),
            "frame {}: held {} > budget {}",
            s.frame(),
            s.held_bytes(),
            s.budget_bytes()
        );
    }

    /// Runs frames until every streamed texture holds its plan and nothing
    /// loads (at most `max` frames); returns how many it took.
    pub fn settle(&mut self, max: u32) -> u32 {
        for i in 0..max {
            self.frame();
            let ms = self.mipstream();
            let s = ms.streamer();
            let meshes_settled = s.mesh_ids().iter().all(|&m| {
                let st = s.mesh_status(m).unwrap();
                st.resident == st.planned
            });
            if ms.streamed_images() > 0 && i > 10 && s.converged() && meshes_settled {
                return i;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!(
            "did not settle in {max} frames: {:#?}",
            self.mipstream().report().totals
        );
    }

    /// The frame number the main world is at (Bevy's `FrameCount`).
    pub fn frame_count(&self) -> u32 {
        self.app
            .world()
            .resource::<bevy::diagnostic::FrameCount>()
            .0
    }

    /// The picture of main-world frame `frame` (waits a few frames for it).
    pub fn picture(&mut self, frame: u32) -> Vec<u8> {
        for _ in 0..8 {
            if let Some((_, p)) = self
                .captures
                .0
                .lock()
                .unwrap()
                .iter()
                .find(|(f, _)| *f == frame)
            {
                return p.clone();
            }
            self.frame();
        }
        panic!("no picture of frame {frame}");
    }
}

/// Mean absolute difference per channel, 0..255.
pub fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y) as f64)
        .sum::<f64>()
        / a.len() as f64
}

/// Writes a picture under the workspace's `target/bevy-test/` (for a person
/// to look at when a test fails).
pub fn save(h: &Harness, pixels: &[u8], name: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bevy-test");
    std::fs::create_dir_all(&dir).unwrap();
    image::save_buffer(
        dir.join(name),
        pixels,
        h.size.x,
        h.size.y,
        image::ExtendedColorType::Rgba8,
    )
    .unwrap();
}

/// A cooked scene in `dir`: the grid mesh wearing `texture`, at each of
/// `places` (x, y, z), `scale` units across; returns its `scene.json`.
pub fn grid_scene(
    dir: &std::path::Path,
    texture: &std::path::Path,
    places: &[Vec3],
    scale: f32,
) -> PathBuf {
    use mipstream::mesh::scene_file::{
        SceneFile, SceneInstance, SceneMaterial, SceneMesh, FORMAT, VERSION,
    };
    std::fs::create_dir_all(dir).unwrap();
    // five LODs, 64 to 4 quads across
    let lods = [(64, 0.0), (32, 0.002), (16, 0.008), (8, 0.03), (4, 0.06)];
    let mesh = mipstream_tools::scene::grid_mesh(&lods, 12.0);
    std::fs::write(dir.join("grid.msmesh"), mesh).unwrap();
    let material = SceneMaterial {
        name: "grid".into(),
        base_color: Some(texture.to_path_buf()),
        base_color_factor: [1.0; 4],
        normal: None,
        normal_scale: 1.0,
        metallic_roughness: None,
        metallic_factor: 0.0,
        roughness_factor: 0.8,
        occlusion: None,
        emissive: None,
        emissive_factor: [0.0; 3],
        alpha_mode: "OPAQUE".into(),
        alpha_cutoff: 0.5,
        double_sided: true,
    };
    let instances = places
        .iter()
        .enumerate()
        .map(|(i, p)| SceneInstance {
            mesh: 0,
            node: format!("grid {i}"),
            transform: Mat4::from_scale_rotation_translation(
                Vec3::splat(scale),
                Quat::IDENTITY,
                *p,
            )
            .to_cols_array(),
        })
        .collect();
    let scene = SceneFile {
        format: FORMAT.into(),
        version: VERSION,
        source: "grid.gltf".into(),
        meshes: vec![SceneMesh {
            name: "grid".into(),
            file: "grid.msmesh".into(),
            material: 0,
            triangles: vec![8192, 2048, 512, 128, 32],
            errors: vec![0.0, 0.002, 0.008, 0.03, 0.06],
            welded_vertices: 0,
        }],
        materials: vec![material],
        instances,
        bounds: [[-100.0; 3], [100.0; 3]],
        cameras: Vec::new(),
    };
    let path = dir.join("scene.json");
    scene.save(&path).unwrap();
    path
}
