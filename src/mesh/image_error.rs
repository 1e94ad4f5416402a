//! A LOD's image-space error, measured when the chain is cooked: each LOD and
//! the full mesh drawn by a small CPU rasterizer (orthographic, depth-tested,
//! one sample per pixel) from [`DIRECTIONS`] directions at a size where the
//! mesh's bounding sphere spans [`RESOLUTION`] pixels, lit as the demo
//! renderers light a grey surface (one sun, an ambient term, linear light
//! out as sRGB 0-255), in front of the demo's sky. A LOD's error is the
//! squared difference per pixel and channel summed over every pixel of every
//! view, divided by the pixels the full mesh covers: squared error per
//! covered pixel, the unit of a texture's measured loss (`crate::loss`), so
//! the planner weighs a mesh LOD against a texture mip with no constant
//! between them.
//!
//! Why one number serves every distance: the pixels a moved outline changes
//! are its length times how far it moved, both in pixels, so their share of
//! the mesh's pixels does not change with the size it is drawn at (nor, in
//! expectation, below a pixel); bent normals shade a fixed share of its
//! surface differently. What changes with distance is how many pixels the
//! mesh covers, which the planner knows. The surface is grey: a LOD's
//! texture sliding with its simplified surface is not measured.

use super::container::LodData;
use glam::{Vec2, Vec3};

/// Pixels across the mesh's bounding sphere in each view.
pub const RESOLUTION: u32 = 192;

/// The view directions: the six axes and the eight corners of a cube.
pub const DIRECTIONS: usize = 14;

/// The sun of the demo renderers (`shaders/scene.wgsl`).
const SUN: Vec3 = Vec3::new(0.4, 0.8, 0.3);
/// Linear albedo of the grey surface.
const ALBEDO: f32 = 0.5;
/// The sky behind the mesh, linear (the demo's clear colour).
const SKY: Vec3 = Vec3::new(0.55, 0.70, 0.90);

/// Squared error per covered pixel (sRGB 0-255, mean over RGB) of each LOD
/// of `lods` against the first, which is 0. All zeros when the first covers
/// no pixel (a degenerate mesh).
pub fn image_errors(lods: &[LodData]) -> Vec<f32> {
    let Some(full) = lods.first() else {
        return Vec::new();
    };
    let (center, radius) = bounding_sphere(full);
    if radius <= 0.0 || !radius.is_finite() {
        return vec![0.0; lods.len()];
    }
    let views: Vec<View> = directions().map(|d| View::new(d, center, radius)).collect();
    let reference: Vec<Picture> = views.iter().map(|v| v.draw(full)).collect();
    let covered: u64 = reference.iter().map(|p| p.covered).sum();
    if covered == 0 {
        return vec![0.0; lods.len()];
    }
    let mut out = vec![0.0];
    for lod in &lods[1..] {
        let sse: f64 = views
            .iter()
            .zip(&reference)
            .map(|(v, r)| r.squared_error(&v.draw(lod)))
            .sum();
        out.push((sse / covered as f64) as f32);
    }
    out
}

/// The centre and radius of the positions' bounding box's sphere.
fn bounding_sphere(lod: &LodData) -> (Vec3, f32) {
    let (mut min, mut max) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for v in &lod.vertices {
        let p = Vec3::from(v.position);
        min = min.min(p);
        max = max.max(p);
    }
    if min.cmpgt(max).any() {
        return (Vec3::ZERO, 0.0);
    }
    ((min + max) * 0.5, (max - min).length() * 0.5)
}

fn directions() -> impl Iterator<Item = Vec3> {
    let axes = [
        Vec3::X,
        Vec3::NEG_X,
        Vec3::Y,
        Vec3::NEG_Y,
        Vec3::Z,
        Vec3::NEG_Z,
    ];
    let corners = (0..8).map(|i| {
        let s = |bit: u32| if i & (1 << bit) == 0 { -1.0 } else { 1.0 };
        Vec3::new(s(0), s(1), s(2)).normalize()
    });
    axes.into_iter().chain(corners)
}

