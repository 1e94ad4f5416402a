//! `mipstream soak`: hours of abuse in minutes, with nothing lost and nothing
//! over budget.
//!
//! [`run`] drives a [`Streamer`] over a scene with random camera teleports and
//! flights, random budget changes (down to a few MiB and back up), objects
//! added and removed, textures removed and registered again, and the chosen
//! faults ([`crate::fault`]): failing, short and slow reads, failing
//! transcodes, GPU allocations refused as out-of-memory. After every frame it
//! checks [`Streamer::check_invariants`] and the budget. Nothing is rendered:
//! the streamer's work (plans, loads, GPU copies and uploads) is what is under
//! test, so a frame is cheap and a soak can run tens of thousands of them.
//!
//! At the end the faults stop and the camera rests: the soaked streamer must
//! converge to what a fresh streamer without faults settles to for the same
//! textures, objects, view and budget. Then both streamers are dropped and
//! wgpu's registry is asked how many textures are still alive
//! (`leaked_textures`) and how many buffers (`leaked_buffers`).
//!
//! Meshes take part too: three generated LOD chains (written to the cache
//! folder once) read through the same fault layer, on a few boxes each, so
//! their loads fail, stall and have their allocations refused like textures',
//! and the recovery compares their LODs with the fresh streamer's as well.

use crate::demo::scene::{BuiltinScene, FIELD_HALF};
use crate::demo::source::{PreparedScene, SceneSource, SourceError};
use crate::fault::{FaultCounts, FaultRates, Faults, FaultySource};
use crate::mesh::{write_mesh, LodData, MeshFile, Vertex};
use crate::plan::View;
use crate::streamer::{Budget, ObjectDesc, ObjectId, Streamer, StreamerError, StreamerOptions};
use crate::streamer::{MeshDesc, MeshId, TextureDesc, TextureId};
use crate::{FileSource, TextureFile};
use glam::{UVec2, Vec3};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which faults a soak injects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultSet {
    /// Failing and short reads, and failing transcodes (what a bad disk or a
    /// corrupt download gives).
    pub io: bool,
    /// Reads that take 200 ms.
    pub slow: bool,
    /// GPU allocations refused as out-of-memory.
    pub oom: bool,
    /// Random budget changes, down to a few MiB and up past full residency.
    pub budget: bool,
}

impl FaultSet {
    /// Parses a comma-separated list of `io`, `slow`, `oom`, `budget` (`all`
    /// for every one, `none` or an empty list for none).
    pub fn parse(list: &str) -> Result<Self, SoakError> {
        let mut set = Self::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "io" => set.io = true,
                "slow" => set.slow = true,
                "oom" => set.oom = true,
                "budget" => set.budget = true,
                "all" => {
                    set = Self {
                        io: true,
                        slow: true,
                        oom: true,
                        budget: true,
                    }
                }
                "none" => {}
                other => {
                    return Err(SoakError::Options(format!(
                        "unknown fault `{other}`: expected io, slow, oom, budget, all or none"
                    )))
                }
            }
        }
        Ok(set)
    }

    /// The list as `parse` reads it.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.io, "io"),
            (self.slow, "slow"),
            (self.oom, "oom"),
            (self.budget, "budget"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// What [`run`] does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// The scene.
    pub scene: SceneSource,
    /// Frames of abuse (the recovery phase comes after these).
    pub frames: u64,
    /// Seed of every random choice: camera, budgets, objects, faults.
    pub seed: u64,
    /// The faults to inject.
    pub faults: FaultSet,
    /// Fault rates used for the kinds in `faults`. Default: reads fail 8% of
    /// the time and come back short 4%, transcodes fail 4%, 3% of reads take
    /// 200 ms, 5% of GPU allocations are refused.
    pub rates: FaultRates,
    /// Backends to pick the adapter from (None: `WGPU_BACKEND`, else any).
    pub backends: Option<wgpu::Backends>,
    /// Where the built-in scene's textures are cooked.
    pub cache_dir: PathBuf,
    /// The viewport the views are planned for.
    pub viewport: UVec2,
    /// Each frame lasts at least this long (the render thread sleeps out the
    /// rest), so loads, slow reads and back-off relate to frames as they would
    /// in an application. Default: 5 ms.
    pub frame_time: Duration,
    /// Most frames the recovery phase may take before it counts as failed.
    pub recovery_frames: u64,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            scene: SceneSource::Builtin,
            frames: 2000,
            seed: 1,
            faults: FaultSet::default(),
            rates: FaultRates {
                io_error: 0.08,
                short_read: 0.04,
                slow_read: 0.03,
                slow_delay: Duration::from_millis(200),
                transcode_error: 0.04,
                out_of_memory: 0.05,
            },
            backends: None,
            cache_dir: BuiltinScene::default_cache_dir(),
            viewport: UVec2::new(1280, 720),
            frame_time: Duration::from_millis(5),
            recovery_frames: 6000,
        }
    }
}

