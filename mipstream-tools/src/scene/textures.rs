//! Procedural textures with detail at every scale.
//!
//! Each texture mixes a large pattern (bricks, tiles, stripes or rings), a
//! mid-scale value noise, and texel-scale grain, in its own palette. The grain
//! only survives in the finest mips, the noise in the middle ones, the pattern
//! in all, so every mip looks different and a missing one shows as blur.

use super::hash;
use image::{Rgba, RgbaImage};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) size: u32,
    pattern: Pattern,
    /// Base and accent colours (sRGB).
    palette: [[f32; 3]; 2],
    seed: u32,
}

#[derive(Debug, Clone, Copy)]
enum Pattern {
    Bricks,
    Tiles,
    Stripes,
    Rings,
    Weave,
}

/// The scene's textures: the ground first.
pub(crate) fn specs() -> Vec<Spec> {
    use Pattern::*;
    let p = |name, size, pattern, a: [f32; 3], b: [f32; 3], seed| Spec {
        name,
        size,
        pattern,
        palette: [a, b],
        seed,
    };
    vec![
        p(
            "ground",
            1024,
            Tiles,
            [0.45, 0.42, 0.36],
            [0.30, 0.28, 0.24],
            1,
        ),
        p(
            "red-bricks",
            512,
            Bricks,
            [0.62, 0.22, 0.16],
            [0.80, 0.76, 0.70],
            2,
        ),
        p(
            "grey-bricks",
            512,
            Bricks,
            [0.48, 0.48, 0.50],
            [0.25, 0.25, 0.26],
            3,
        ),
        p(
            "blue-tiles",
            512,
            Tiles,
            [0.18, 0.36, 0.70],
            [0.90, 0.92, 0.95],
            4,
        ),
        p(
            "green-tiles",
            512,
            Tiles,
            [0.22, 0.55, 0.25],
            [0.12, 0.20, 0.10],
            5,
        ),
        p(
            "gold-stripes",
            512,
            Stripes,
            [0.85, 0.66, 0.20],
            [0.35, 0.22, 0.08],
            6,
        ),
        p(
            "teal-stripes",
            512,
            Stripes,
            [0.10, 0.60, 0.60],
            [0.90, 0.90, 0.80],
            7,
        ),
        p(
            "purple-rings",
            512,
            Rings,
            [0.50, 0.22, 0.62],
            [0.95, 0.80, 0.95],
            8,
        ),
        p(
            "orange-rings",
            512,
            Rings,
            [0.95, 0.50, 0.12],
            [0.30, 0.12, 0.05],
            9,
        ),
        p(
            "wood-weave",
            512,
            Weave,
            [0.55, 0.36, 0.18],
            [0.35, 0.20, 0.10],
            10,
        ),
        p(
            "linen-weave",
            512,
            Weave,
            [0.85, 0.82, 0.72],
            [0.60, 0.56, 0.48],
            11,
        ),
        p(
            "moss-bricks",
            512,
            Bricks,
            [0.35, 0.45, 0.22],
            [0.55, 0.52, 0.40],
            12,
        ),
        p(
            "sand-tiles",
            256,
            Tiles,
            [0.85, 0.75, 0.55],
            [0.60, 0.50, 0.32],
            13,
        ),
        p(
            "slate-stripes",
            256,
            Stripes,
            [0.30, 0.34, 0.40],
            [0.55, 0.60, 0.66],
            14,
        ),
        p(
            "rose-rings",
            256,
            Rings,
            [0.85, 0.45, 0.55],
            [0.98, 0.90, 0.90],
            15,
        ),
        p(
            "steel-weave",
            256,
            Weave,
            [0.60, 0.62, 0.66],
            [0.30, 0.32, 0.36],
            16,
        ),
        p(
            "clay-bricks",
            256,
            Bricks,
            [0.70, 0.42, 0.28],
            [0.90, 0.85, 0.75],
            17,
        ),
        p(
            "ice-tiles",
            256,
            Tiles,
            [0.75, 0.88, 0.95],
            [0.40, 0.60, 0.75],
            18,
        ),
        p(
            "lime-stripes",
            256,
            Stripes,
            [0.60, 0.80, 0.20],
            [0.20, 0.30, 0.05],
            19,
        ),
        p(
            "ink-rings",
            256,
            Rings,
            [0.12, 0.14, 0.30],
            [0.60, 0.65, 0.90],
            20,
        ),
    ]
}