/// An orthographic view along `forward` fitting the bounding sphere.
struct View {
    right: Vec3,
    up: Vec3,
    forward: Vec3,
    center: Vec3,
    /// Pixels per mesh unit.
    scale: f32,
}

impl View {
    fn new(forward: Vec3, center: Vec3, radius: f32) -> Self {
        let helper = if forward.y.abs() > 0.9 {
            Vec3::X
        } else {
            Vec3::Y
        };
        let right = forward.cross(helper).normalize();
        let up = right.cross(forward);
        Self {
            right,
            up,
            forward,
            center,
            scale: RESOLUTION as f32 / (2.0 * radius),
        }
    }

    /// Screen position (pixels) and depth of `p`.
    fn project(&self, p: Vec3) -> (Vec2, f32) {
        let d = p - self.center;
        let half = RESOLUTION as f32 * 0.5;
        (
            Vec2::new(
                half + d.dot(self.right) * self.scale,
                half - d.dot(self.up) * self.scale,
            ),
            d.dot(self.forward),
        )
    }

    /// The lit colour (sRGB 0-255) of a surface with normal `n`, seen from
    /// this view (both sides lit: glTF meshes may be double-sided).
    fn shade(&self, n: Vec3) -> Vec3 {
        let n = n.normalize_or_zero();
        let n = if n.dot(self.forward) > 0.0 { -n } else { n };
        let light = 0.35 + 0.65 * n.dot(SUN.normalize()).max(0.0);
        Vec3::splat(ALBEDO * light)
    }

    fn draw(&self, lod: &LodData) -> Picture {
        let n = RESOLUTION as usize;
        let mut depth = vec![f32::INFINITY; n * n];
        let mut normal = vec![Vec3::ZERO; n * n];
        let at: Vec<(Vec2, f32)> = lod
            .vertices
            .iter()
            .map(|v| self.project(Vec3::from(v.position)))
            .collect();
        for tri in lod.indices.chunks_exact(3) {
            let [a, b, c] = [tri[0], tri[1], tri[2]].map(|i| i as usize);
            let (Some(&pa), Some(&pb), Some(&pc)) = (at.get(a), at.get(b), at.get(c)) else {
                continue;
            };
            let area = edge(pa.0, pb.0, pc.0);
            if area.abs() < 1e-12 {
                continue;
            }
            let lo = pa.0.min(pb.0).min(pc.0).max(Vec2::ZERO);
            let hi = pa.0.max(pb.0).max(pc.0).min(Vec2::splat(n as f32 - 1.0));
            if lo.x > hi.x || lo.y > hi.y {
                continue;
            }
            let normals = [a, b, c].map(|i| Vec3::from(lod.vertices[i].normal));
            for y in lo.y.floor() as usize..=hi.y.ceil().min(n as f32 - 1.0) as usize {
                for x in lo.x.floor() as usize..=hi.x.ceil().min(n as f32 - 1.0) as usize {
                    let p = Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
                    let w = [
                        edge(pb.0, pc.0, p),
                        edge(pc.0, pa.0, p),
                        edge(pa.0, pb.0, p),
                    ]
                    .map(|e| e / area);
                    if w.iter().any(|&w| w < 0.0) {
                        continue;
                    }
                    let z = w[0] * pa.1 + w[1] * pb.1 + w[2] * pc.1;
                    let i = y * n + x;
                    if z < depth[i] {
                        depth[i] = z;
                        normal[i] = w[0] * normals[0] + w[1] * normals[1] + w[2] * normals[2];
                    }
                }
            }
        }
        let mut colour = Vec::with_capacity(n * n);
        let mut covered = 0;
        for (d, nrm) in depth.iter().zip(&normal) {
            let linear = if d.is_finite() {
                covered += 1;
                self.shade(*nrm)
            } else {
                SKY
            };
            colour.push(linear.to_array().map(srgb_byte));
        }
        Picture { colour, covered }
    }
}

