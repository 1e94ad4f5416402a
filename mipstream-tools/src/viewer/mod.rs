//! The demo viewer's app (feature `viewer`): the built-in scene streamed under
//! a budget you drag, with the panel, charts and texture table that show what
//! the streamer does. `examples/viewer.rs` is its command line.
//!
//! One [`Viewer`] runs both ways, so what the tests check is what people see:
//! [`run_window`] puts it in a winit window (egui input, surface, present),
//! [`run_headless`] renders offscreen and writes a screenshot. Each frame
//! ([`Viewer::frame`]) moves the camera, calls [`Streamer::update`] once,
//! checks the streamer's invariants, draws the scene into an offscreen target
//! and the egui panel over it.
//!
//! ```no_run
//! # fn main() -> Result<(), mipstream_tools::viewer::ViewerError> {
//! use mipstream_tools::viewer::{run_headless, ViewerOptions};
//! let summary = run_headless(&ViewerOptions {
//!     frames: 120,
//!     screenshot: Some("viewer.png".into()),
//!     ..ViewerOptions::default()
//! })?;
//! println!("{summary}");
//! # Ok(()) }
//! ```

mod blit;
mod camera;
mod compare;
mod draw;
mod feedback;
mod options;
mod ui;
mod window;

pub use options::{Mode, Summary, ViewerError, ViewerOptions};
pub(crate) use options::{Sample, Settings, SortKey};

pub use camera::{FlyCamera, MoveKeys};
pub use compare::{HalfScore, SplitScores};
/// The egui version the viewer's panel is built with (for [`Viewer::frame`]'s input).
pub use egui;
pub use window::run_window;

use crate::gltf_scene::StreamedScene;
use crate::render::{DrawBox, Region, SceneRenderer, ViewMode};
use crate::render_mesh::MeshRenderer;
use crate::scene::BuiltinScene;
use crate::source::PreparedScene;
use glam::{UVec2, Vec3};
use mipstream::gpu;
use mipstream::plan::View;
use mipstream::streamer::{Budget, ResidencyReport, StreamerOptions};
use mipstream::{streamer::Streamer, TextureId};
use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

const MIB: f64 = (1u64 << 20) as f64;

/// Frames of history the charts keep (10 s at 60 fps).
const HISTORY: usize = 600;

struct Target {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    size: UVec2,
}

/// A glTF scene on screen: its streamed meshes and textures, and the
/// material renderer.
struct MeshView {
    scene: StreamedScene,
    renderer: MeshRenderer,
}

/// The full-resolution streamer the split view compares against.
struct Reference {
    streamer: Streamer,
    renderer: SceneRenderer,
    boxes: Vec<DrawBox>,
}

/// The offscreen colour format: sRGB, so lighting is done in linear space.
pub const TARGET_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// The viewer's state: scene, streamer, camera, panel and chart history.
pub struct Viewer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: String,
    scene: BuiltinScene,
    boxes: Vec<DrawBox>,
    /// The cooked glTF scene shown instead of the boxes, if one was given.
    meshes: Option<MeshView>,
    streamer: Streamer,
    renderer: SceneRenderer,
    reference: Option<Reference>,
    /// The right half's engine-rule streamer in the splits against one.
    rival: Option<compare::Rival>,
    /// The split's last scores against full resolution.
    scores: Option<SplitScores>,
    /// The error view's last FLIP map.
    error_map: Option<compare::ErrorMap>,
    /// Where scores are rendered (small).
    score_target: Option<Target>,
    full_bytes: u64,
    /// The fly camera (used when the path is not playing).
    pub camera: FlyCamera,
    /// Movement keys held.
    pub keys: MoveKeys,
    path_time: f32,
    pub(crate) settings: Settings,
    applied: Settings,
    pub(crate) history: VecDeque<Sample>,
    pub(crate) report: ResidencyReport,
    clock: f64,
    /// The whole frame: the scene composited into `scene_rect`, panel over it.
    target: Target,
    /// The scene at its render resolution.
    scene_target: Target,
    /// Where the scene goes in the frame: x, y, width, height in pixels (the
    /// area the panels leave free, from the previous frame's layout).
    scene_rect: [u32; 4],
    pub(crate) render_scale: f32,
    compose: blit::Blit,
    egui: egui::Context,
    egui_renderer: egui_wgpu::Renderer,
    pixels_per_point: f32,
    show_ui: bool,
    lockstep: bool,
    /// A budget still to be set from the path's working set (the first frame).
    budget_of_working_set: Option<f64>,
    frame: u64,
    peak: u64,
    over_budget: u64,
    pub(crate) last_frame_ms: f32,
    /// The renderer reports GPU feedback and the panel shows it
    /// ([`ViewerOptions::feedback`]).
    pub(crate) feedback_on: bool,
}