/// Smooth value noise in [0, 1] at integer lattice spacing `cell`.
fn noise(x: f32, y: f32, cell: f32, seed: u32) -> f32 {
    let (fx, fy) = (x / cell, y / cell);
    let (ix, iy) = (fx.floor(), fy.floor());
    let (tx, ty) = (fx - ix, fy - iy);
    let (sx, sy) = (tx * tx * (3.0 - 2.0 * tx), ty * ty * (3.0 - 2.0 * ty));
    let v = |dx: f32, dy: f32| {
        let h = hash(
            (ix + dx) as i32 as u32
                ^ ((iy + dy) as i32 as u32).wrapping_mul(0x9e37_79b9)
                ^ seed.wrapping_mul(0x85eb_ca6b),
        );
        (h & 0xffff) as f32 / 65535.0
    };
    let top = v(0.0, 0.0) + (v(1.0, 0.0) - v(0.0, 0.0)) * sx;
    let bottom = v(0.0, 1.0) + (v(1.0, 1.0) - v(0.0, 1.0)) * sx;
    top + (bottom - top) * sy
}

/// The large-scale pattern: 1 on the accent (mortar, lines), 0 elsewhere.
fn pattern(p: Pattern, u: f32, v: f32) -> f32 {
    let line = |t: f32, width: f32| -> f32 {
        if t.fract() < width {
            1.0
        } else {
            0.0
        }
    };
    match p {
        Pattern::Bricks => {
            let row = (v * 8.0).floor();
            let shift = if row as i32 % 2 == 0 { 0.0 } else { 0.5 };
            line(v * 8.0, 0.08).max(line(u * 4.0 + shift, 0.04))
        }
        Pattern::Tiles => line(u * 6.0, 0.06).max(line(v * 6.0, 0.06)),
        Pattern::Stripes => line((u + v) * 10.0, 0.35),
        Pattern::Rings => {
            let (du, dv) = (u - 0.5, v - 0.5);
            line((du * du + dv * dv).sqrt() * 14.0, 0.3)
        }
        Pattern::Weave => {
            let (cu, cv) = ((u * 12.0).floor() as i32, (v * 12.0).floor() as i32);
            if (cu + cv) % 2 == 0 {
                line(v * 48.0, 0.5)
            } else {
                line(u * 48.0, 0.5)
            }
        }
    }
}

/// Renders a texture (sRGB RGBA8, opaque). Never pure black.
pub(crate) fn generate(spec: &Spec) -> RgbaImage {
    let s = spec.size as f32;
    RgbaImage::from_fn(spec.size, spec.size, |x, y| {
        let (u, v) = (x as f32 / s, y as f32 / s);
        let pat = pattern(spec.pattern, u, v);
        let mid = noise(x as f32, y as f32, s / 16.0, spec.seed);
        let fine = noise(x as f32, y as f32, 1.5, spec.seed ^ 0x5555);
        let grain = (hash(x ^ (y << 16) ^ spec.seed) & 0xff) as f32 / 255.0;
        let [a, b] = spec.palette;
        let shade = 0.75 + 0.35 * mid + 0.2 * (fine - 0.5) + 0.12 * (grain - 0.5);
        let c = |i: usize| ((a[i] * (1.0 - pat) + b[i] * pat) * shade).clamp(0.03, 1.0);
        Rgba([
            (c(0) * 255.0) as u8,
            (c(1) * 255.0) as u8,
            (c(2) * 255.0) as u8,
            255,
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mip_differs_and_nothing_is_black() {
        let spec = specs()[1];
        let img = generate(&Spec { size: 128, ..spec });
        assert!(img.pixels().all(|p| p.0[0] > 0 || p.0[1] > 0 || p.0[2] > 0));
        let mips = mipstream::cook::mips::generate(&img, mipstream::cook::mips::MipSpace::Srgb);
        // each level, scaled back up, differs from the level above it
        for pair in mips.windows(2).take(4) {
            let up = image::imageops::resize(
                &pair[1],
                pair[0].width(),
                pair[0].height(),
                image::imageops::FilterType::Triangle,
            );
            let diff: f64 = pair[0]
                .as_raw()
                .iter()
                .zip(up.as_raw())
                .map(|(a, b)| (*a as f64 - *b as f64).abs())
                .sum::<f64>()
                / pair[0].as_raw().len() as f64;
            assert!(
                diff > 2.0,
                "mip {}x{} adds no detail ({diff:.2})",
                pair[0].width(),
                pair[0].height()
            );
        }
    }
}
