//! Streamer options and registration descriptors.

use crate::container::TextureFile;
use crate::ids::{MeshId, TextureId};
use crate::kinds::TextureClass;
use crate::mesh::MeshFile;
use crate::plan::PlannerOptions;
use crate::transcode::NormalLayout;
use glam::Vec3;

/// How much GPU memory mipstream may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// A fixed number of bytes.
    Bytes(u64),
    /// A fraction of what the driver's device-local budget leaves beside
    /// the rest of the process (the budget less the heaps' usage that is
    /// not mipstream's own), where the backend reports one (Vulkan with
    /// `VK_EXT_memory_budget`), else `fallback` bytes: an allocation
    /// elsewhere (the engine's render targets, another streamer) lowers it.
    /// Asked again every 60 updates.
    Auto {
        /// Fraction of the driver budget, 0 to 1.
        fraction: f32,
        /// Bytes when the driver reports no budget.
        fallback: u64,
    },
}

impl Default for Budget {
    fn default() -> Self {
        Budget::Auto {
            fraction: 0.5,
            fallback: 256 << 20,
        }
    }
}

/// Options of a [`crate::streamer::Streamer`], each with its default.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamerOptions {
    /// The memory budget. Default: half the driver budget, else 256 MiB.
    pub budget: Budget,
    /// Upload bytes per `update` (texel data copied to the GPU). Default: 8 MiB.
    /// A single level larger than this goes alone in a frame of its own.
    pub upload_bytes_per_frame: u64,
    /// Levels uploaded per `update`. Default: 32.
    pub uploads_per_frame: u32,
    /// Texture levels written per `update` (0: no limit): each level of a
    /// texture built or shrunk is one copy command in the frame's submit,
    /// uploaded or copied on the GPU from the texture's old copy (a growth
    /// by one level copies all the kept ones too), and a mesh LOD swapped
    /// in counts one. The render thread's cost of a burst goes with these
    /// commands, not with the bytes the upload cap counts: a camera cut
    /// under a large upload cap can rebuild dozens of textures in one
    /// update. A growth or shrink that would pass the cap waits for a later
    /// update (the frame's first one always goes, however many levels it
    /// has); shrinks the budget forces never wait. `FrameStats::copies`
    /// counts them. Default: 0.
    pub copies_per_frame: u32,
    /// Textures shrunk per `update` while the budget holds what is resident
    /// (0: no limit). Each shrink creates a smaller texture and copies the
    /// kept levels into it (on GL it uploads them again, within the upload
    /// cap); a camera cut can ask dozens at once (35 in one update of
    /// `mipstream bench-update`, a millisecond of the render thread on
    /// lavapipe). Beyond this many, those freeing the most go first and the
    /// rest wait for the next updates; shrinks the budget forces (a budget
    /// cut, an out-of-memory event) never wait, and a growth that lacks room
    /// meanwhile asks later plans for no headroom. Default: 16.
    pub shrinks_per_frame: u32,
    /// Levels whose larger side is at most this many texels are always
    /// resident, so no texture is ever blank. Default: 64.
    pub tail_size: u32,
    /// Loader threads. Default: the available cores minus one, 1 to 4.
    pub workers: usize,
    /// Bytes of freed textures kept for reuse (counted in the budget).
    /// Default: 4 MiB, at most a sixteenth of the budget.
    pub recycle_pool_bytes: u64,
    /// The engine's frames in flight, in updates: how many updates after
    /// the one that replaced a texture (or a mesh LOD) the engine may still
    /// record a frame that binds the old one. A released texture is reused
    /// from the pool, and a released resource dropped, only that many
    /// updates later; until wgpu frees it its bytes count as retiring, in
    /// the budget. 1 (the default) for a renderer that rebuilds its bind
    /// groups from [`crate::streamer::Streamer::take_changed`] before it next submits
    /// and keeps no clone of a replaced view; 2 or more for one that
    /// records a frame while the next `update` runs (Bevy's pipelined
    /// rendering). 0 counts as 1.
    pub frames_in_flight: u32,
    /// Count in the budget what the GPU still holds of what mipstream
    /// released (*retiring*: textures replaced or evicted, pool trims, mesh
    /// buffers) until the engine's frames in flight have passed and the
    /// GPU has finished with it, and count textures and upload staging at
    /// their allocation bound ([`crate::gpu::store::Shape::alloc_bytes`]),
    /// so that wgpu's own memory counter stays within the budget at every
    /// moment (the memory guarantee, `tests/gpu_memory.rs`). Off, released
    /// memory leaves the books at once and texels are counted, as before:
    /// the budget holds in the books, but wgpu can count more for a frame
    /// or two, several times the budget in the frame of a cut (kept to
    /// measure what waiting for the GPU costs). On,
    /// [`frames_in_flight`](Self::frames_in_flight) counts updates; off,
    /// the pool counts mipstream's own submits. Default: true.
    pub count_retiring: bool,
    /// Fraction of the budget kept free beside the plan, on top of the room
    /// the plan keeps for its own largest growth step (old and new copies
    /// and the staged levels coexist until the swap; see
    /// [`crate::plan::Plan::growth_room`]). Default: 0.
    pub transient_reserve: f32,
    /// Frames to wait before retrying a failed load; doubles per failure, up to
    /// 64 times this. Default: 15.
    pub retry_backoff_frames: u64,
    /// Frames without growth after the GPU runs out of memory. Default: 60.
    pub oom_backoff_frames: u64,
    /// Frames a mesh's previous LOD stays resident after a swap, for a
    /// dithered cross-fade (see [`crate::streamer::Streamer::mesh_fade`]); its bytes
    /// count, and a budget that needs them ends the fade at once. Default: 0
    /// (swaps pop).
    pub mesh_cross_fade_frames: u32,
    /// Who holds mesh LODs' buffers: mipstream (default) or the engine,
    /// which uploads each LOD from a [`crate::streamer::MeshEvent`] in its
    /// own mesh allocator.
    pub mesh_storage: MeshStorage,
    /// Where the plan is made: inside `update` on the calling thread, or on
    /// a thread of the streamer's own, where each `update` carries out the
    /// plan made from the previous frame's views and hands this frame's to
    /// the planner thread, so the render thread does not spend the plan's
    /// time (a p50 of 0.47-0.92 ms inside `update` at 10,000 textures and
    /// 100,000 objects on lavapipe, `mipstream bench-update`). It never waits for the planner: while a plan is still
    /// running the frame carries out the last one again
    /// ([`crate::streamer::FrameStats::plan_age`]). The budget is kept
    /// either way: under a plan made before the budget fell, `update` gives
    /// up detail the plan keeps until the books fit. Default:
    /// [`PlanThread::Auto`] with [`PlanThread::AUTO_TEXTURES`] (inside
    /// `update` until 2,048 textures are registered, then on the planner
    /// thread).
    pub plan_thread: PlanThread,
    /// Bytes of GPU staging the loader threads may fill with transcoded
    /// texels (`crate::gpu::staging`), so that `update` records buffer
    /// copies instead of copying texel bytes with `Queue::write_texture`.
    /// The reserve is set aside out of the budget whole (at most a quarter
    /// of what the effective budget holds beyond the always-resident tails
    /// and coarsest mesh LODs), so the plan has that much less. A level
    /// that finds the reserve full goes back to the loaders at the next
    /// updates, once room has come back from finished copies (up to 4
    /// times; [`crate::streamer::FrameStats::restaged`]), rather than be
    /// copied by `update`. Levels under 16 KiB, levels larger than the
    /// whole reserve, levels of textures kept in CPU copies (compressed
    /// formats on GL) and levels still refused after those tries go the
    /// usual way. Default: 0 (off).
    pub loader_staging_bytes: u64,
    /// The planner's tunables.
    pub planner: PlannerOptions,
}

