//! The streamable mesh container (`.msmesh`): one mesh primitive's LOD chain,
//! each level's vertices and indices in byte ranges of their own, so a loader
//! reads exactly the level it wants.
//!
//! Layout (little-endian, version 1):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `MSMESH01` |
//! | 8..12 | version (1) |
//! | 12..16 | vertex stride in bytes (48: [`Vertex`]) |
//! | 16..20 | attribute mask (1 position, 2 normal, 4 uv0, 8 tangent: which were in the source; missing ones are generated or zero) |
//! | 20..24 | LOD count (1 to [`MAX_LODS`]) |
//! | 24..48 | bounds: min xyz, max xyz (f32) |
//! | 48..52 | flags: 1 = the LOD entries carry measured image errors |
//! | 52..64 | reserved (zero) |
//! | 64.. | one 32-byte entry per LOD, finest first: vertex offset (u64), index offset (u64), vertex count (u32), index count (u32), geometric error in mesh units (f32), image error (f32, squared error per covered pixel, see `mesh::image_error`; zero without flag 1) |
//!
//! then the data: per LOD `vertex count x 48` bytes of vertices and `index
//! count x 4` bytes of u32 indices, each range 4-byte aligned.
//!
//! [`MeshFile::open`] validates the header and the table against the file
//! size before anything else is read: counts, ranges inside the file and not
//! overlapping each other or the table, alignment, whole triangles, errors
//! finite and not decreasing, triangle counts not increasing, image errors
//! finite and not negative (LOD 0's zero).
//! [`MeshFile::read_lod`] reads one level's two ranges (never more than the
//! validated sizes) and checks every index against the level's vertex count.

use crate::source::{ByteSource, FileSource, ReadError};
use glam::Vec3;
use std::sync::Arc;

/// The file identifier.
pub const MAGIC: [u8; 8] = *b"MSMESH01";
/// The container version this reader reads.
pub const VERSION: u32 = 1;
/// Most LODs a file may hold.
pub const MAX_LODS: u32 = 16;
/// Bytes of the fixed header.
pub const HEADER_BYTES: u64 = 64;
/// Bytes of one LOD table entry.
pub const LOD_ENTRY_BYTES: u64 = 32;
/// Header flag: the LOD entries carry measured image errors.
pub const FLAG_IMAGE_ERROR: u32 = 1;

/// Attribute mask bit: positions (always present).
pub const ATTR_POSITION: u32 = 1;
/// Attribute mask bit: normals came from the source.
pub const ATTR_NORMAL: u32 = 2;
/// Attribute mask bit: texture coordinates came from the source.
pub const ATTR_UV: u32 = 4;
/// Attribute mask bit: tangents came from the source.
pub const ATTR_TANGENT: u32 = 8;

/// One vertex as stored and as the renderer's vertex buffer takes it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Vertex {
    /// Position, mesh units.
    pub position: [f32; 3],
    /// Unit normal.
    pub normal: [f32; 3],
    /// Texture coordinates (set 0).
    pub uv: [f32; 2],
    /// Tangent xyz and handedness w (glTF convention).
    pub tangent: [f32; 4],
}

/// Bytes of one [`Vertex`].
pub const VERTEX_STRIDE: u32 = std::mem::size_of::<Vertex>() as u32;

/// Where one LOD lives and what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LodInfo {
    /// Byte offset of the vertices.
    pub vertex_offset: u64,
    /// Byte offset of the indices.
    pub index_offset: u64,
    /// Vertices.
    pub vertex_count: u32,
    /// Indices (three per triangle).
    pub index_count: u32,
    /// Geometric error against the full mesh, mesh units (0 for LOD 0).
    pub error: f32,
    /// Measured image error against the full mesh: squared error per
    /// covered pixel, sRGB 0-255 (see `mesh::image_error`, feature `gltf`);
    /// `None` when the file was written without it.
    pub image_error: Option<f32>,
}

impl LodInfo {
    /// Triangles.
    pub fn triangles(&self) -> u32 {
        self.index_count / 3
    }

    /// Bytes of vertex and index data.
    pub fn bytes(&self) -> u64 {
        self.vertex_count as u64 * VERTEX_STRIDE as u64 + self.index_count as u64 * 4
    }
}

