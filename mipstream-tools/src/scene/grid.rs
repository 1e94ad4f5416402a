//! A generated mesh for tests, the soak and examples: a bumpy unit grid with
//! a LOD chain, no cooking needed.

use mipstream::mesh::{write_mesh, LodData, Vertex};

/// A `.msmesh` of a unit grid in the xy plane facing +z, bumped by
/// `0.05 sin(freq u) sin(freq v)`, with one LOD per `(quads across, error)`
/// of `lods`, finest first.
pub fn grid_mesh(lods: &[(u32, f32)], freq: f32) -> Vec<u8> {
    let lod = |n: u32, error: f32| {
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
        LodData {
            vertices,
            indices,
            error,
            image_error: None,
        }
    };
    let lods: Vec<LodData> = lods.iter().map(|&(n, e)| lod(n, e)).collect();
    write_mesh(&lods, 1 | 2 | 4 | 8)
}