/// Why a soak could not run (a soak that runs and finds problems returns a
/// [`SoakReport`] that did not pass).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// Bad options.
    #[error("{0}")]
    Options(String),
    /// No adapter or device.
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuInitError),
    /// The scene could not be prepared.
    #[error(transparent)]
    Scene(#[from] SourceError),
    /// Registering the scene failed with faults off.
    #[error(transparent)]
    Streamer(#[from] StreamerError),
}

/// What a soak found. [`passed`](Self::passed) is the verdict.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Frames of abuse run.
    pub frames: u64,
    /// The seed.
    pub seed: u64,
    /// The faults asked for.
    pub faults: Vec<&'static str>,
    /// The adapter.
    pub adapter: String,
    /// The backend.
    pub backend: String,
    /// Frames where `check_invariants` failed.
    pub invariant_violations: u64,
    /// The first few violations, as text.
    pub violation_messages: Vec<String>,
    /// Frames where the bytes held exceeded the budget set.
    pub frames_over_budget: u64,
    /// Faults injected, by kind (budget changes not included).
    pub fault_counts: FaultCounts,
    /// Budget changes made.
    pub budget_changes: u64,
    /// Out-of-memory events the streamer recorded.
    pub oom_events: u64,
    /// Panics: on the render thread (caught around `update`) plus loader
    /// threads that panicked (caught by the loader).
    pub panics: u64,
    /// Loads that came back failed.
    pub failed_loads: u64,
    /// Registrations that failed (faults on) and were retried.
    pub failed_registrations: u64,
    /// Camera teleports.
    pub teleports: u64,
    /// Objects added and removed.
    pub objects_added: u64,
    /// Objects removed.
    pub objects_removed: u64,
    /// Textures removed and registered again.
    pub textures_reregistered: u64,
    /// Textures still alive in wgpu's registry after both streamers were
    /// dropped and the device went idle (against the count before).
    pub leaked_textures: i64,
    /// Buffers (mesh LODs) still alive in wgpu's registry after teardown.
    pub leaked_buffers: i64,
    /// Times a mesh's drawn LOD changed during the abuse.
    pub mesh_lod_changes: u64,
    /// Most bytes held in any frame.
    pub peak_resident_bytes: u64,
    /// The largest budget set.
    pub budget_bytes_max: u64,
    /// The smallest budget set.
    pub budget_bytes_min: u64,
    /// `update` time, milliseconds: median, 99th percentile, worst.
    pub update_ms_p50: f64,
    /// See `update_ms_p50`.
    pub update_ms_p99: f64,
    /// See `update_ms_p50`.
    pub update_ms_max: f64,
    /// Whether, after the faults stopped, the streamer settled at the last
    /// budget (every texture at its planned level, no failure left), and then,
    /// with room for everything, came to exactly the levels and tiers a fresh
    /// streamer without faults settles to.
    pub recovered: bool,
    /// Frames until the streamer settled at the last budget.
    pub frames_to_settle: u64,
    /// Frames the whole recovery took.
    pub frames_to_recover: u64,
    /// Textures that differ from the fresh streamer when recovery gave up.
    pub unrecovered: Vec<String>,
    /// Wall time of the whole soak.
    pub seconds: f64,
}