impl Default for StreamerOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            budget: Budget::default(),
            upload_bytes_per_frame: 8 << 20,
            uploads_per_frame: 32,
            copies_per_frame: 0,
            shrinks_per_frame: 16,
            tail_size: 64,
            workers: cores.saturating_sub(1).clamp(1, 4),
            recycle_pool_bytes: 4 << 20,
            frames_in_flight: 1,
            count_retiring: true,
            transient_reserve: 0.0,
            retry_backoff_frames: 15,
            oom_backoff_frames: 60,
            mesh_cross_fade_frames: 0,
            mesh_storage: MeshStorage::Buffers,
            plan_thread: PlanThread::default(),
            loader_staging_bytes: 0,
            planner: PlannerOptions::default(),
        }
    }
}

/// A setting that makes no sense: [`StreamerOptions::validate`],
/// [`crate::streamer::Streamer::try_with_options`] and [`crate::streamer::Streamer::try_set_budget`]
/// return it. [`crate::streamer::Streamer::with_options`] instead clamps each to the
/// nearest sane value and lists what it clamped in the report's `warnings`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A budget of 0 bytes (`Budget::Bytes(0)` or an `Auto` fallback of 0).
    #[error("a budget of 0 bytes cannot hold even the always-resident tails")]
    ZeroBudget,
    /// `Budget::Auto` with a fraction outside (0, 1] or not a number.
    #[error("Budget::Auto fraction {0} is not in (0, 1]")]
    BudgetFraction(f32),
    /// `uploads_per_frame` or `upload_bytes_per_frame` is 0: nothing could ever load.
    #[error("{0} is 0: nothing could ever be uploaded")]
    NoUploads(&'static str),
    /// `workers` is 0: no thread would read files.
    #[error("workers is 0: no thread would load anything")]
    NoWorkers,
    /// A fraction or tunable outside its range, or not finite.
    #[error("{name} = {value} is outside {range}")]
    OutOfRange {
        /// The setting.
        name: &'static str,
        /// Its value.
        value: f64,
        /// The values it may take.
        range: &'static str,
    },
}

