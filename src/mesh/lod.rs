//! LOD chains with meshoptimizer: each level about half the triangles of the
//! one before, simplified from the full mesh with normals and texture
//! coordinates weighed in and open borders locked, until the error grows past
//! a limit or the simplifier cannot halve any more.

use super::container::{LodData, Vertex, VERTEX_STRIDE};
use meshopt::{SimplifyOptions, VertexDataAdapter};

/// How a chain is built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LodOptions {
    /// Most levels, LOD 0 included. Default: 8.
    pub max_lods: u32,
    /// Triangles of each level against the one before. Default: 0.5.
    pub ratio: f32,
    /// Largest geometric error a level may have, as a fraction of the mesh's
    /// extent. Default: 0.1.
    pub max_error: f32,
    /// A level must have at most this fraction of the previous one's
    /// triangles, or the chain stops (the simplifier is stuck). Default: 0.85.
    pub min_reduction: f32,
    /// No level below this many triangles. Default: 16.
    pub min_triangles: u32,
}

impl Default for LodOptions {
    fn default() -> Self {
        Self {
            max_lods: 8,
            ratio: 0.5,
            max_error: 0.1,
            min_reduction: 0.85,
            min_triangles: 16,
        }
    }
}

/// Reorders indices for the vertex cache and keeps only the vertices they
/// use, in first-use order.
fn compact(vertices: &[Vertex], indices: &[u32]) -> (Vec<Vertex>, Vec<u32>) {
    let mut indices = meshopt::optimize_vertex_cache(indices, vertices.len());
    let used = meshopt::optimize_vertex_fetch(&mut indices, vertices);
    (used, indices)
}

/// Builds the chain for one triangle list; LOD 0 is the mesh itself
/// (reordered for the vertex cache), errors are in mesh units.
///
/// `indices` must be whole triangles indexing into `vertices` (the glTF
/// importer checks this before calling).
pub fn build_lod_chain(vertices: &[Vertex], indices: &[u32], opts: &LodOptions) -> Vec<LodData> {
    let (v0, i0) = compact(vertices, indices);
    let mut lods = vec![LodData {
        vertices: v0,
        indices: i0,
        error: 0.0,
        image_error: None,
    }];
    let bytes: &[u8] = bytemuck::cast_slice(vertices);
    let Ok(adapter) = VertexDataAdapter::new(bytes, VERTEX_STRIDE as usize, 0) else {
        return lods;
    };
    let scale = meshopt::simplify_scale(&adapter);
    // normals and uvs, weighed so a seam or a crease costs about what moving
    // a vertex a few percent of the extent does
    let attributes: Vec<f32> = vertices
        .iter()
        .flat_map(|v| [v.normal[0], v.normal[1], v.normal[2], v.uv[0], v.uv[1]])
        .collect();
    let weights = [0.5, 0.5, 0.5, 1.0, 1.0];
    let locks = vec![false; vertices.len()];
    let mut previous = indices.len();
    let mut previous_error = 0.0f32;
    // chosen at the first level: seams kept, or (stuck) crossed
    let mut options: Option<SimplifyOptions> = None;
    while (lods.len() as u32) < opts.max_lods {
        let target = ((previous as f32 * opts.ratio) as usize / 3) * 3;
        if target / 3 < opts.min_triangles as usize {
            break;
        }
        // keeping every attribute seam; a mesh split at nearly every edge
        // (flat shading) cannot collapse that way at all: when even the
        // first level is stuck, its chain may collapse across seams
        // (meshoptimizer's permissive mode)
        let attempt = |options: SimplifyOptions| {
            let mut error = 0.0f32;
            let simplified = meshopt::simplify_with_attributes_and_locks(
                indices,
                &adapter,
                &attributes,
                &weights,
                5 * 4,
                &locks,
                target,
                opts.max_error,
                options,
                Some(&mut error),
            );
            let stuck = simplified.is_empty()
                || simplified.len() as f32 > previous as f32 * opts.min_reduction
                || error > opts.max_error;
            (!stuck).then_some((simplified, error))
        };
        let permissive = SimplifyOptions::LockBorder | SimplifyOptions::Permissive;
        let found = match options {
            Some(o) => attempt(o),
            None => attempt(SimplifyOptions::LockBorder)
                .map(|r| (r, SimplifyOptions::LockBorder))
                .or_else(|| attempt(permissive).map(|r| (r, permissive)))
                .map(|(r, o)| {
                    options = Some(o);
                    r
                }),
        };
        let Some((simplified, error)) = found else {
            break;
        };
        let (v, i) = compact(vertices, &simplified);
        let error = (error * scale).max(previous_error);
        previous = simplified.len();
        previous_error = error;
        lods.push(LodData {
            vertices: v,
            indices: i,
            error,
            image_error: None,
        });
    }
    lods
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subdivided sphere: an easy mesh to halve many times.
    fn sphere(rings: u32, segments: u32) -> (Vec<Vertex>, Vec<u32>) {
        let mut v = Vec::new();
        for r in 0..=rings {
            let th = std::f32::consts::PI * r as f32 / rings as f32;
            for s in 0..=segments {
                let ph = std::f32::consts::TAU * s as f32 / segments as f32;
                let n = [th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()];
                v.push(Vertex {
                    position: n,
                    normal: n,
                    uv: [s as f32 / segments as f32, r as f32 / rings as f32],
                    tangent: [1.0, 0.0, 0.0, 1.0],
                });
            }
        }
        let mut i = Vec::new();
        let w = segments + 1;
        for r in 0..rings {
            for s in 0..segments {
                let (a, b) = (r * w + s, (r + 1) * w + s);
                i.extend_from_slice(&[a, b, a + 1, a + 1, b, b + 1]);
            }
        }
        (v, i)
    }

    #[test]
    fn a_sphere_halves_with_growing_error() {
        let (v, i) = sphere(64, 128);
        let lods = build_lod_chain(&v, &i, &LodOptions::default());
        assert!(lods.len() >= 5, "{} LODs", lods.len());
        assert_eq!(lods[0].indices.len(), i.len());
        assert_eq!(lods[0].error, 0.0);
        for w in lods.windows(2) {
            let (a, b) = (w[0].indices.len(), w[1].indices.len());
            assert!(b * 10 <= a * 7 && b * 10 >= a * 3, "{a} -> {b} indices");
            assert!(w[1].error >= w[0].error);
            assert!(w[1].vertices.len() < w[0].vertices.len());
            assert!(w[1]
                .indices
                .iter()
                .all(|&x| (x as usize) < w[1].vertices.len()));
        }
        assert!(lods.last().unwrap().error > 0.0);
        // a unit sphere: errors in its units stay under the 10% limit of its
        // extent (2) and above nothing
        assert!(lods.iter().all(|l| l.error <= 0.2 + 1e-4));
    }

    #[test]
    fn a_tiny_mesh_stays_one_level() {
        let (v, i) = sphere(2, 4);
        let lods = build_lod_chain(&v, &i, &LodOptions::default());
        assert_eq!(lods.len(), 1);
    }
}