impl SoakReport {
    /// Zero violations, over-budget frames, panics and leaks, and recovered.
    pub fn passed(&self) -> bool {
        self.invariant_violations == 0
            && self.frames_over_budget == 0
            && self.panics == 0
            && self.leaked_textures == 0
            && self.leaked_buffers == 0
            && self.recovered
    }

    /// The report as JSON (keys of issue 7 at the top level).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "frames": self.frames,
            "seed": self.seed,
            "faults": self.faults,
            "adapter": self.adapter,
            "backend": self.backend,
            "invariant_violations": self.invariant_violations,
            "violation_messages": self.violation_messages,
            "frames_over_budget": self.frames_over_budget,
            "faults_injected": self.fault_counts.total() + self.budget_changes,
            "faults_by_kind": {
                "io_errors": self.fault_counts.io_errors,
                "short_reads": self.fault_counts.short_reads,
                "slow_reads": self.fault_counts.slow_reads,
                "transcode_errors": self.fault_counts.transcode_errors,
                "out_of_memory": self.fault_counts.out_of_memory,
                "budget_changes": self.budget_changes,
            },
            "oom_events": self.oom_events,
            "panics": self.panics,
            "failed_loads": self.failed_loads,
            "failed_registrations": self.failed_registrations,
            "teleports": self.teleports,
            "objects_added": self.objects_added,
            "objects_removed": self.objects_removed,
            "textures_reregistered": self.textures_reregistered,
            "leaked_textures": self.leaked_textures,
            "leaked_buffers": self.leaked_buffers,
            "mesh_lod_changes": self.mesh_lod_changes,
            "peak_resident_bytes": self.peak_resident_bytes,
            "budget_bytes_max": self.budget_bytes_max,
            "budget_bytes_min": self.budget_bytes_min,
            "update_ms_p50": self.update_ms_p50,
            "update_ms_p99": self.update_ms_p99,
            "update_ms_max": self.update_ms_max,
            "recovered": self.recovered,
            "frames_to_settle": self.frames_to_settle,
            "frames_to_recover": self.frames_to_recover,
            "unrecovered": self.unrecovered,
            "seconds": self.seconds,
            "passed": self.passed(),
        })
    }

    /// A few lines for a terminal.
    pub fn summary(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "{} frames, seed {}, faults [{}] on {} ({})\n\
             invariant violations {}, frames over budget {}, panics {}, leaked textures {}, buffers {}\n\
             faults injected: {} io errors, {} short reads, {} slow reads, {} transcode errors, \
             {} refused allocations, {} budget changes ({:.1}-{:.1} MiB)\n\
             {} out-of-memory events, {} failed loads, {} failed registrations; \
             {} teleports, {} objects added, {} removed, {} textures re-registered, \
             {} mesh LOD changes\n\
             peak held {:.2} MiB; update() p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n\
             recovery after the faults stopped: settled in {} frames, {} in {} frames\n\
             {}",
            self.frames,
            self.seed,
            self.faults.join(","),
            self.adapter,
            self.backend,
            self.invariant_violations,
            self.frames_over_budget,
            self.panics,
            self.leaked_textures,
            self.leaked_buffers,
            self.fault_counts.io_errors,
            self.fault_counts.short_reads,
            self.fault_counts.slow_reads,
            self.fault_counts.transcode_errors,
            self.fault_counts.out_of_memory,
            self.budget_changes,
            mib(self.budget_bytes_min),
            mib(self.budget_bytes_max),
            self.oom_events,
            self.failed_loads,
            self.failed_registrations,
            self.teleports,
            self.objects_added,
            self.objects_removed,
            self.textures_reregistered,
            self.mesh_lod_changes,
            mib(self.peak_resident_bytes),
            self.update_ms_p50,
            self.update_ms_p99,
            self.update_ms_max,
            self.frames_to_settle,
            if self.recovered {
                "converged to the fault-free picture"
            } else {
                "DID NOT CONVERGE"
            },
            self.frames_to_recover,
            if self.passed() { "PASSED" } else { "FAILED" },
        )
    }
}

/// SplitMix64: small, seeded, good enough for choosing cameras.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
    fn point(&mut self) -> Vec3 {
        Vec3::new(
            self.range(-FIELD_HALF, FIELD_HALF),
            self.range(1.5, 40.0),
            self.range(-FIELD_HALF, FIELD_HALF),
        )
    }
}