impl fmt::Debug for Viewer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Viewer")
            .field("adapter", &self.adapter)
            .field("frame", &self.frame)
            .field("size", &self.target.size)
            .finish_non_exhaustive()
    }
}

impl Viewer {
    /// Prepares the scene (cooking what it needs into the cache on first
    /// use, with `progress(stage, done, total)`), registers it with a
    /// streamer on `device` and sets up the panel.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        adapter: String,
        options: &ViewerOptions,
        progress: impl FnMut(&str, usize, usize),
    ) -> Result<Self, ViewerError> {
        let (scene, mesh_json) = match options.scene.prepare(&options.cache_dir, progress)? {
            PreparedScene::Boxes(scene) => (scene, None),
            // a glTF scene: its own meshes and path, no boxes
            PreparedScene::Meshes { json, path } => (
                BuiltinScene {
                    textures: Vec::new(),
                    classes: Vec::new(),
                    objects: Vec::new(),
                    path,
                },
                Some(json),
            ),
        };
        let (streamer, boxes, full_bytes, meshes) = Self::new_streamer(
            device,
            queue,
            &scene,
            mesh_json.as_deref(),
            StreamerOptions {
                mesh_cross_fade_frames: options.cross_fade_frames,
                ..Default::default()
            },
        )?;
        let budget_mb = options
            .budget_mb
            .unwrap_or(full_bytes as f64 / 3.0 / MIB)
            .max(0.05);
        let settings = Settings {
            budget_mb,
            upload_cap_mb: options.upload_cap_mb.max(0.01),
            compact_tier: true,
            frozen: false,
            mode: options.mode,
            play_path: options.path,
            fuse_feedback: options.fuse_feedback,
            selected: None,
            sort: (SortKey::Bytes, false),
        };
        let camera = match (options.path_start, &scene.path.object, &scene.path.track) {
            (None, None, None) => {
                FlyCamera::looking_at(Vec3::new(-34.0, 4.5, -30.0), Vec3::new(-8.0, 0.5, -14.0))
            }
            // where the path's interesting part starts (or the given time)
            (t, ..) => {
                let p = scene.path.at(t.unwrap_or(scene.path.fly_end));
                FlyCamera::in_scene(p.eye, p.target, &scene.path)
            }
        };
        let path_time = options.path_start.unwrap_or(scene.path.fly_end);
        let egui = egui::Context::default();
        egui.set_visuals(egui::Visuals::dark());
        let egui_renderer = egui_wgpu::Renderer::new(
            device,
            TARGET_FORMAT,
            egui_wgpu::RendererOptions {
                dithering: false,
                ..Default::default()
            },
        );
        let mut viewer = Self {
            device: device.clone(),
            queue: queue.clone(),
            adapter,
            renderer: SceneRenderer::new(device, TARGET_FORMAT),
            report: streamer.report(),
            streamer,
            boxes,
            meshes: meshes.map(|scene| MeshView {
                scene,
                renderer: MeshRenderer::new(device, queue, TARGET_FORMAT),
            }),
            scene,
            reference: None,
            rival: None,
            scores: None,
            error_map: None,
            score_target: None,
            full_bytes,
            camera,
            keys: MoveKeys::default(),
            path_time,
            applied: settings.clone(),
            settings,
            history: VecDeque::with_capacity(HISTORY),
            clock: 0.0,
            target: Self::make_target(device, options.size),
            scene_target: Self::make_target(device, options.size),
            scene_rect: [0, 0, options.size.x, options.size.y],
            render_scale: options.render_scale.unwrap_or(1.0).clamp(0.1, 1.0),
            compose: blit::Blit::new(device, TARGET_FORMAT),
            egui,
            egui_renderer,
            pixels_per_point: 1.0,
            show_ui: options.ui,
            lockstep: options.lockstep,
            budget_of_working_set: options.budget_of_working_set.filter(|f| *f > 0.0),
            frame: 0,
            peak: 0,
            over_budget: 0,
            last_frame_ms: 0.0,
            feedback_on: options.feedback || options.fuse_feedback,
        };
        if viewer.feedback_on {
            let ids = viewer.streamer.texture_ids();
            let slots = ids.iter().map(|id| id.index() + 1).max().unwrap_or(1);
            viewer.streamer.enable_feedback(slots as u32);
            if let Some(m) = &mut viewer.meshes {
                let buffer = viewer.streamer.feedback_buffer();
                m.renderer.set_feedback(&viewer.device, buffer);
            }
        }
        viewer.apply_settings(true);
        Ok(viewer)
    }

    #[allow(clippy::type_complexity)]
    fn new_streamer(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &BuiltinScene,
        mesh_json: Option<&std::path::Path>,
        options: StreamerOptions,
    ) -> Result<(Streamer, Vec<DrawBox>, u64, Option<StreamedScene>), ViewerError> {
        let mut streamer = Streamer::with_options(device, queue, options);
        let ids = scene.register(&mut streamer)?;
        let meshes = mesh_json
            .map(|p| StreamedScene::load(&mut streamer, p))
            .transpose()?;
        // every texture level and every mesh at LOD 0
        let full = BuiltinScene::full_residency_bytes(&streamer, &streamer.texture_ids())
            + streamer
                .mesh_ids()
                .into_iter()
                .filter_map(|m| streamer.mesh_bytes_at(m, 0).ok())
                .sum::<u64>();
        let boxes = scene
            .objects
            .iter()
            .map(|o| DrawBox {
                center: o.center,
                size: o.size,
                tile: o.tile,
                texture: ids[o.texture],
                highlight: false,
            })
            .collect();
        Ok((streamer, boxes, full, meshes))
    }

    fn make_target(device: &wgpu::Device, size: UVec2) -> Target {
        let size = size.max(UVec2::splat(16));
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("mipstream viewer frame"),
            size: wgpu::Extent3d {
                width: size.x,
                height: size.y,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: TARGET_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let view = texture.create_view(&Default::default());
        Target {
            texture,
            view,
            size,
        }
    }

    /// Resizes the offscreen frame (a window resize).
    pub fn resize(&mut self, size: UVec2) {
        if size.max(UVec2::splat(16)) != self.target.size {
            self.target = Self::make_target(&self.device, size);
            self.scene_rect = [0, 0, self.target.size.x, self.target.size.y];
        }
    }

    /// The scene's render resolution: its area on screen times the render scale.
    fn scene_size(&self) -> UVec2 {
        let [_, _, w, h] = self.scene_rect;
        (glam::Vec2::new(w as f32, h as f32) * self.render_scale)
            .round()
            .as_uvec2()
            .max(UVec2::splat(16))
    }

    /// Where the scene is drawn in the frame: x, y, width, height in pixels.
    pub fn scene_rect(&self) -> [u32; 4] {
        self.scene_rect
    }

    /// Sets the scene's render resolution as a fraction of its screen area.
    pub fn set_render_scale(&mut self, scale: f32) {
        self.render_scale = scale.clamp(0.1, 1.0);
    }

    /// Sets the egui scale (a window's DPI factor).
    pub fn set_pixels_per_point(&mut self, ppp: f32) {
        self.pixels_per_point = ppp.max(0.25);
    }

    /// The egui context (for the window's input handling).
    pub fn egui(&self) -> &egui::Context {
        &self.egui
    }

    /// The rendered frame (scene plus panel), [`TARGET_FORMAT`].
    pub fn frame_texture(&self) -> &wgpu::Texture {
        &self.target.texture
    }

    /// The rendered frame's view.
    pub fn frame_view(&self) -> &wgpu::TextureView {
        &self.target.view
    }

    /// The streamer showing the budgeted picture.
    pub fn streamer(&self) -> &Streamer {
        &self.streamer
    }

    /// Sets the budget (MiB) as the slider does.
    pub fn set_budget_mb(&mut self, mb: f64) {
        self.settings.budget_mb = mb.max(0.05);
    }

    /// Highlights the boxes that use `texture` (a click on its table row), or
    /// none.
    pub fn select_texture(&mut self, texture: Option<TextureId>) {
        self.settings.selected = texture;
    }

    /// The status line's text (over budget, last out-of-memory event, or
    /// what is held), as the panel shows it.
    pub fn status_line(&self) -> String {
        ui::status(&self.report).1
    }

    /// The budgeted streamer, mutably (for tests and fault injection).
    pub fn streamer_mut(&mut self) -> &mut Streamer {
        &mut self.streamer
    }

    /// Sets what is drawn.
    pub fn set_mode(&mut self, mode: Mode) {
        self.settings.mode = mode;
    }

    /// Shows or hides the panel.
    pub fn set_ui(&mut self, on: bool) {
        self.show_ui = on;
    }

    /// Whether the panel is shown.
    pub fn ui_shown(&self) -> bool {
        self.show_ui
    }

    /// Starts or stops the scripted camera path; stopping leaves the fly
    /// camera where the path was.
    pub fn toggle_path(&mut self) {
        self.settings.play_path = !self.settings.play_path;
    }

    /// Bytes the scene needs with every texture at full resolution.
    pub fn full_residency_bytes(&self) -> u64 {
        self.full_bytes
    }

    /// Adapter and backend.
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// The run so far.
    pub fn summary(&self) -> Summary {
        Summary {
            frames: self.frame,
            peak_resident_bytes: self.peak,
            budget_bytes: self.streamer.budget_bytes(),
            over_budget_frames: self.over_budget,
            full_residency_bytes: self.full_bytes,
            adapter: self.adapter.clone(),
            feedback_textures: self.feedback_on.then(|| {
                self.streamer
                    .latest_feedback()
                    .map_or(0, |f| f.seen() as u32)
            }),
        }
    }

    fn apply_settings(&mut self, force: bool) {
        let (s, a) = (&self.settings, &self.applied);
        if force || s.budget_mb != a.budget_mb {
            let bytes = (s.budget_mb * MIB) as u64;
            self.streamer.set_budget(Budget::Bytes(bytes));
        }
        if force || s.upload_cap_mb != a.upload_cap_mb {
            let levels = self.streamer.options().uploads_per_frame;
            self.streamer
                .set_upload_cap((s.upload_cap_mb * MIB) as u64, levels);
        }
        let rival_changed = s.budget_mb != a.budget_mb || s.upload_cap_mb != a.upload_cap_mb;
        if s.mode != a.mode {
            // what the last mode scored is not this one's
            self.scores = None;
            self.error_map = None;
            if !s.mode.needs_reference() {
                self.reference = None;
            }
        }
        if force || s.compact_tier != a.compact_tier || s.fuse_feedback != a.fuse_feedback {
            let mut planner = self.streamer.options().planner.clone();
            planner.compact_tier = s.compact_tier;
            planner.fuse_feedback = s.fuse_feedback;
            self.streamer.set_planner_options(planner);
        }
        if s.play_path && !a.play_path {
            // resume the path from the start of the walk, the interesting part
            self.path_time = self.path_time.max(self.scene.path.fly_end);
        }
        if !s.play_path && a.play_path {
            let p = self.scene.path.at(self.path_time);
            self.camera = FlyCamera::in_scene(p.eye, p.target, &self.scene.path);
        }
        self.applied = self.settings.clone();
        if rival_changed {
            self.apply_rival_settings();
        }
    }

    /// The camera's view for this frame, after moving it by `dt` seconds.
    fn advance_camera(&mut self, dt: f32) -> View {
        let size = self.scene_size();
        if self.scene_target.size != size {
            self.scene_target = Self::make_target(&self.device, size);
        }
        if self.settings.play_path {
            let path = &self.scene.path;
            self.path_time = (self.path_time + dt) % path.duration;
            path.view(self.path_time, size)
        } else {
            self.camera.advance(self.keys, dt);
            self.camera.view(size)
        }
    }

    /// One frame: applies the panel's settings, moves the camera by `dt`
    /// seconds, updates the streamer (unless frozen) and checks its
    /// invariants, renders the scene and, with the panel shown, runs egui on
    /// `input` and draws it over the scene. Returns egui's platform output
    /// (cursor, clipboard) for the window to apply.
    pub fn frame(
        &mut self,
        dt: f32,
        input: egui::RawInput,
    ) -> Result<egui::PlatformOutput, ViewerError> {
        let started = Instant::now();
        if self.frame == 1 {
            // the panel has taken its room: the scene's size is known
            if let Some(f) = self.budget_of_working_set.take() {
                let bytes = self.path_working_set(40) as f64 * f;
                self.settings.budget_mb = (bytes / MIB).max(0.05);
            }
        }
        self.apply_settings(false);
        let view = self.advance_camera(dt);
        let stats = (!self.settings.frozen).then(|| self.streamer.update(&[view]));
        self.check()?;
        let changed = self.streamer.take_changed();
        self.renderer.sync(&self.device, &self.streamer, &changed);
        if let Some(m) = &mut self.meshes {
            m.scene
                .sync(&self.device, &m.renderer, &self.streamer, &changed);
        }
        if self.meshes.is_none() {
            // (the comparisons are for the built-in boxes)
            if self.settings.mode.needs_reference() {
                self.update_reference(&view)?;
            }
            self.update_rival(&view)?;
            if self.score_due() {
                self.score(&view)?;
            }
        }
        if self.lockstep {
            self.finish_loads()?;
        }
        self.report = self.streamer.report();
        let held = self.report.totals.accounted();
        self.peak = self.peak.max(held);
        // over the budget outside an update giving memory back (a cut and
        // its pace, the memory guarantee's one exception)
        let f = &self.report.frame;
        if held > self.report.budget && !f.giving_back && !f.cut_paced {
            self.over_budget += 1;
        }
        self.draw_scene(&view);
        if self.feedback_on {
            // what the scene's draw sampled goes to the readback ring; a
            // later update takes it when the GPU is done (never waits)
            let mut enc = self.device.create_command_encoder(&Default::default());
            self.streamer.record_feedback(&mut enc);
            self.queue.submit([enc.finish()]);
        }
        self.composite();
        let output = if self.show_ui {
            self.draw_ui(input)
        } else {
            self.scene_rect = [0, 0, self.target.size.x, self.target.size.y];
            egui::PlatformOutput::default()
        };
        self.frame += 1;
        self.clock += dt as f64;
        let upload_bytes = stats.map_or(0, |s| s.upload_bytes);
        let t = &self.report.totals;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(Sample {
            t: self.clock,
            color: t.color,
            normal_data: t.normal + t.data,
            pool_staging: t.pool + t.staging,
            budget: self.report.budget,
            upload_bytes,
            frame_ms: self.last_frame_ms,
            update_ms: stats.map_or(0.0, |s| s.update_time.as_secs_f32() * 1e3),
        });
        self.last_frame_ms = started.elapsed().as_secs_f32() * 1e3;
        Ok(output)
    }

    fn check(&self) -> Result<(), ViewerError> {
        self.streamer
            .check_invariants()
            .map_err(|violation| ViewerError::Invariant {
                frame: self.frame,
                violation,
            })
    }

    /// Streams until the budgeted picture has converged for the current
    /// camera (or `timeout` passes), then renders a frame.
    pub fn settle(&mut self, timeout: Duration) -> Result<(), ViewerError> {
        self.apply_settings(false);
        let view = self.current_view();
        self.streamer.settle(&[view], timeout)?;
        self.check()?;
        if self.meshes.is_none() {
            // the other half of a split settles too, and is scored again
            if self.settings.mode.needs_reference() {
                self.update_reference(&view)?;
            }
            self.update_rival(&view)?;
            if let Some(r) = &mut self.rival {
                r.streamer.settle(&[view], timeout)?;
            }
            self.scores = None;
            self.error_map = None;
        }
        Ok(())
    }

    /// Waits for every load the viewer's streamers asked for (lockstep).
    fn finish_loads(&mut self) -> Result<(), ViewerError> {
        let t = Duration::from_secs(60);
        self.streamer.finish_loads(t)?;
        if let Some(r) = &mut self.rival {
            r.streamer.finish_loads(t)?;
        }
        if let Some(r) = &mut self.reference {
            r.streamer.finish_loads(t)?;
        }
        Ok(())
    }

    /// The working set of the scene's camera path at the scene's render
    /// size: the most bytes, over `samples` points of the path, of
    /// everything at exactly the level its view wants (what the benchmark's
    /// budget fractions are of).
    pub fn path_working_set(&mut self, samples: usize) -> u64 {
        let size = self.scene_size();
        let path = self.scene.path.clone();
        (0..samples.max(1))
            .map(|i| {
                let t = path.duration * i as f32 / samples.max(1) as f32;
                self.streamer.wanted_bytes(&[path.view(t, size)])
            })
            .max()
            .unwrap_or(0)
    }

    /// The camera the scene is drawn from now (the path's, or the fly camera).
    fn current_view(&self) -> mipstream::plan::View {
        let size = self.scene_size();
        if self.settings.play_path {
            self.scene.path.view(self.path_time, size)
        } else {
            self.camera.view(size)
        }
    }

    /// The bytes the current camera's working set needs: every texture and
    /// mesh at exactly the level that view wants (below it, a budget binds).
    pub fn wanted_bytes(&mut self) -> u64 {
        let view = self.current_view();
        self.streamer.wanted_bytes(&[view])
    }

    /// The rendered frame as RGBA8 pixels.
    pub fn read_frame(&self) -> Result<image::RgbaImage, ViewerError> {
        let px = gpu::read_rgba8(&self.device, &self.queue, &self.target.texture, 0, 0)?;
        let size = self.target.size;
        image::RgbaImage::from_raw(size.x, size.y, px).ok_or_else(|| ViewerError::Screenshot {
            path: String::new(),
            message: "readback returned the wrong number of pixels".into(),
        })
    }

    /// Writes the rendered frame to a PNG.
    pub fn screenshot(&self, path: &std::path::Path) -> Result<(), ViewerError> {
        let img = self.read_frame()?;
        let err = |message: String| ViewerError::Screenshot {
            path: path.display().to_string(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
        }
        img.save(path).map_err(|e| err(e.to_string()))
    }

    /// Where the camera is (for tests and the status line).
    pub fn eye(&self) -> Vec3 {
        if self.settings.play_path {
            self.scene.path.at(self.path_time).eye
        } else {
            self.camera.eye
        }
    }
}

/// Progress of the first-run cook on stderr (silent when the cache is warm).
fn progress_printer() -> impl FnMut(&str, usize, usize) {
    let mut printing = false;
    move |stage, done, total| {
        printing |= done < total;
        if printing {
            let end = if done == total { "\n" } else { "" };
            eprint!("\rcooking the scene's {stage} into the cache (first run only): {done}/{total}{end}");
        }
    }
}

/// Runs the viewer without a window: `options.frames` frames at 60 frames per
/// second of camera time, then (with `settle`) streams until converged and
/// renders once more, writes the screenshot if asked, and returns the summary.
pub fn run_headless(options: &ViewerOptions) -> Result<Summary, ViewerError> {
    let g = gpu::headless(None)?;
    let mut viewer = Viewer::new(
        &g.device,
        &g.queue,
        g.describe(),
        options,
        progress_printer(),
    )?;
    let frames = options.frames.max(1);
    let dt = 1.0 / 60.0;
    for _ in 0..frames {
        viewer.frame(dt, egui::RawInput::default())?;
        // pace like a 60 fps renderer would, so loads arrive between frames
        std::thread::sleep(Duration::from_millis(2));
    }
    if options.settle {
        viewer.settle(Duration::from_secs(30))?;
        viewer.frame(0.0, egui::RawInput::default())?;
    }
    if let Some(path) = &options.screenshot {
        viewer.screenshot(path)?;
    }
    Ok(viewer.summary())
}
