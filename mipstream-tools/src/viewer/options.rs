//! What the viewer is told (options), what it reports (summary, errors),
//! and the panel's settings and chart history.

use crate::gltf_scene::SceneLoadError;
use crate::scene::BuiltinScene;
use crate::source::{SceneSource, SourceError};
use glam::UVec2;
use mipstream::gpu::memory::human_bytes;
use mipstream::gpu::{GpuInitError, ReadbackError};
use mipstream::streamer::{InvariantViolation, StreamerError};
use mipstream::TextureId;
use std::fmt;
use std::path::PathBuf;

/// What the viewer draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The scene as the budget allows.
    #[default]
    Normal,
    /// Tinted by resident mip against wanted mip.
    Heatmap,
    /// Left: mipstream; right: a second streamer holding everything at full
    /// resolution, from the same camera.
    SplitFull,
    /// Left: mipstream; right: Unreal's texture streaming pool
    /// ([`mipstream::plan::Policy::UNREAL`]), its own streamer at the same
    /// budget and upload cap, from the same camera.
    SplitUnreal,
    /// Left: mipstream; right: Unity's mipmap streaming with its memory
    /// budget ([`mipstream::plan::Policy::UNITY`]), likewise.
    SplitUnity,
    /// The budgeted picture's NVIDIA FLIP error against full resolution,
    /// magma-coloured: black where nothing differs.
    Error,
}

impl Mode {
    /// Every mode, in the panel's order.
    pub const ALL: [Mode; 6] = [
        Mode::Normal,
        Mode::Heatmap,
        Mode::SplitUnreal,
        Mode::SplitUnity,
        Mode::SplitFull,
        Mode::Error,
    ];

    /// The command line's word: `normal`, `heatmap`, `split-unreal`,
    /// `split-unity`, `split-full`, `error`.
    pub fn key(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Heatmap => "heatmap",
            Mode::SplitFull => "split-full",
            Mode::SplitUnreal => "split-unreal",
            Mode::SplitUnity => "split-unity",
            Mode::Error => "error",
        }
    }

    /// The mode named `key` (`split` is `split-full`, its old name).
    pub fn parse(key: &str) -> Option<Mode> {
        if key == "split" {
            return Some(Mode::SplitFull);
        }
        Mode::ALL.into_iter().find(|m| m.key() == key)
    }

    /// The panel's label.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Heatmap => "mip heatmap",
            Mode::SplitFull => "mipstream | full",
            Mode::SplitUnreal => "mipstream | unreal_pool",
            Mode::SplitUnity => "mipstream | unity_budget",
            Mode::Error => "error (FLIP vs full)",
        }
    }
}

/// How the viewer starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewerOptions {
    /// The budget in MiB. Default: a third of what the scene needs at full
    /// resolution, where the trade-off shows.
    pub budget_mb: Option<f64>,
    /// Upload bytes per frame, MiB. Default: 2.
    pub upload_cap_mb: f64,
    /// Window or image size in pixels. Default: 1600x900.
    pub size: UVec2,
    /// Play the scene's camera path (looping) instead of flying: the built-in
    /// path, a glTF scene's own animated camera, or the orbit of its bounds.
    pub path: bool,
    /// Seconds into the path to start at (with `path`), or to place the fly
    /// camera where the path is at that time. Default: the fly camera at the
    /// edge of the field, looking across it.
    pub path_start: Option<f32>,
    /// What to draw first.
    pub mode: Mode,
    /// Frames to run before stopping. Headless: required (default 120);
    /// window: 0 runs until closed.
    pub frames: u64,
    /// Write the last frame here (PNG).
    pub screenshot: Option<PathBuf>,
    /// Before the screenshot, wait until streaming has converged.
    pub settle: bool,
    /// Draw the egui panel.
    pub ui: bool,
    /// Where the built-in scene's cooked textures are cached.
    pub cache_dir: PathBuf,
    /// The scene: the built-in one, a folder of KTX2 / .basis textures on the
    /// built-in boxes, or a glTF scene (see [`SceneSource`]). Default: the
    /// built-in scene.
    pub scene: SceneSource,
    /// The scene's render resolution as a fraction of its area on screen
    /// (the streamer plans for that resolution). Default: 1, except in a
    /// window on a software adapter (lavapipe, llvmpipe), where 0.5 keeps
    /// the viewer interactive.
    pub render_scale: Option<f32>,
    /// Frames of dithered cross-fade when a mesh changes LOD (glTF scenes;
    /// 0: swaps pop). Default: 8.
    pub cross_fade_frames: u32,
    /// Lockstep: every frame waits for the loads its streamers asked for
    /// ([`mipstream::streamer::Streamer::finish_loads`]), so a run does not depend on the
    /// machine's speed (render tests, comparisons). Default: off.
    pub lockstep: bool,
    /// Set the budget to this fraction of the camera path's working set at
    /// the scene's size, once the panel has taken its room (the first
    /// frame): below 1 it binds. Overrides `budget_mb`. Default: none.
    pub budget_of_working_set: Option<f64>,
    /// The scene's renderer reports GPU feedback (what its fragments
    /// sample) and the panel shows it per texture beside the plan. Default:
    /// off.
    pub feedback: bool,
    /// The plan fuses GPU feedback with the CPU prediction
    /// (`docs/feedback.md`; implies `feedback`). The panel's "plan from it"
    /// switches it. Default: off.
    pub fuse_feedback: bool,
}