/// The camera: flights between random points, and teleports.
struct Camera {
    from: Vec3,
    to: Vec3,
    look: Vec3,
    frame: u64,
    frames: u64,
}

impl Camera {
    fn view(&self, viewport: UVec2) -> View {
        let s = (self.frame as f32 / self.frames.max(1) as f32).min(1.0);
        let eye = self.from.lerp(self.to, s);
        let dir = if self.to.distance(self.from) > 1.0 {
            (self.to - self.from).normalize()
        } else {
            self.look
        };
        let velocity = (self.to - self.from) / (self.frames.max(1) as f32 / 60.0);
        View::look_at(
            eye,
            eye + dir + Vec3::new(0.0, -0.15, 0.0),
            Vec3::Y,
            60f32.to_radians(),
            viewport,
            0.1,
            1000.0,
        )
        .with_velocity(velocity)
    }
}

/// One registered texture of the soak, by scene index.
struct Slot {
    path: PathBuf,
    class: crate::TextureClass,
    id: Option<TextureId>,
}

/// Registers `slot`'s file, reading it through the fault layer.
fn register(
    streamer: &mut Streamer,
    slot: &Slot,
    faults: Option<&Arc<Faults>>,
) -> Result<TextureId, String> {
    let source = FileSource::open(&slot.path).map_err(|e| e.to_string())?;
    let source: Arc<dyn crate::ByteSource> = match faults {
        Some(f) => Arc::new(FaultySource::new(Arc::new(source), f.clone())),
        None => Arc::new(source),
    };
    let file = TextureFile::open(source).map_err(|e| e.to_string())?;
    let mut desc = TextureDesc::new(file).with_class(slot.class);
    desc.label = slot
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    streamer.register_texture(desc).map_err(|e| e.to_string())
}

/// One box of the soak: where, which scene texture it wears, and which of
/// the soak's meshes it shows, if any.
#[derive(Clone, Copy)]
struct Box3 {
    center: Vec3,
    size: Vec3,
    texture: usize,
    tile: f32,
    mesh: Option<usize>,
}

impl Box3 {
    fn desc(&self, id: TextureId, meshes: &[MeshId]) -> ObjectDesc {
        let d = ObjectDesc::aabb(self.center - self.size * 0.5, self.center + self.size * 0.5)
            .with_texture(id, self.tile);
        match self.mesh.and_then(|m| meshes.get(m)) {
            // the unit mesh scaled to the box
            Some(&m) => d.with_mesh(m, self.size.max_element()),
            None => d,
        }
    }
}

/// A unit grid (`n` quads across, bumps of `freq`) with LODs halving its
/// resolution down to 4 quads; errors grow as it coarsens.
fn grid_mesh(n: u32, freq: f32) -> Vec<u8> {
    let lod = |n: u32| {
        let mut vertices = Vec::new();
        for y in 0..=n {
            for x in 0..=n {
                let (u, v) = (x as f32 / n as f32, y as f32 / n as f32);
                let z = 0.05 * (u * freq).sin() * (v * freq).sin();
                vertices.push(Vertex {
                    position: [u - 0.5, v - 0.5, z],
                    normal: [0.0, 0.0, 1.0],
                    uv: [u, v],
                    tangent: [1.0, 0.0, 0.0, 1.0],
                });
            }
        }
        let mut indices = Vec::new();
        for y in 0..n {
            for x in 0..n {
                let i = y * (n + 1) + x;
                indices.extend([i, i + 1, i + n + 1, i + 1, i + n + 2, i + n + 1]);
            }
        }
        (vertices, indices)
    };
    let mut lods = Vec::new();
    let mut k = n;
    while k >= 4 {
        let (vertices, indices) = lod(k);
        let error = if k == n { 0.0 } else { 0.5 * freq / k as f32 };
        lods.push(LodData {
            vertices,
            indices,
            error,
        });
        k /= 2;
    }
    write_mesh(&lods, 1 | 2 | 4 | 8)
}