/// Twice the signed area of the triangle `a, b, p`.
fn edge(a: Vec2, b: Vec2, p: Vec2) -> f32 {
    (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
}

/// A linear value encoded as sRGB, 0-255 (not rounded).
fn srgb_byte(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    255.0
        * if c <= 0.003_130_8 {
            c * 12.92
        } else {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        }
}

/// One view's picture: sRGB colour per pixel and how many the mesh covers.
struct Picture {
    colour: Vec<[f32; 3]>,
    covered: u64,
}

impl Picture {
    /// Summed squared error against `other`, mean over the channels.
    fn squared_error(&self, other: &Picture) -> f64 {
        self.colour
            .iter()
            .zip(&other.colour)
            .map(|(a, b)| {
                (0..3)
                    .map(|c| (a[c] as f64 - b[c] as f64).powi(2))
                    .sum::<f64>()
                    / 3.0
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::container::Vertex;
    use crate::mesh::lod::{build_lod_chain, LodOptions};

    /// A UV sphere with smooth normals.
    fn sphere(rings: u32, segments: u32) -> (Vec<Vertex>, Vec<u32>) {
        let mut vertices = Vec::new();
        for r in 0..=rings {
            let theta = std::f32::consts::PI * r as f32 / rings as f32;
            for s in 0..=segments {
                let phi = std::f32::consts::TAU * s as f32 / segments as f32;
                let n = Vec3::new(
                    theta.sin() * phi.cos(),
                    theta.cos(),
                    theta.sin() * phi.sin(),
                );
                vertices.push(Vertex {
                    position: n.to_array(),
                    normal: n.to_array(),
                    ..Default::default()
                });
            }
        }
        let mut indices = Vec::new();
        for r in 0..rings {
            for s in 0..segments {
                let a = r * (segments + 1) + s;
                let b = a + segments + 1;
                indices.extend([a, b, a + 1, a + 1, b, b + 1]);
            }
        }
        (vertices, indices)
    }

    #[test]
    fn coarser_lods_show_more_error_and_the_full_mesh_none() {
        let (v, i) = sphere(48, 96);
        let lods = build_lod_chain(&v, &i, &LodOptions::default());
        assert!(lods.len() >= 4, "{}", lods.len());
        let e = image_errors(&lods);
        assert_eq!(e.len(), lods.len());
        assert_eq!(e[0], 0.0);
        assert!(e[1] > 0.0, "{e:?}");
        // each LOD about halves the triangles: the error grows along the chain
        for w in e.windows(2).skip(1) {
            assert!(w[1] >= w[0] * 0.9, "{e:?}");
        }
        assert!(e[e.len() - 1] > 2.0 * e[1], "{e:?}");
    }

    #[test]
    fn a_lod_that_loses_the_mesh_costs_what_the_sky_against_the_surface_does() {
        let (v, i) = sphere(16, 32);
        let full = LodData {
            vertices: v.clone(),
            indices: i,
            error: 0.0,
            image_error: None,
        };
        let empty = LodData {
            vertices: v,
            indices: Vec::new(),
            error: 1.0,
            image_error: None,
        };
        let e = image_errors(&[full, empty]);
        // every covered pixel turns to sky, brighter in every channel than
        // the brightest lit grey
        let grey = srgb_byte(ALBEDO);
        let least: f32 = SKY
            .to_array()
            .iter()
            .map(|&c| (srgb_byte(c) - grey).powi(2))
            .sum::<f32>()
            / 3.0;
        assert!(e[1] >= least && least > 100.0, "{e:?} {least}");
    }

    #[test]
    fn the_error_does_not_depend_on_the_mesh_s_units() {
        let (v, i) = sphere(48, 96);
        let lods = build_lod_chain(&v, &i, &LodOptions::default());
        let scaled: Vec<LodData> = lods
            .iter()
            .map(|l| LodData {
                vertices: l
                    .vertices
                    .iter()
                    .map(|v| Vertex {
                        position: (Vec3::from(v.position) * 37.0).to_array(),
                        ..*v
                    })
                    .collect(),
                ..l.clone()
            })
            .collect();
        let (a, b) = (image_errors(&lods), image_errors(&scaled));
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-3 * x.max(1.0), "{a:?} {b:?}");
        }
    }
}