/// A mesh file's validated header.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshInfo {
    /// The file's name.
    pub name: String,
    /// Which attributes came from the source (`ATTR_*`).
    pub attributes: u32,
    /// Bounds of LOD 0, mesh units.
    pub bounds: (Vec3, Vec3),
    /// The LODs, finest first.
    pub lods: Vec<LodInfo>,
}

/// Why a mesh file cannot be opened or a LOD read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// Reading failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Not a mesh file.
    #[error("{name}: not a mipstream mesh file (no MSMESH01 identifier)")]
    NotMesh {
        /// The file.
        name: String,
    },
    /// The header or table is invalid.
    #[error("{name}: invalid mesh file: {reason}")]
    Invalid {
        /// The file.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A LOD's data is invalid.
    #[error("{name}: LOD {lod}: {reason}")]
    BadLod {
        /// The file.
        name: String,
        /// The LOD.
        lod: u32,
        /// What is wrong.
        reason: String,
    },
}

/// One LOD's data.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshLod {
    /// The LOD.
    pub lod: u32,
    /// Its vertices.
    pub vertices: Vec<Vertex>,
    /// Its indices, every one below `vertices.len()`.
    pub indices: Vec<u32>,
}

impl MeshLod {
    /// Mesh units per UV unit over the LOD: the square root of its surface
    /// area over its UV area ([`units_per_uv`]).
    pub fn units_per_uv(&self) -> Option<f32> {
        let v = &self.vertices;
        units_per_uv(|i| v[i].position, |i| v[i].uv, v.len(), &self.indices)
    }
}

/// Mesh units per UV unit over triangles (`indices`, three a triangle, of
/// `len` vertices whose positions and UVs `position` and `uv` give): the
/// square root of their surface area over their UV area, what an
/// [`ObjectDesc`](crate::streamer::ObjectDesc) texture binding asks for in
/// mesh space. `None` when either area is zero. Triangles naming a vertex
/// past `len` are skipped.
pub fn units_per_uv(
    position: impl Fn(usize) -> [f32; 3],
    uv: impl Fn(usize) -> [f32; 2],
    len: usize,
    indices: &[u32],
) -> Option<f32> {
    let (mut area, mut uv_area) = (0.0f64, 0.0f64);
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| i as usize);
        if a.max(b).max(c) >= len {
            continue;
        }
        let [pa, pb, pc] = [a, b, c].map(|i| Vec3::from(position(i)));
        area += (pb - pa).cross(pc - pa).length() as f64 * 0.5;
        let [ua, ub, uc] = [a, b, c].map(&uv);
        let (u1, u2) = (
            [ub[0] - ua[0], ub[1] - ua[1]],
            [uc[0] - ua[0], uc[1] - ua[1]],
        );
        uv_area += (u1[0] * u2[1] - u1[1] * u2[0]).abs() as f64 * 0.5;
    }
    (uv_area > 1e-12 && area > 0.0).then(|| (area / uv_area).sqrt() as f32)
}