/// The soak's mesh files in `dir` (written on first use).
fn mesh_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, SoakError> {
    let dir = dir.join("soak-meshes");
    std::fs::create_dir_all(&dir)
        .map_err(|e| SoakError::Options(format!("{}: {e}", dir.display())))?;
    [(64, 6.0), (32, 12.0), (128, 9.0)]
        .iter()
        .map(|&(n, f)| {
            let p = dir.join(format!("grid-{n}.msmesh"));
            if !p.is_file() {
                std::fs::write(&p, grid_mesh(n, f))
                    .map_err(|e| SoakError::Options(format!("{}: {e}", p.display())))?;
            }
            Ok(p)
        })
        .collect()
}

/// Registers a mesh file, reading it through the fault layer.
fn register_mesh(
    streamer: &mut Streamer,
    path: &std::path::Path,
    faults: Option<&Arc<Faults>>,
) -> Result<MeshId, String> {
    let source = FileSource::open(path).map_err(|e| e.to_string())?;
    let source: Arc<dyn crate::ByteSource> = match faults {
        Some(f) => Arc::new(FaultySource::new(Arc::new(source), f.clone())),
        None => Arc::new(source),
    };
    let file = MeshFile::open(source).map_err(|e| e.to_string())?;
    streamer
        .register_mesh(MeshDesc::new(file))
        .map_err(|e| e.to_string())
}

fn live_buffers(instance: &wgpu::Instance) -> i64 {
    instance
        .generate_report()
        .map_or(0, |r| r.hub_report().buffers.num_kept_from_user as i64)
}

