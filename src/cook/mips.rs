//! Mip chain generation for cooking: a full chain down to 1x1.
//!
//! Filtering happens in linear light for sRGB colour (decode, filter, encode),
//! with colour premultiplied by alpha so transparent texels do not bleed, using
//! the `image` crate's Lanczos3 resampler from the base level (not a chain of
//! box filters, which blurs and drifts). Normal maps are filtered as vectors and
//! renormalised at every level.

use image::{ImageBuffer, Rgba, Rgba32FImage, RgbaImage};

/// How texels are interpreted while filtering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MipSpace {
    /// sRGB-encoded colour: filtered in linear light.
    Srgb,
    /// Linear data: filtered as stored.
    Linear,
    /// Tangent-space normals in RGB (\[0,1\] encoding of \[-1,1\]): renormalised.
    Normal,
}

/// sRGB electro-optical transfer: encoded \[0,1\] to linear \[0,1\].
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Inverse of [`srgb_to_linear`].
pub fn linear_to_srgb(c: f32) -> f32 {
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// Builds every level from `base` (level 0 included, unchanged) down to 1x1.
pub fn generate(base: &RgbaImage, space: MipSpace) -> Vec<RgbaImage> {
    let (w, h) = base.dimensions();
    let levels = 32 - w.max(h).max(1).leading_zeros();
    let linear = to_filter_space(base, space);
    let mut out = Vec::with_capacity(levels as usize);
    out.push(base.clone());
    for level in 1..levels {
        let (lw, lh) = ((w >> level).max(1), (h >> level).max(1));
        let small = image::imageops::resize(&linear, lw, lh, image::imageops::FilterType::Lanczos3);
        out.push(from_filter_space(&small, space));
    }
    out
}

/// Converts to the space filtering happens in (premultiplied linear for colour).
fn to_filter_space(img: &RgbaImage, space: MipSpace) -> Rgba32FImage {
    let (w, h) = img.dimensions();
    ImageBuffer::from_fn(w, h, |x, y| {
        let [r, g, b, a] = img.get_pixel(x, y).0.map(|c| c as f32 / 255.0);
        Rgba(match space {
            MipSpace::Srgb => {
                let [r, g, b] = [r, g, b].map(srgb_to_linear);
                [r * a, g * a, b * a, a]
            }
            MipSpace::Linear => [r * a, g * a, b * a, a],
            MipSpace::Normal => [r * 2.0 - 1.0, g * 2.0 - 1.0, b * 2.0 - 1.0, a],
        })
    })
}

fn from_filter_space(img: &Rgba32FImage, space: MipSpace) -> RgbaImage {
    let (w, h) = img.dimensions();
    let q = |c: f32| (c.clamp(0.0, 1.0) * 255.0).round() as u8;
    ImageBuffer::from_fn(w, h, |x, y| {
        let [r, g, b, a] = img.get_pixel(x, y).0;
        let a = a.clamp(0.0, 1.0);
        Rgba(match space {
            MipSpace::Normal => {
                let len = (r * r + g * g + b * b).sqrt();
                let [x, y, z] = if len > 1e-6 {
                    [r / len, g / len, b / len]
                } else {
                    [0.0, 0.0, 1.0]
                };
                [q(x * 0.5 + 0.5), q(y * 0.5 + 0.5), q(z * 0.5 + 0.5), q(a)]
            }
            _ => {
                let un = |c: f32| if a > 1e-6 { c / a } else { 0.0 };
                let [r, g, b] = [un(r), un(g), un(b)];
                let [r, g, b] = if space == MipSpace::Srgb {
                    [r, g, b].map(|c| linear_to_srgb(c.clamp(0.0, 1.0)))
                } else {
                    [r, g, b]
                };
                [q(r), q(g), q(b), q(a)]
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_goes_to_one_by_one() {
        let base = RgbaImage::from_pixel(12, 5, Rgba([10, 20, 30, 255]));
        let mips = generate(&base, MipSpace::Srgb);
        let dims: Vec<_> = mips.iter().map(|m| m.dimensions()).collect();
        assert_eq!(dims, vec![(12, 5), (6, 2), (3, 1), (1, 1)]);
        // a flat colour stays that colour (no drift through the sRGB round trip)
        for m in &mips {
            assert!(
                m.pixels().all(|p| p.0 == [10, 20, 30, 255]),
                "{:?}",
                m.get_pixel(0, 0)
            );
        }
    }

    #[test]
    fn srgb_averaging_happens_in_linear_light() {
        // black/white checkerboard: the 1x1 average is 50% linear = sRGB 188, not 128
        let base = RgbaImage::from_fn(2, 2, |x, y| {
            if (x + y) % 2 == 0 {
                Rgba([0, 0, 0, 255])
            } else {
                Rgba([255, 255, 255, 255])
            }
        });
        let mips = generate(&base, MipSpace::Srgb);
        let p = mips[1].get_pixel(0, 0).0;
        assert!((186..=190).contains(&p[0]), "{p:?}");
        let lin = generate(&base, MipSpace::Linear);
        let p = lin[1].get_pixel(0, 0).0;
        assert!((126..=129).contains(&p[0]), "{p:?}");
    }

    #[test]
    fn transparent_texels_do_not_bleed_colour() {
        // red opaque next to fully transparent green: the mip stays red
        let base = RgbaImage::from_fn(2, 1, |x, _| {
            if x == 0 {
                Rgba([255, 0, 0, 255])
            } else {
                Rgba([0, 255, 0, 0])
            }
        });
        let p = generate(&base, MipSpace::Srgb)[1].get_pixel(0, 0).0;
        assert_eq!(&p[..3], &[255, 0, 0], "{p:?}");
        assert!((120..=135).contains(&p[3]), "{p:?}");
    }

    #[test]
    fn normals_stay_unit_length() {
        // two normals tilted opposite ways average to +Z, renormalised
        let base = RgbaImage::from_fn(2, 1, |x, _| {
            if x == 0 {
                Rgba([218, 128, 218, 255])
            } else {
                Rgba([37, 128, 218, 255])
            }
        });
        let p = generate(&base, MipSpace::Normal)[1].get_pixel(0, 0).0;
        assert!((p[0] as i32 - 128).abs() <= 2 && p[2] >= 253, "{p:?}");
    }
}