/// An opened mesh file: validated header, level reads on demand.
#[derive(Debug, Clone)]
pub struct MeshFile {
    source: Arc<dyn ByteSource>,
    info: MeshInfo,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl MeshFile {
    /// Opens a file on disk.
    pub fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self, MeshError> {
        Self::open(Arc::new(FileSource::open(path)?))
    }

    /// Reads and validates the header and LOD table (at most 64 + 16 x 32
    /// bytes); no level data is read.
    pub fn open(source: Arc<dyn ByteSource>) -> Result<Self, MeshError> {
        let name = source.name().to_owned();
        let size = source.size();
        let invalid = |reason: String| MeshError::Invalid {
            name: name.clone(),
            reason,
        };
        if size < 8 || source.read_range(0, 8)? != MAGIC {
            return Err(MeshError::NotMesh { name });
        }
        if size < HEADER_BYTES {
            return Err(invalid(format!(
                "{size} bytes: shorter than the {HEADER_BYTES}-byte header"
            )));
        }
        let h = source.read_range(0, HEADER_BYTES)?;
        let version = u32_at(&h, 8);
        if version != VERSION {
            return Err(invalid(format!(
                "version {version}; this reader reads version {VERSION}"
            )));
        }
        let stride = u32_at(&h, 12);
        if stride != VERTEX_STRIDE {
            return Err(invalid(format!(
                "vertex stride {stride}; version 1 stores {VERTEX_STRIDE}-byte vertices"
            )));
        }
        let attributes = u32_at(&h, 16);
        if attributes & ATTR_POSITION == 0 || attributes > 15 {
            return Err(invalid(format!("attribute mask {attributes:#x}")));
        }
        let lod_count = u32_at(&h, 20);
        if lod_count == 0 || lod_count > MAX_LODS {
            return Err(invalid(format!(
                "{lod_count} LODs; a file holds 1 to {MAX_LODS}"
            )));
        }
        let flags = u32_at(&h, 48);
        if flags & !FLAG_IMAGE_ERROR != 0 {
            return Err(invalid(format!("flags {flags:#x}")));
        }
        let measured = flags & FLAG_IMAGE_ERROR != 0;
        let v = |i: usize| f32_at(&h, 24 + 4 * i);
        let (min, max) = (Vec3::new(v(0), v(1), v(2)), Vec3::new(v(3), v(4), v(5)));
        if !min.is_finite() || !max.is_finite() || min.cmpgt(max).any() {
            return Err(invalid(format!("bounds {min} to {max}")));
        }
        let table_end = HEADER_BYTES + LOD_ENTRY_BYTES * lod_count as u64;
        if table_end > size {
            return Err(invalid(format!(
                "the table of {lod_count} LODs ends at byte {table_end}, past the end ({size} bytes)"
            )));
        }
        let t = source.read_range(HEADER_BYTES, table_end - HEADER_BYTES)?;
        let mut lods: Vec<LodInfo> = Vec::with_capacity(lod_count as usize);
        let mut ranges: Vec<(u64, u64, String)> = Vec::new();
        for i in 0..lod_count as usize {
            let e = &t[i * LOD_ENTRY_BYTES as usize..];
            let lod = LodInfo {
                vertex_offset: u64_at(e, 0),
                index_offset: u64_at(e, 8),
                vertex_count: u32_at(e, 16),
                index_count: u32_at(e, 20),
                error: f32_at(e, 24),
                image_error: measured.then(|| f32_at(e, 28)),
            };
            let bad = |reason: String| MeshError::BadLod {
                name: name.clone(),
                lod: i as u32,
                reason,
            };
            if lod.vertex_count == 0 || lod.index_count == 0 || !lod.index_count.is_multiple_of(3) {
                return Err(bad(format!(
                    "{} vertices and {} indices: needs vertices and whole triangles",
                    lod.vertex_count, lod.index_count
                )));
            }
            if !lod.error.is_finite() || lod.error < 0.0 {
                return Err(bad(format!("geometric error {}", lod.error)));
            }
            if let Some(m) = lod.image_error {
                if !m.is_finite() || m < 0.0 || (i == 0 && m != 0.0) {
                    return Err(bad(format!("image error {m}")));
                }
            }
            if let Some(prev) = lods.last() {
                if lod.error < prev.error || lod.index_count > prev.index_count {
                    return Err(bad(format!(
                        "{} triangles at error {} after {} at error {}: LODs must coarsen",
                        lod.triangles(),
                        lod.error,
                        prev.triangles(),
                        prev.error
                    )));
                }
            }
            for (what, offset, len) in [
                (
                    "vertices",
                    lod.vertex_offset,
                    lod.vertex_count as u64 * VERTEX_STRIDE as u64,
                ),
                ("indices", lod.index_offset, lod.index_count as u64 * 4),
            ] {
                let end = offset.checked_add(len).filter(|&e| e <= size);
                let Some(end) = end else {
                    return Err(bad(format!(
                        "{what} at {offset}..+{len} run past the end ({size} bytes)"
                    )));
                };
                if offset < table_end || !offset.is_multiple_of(4) {
                    return Err(bad(format!(
                        "{what} at offset {offset}: inside the header or unaligned"
                    )));
                }
                if let Some((o, e, w)) = ranges.iter().find(|(o, e, _)| offset < *e && *o < end) {
                    return Err(bad(format!(
                        "{what} at {offset}..{end} overlap {w} at {o}..{e}"
                    )));
                }
                ranges.push((offset, end, format!("LOD {i} {what}")));
            }
            lods.push(lod);
        }
        Ok(Self {
            source,
            info: MeshInfo {
                name,
                attributes,
                bounds: (min, max),
                lods,
            },
        })
    }

    /// The validated header.
    pub fn info(&self) -> &MeshInfo {
        &self.info
    }

    /// The source.
    pub fn source(&self) -> &Arc<dyn ByteSource> {
        &self.source
    }

    /// Reads one LOD: its two byte ranges, nothing else; every index is
    /// checked against the LOD's vertex count and every position for NaN.
    pub fn read_lod(&self, lod: u32) -> Result<MeshLod, MeshError> {
        let name = &self.info.name;
        let bad = |reason: String| MeshError::BadLod {
            name: name.clone(),
            lod,
            reason,
        };
        let Some(l) = self.info.lods.get(lod as usize) else {
            return Err(bad(format!("the file has {} LODs", self.info.lods.len())));
        };
        let vb = self.source.read_range(
            l.vertex_offset,
            l.vertex_count as u64 * VERTEX_STRIDE as u64,
        )?;
        let ib = self
            .source
            .read_range(l.index_offset, l.index_count as u64 * 4)?;
        let vertices: Vec<Vertex> = bytemuck::pod_collect_to_vec(&vb);
        let indices: Vec<u32> = bytemuck::pod_collect_to_vec(&ib);
        if let Some((at, i)) = indices
            .iter()
            .enumerate()
            .find(|(_, &i)| i >= l.vertex_count)
        {
            return Err(bad(format!(
                "index {at} is {i}, but the LOD has {} vertices",
                l.vertex_count
            )));
        }
        if let Some(at) = vertices
            .iter()
            .position(|v| !v.position.iter().all(|c| c.is_finite()))
        {
            return Err(bad(format!("vertex {at} has a non-finite position")));
        }
        Ok(MeshLod {
            lod,
            vertices,
            indices,
        })
    }
}

/// One LOD to write.
#[derive(Debug, Clone, PartialEq)]
pub struct LodData {
    /// Its vertices.
    pub vertices: Vec<Vertex>,
    /// Its indices.
    pub indices: Vec<u32>,
    /// Its geometric error against the full mesh, mesh units.
    pub error: f32,
    /// Its measured image error against the full mesh (see
    /// [`LodInfo::image_error`]); written only when every LOD has one.
    pub image_error: Option<f32>,
}

/// Writes a mesh file of `lods` (finest first) with the attribute mask.
pub fn write_mesh(lods: &[LodData], attributes: u32) -> Vec<u8> {
    let (mut min, mut max) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for v in lods.first().map_or(&[][..], |l| &l.vertices) {
        let p = Vec3::from(v.position);
        min = min.min(p);
        max = max.max(p);
    }
    if min.cmpgt(max).any() {
        (min, max) = (Vec3::ZERO, Vec3::ZERO);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&VERTEX_STRIDE.to_le_bytes());
    out.extend_from_slice(&(attributes | ATTR_POSITION).to_le_bytes());
    out.extend_from_slice(&(lods.len() as u32).to_le_bytes());
    for c in min.to_array().into_iter().chain(max.to_array()) {
        out.extend_from_slice(&c.to_le_bytes());
    }
    let measured = !lods.is_empty() && lods.iter().all(|l| l.image_error.is_some());
    let flags = if measured { FLAG_IMAGE_ERROR } else { 0 };
    out.extend_from_slice(&flags.to_le_bytes());
    out.resize(HEADER_BYTES as usize, 0);
    let mut at = HEADER_BYTES + LOD_ENTRY_BYTES * lods.len() as u64;
    for l in lods {
        let vbytes = l.vertices.len() as u64 * VERTEX_STRIDE as u64;
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(at + vbytes).to_le_bytes());
        out.extend_from_slice(&(l.vertices.len() as u32).to_le_bytes());
        out.extend_from_slice(&(l.indices.len() as u32).to_le_bytes());
        out.extend_from_slice(&l.error.to_le_bytes());
        let image = if measured {
            l.image_error.unwrap_or(0.0)
        } else {
            0.0
        };
        out.extend_from_slice(&image.to_le_bytes());
        at += vbytes + l.indices.len() as u64 * 4;
    }
    for l in lods {
        out.extend_from_slice(bytemuck::cast_slice(&l.vertices));
        out.extend_from_slice(bytemuck::cast_slice(&l.indices));
    }
    out
}