fn live_textures(instance: &wgpu::Instance) -> i64 {
    instance
        .generate_report()
        .map_or(0, |r| r.hub_report().textures.num_kept_from_user as i64)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Runs a soak; `progress(frame, total)` is called every frame.
pub fn run(
    options: &SoakOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<SoakReport, SoakError> {
    let start = Instant::now();
    if options.frames == 0 {
        return Err(SoakError::Options("--frames must be at least 1".into()));
    }
    let scene = match options.scene.prepare(&options.cache_dir, |_, _, _| {})? {
        PreparedScene::Boxes(scene) => scene,
        PreparedScene::Meshes { .. } => {
            return Err(SoakError::Options(
                "the soak runs on boxes: default, sponza or a folder of textures (its meshes \
                 are generated)"
                    .into(),
            ))
        }
    };
    let gpu = crate::gpu::headless(options.backends)?;
    let info = gpu.adapter.get_info();
    let mut report = SoakReport {
        frames: options.frames,
        seed: options.seed,
        faults: options.faults.names(),
        adapter: info.name.clone(),
        backend: format!("{:?}", info.backend).to_lowercase(),
        budget_bytes_min: u64::MAX,
        ..SoakReport::default()
    };
    let textures_before = live_textures(&gpu.instance);
    let buffers_before = live_buffers(&gpu.instance);
    let mesh_paths = mesh_files(&options.cache_dir)?;

    let mut rng = Rng(options.seed ^ 0x005E_ED0F_50A4);
    let faults = Faults::new(options.seed);
    let reads_faulty = options.faults.io || options.faults.slow;
    let rates = FaultRates {
        io_error: if options.faults.io {
            options.rates.io_error
        } else {
            0.0
        },
        short_read: if options.faults.io {
            options.rates.short_read
        } else {
            0.0
        },
        transcode_error: if options.faults.io {
            options.rates.transcode_error
        } else {
            0.0
        },
        slow_read: if options.faults.slow {
            options.rates.slow_read
        } else {
            0.0
        },
        slow_delay: options.rates.slow_delay,
        out_of_memory: if options.faults.oom {
            options.rates.out_of_memory
        } else {
            0.0
        },
    };

    // register with faults off (a fixed starting point), then turn them on
    let mut streamer = Streamer::with_options(
        &gpu.device,
        &gpu.queue,
        StreamerOptions {
            budget: Budget::Bytes(u64::MAX / 4),
            ..StreamerOptions::default()
        },
    );
    let mut slots: Vec<Slot> = scene
        .textures
        .iter()
        .zip(&scene.classes)
        .map(|(p, c)| Slot {
            path: p.clone(),
            class: *c,
            id: None,
        })
        .collect();
    for slot in &mut slots {
        let id = register(&mut streamer, slot, reads_faulty.then_some(&faults))
            .map_err(|e| SoakError::Options(format!("registering the scene: {e}")))?;
        slot.id = Some(id);
    }
    let ids: Vec<TextureId> = slots.iter().filter_map(|s| s.id).collect();
    let mut meshes = Vec::new();
    for p in &mesh_paths {
        meshes.push(
            register_mesh(&mut streamer, p, reads_faulty.then_some(&faults))
                .map_err(|e| SoakError::Options(format!("registering a mesh: {e}")))?,
        );
    }
    let full = BuiltinScene::full_residency_bytes(&streamer, &ids)
        + meshes
            .iter()
            .filter_map(|&m| streamer.mesh_bytes_at(m, 0).ok())
            .sum::<u64>();
    let tails = streamer.report().tail_bytes;
    // a few MiB above what the tails alone need: the least a budget can be
    let floor = tails + (4 << 20);
    let ceiling = full + full / 4;
    let mut budget = (full / 2).max(floor);
    streamer.set_budget(Budget::Bytes(budget));
    report.budget_bytes_max = budget;
    report.budget_bytes_min = budget;

    let mut boxes: Vec<(Box3, Option<ObjectId>)> = Vec::new();
    for (i, o) in scene.objects.iter().enumerate() {
        let b = Box3 {
            center: o.center,
            size: o.size,
            texture: o.texture,
            tile: o.tile,
            // a few instances per mesh, so the nearest moves with the camera
            mesh: (i % 50 == 1).then_some(i / 50 % meshes.len()),
        };
        let id = streamer.register_object(b.desc(ids[o.texture], &meshes))?;
        boxes.push((b, Some(id)));
    }
    // as many places again where boxes appear and disappear
    for i in 0..scene.objects.len() {
        let size = Vec3::new(
            rng.range(1.0, 12.0),
            rng.range(1.0, 12.0),
            rng.range(1.0, 12.0),
        );
        boxes.push((
            Box3 {
                center: Vec3::new(0.0, size.y * 0.5, 0.0),
                size,
                texture: i % slots.len(),
                tile: rng.range(1.0, 8.0),
                mesh: (i % 50 == 3).then_some(i / 50 % meshes.len()),
            },
            None,
        ));
    }
    streamer.set_faults(Some(faults.clone()));
    faults.set_rates(rates);

    let mut camera = Camera {
        from: Vec3::new(0.0, 20.0, -FIELD_HALF),
        to: Vec3::new(0.0, 20.0, FIELD_HALF),
        look: Vec3::Z,
        frame: 0,
        frames: 600,
    };
    let mut times = Vec::with_capacity(options.frames as usize);
    let mut mesh_lods: Vec<u32> = meshes
        .iter()
        .map(|&m| streamer.mesh_status(m).map_or(0, |s| s.resident))
        .collect();
    let mut next_budget = 200u64;
    let note = |report: &mut SoakReport, e: String| {
        report.invariant_violations += 1;
        if report.violation_messages.len() < 8 {
            report.violation_messages.push(e);
        }
    };
    let pace = |since: Instant| {
        let left = options.frame_time.saturating_sub(since.elapsed());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
    };
    for frame in 1..=options.frames {
        let frame_start = Instant::now();
        // the camera: keep flying, or start a new flight, or teleport
        camera.frame += 1;
        if camera.frame >= camera.frames {
            let teleport = rng.chance(0.3);
            let from = if teleport {
                report.teleports += 1;
                rng.point()
            } else {
                camera.to
            };
            camera = Camera {
                from,
                to: if teleport && rng.chance(0.5) {
                    from // stand and look
                } else {
                    rng.point()
                },
                look: Vec3::new(rng.range(-1.0, 1.0), 0.0, rng.range(-1.0, 1.0))
                    .normalize_or(Vec3::Z),
                frame: 0,
                frames: 20 + rng.below(300) as u64,
            };
        }
        // the budget
        if options.faults.budget && frame >= next_budget {
            let (lo, hi) = ((floor as f64).ln(), (ceiling.max(floor + 1) as f64).ln());
            budget = (lo + (hi - lo) * rng.unit() as f64).exp() as u64;
            if rng.chance(0.2) {
                budget = floor; // a hard cut to the least
            }
            streamer.set_budget(Budget::Bytes(budget));
            report.budget_changes += 1;
            report.budget_bytes_max = report.budget_bytes_max.max(budget);
            report.budget_bytes_min = report.budget_bytes_min.min(budget);
            next_budget = frame + 30 + rng.below(250) as u64;
        }
        // objects come and go
        if rng.chance(0.05) {
            let i = rng.below(boxes.len());
            if let (b, Some(id)) = boxes[i] {
                if streamer.remove_object(id).is_ok() {
                    report.objects_removed += 1;
                }
                boxes[i] = (b, None);
            } else if let Some(tex) = slots[boxes[i].0.texture].id {
                let b = Box3 {
                    center: Vec3::new(
                        rng.range(-FIELD_HALF, FIELD_HALF),
                        boxes[i].0.size.y * 0.5,
                        rng.range(-FIELD_HALF, FIELD_HALF),
                    ),
                    ..boxes[i].0
                };
                if let Ok(id) = streamer.register_object(b.desc(tex, &meshes)) {
                    report.objects_added += 1;
                    boxes[i] = (b, Some(id));
                }
            }
        }
        // a texture is removed and registered again (through the faults)
        if rng.chance(0.01) {
            let t = rng.below(slots.len());
            if let Some(id) = slots[t].id.take() {
                let _ = streamer.remove_texture(id);
            }
        }
        for (t, slot) in slots.iter_mut().enumerate() {
            if slot.id.is_none() {
                match register(&mut streamer, slot, reads_faulty.then_some(&faults)) {
                    Ok(id) => {
                        slot.id = Some(id);
                        report.textures_reregistered += 1;
                        for (b, obj) in boxes.iter_mut().filter(|(b, _)| b.texture == t) {
                            if let Some(o) = obj {
                                if streamer.set_object(*o, b.desc(id, &meshes)).is_err() {
                                    *obj = None;
                                }
                            }
                        }
                    }
                    Err(_) => report.failed_registrations += 1,
                }
            }
        }

        let view = camera.view(options.viewport);
        let update =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| streamer.update(&[view])));
        let stats = match update {
            Ok(s) => s,
            Err(_) => {
                report.panics += 1;
                break;
            }
        };
        times.push(stats.update_time.as_secs_f64() * 1e3);
        for (m, last) in meshes.iter().zip(&mut mesh_lods) {
            if let Ok(st) = streamer.mesh_status(*m) {
                report.mesh_lod_changes += (st.resident != *last) as u64;
                *last = st.resident;
            }
        }
        report.failed_loads += stats.failed_loads as u64;
        report.panics += stats.panicked_loads as u64;
        if let Err(e) = streamer.check_invariants() {
            note(&mut report, format!("frame {frame}: {e}"));
        }
        let held = streamer.held_bytes();
        report.peak_resident_bytes = report.peak_resident_bytes.max(held);
        if held > budget {
            report.frames_over_budget += 1;
            if report.violation_messages.len() < 8 {
                report.violation_messages.push(format!(
                    "frame {frame}: held {held} bytes over the budget of {budget}"
                ));
            }
        }
        progress(frame, options.frames);
        pace(frame_start);
    }

    // recovery: faults off, camera at rest; compare with a fresh streamer
    faults.stop();
    let view = camera.view(options.viewport);
    let mut fresh = Streamer::with_options(
        &gpu.device,
        &gpu.queue,
        StreamerOptions {
            budget: Budget::Bytes(budget),
            ..StreamerOptions::default()
        },
    );
    let mut pairs = Vec::new();
    for slot in &slots {
        if let Some(id) = slot.id {
            let fresh_id = register(&mut fresh, slot, None)
                .map_err(|e| SoakError::Options(format!("the fault-free reference: {e}")))?;
            pairs.push((id, fresh_id));
        }
    }
    let mut fresh_meshes = Vec::new();
    for p in &mesh_paths {
        fresh_meshes.push(
            register_mesh(&mut fresh, p, None)
                .map_err(|e| SoakError::Options(format!("the fault-free reference: {e}")))?,
        );
    }
    let mesh_pairs: Vec<(MeshId, MeshId)> = meshes
        .iter()
        .copied()
        .zip(fresh_meshes.iter().copied())
        .collect();
    for (b, obj) in &boxes {
        if obj.is_some() {
            if let Some(&(_, f)) = slots[b.texture]
                .id
                .and_then(|id| pairs.iter().find(|(s, _)| *s == id))
            {
                fresh.register_object(b.desc(f, &fresh_meshes))?;
            }
        }
    }
    fresh.settle(&[view], Duration::from_secs(300))?;
    let differences = |streamer: &Streamer, fresh: &Streamer| -> Vec<String> {
        let textures = pairs.iter().filter_map(|&(s, f)| {
            let (a, b) = (
                streamer.texture_status(s).ok()?,
                fresh.texture_status(f).ok()?,
            );
            (a.resident != b.resident || a.tier != b.tier).then(|| {
                format!(
                    "{s}: level {} {:?} (fault-free: {} {:?})",
                    a.resident, a.tier, b.resident, b.tier
                )
            })
        });
        let meshes = mesh_pairs.iter().filter_map(|&(s, f)| {
            let (a, b) = (streamer.mesh_status(s).ok()?, fresh.mesh_status(f).ok()?);
            (a.resident != b.resident)
                .then(|| format!("{s}: LOD {} (fault-free: {})", a.resident, b.resident))
        });
        textures.chain(meshes).collect()
    };
    // first at the last budget: every texture gets back to its planned level
    // with no failure left (which levels those are may differ from the fresh
    // streamer's where the budget is tight: the planner keeps what is resident
    // rather than swapping one texture's detail for another's)
    let mut settled = false;
    let mut frame = 0;
    while frame < options.recovery_frames {
        frame += 1;
        let frame_start = Instant::now();
        streamer.update(&[view]);
        if let Err(e) = streamer.check_invariants() {
            note(&mut report, format!("recovery frame {frame}: {e}"));
        }
        if streamer.converged() && !streamer.has_failures() {
            settled = true;
            break;
        }
        pace(frame_start);
    }
    report.frames_to_settle = frame;
    // then with room for everything both want: the same levels, exactly
    let roomy = full * 2 + (16 << 20);
    streamer.set_budget(Budget::Bytes(roomy));
    fresh.set_budget(Budget::Bytes(roomy));
    fresh.settle(&[view], Duration::from_secs(300))?;
    while settled && frame < options.recovery_frames {
        frame += 1;
        let frame_start = Instant::now();
        streamer.update(&[view]);
        if let Err(e) = streamer.check_invariants() {
            note(&mut report, format!("recovery frame {frame}: {e}"));
        }
        if streamer.converged()
            && !streamer.has_failures()
            && differences(&streamer, &fresh).is_empty()
        {
            report.recovered = true;
            break;
        }
        pace(frame_start);
    }
    report.frames_to_recover = frame;
    if !report.recovered {
        if std::env::var_os("MIPSTREAM_SOAK_DEBUG").is_some() {
            eprintln!("{}", streamer.report());
        }
        report.unrecovered = differences(&streamer, &fresh);
        report.unrecovered.truncate(16);
    }
    report.oom_events = streamer.oom_event_count();
    report.fault_counts = faults.counts();

    // teardown: drop both while nothing special is going on, wait for the GPU
    drop(streamer);
    drop(fresh);
    let _ = gpu.device.poll(wgpu::PollType::Wait {
        submission_index: None,
        timeout: None,
    });
    report.leaked_textures = live_textures(&gpu.instance) - textures_before;
    report.leaked_buffers = live_buffers(&gpu.instance) - buffers_before;

    times.sort_by(f64::total_cmp);
    report.update_ms_p50 = percentile(&times, 0.5);
    report.update_ms_p99 = percentile(&times, 0.99);
    report.update_ms_max = times.last().copied().unwrap_or(0.0);
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