impl Budget {
    /// Whether the budget can be kept at all (see [`SettingsError`]).
    pub fn validate(&self) -> Result<(), SettingsError> {
        match *self {
            Budget::Bytes(0) | Budget::Auto { fallback: 0, .. } => Err(SettingsError::ZeroBudget),
            Budget::Auto { fraction, .. } if !(fraction > 0.0 && fraction <= 1.0) => {
                Err(SettingsError::BudgetFraction(fraction))
            }
            _ => Ok(()),
        }
    }

    /// The nearest budget that can be kept: 1 byte for 0 (the streamer then
    /// holds the tails alone; the report says so), the fraction into (0, 1].
    pub(crate) fn clamped(self) -> Budget {
        match self {
            Budget::Bytes(b) => Budget::Bytes(b.max(1)),
            Budget::Auto { fraction, fallback } => Budget::Auto {
                fraction: if fraction.is_nan() {
                    0.5
                } else {
                    fraction.clamp(f32::MIN_POSITIVE, 1.0)
                },
                fallback: fallback.max(1),
            },
        }
    }
}

impl StreamerOptions {
    /// Every setting that makes no sense, first one first.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.budget.validate()?;
        if self.uploads_per_frame == 0 {
            return Err(SettingsError::NoUploads("uploads_per_frame"));
        }
        if self.upload_bytes_per_frame == 0 {
            return Err(SettingsError::NoUploads("upload_bytes_per_frame"));
        }
        if self.workers == 0 {
            return Err(SettingsError::NoWorkers);
        }
        let p = &self.planner;
        let ranges: [(&'static str, f64, f64, f64, &'static str); 7] = [
            (
                "transient_reserve",
                self.transient_reserve as f64,
                0.0,
                0.9,
                "[0, 0.9]",
            ),
            (
                "planner.lod_bias",
                p.lod_bias as f64,
                -16.0,
                16.0,
                "[-16, 16]",
            ),
            (
                "planner.look_ahead_s",
                p.look_ahead_s as f64,
                0.0,
                60.0,
                "[0, 60]",
            ),
            (
                "planner.hysteresis",
                p.hysteresis as f64,
                0.0,
                16.0,
                "[0, 16]",
            ),
            ("planner.keep_bonus", p.keep_bonus, 1.0, 1e6, "[1, 1e6]"),
            (
                "planner.compact_quality_loss",
                p.compact_quality_loss as f64,
                0.0,
                1.0,
                "[0, 1]",
            ),
            (
                "planner.mesh_error_px",
                p.mesh_error_px as f64,
                1e-3,
                1e4,
                "[0.001, 1e4]",
            ),
        ];
        for (name, value, lo, hi, range) in ranges {
            if !(value >= lo && value <= hi) {
                return Err(SettingsError::OutOfRange { name, value, range });
            }
        }
        Ok(())
    }

    /// The nearest sane options, and what was changed (one line each).
    pub(crate) fn clamped(mut self) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        while let Err(e) = self.validate() {
            warnings.push(format!("setting clamped: {e}"));
            match e {
                SettingsError::ZeroBudget | SettingsError::BudgetFraction(_) => {
                    self.budget = self.budget.clamped()
                }
                SettingsError::NoUploads(_) => {
                    self.uploads_per_frame = self.uploads_per_frame.max(1);
                    self.upload_bytes_per_frame = self.upload_bytes_per_frame.max(1);
                }
                SettingsError::NoWorkers => self.workers = 1,
                SettingsError::OutOfRange { name, .. } => {
                    let d = StreamerOptions::default();
                    let p = &mut self.planner;
                    match name {
                        "transient_reserve" => self.transient_reserve = d.transient_reserve,
                        "planner.lod_bias" => p.lod_bias = d.planner.lod_bias,
                        "planner.look_ahead_s" => p.look_ahead_s = d.planner.look_ahead_s,
                        "planner.hysteresis" => p.hysteresis = d.planner.hysteresis,
                        "planner.keep_bonus" => p.keep_bonus = d.planner.keep_bonus,
                        "planner.compact_quality_loss" => {
                            p.compact_quality_loss = d.planner.compact_quality_loss
                        }
                        _ => p.mesh_error_px = d.planner.mesh_error_px,
                    }
                }
            }
        }
        (self, warnings)
    }
}

