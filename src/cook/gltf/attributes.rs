//! Vertex attributes as real tools write them: any component type
//! (`KHR_mesh_quantization`: normalized or plain 8- and 16-bit integers as
//! well as floats, sparse accessors included) read as `f32`, and the weld
//! that lets the simplifier work on meshes written with unshared vertices.

use crate::mesh::container::Vertex;
use gltf::accessor::{DataType, Dimensions};
use gltf::buffer::Data;

/// Most elements an accessor without a buffer view (zeros, then its sparse
/// values) may declare.
const MAX_SPARSE_ONLY: usize = 1 << 24;

/// The elements of `accessor` as `f32`s: floats as stored; normalized
/// integers mapped by glTF's rule (`c / 255`, `max(c / 127, -1)`, ...);
/// other integers as their values (a quantized position, scaled back by its
/// node's transform). Strides, offsets and sparse substitutions as the
/// specification has them; every range is checked against its buffer.
pub(super) fn read_f32<const N: usize>(
    accessor: &gltf::Accessor<'_>,
    buffers: &[Data],
) -> Result<Vec<[f32; N]>, String> {
    let name = format!("accessor {}", accessor.index());
    let dims = match accessor.dimensions() {
        Dimensions::Scalar => 1,
        Dimensions::Vec2 => 2,
        Dimensions::Vec3 => 3,
        Dimensions::Vec4 => 4,
        d => return Err(format!("{name}: {d:?} where a vector was expected")),
    };
    if dims != N {
        return Err(format!(
            "{name} has {dims} components where {N} were expected"
        ));
    }
    let ty = accessor.data_type();
    let size = ty.size();
    let normalized = accessor.normalized();
    let component = |b: &[u8]| -> f32 {
        let n = |x: f32, max: f32| if normalized { (x / max).max(-1.0) } else { x };
        match ty {
            DataType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            DataType::I8 => n(b[0] as i8 as f32, 127.0),
            DataType::U8 => n(b[0] as f32, 255.0),
            DataType::I16 => n(i16::from_le_bytes([b[0], b[1]]) as f32, 32767.0),
            DataType::U16 => n(u16::from_le_bytes([b[0], b[1]]) as f32, 65535.0),
            DataType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32,
        }
    };
    let element = |bytes: &[u8]| -> [f32; N] {
        std::array::from_fn(|c| component(&bytes[c * size..(c + 1) * size]))
    };
    let count = accessor.count();
    let view_bytes = |view: &gltf::buffer::View<'_>| -> Result<&[u8], String> {
        let data = buffers
            .get(view.buffer().index())
            .ok_or_else(|| format!("{name}: its buffer is missing"))?;
        data.0
            .get(view.offset()..view.offset().saturating_add(view.length()))
            .ok_or_else(|| format!("{name}: its view lies outside its buffer"))
    };
    let elem = size * N;
    // every size checked before anything sized by the file is allocated
    let base = match accessor.view() {
        Some(view) => {
            let bytes = view_bytes(&view)?;
            let stride = view.stride().unwrap_or(elem);
            let start = accessor.offset();
            let last = count.checked_sub(1).map_or(Some(0), |c| {
                c.checked_mul(stride)
                    .and_then(|x| x.checked_add(start + elem))
            });
            if stride < elem || last.is_none_or(|l| l > bytes.len()) {
                return Err(format!(
                    "{name}: {count} elements of {elem} bytes every {stride} overrun its view"
                ));
            }
            Some((bytes, stride, start))
        }
        None if count > MAX_SPARSE_ONLY => {
            return Err(format!(
                "{name}: {count} elements with no data of their own (at most {MAX_SPARSE_ONLY})"
            ))
        }
        None => None,
    };
    let mut out = vec![[0.0f32; N]; count];
    if let Some((bytes, stride, start)) = base {
        for (i, v) in out.iter_mut().enumerate() {
            let at = start + i * stride;
            *v = element(&bytes[at..at + elem]);
        }
    }
    if let Some(sparse) = accessor.sparse() {
        let n = sparse.count();
        let idx = sparse.indices();
        let ibytes = view_bytes(&idx.view())?;
        let isize = match idx.index_type() {
            gltf::accessor::sparse::IndexType::U8 => 1,
            gltf::accessor::sparse::IndexType::U16 => 2,
            gltf::accessor::sparse::IndexType::U32 => 4,
        };
        let vals = sparse.values();
        let vbytes = view_bytes(&vals.view())?;
        let (io, vo) = (idx.offset(), vals.offset());
        if io + n * isize > ibytes.len() || vo + n * elem > vbytes.len() {
            return Err(format!("{name}: its sparse data overruns its views"));
        }
        for k in 0..n {
            let b = &ibytes[io + k * isize..io + (k + 1) * isize];
            let i = match isize {
                1 => b[0] as usize,
                2 => u16::from_le_bytes([b[0], b[1]]) as usize,
                _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
            };
            let slot = out
                .get_mut(i)
                .ok_or_else(|| format!("{name}: sparse index {i} past its {count} elements"))?;
            *slot = element(&vbytes[vo + k * elem..vo + (k + 1) * elem]);
        }
    }
    Ok(out)
}