impl Default for ViewerOptions {
    fn default() -> Self {
        Self {
            budget_mb: None,
            upload_cap_mb: 2.0,
            size: UVec2::new(1600, 900),
            path: false,
            path_start: None,
            mode: Mode::Normal,
            frames: 120,
            screenshot: None,
            settle: false,
            ui: true,
            cache_dir: BuiltinScene::default_cache_dir(),
            render_scale: None,
            scene: SceneSource::Builtin,
            cross_fade_frames: 8,
            lockstep: false,
            budget_of_working_set: None,
            feedback: false,
            fuse_feedback: false,
        }
    }
}

/// Why the viewer stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewerError {
    /// No GPU adapter or device.
    #[error(transparent)]
    Gpu(#[from] GpuInitError),
    /// Registering the scene with the streamer failed.
    #[error(transparent)]
    Streamer(#[from] StreamerError),
    /// The streamer's bookkeeping broke (a mipstream bug).
    #[error("frame {frame}: residency invariant broken: {violation}")]
    Invariant {
        /// The viewer's frame.
        frame: u64,
        /// What broke.
        violation: InvariantViolation,
    },
    /// Reading the picture back failed.
    #[error(transparent)]
    Readback(#[from] ReadbackError),
    /// Writing the screenshot failed.
    #[error("screenshot {path}: {message}")]
    Screenshot {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// No window could be opened (no display, or the windowing system refused).
    #[error("cannot open a window: {0}. Without a display, run headless \
             (`cargo run --release --example viewer -- --headless --screenshot out.png`) \
             or under Xvfb (`apt-get install xvfb`, then `xvfb-run -a cargo run --release --example viewer`)")]
    Window(String),
    /// A cooked glTF scene could not be loaded.
    #[error(transparent)]
    Gltf(#[from] SceneLoadError),
    /// The scene could not be found, cooked or read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The window's surface could not be set up.
    #[error("window surface: {0}")]
    Surface(String),
}

from_streamer_errors!(ViewerError);

/// What a run did, as the one-line summary the headless mode prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Frames rendered.
    pub frames: u64,
    /// The most bytes the streamer held in any frame.
    pub peak_resident_bytes: u64,
    /// The budget at the end.
    pub budget_bytes: u64,
    /// Frames whose held and retiring bytes exceeded the budget of that
    /// frame outside an update giving memory back (a cut, at its pace).
    pub over_budget_frames: u64,
    /// What the scene needs with everything at full resolution.
    pub full_residency_bytes: u64,
    /// Adapter and backend.
    pub adapter: String,
    /// With feedback on, the textures the newest GPU feedback saw sampled
    /// (`None`: feedback off).
    pub feedback_textures: Option<u32>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frames {}, peak resident {} of a {} budget (full residency {}), \
             over-budget frames {}, adapter {}",
            self.frames,
            human_bytes(self.peak_resident_bytes),
            human_bytes(self.budget_bytes),
            human_bytes(self.full_residency_bytes),
            self.over_budget_frames,
            self.adapter
        )?;
        match self.feedback_textures {
            Some(n) => write!(f, ", GPU feedback: {n} textures sampled"),
            None => Ok(()),
        }
    }
}

/// One frame of chart history.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sample {
    /// Seconds since start.
    pub(crate) t: f64,
    pub(crate) color: u64,
    pub(crate) normal_data: u64,
    pub(crate) pool_staging: u64,
    pub(crate) budget: u64,
    pub(crate) upload_bytes: u64,
    pub(crate) frame_ms: f32,
    pub(crate) update_ms: f32,
}

/// Columns the texture table sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortKey {
    Name,
    Size,
    Format,
    Mip,
    Bytes,
    Why,
}

/// The panel's settings; changes apply at the start of the next frame.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) budget_mb: f64,
    pub(crate) upload_cap_mb: f64,
    pub(crate) compact_tier: bool,
    pub(crate) frozen: bool,
    pub(crate) mode: Mode,
    pub(crate) play_path: bool,
    pub(crate) fuse_feedback: bool,
    pub(crate) selected: Option<TextureId>,
    pub(crate) sort: (SortKey, bool),
}