/// A texture to register.
#[derive(Debug, Clone)]
pub struct TextureDesc {
    /// The opened file.
    pub file: TextureFile,
    /// What the texture is for. Default: colour.
    pub class: TextureClass,
    /// Importance multiplier (1 = normal, 2 = twice as important).
    pub priority: f32,
    /// Largest resolution (texels across) ever loaded, if limited.
    pub max_resolution: Option<u32>,
    /// A name for reports and GPU labels. Default: the file name.
    pub label: Option<String>,
    /// Where the renderer reads a normal map's X and Y. Default: wherever
    /// the device's format keeps them ([`NormalLayout::Any`]).
    pub normal_layout: NormalLayout,
}

impl TextureDesc {
    /// A colour texture with default settings.
    pub fn new(file: TextureFile) -> Self {
        Self {
            file,
            class: TextureClass::Color,
            priority: 1.0,
            max_resolution: None,
            label: None,
            normal_layout: NormalLayout::Any,
        }
    }

    /// The same with normal maps read as `layout` says.
    pub fn with_normal_layout(mut self, layout: NormalLayout) -> Self {
        self.normal_layout = layout;
        self
    }

    /// The same with another class.
    pub fn with_class(mut self, class: TextureClass) -> Self {
        self.class = class;
        self
    }

    /// The same with another priority.
    pub fn with_priority(mut self, priority: f32) -> Self {
        self.priority = priority;
        self
    }

    /// The same with a maximum resolution.
    pub fn with_max_resolution(mut self, texels: u32) -> Self {
        self.max_resolution = Some(texels);
        self
    }

    /// The same with a label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// An object to register: bounds and the textures it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectDesc {
    /// Centre of the bounding box, world space.
    pub center: Vec3,
    /// Half the size of the bounding box along each axis.
    pub half_extents: Vec3,
    /// Each texture with the world units one UV unit spans on this object
    /// (a 10 m wall with UVs 0..1 across it: 10).
    pub textures: Vec<(TextureId, f32)>,
    /// Each mesh with the world units one mesh unit spans on this object
    /// (its scale; the bounds above must hold the scaled mesh).
    pub meshes: Vec<(MeshId, f32)>,
}