/// Merges vertices that are the same point with the same attributes (within
/// a hair: positions exactly, normals to 0.001, texture coordinates to
/// 1e-5, tangents to 0.001), so a mesh written with three unshared vertices
/// per triangle shares its edges; seams where texture coordinates or
/// normals really split stay split. Returns the vertices removed.
pub(super) fn weld(vertices: &mut Vec<Vertex>, indices: &mut [u32]) -> usize {
    let before = vertices.len();
    let close = |a: &[f32], b: &[f32], eps: f32| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps);
    let v: &[Vertex] = vertices;
    let positions: Vec<[f32; 3]> = v.iter().map(|x| x.position).collect();
    let (unique, remap) =
        meshopt::generate_vertex_remap_custom_decoder(&positions, Some(indices), |a, b| {
            let (a, b) = (&v[a as usize], &v[b as usize]);
            close(&a.normal, &b.normal, 1e-3)
                && close(&a.uv, &b.uv, 1e-5)
                && close(&a.tangent, &b.tangent, 1e-3)
        });
    if unique == before {
        return 0;
    }
    let welded = meshopt::remap_vertex_buffer(vertices.as_slice(), unique, &remap);
    let new_indices = meshopt::remap_index_buffer(Some(indices), before, &remap);
    indices.copy_from_slice(&new_indices);
    *vertices = welded;
    before - unique
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mesh_of_unshared_triangles_welds_and_a_real_seam_stays() {
        // two triangles of a quad, each with its own three vertices; the
        // shared edge's copies agree, so it welds to four vertices
        let p = |x: f32, y: f32, u: f32| Vertex {
            position: [x, y, 0.0],
            normal: [0.0, 0.0, 1.0],
            uv: [u, y],
            tangent: [1.0, 0.0, 0.0, 1.0],
        };
        let mut v = vec![
            p(0., 0., 0.),
            p(1., 0., 1.),
            p(1., 1., 1.),
            p(0., 0., 0.),
            p(1., 1., 1.),
            p(0., 1., 0.),
        ];
        let mut i: Vec<u32> = (0..6).collect();
        assert_eq!(weld(&mut v, &mut i), 2);
        assert_eq!(v.len(), 4);
        assert_eq!(i[3], i[0]);
        assert_eq!(i[4], i[2]);
        // a uv seam along the shared edge: those copies stay apart
        let mut v = vec![
            p(0., 0., 0.),
            p(1., 0., 1.),
            p(1., 1., 1.),
            p(0., 0., 0.5),
            p(1., 1., 0.5),
            p(0., 1., 0.),
        ];
        let mut i: Vec<u32> = (0..6).collect();
        assert_eq!(weld(&mut v, &mut i), 0);
    }
}
