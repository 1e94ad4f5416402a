//! Measuring a texture's loss per level and tier (see [`crate::loss`]): every
//! level decoded as the runtime would transcode it, reconstructed at level
//! 0's size by bilinear magnification (in linear light for sRGB colour) and
//! compared with level 0.
//!
//! Used by `mipstream cook` and `cook-gltf` on what they write, and by
//! `mipstream annotate` on files mipstream did not cook; [`annotate_ktx2`]
//! adds the result to a KTX2 file's key/value data.

use crate::container::{Channels, LevelError, Payload, TextureFile};
use crate::decode::{self, DecodeError};
use crate::format::TargetFormat;
use crate::loss::{CompactFormat, CompactLoss, LossSpace, TextureLoss, LOSS_KEY};
use crate::transcode::{self, Output, TranscodeError, TranscodeOptions};

/// Why a texture's loss could not be measured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// A level could not be read.
    #[error(transparent)]
    Read(#[from] LevelError),
    /// A level could not be decoded to RGBA8.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A level could not be transcoded to a compact tier.
    #[error(transparent)]
    Transcode(#[from] TranscodeError),
    /// The texture is not something the planner streams by level.
    #[error("{name}: {reason}")]
    Unsupported {
        /// The file.
        name: String,
        /// Why.
        reason: String,
    },
}

/// Measures `file`'s loss at every level and, for opaque Basis payloads, in
/// the compact tiers (BC1, ETC2 RGB).
pub fn measure_loss(file: &TextureFile) -> Result<TextureLoss, MeasureError> {
    let info = file.info();
    if info.levels.is_empty() {
        return Err(MeasureError::Unsupported {
            name: info.name.clone(),
            reason: "the file has no levels".into(),
        });
    }
    let space = if info.srgb {
        LossSpace::Srgb
    } else {
        LossSpace::Linear
    };
    let channels = match info.channels {
        Channels::Rgba | Channels::Rg => 4,
        _ => 3,
    };
    let images = info.images_per_level();
    let compact_formats: &[CompactFormat] =
        if info.payload.is_basis() && matches!(info.channels, Channels::R | Channels::Rgb) {
            &CompactFormat::ALL
        } else {
            &[]
        };
    let levels = info.levels.len();
    let mut level_error = vec![0.0f64; levels];
    let mut compact: Vec<Vec<f64>> = vec![vec![0.0; levels]; compact_formats.len()];
    let lut = Srgb::new();
    for image in 0..images {
        let raw0 = file.read_level(0)?;
        let reference = decode::decode_rgba8(file, &raw0, image)?;
        let compare =
            |pixels: &[u8], w: u32, h: u32| mse(&reference, pixels, w, h, space, channels, &lut);
        for (l, err) in level_error.iter_mut().enumerate() {
            let raw = if l == 0 {
                None
            } else {
                Some(file.read_level(l as u32)?)
            };
            let raw = raw.as_ref().unwrap_or(&raw0);
            if l > 0 {
                let img = decode::decode_rgba8(file, raw, image)?;
                *err += compare(&img.pixels, img.width, img.height);
            }
            for (c, &format) in compact_formats.iter().enumerate() {
                let target = match format {
                    CompactFormat::Bc1 => TargetFormat::Bc1,
                    CompactFormat::Etc2Rgb => TargetFormat::Etc2Rgb,
                };
                let out = transcode::transcode_level(
                    file,
                    raw,
                    &TranscodeOptions::new(Output::Transcode(target), false),
                )?;
                let img = decode::decode_level_image(&out, image)?;
                compact[c][l] += compare(&img.pixels, img.width, img.height);
            }
        }
    }
    let mean = |v: &[f64]| -> Vec<f32> { v.iter().map(|e| (e / images as f64) as f32).collect() };
    let blur = if compact_formats.is_empty() {
        Vec::new()
    } else {
        blur_equivalents(file, compact_formats, space, &lut)?
    };
    Ok(TextureLoss {
        space,
        level_error: mean(&level_error),
        compact: compact_formats
            .iter()
            .zip(&compact)
            .enumerate()
            .map(|(i, (&format, v))| CompactLoss {
                format,
                level_error: mean(v),
                blur_levels: blur.get(i).copied().flatten(),
            })
            .collect(),
    })
}

/// Side of the crop of level 0 the blur equivalents are measured on.
const FLIP_CROP: u32 = 512;

/// Each compact tier's blur equivalent (see [`crate::loss`]): the mean FLIP
/// error of its level 0 against the full tier's, on a centred crop of
/// image 0 at level 0's scale, placed between those of the full tier's
/// levels magnified (level 0: none), interpolated. `None` for a texture of
/// one level.
fn blur_equivalents(
    file: &TextureFile,
    formats: &[CompactFormat],
    space: LossSpace,
    lut: &Srgb,
) -> Result<Vec<Option<f32>>, MeasureError> {
    let levels = file.info().levels.len() as u32;
    if levels < 2 {
        return Ok(vec![None; formats.len()]);
    }
    let raw0 = file.read_level(0)?;
    let reference = decode::decode_rgba8(file, &raw0, 0)?;
    let (w, h) = (reference.width, reference.height);
    let crop = Crop {
        x: (w.saturating_sub(FLIP_CROP)) / 2,
        y: (h.saturating_sub(FLIP_CROP)) / 2,
        w: w.min(FLIP_CROP),
        h: h.min(FLIP_CROP),
    };
    let truth = crop.rgb(&reference.pixels, w);
    let flip = |test: &[u8]| -> f32 {
        let err = nv_flip::flip(
            nv_flip::FlipImageRgb8::with_data(crop.w, crop.h, &truth),
            nv_flip::FlipImageRgb8::with_data(crop.w, crop.h, test),
            nv_flip::DEFAULT_PIXELS_PER_DEGREE,
        );
        nv_flip::FlipPool::from_image(&err).mean()
    };
    let compact: Vec<f32> = formats
        .iter()
        .map(|&format| {
            let target = match format {
                CompactFormat::Bc1 => TargetFormat::Bc1,
                CompactFormat::Etc2Rgb => TargetFormat::Etc2Rgb,
            };
            let out = transcode::transcode_level(
                file,
                &raw0,
                &TranscodeOptions::new(Output::Transcode(target), false),
            )?;
            let img = decode::decode_level_image(&out, 0)?;
            Ok(flip(&crop.rgb(&img.pixels, w)))
        })
        .collect::<Result<_, MeasureError>>()?;
    // the full tier's FLIP by level, until it passes every compact tier's
    let worst = compact.iter().copied().fold(0.0f32, f32::max);
    let mut by_level = vec![0.0f32];
    for l in 1..levels {
        let img = decode::decode_rgba8(file, &file.read_level(l)?, 0)?;
        let magnified = magnify_crop(&img, w, h, &crop, space, lut);
        by_level.push(flip(&magnified));
        if by_level[l as usize] >= worst {
            break;
        }
    }
    Ok(compact
        .iter()
        .map(|&f| {
            let k = by_level.iter().position(|&b| b >= f);
            Some(match k {
                Some(0) | None if f <= 0.0 => 0.0,
                Some(k) => {
                    let (a, b) = (by_level[k - 1], by_level[k]);
                    (k - 1) as f32 + if b > a { (f - a) / (b - a) } else { 1.0 }
                }
                // worse than every level measured: the coarsest
                None => (by_level.len() - 1) as f32,
            })
        })
        .collect())
}

/// A rectangle of level 0.
struct Crop {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

impl Crop {
    /// The crop of an RGBA8 image `width` wide, as RGB8.
    fn rgb(&self, pixels: &[u8], width: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity((self.w * self.h * 3) as usize);
        for y in self.y..self.y + self.h {
            let row = (y * width) as usize * 4;
            for x in self.x..self.x + self.w {
                let p = row + x as usize * 4;
                out.extend_from_slice(&pixels[p..p + 3]);
            }
        }
        out
    }
}

/// `img` magnified to `w` x `h` (bilinear, in linear light for sRGB
/// colour), the crop of it as RGB8.
fn magnify_crop(
    img: &decode::RgbaImage,
    w: u32,
    h: u32,
    crop: &Crop,
    space: LossSpace,
    lut: &Srgb,
) -> Vec<u8> {
    let xs = taps(w, img.width);
    let ys = taps(h, img.height);
    let value = |x: usize, y: usize, c: usize| {
        let v = img.pixels[(y * img.width as usize + x) * 4 + c];
        match space {
            LossSpace::Srgb => lut.to_linear[v as usize],
            LossSpace::Linear => v as f32,
        }
    };
    let mut out = Vec::with_capacity((crop.w * crop.h * 3) as usize);
    for y in crop.y..crop.y + crop.h {
        let (y0, y1, fy) = ys[y as usize];
        for x in crop.x..crop.x + crop.w {
            let (x0, x1, fx) = xs[x as usize];
            for c in 0..3 {
                let top = value(x0, y0, c) + (value(x1, y0, c) - value(x0, y0, c)) * fx;
                let bottom = value(x0, y1, c) + (value(x1, y1, c) - value(x0, y1, c)) * fx;
                let v = top + (bottom - top) * fy;
                let v = match space {
                    LossSpace::Srgb => lut.encode(v),
                    LossSpace::Linear => v,
                };
                out.push(v.round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

/// Whether a payload can be measured (decoded on the CPU) at all.
pub fn can_measure(file: &TextureFile) -> bool {
    match file.info().payload {
        Payload::Etc1s | Payload::Uastc => true,
        Payload::Plain(f) => decode::can_decode(&f),
    }
}

/// `ktx2` with `loss` in its key/value data (replacing an earlier one).
pub fn annotate_ktx2(ktx2: &[u8], loss: &TextureLoss) -> Result<Vec<u8>, String> {
    super::ktx2_writer::with_key_value(ktx2, LOSS_KEY, &loss.to_value())
}

/// sRGB decoding and encoding tables.
struct Srgb {
    to_linear: [f32; 256],
    /// `to_srgb[i]`: sRGB value (0-255, fractional) of linear `i / N`.
    to_srgb: Vec<f32>,
}

const SRGB_STEPS: usize = 4096;

impl Srgb {
    fn new() -> Self {
        let mut to_linear = [0.0; 256];
        for (i, v) in to_linear.iter_mut().enumerate() {
            let c = i as f32 / 255.0;
            *v = if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            };
        }
        let to_srgb = (0..=SRGB_STEPS)
            .map(|i| {
                let l = i as f32 / SRGB_STEPS as f32;
                255.0
                    * if l <= 0.003_130_8 {
                        l * 12.92
                    } else {
                        1.055 * l.powf(1.0 / 2.4) - 0.055
                    }
            })
            .collect();
        Self { to_linear, to_srgb }
    }

    fn encode(&self, linear: f32) -> f32 {
        let x = linear.clamp(0.0, 1.0) * SRGB_STEPS as f32;
        let i = (x as usize).min(SRGB_STEPS - 1);
        let f = x - i as f32;
        self.to_srgb[i] + (self.to_srgb[i + 1] - self.to_srgb[i]) * f
    }
}

/// Source index pair and weight of each destination pixel along one axis
/// (texel centres aligned, edges clamped: what a GPU's bilinear
/// magnification samples).
fn taps(dst: u32, src: u32) -> Vec<(usize, usize, f32)> {
    (0..dst)
        .map(|x| {
            let s = ((x as f32 + 0.5) * src as f32 / dst as f32 - 0.5).max(0.0);
            let i = (s as usize).min(src as usize - 1);
            (i, (i + 1).min(src as usize - 1), s - i as f32)
        })
        .collect()
}

/// Mean squared error per texel and channel (0-255 scale) of `pixels`
/// (RGBA8, `w` x `h`) magnified to the reference's size against it.
fn mse(
    reference: &decode::RgbaImage,
    pixels: &[u8],
    w: u32,
    h: u32,
    space: LossSpace,
    channels: usize,
    lut: &Srgb,
) -> f64 {
    let (rw, rh) = (reference.width, reference.height);
    let xs = taps(rw, w);
    let ys = taps(rh, h);
    // the source in the space filtering happens in: linear light for sRGB
    // colour channels, as stored otherwise (alpha always as stored)
    let src: Vec<f32> = pixels
        .chunks_exact(4)
        .flat_map(|p| {
            let c = |i: usize| match space {
                LossSpace::Srgb if i < 3 => lut.to_linear[p[i] as usize],
                _ => p[i] as f32,
            };
            [c(0), c(1), c(2), c(3)]
        })
        .collect();
    // rows magnified horizontally, cached by source row
    let row = |y: usize| -> Vec<f32> {
        let line = &src[y * w as usize * 4..(y + 1) * w as usize * 4];
        xs.iter()
            .flat_map(|&(a, b, f)| {
                let (pa, pb) = (&line[a * 4..a * 4 + 4], &line[b * 4..b * 4 + 4]);
                [0, 1, 2, 3].map(|c| pa[c] + (pb[c] - pa[c]) * f)
            })
            .collect()
    };
    let mut cache: [(usize, Vec<f32>); 2] = [(usize::MAX, Vec::new()), (usize::MAX, Vec::new())];
    let mut sum = 0.0f64;
    for (y, &(y0, y1, fy)) in ys.iter().enumerate() {
        for want in [y0, y1] {
            if cache[0].0 != want && cache[1].0 != want {
                // replace the row that is not the other one wanted
                let slot = if cache[0].0 == y0 || cache[0].0 == y1 {
                    1
                } else {
                    0
                };
                cache[slot] = (want, row(want));
            }
        }
        let get = |i: usize| {
            if cache[0].0 == i {
                &cache[0].1
            } else {
                &cache[1].1
            }
        };
        let (r0, r1) = (get(y0), get(y1));
        let reference_row = &reference.pixels[y * rw as usize * 4..(y + 1) * rw as usize * 4];
        let mut row_sum = 0.0f32;
        for x in 0..rw as usize {
            for c in 0..channels {
                let i = x * 4 + c;
                let v = r0[i] + (r1[i] - r0[i]) * fy;
                let v = match space {
                    LossSpace::Srgb if c < 3 => lut.encode(v),
                    _ => v,
                };
                let d = v - reference_row[i] as f32;
                row_sum += d * d;
            }
        }
        sum += row_sum as f64;
    }
    sum / (rw as f64 * rh as f64 * channels as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 4]) -> decode::RgbaImage {
        let f = &f;
        let pixels = (0..h)
            .flat_map(|y| (0..w).flat_map(move |x| f(x, y)))
            .collect();
        decode::RgbaImage {
            width: w,
            height: h,
            pixels,
        }
    }

    #[test]
    fn a_flat_image_loses_nothing_and_a_checker_loses_its_contrast() {
        let lut = Srgb::new();
        let flat = image(8, 8, |_, _| [90, 120, 200, 255]);
        let half = image(4, 4, |_, _| [90, 120, 200, 255]);
        for space in [LossSpace::Srgb, LossSpace::Linear] {
            let e = mse(&flat, &half.pixels, 4, 4, space, 3, &lut);
            assert!(e < 0.01, "{space:?}: {e}");
        }
        // a one-texel checker of 0 and 200: its half-size level is flat 100
        // (linear data), so every texel is off by 100
        let checker = image(8, 8, |x, y| {
            let v = if (x + y) % 2 == 0 { 0 } else { 200 };
            [v, v, v, 255]
        });
        let grey = image(4, 4, |_, _| [100, 100, 100, 255]);
        let e = mse(&checker, &grey.pixels, 4, 4, LossSpace::Linear, 3, &lut);
        assert!((e - 10000.0).abs() < 1.0, "{e}");
        // the same image against itself: nothing
        let e = mse(&checker, &checker.pixels, 8, 8, LossSpace::Srgb, 4, &lut);
        assert!(e < 1e-3, "{e}");
    }

    #[test]
    fn magnification_is_bilinear_between_texel_centres() {
        // a 2-texel ramp magnified to 4: centres at 0.25 and 0.75 of the
        // width keep their values, the outer texels clamp
        let lut = Srgb::new();
        let src = [0u8, 0, 0, 255, 200, 200, 200, 255];
        let want = image(4, 1, |x, _| {
            let v = [0, 50, 150, 200][x as usize];
            [v, v, v, 255]
        });
        let e = mse(&want, &src, 2, 1, LossSpace::Linear, 3, &lut);
        assert!(e < 1e-6, "{e}");
    }
}