impl ObjectDesc {
    /// An object bounded by a sphere (kept as the box around it).
    pub fn sphere(center: Vec3, radius: f32) -> Self {
        Self {
            center,
            half_extents: Vec3::splat(radius.abs()),
            textures: Vec::new(),
            meshes: Vec::new(),
        }
    }

    /// An object bounded by an axis-aligned box.
    pub fn aabb(min: Vec3, max: Vec3) -> Self {
        Self {
            center: (min + max) * 0.5,
            half_extents: (max - min).abs() * 0.5,
            textures: Vec::new(),
            meshes: Vec::new(),
        }
    }

    /// The same object also showing `texture`.
    pub fn with_texture(mut self, texture: TextureId, world_per_uv: f32) -> Self {
        self.textures.push((texture, world_per_uv));
        self
    }

    /// The same object also showing `mesh`, `scale` world units per mesh unit.
    pub fn with_mesh(mut self, mesh: MeshId, scale: f32) -> Self {
        self.meshes.push((mesh, scale));
        self
    }
}

/// Where [`crate::streamer::Streamer::update`] gets its plan
/// ([`StreamerOptions::plan_thread`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanThread {
    /// Inside `update`, on the calling thread: the plan carried out is made
    /// from this frame's views.
    Inline,
    /// On the streamer's planner thread: the plan carried out is a frame
    /// old (more while the planner thread is starved), and the render
    /// thread only takes it and hands over the next one's inputs.
    Background,
    /// Inline while fewer than `textures` textures are registered, on the
    /// planner thread from then on (and inline again should they fall
    /// below it). The plan's cost grows with the textures it fits (on one
    /// core of a 2-core CI machine, `mipstream bench-planner` at 10,000
    /// objects: p50 0.16 ms at 1,000 textures, 0.20 ms at 2,048, 0.25 ms
    /// at 4,096, 0.44 ms at 10,000 with 100,000 objects); a scene that
    /// small keeps a plan made from its own frame, which is also what
    /// makes a small scene's runs repeat exactly from frame to frame.
    Auto {
        /// Registered textures from which the plan runs on the planner
        /// thread.
        textures: usize,
    },
}

impl PlanThread {
    /// [`PlanThread::Auto`]'s default threshold.
    pub const AUTO_TEXTURES: usize = 2048;

    /// Whether a streamer with `textures` registered plans on its planner
    /// thread.
    pub fn in_background(self, textures: usize) -> bool {
        match self {
            Self::Inline => false,
            Self::Background => true,
            Self::Auto { textures: from } => textures >= from,
        }
    }
}

impl Default for PlanThread {
    fn default() -> Self {
        Self::Auto {
            textures: Self::AUTO_TEXTURES,
        }
    }
}

/// Who holds the buffers of the mesh LODs mipstream streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MeshStorage {
    /// mipstream's own vertex and index buffers
    /// ([`crate::streamer::Streamer::mesh_buffers`]), drawn by the engine.
    #[default]
    Buffers,
    /// The engine's: mipstream plans, loads and counts each LOD as before,
    /// but hands its data over ([`crate::streamer::Streamer::take_mesh_events`]) for
    /// the engine to upload into its own mesh allocator, and says when the
    /// engine's copy may go. For engines that draw meshes only from their
    /// own buffers (Bevy's `MeshAllocator`). The budget counts each LOD at
    /// 48 bytes per vertex and 4 per index, what an engine storing the same
    /// attributes holds; the engine's upload staging is its own.
    Engine,
}

/// A mesh to register: its LOD chain's file.
#[derive(Debug, Clone)]
pub struct MeshDesc {
    /// The opened file.
    pub file: MeshFile,
    /// Importance multiplier (1 = normal).
    pub priority: f32,
    /// A name for reports and GPU labels. Default: the file name.
    pub label: Option<String>,
}

impl MeshDesc {
    /// A mesh with default settings.
    pub fn new(file: MeshFile) -> Self {
        Self {
            file,
            priority: 1.0,
            label: None,
        }
    }

    /// The same with a label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}
