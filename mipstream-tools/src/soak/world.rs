//! The soaked world: a seeded random source, the camera's flights and
//! teleports, the scene's textures and boxes as the soak registers and
//! removes them, generated mesh LOD chains, and wgpu's live-resource counts.

use crate::scene::FIELD_HALF;
use glam::{UVec2, Vec3};
use mipstream::fault::{Faults, FaultySource};
use mipstream::mesh::MeshFile;
use mipstream::plan::View;
use mipstream::streamer::{MeshDesc, MeshId, ObjectDesc, Streamer, TextureDesc, TextureId};
use mipstream::{container::TextureFile, source::FileSource};
use std::path::PathBuf;
use std::sync::Arc;

use super::SoakError;

/// SplitMix64: small, seeded, good enough for choosing cameras.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub(super) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub(super) fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
    pub(super) fn point(&mut self) -> Vec3 {
        Vec3::new(
            self.range(-FIELD_HALF, FIELD_HALF),
            self.range(1.5, 40.0),
            self.range(-FIELD_HALF, FIELD_HALF),
        )
    }
}

/// The camera: flights between random points, and teleports.
pub(super) struct Camera {
    pub(super) from: Vec3,
    pub(super) to: Vec3,
    pub(super) look: Vec3,
    pub(super) frame: u64,
    pub(super) frames: u64,
}

impl Camera {
    pub(super) fn view(&self, viewport: UVec2) -> View {
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
pub(super) struct Slot {
    pub(super) path: PathBuf,
    pub(super) class: mipstream::kinds::TextureClass,
    pub(super) id: Option<TextureId>,
}

/// Registers `slot`'s file, reading it through the fault layer.
pub(super) fn register(
    streamer: &mut Streamer,
    slot: &Slot,
    faults: Option<&Arc<Faults>>,
) -> Result<TextureId, String> {
    let source = FileSource::open(&slot.path).map_err(|e| e.to_string())?;
    let source: Arc<dyn mipstream::source::ByteSource> = match faults {
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
pub(super) struct Box3 {
    pub(super) center: Vec3,
    pub(super) size: Vec3,
    pub(super) texture: usize,
    pub(super) tile: f32,
    pub(super) mesh: Option<usize>,
}

impl Box3 {
    pub(super) fn desc(&self, id: TextureId, meshes: &[MeshId]) -> ObjectDesc {
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
    let lods: Vec<(u32, f32)> = std::iter::successors(Some(n), |k| Some(k / 2))
        .take_while(|&k| k >= 4)
        .map(|k| (k, if k == n { 0.0 } else { 0.5 * freq / k as f32 }))
        .collect();
    crate::scene::grid_mesh(&lods, freq)
}

/// The soak's mesh files in `dir` (written on first use).
pub(super) fn mesh_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, SoakError> {
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
pub(super) fn register_mesh(
    streamer: &mut Streamer,
    path: &std::path::Path,
    faults: Option<&Arc<Faults>>,
) -> Result<MeshId, String> {
    let source = FileSource::open(path).map_err(|e| e.to_string())?;
    let source: Arc<dyn mipstream::source::ByteSource> = match faults {
        Some(f) => Arc::new(FaultySource::new(Arc::new(source), f.clone())),
        None => Arc::new(source),
    };
    let file = MeshFile::open(source).map_err(|e| e.to_string())?;
    streamer
        .register_mesh(MeshDesc::new(file))
        .map_err(|e| e.to_string())
}

pub(super) fn live_buffers(instance: &wgpu::Instance) -> i64 {
    instance
        .generate_report()
        .map_or(0, |r| r.hub_report().buffers.num_kept_from_user as i64)
}

pub(super) fn live_textures(instance: &wgpu::Instance) -> i64 {
    instance
        .generate_report()
        .map_or(0, |r| r.hub_report().textures.num_kept_from_user as i64)
}
