//! Cooking: PNG/JPEG images into streamable KTX2 files (feature `cook`).
//!
//! [`cook_image`] builds the full mip chain (see [`mips`]), encodes every level
//! with the reference Basis Universal encoder (the `basis-universal` crate, C++
//! 1.16) as ETC1S or UASTC, and writes a KTX2 file with a proper DFD, UASTC
//! levels Zstandard-compressed (`ktx2_writer`). Normal maps are packed the way
//! Basis expects them (X in colour, Y in alpha) so they transcode to BC5 / EAC
//! RG11 at load time.

#[cfg(feature = "gltf")]
pub mod gltf;
mod ktx2_writer;
pub mod measure;
pub mod mips;

use basis_universal::{BasisTextureFormat, ColorSpace, Compressor, CompressorParams};
use image::RgbaImage;
use mips::MipSpace;
use std::path::Path;

/// Version of what cooking writes; caches of cooked files (the built-in
/// scene's, glTF scenes') carry it in their folder names so a cooker that
/// writes more (version 2: the measured loss per level; 3: mesh LODs'
/// measured image errors) cooks them again.
pub const COOK_VERSION: u32 = 3;

/// The Basis Universal codec to encode with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// UASTC LDR 4x4: 8 bits per texel before Zstandard, near-BC7 quality.
    #[default]
    Uastc,
    /// ETC1S: small files, lower quality, fast to transcode.
    Etc1s,
}

/// How to cook an image.
#[derive(Debug, Clone)]
pub struct CookOptions {
    /// The codec. Default: UASTC.
    pub codec: Codec,
    /// Treat the image as linear data rather than sRGB colour. Default: false.
    pub linear: bool,
    /// The image is a tangent-space normal map (implies linear). Default: false.
    pub normal_map: bool,
    /// Quality 0-100: ETC1S quality level 1-255, UASTC pack level 0-4 (slower is
    /// better). Default: 50 (ETC1S 128, UASTC level 2).
    pub quality: u8,
    /// Encoder threads. Default: 1.
    pub threads: u32,
    /// Zstandard level for UASTC levels. Default: 9.
    pub zstd_level: i32,
    /// Measure the loss of every level and tier and store it in the file
    /// ([`crate::loss`]), so the planner spends budget by measured error.
    /// Default: true.
    pub measure_loss: bool,
}

impl Default for CookOptions {
    fn default() -> Self {
        Self {
            codec: Codec::Uastc,
            linear: false,
            normal_map: false,
            quality: 50,
            threads: 1,
            zstd_level: 9,
            measure_loss: true,
        }
    }
}

/// Why an image could not be cooked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CookError {
    /// The input could not be read or decoded.
    #[error("{path}: {reason}")]
    Input {
        /// The input path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The image is larger than the encoder accepts.
    #[error("{path}: {width}x{height} exceeds the largest encodable size {limit}x{limit}")]
    TooLarge {
        /// The input path.
        path: String,
        /// Image width.
        width: u32,
        /// Image height.
        height: u32,
        /// The limit per side.
        limit: u32,
    },
    /// The encoder failed.
    #[error("{path}: the Basis Universal encoder failed: {reason}")]
    Encode {
        /// The input path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The cooked file's loss could not be measured.
    #[error("{path}: measuring the loss per level failed: {reason}")]
    Measure {
        /// The input path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The output could not be written.
    #[error("{path}: {source}")]
    Output {
        /// The output path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Largest side the encoder accepts (`.basis` slices store 16-bit sizes).
pub const MAX_SIDE: u32 = 16384;

/// Cooks an RGBA8 image into KTX2 bytes. `name` is used in errors.
pub fn cook_image(name: &str, image: &RgbaImage, opts: &CookOptions) -> Result<Vec<u8>, CookError> {
    let (w, h) = image.dimensions();
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE {
        return Err(CookError::TooLarge {
            path: name.into(),
            width: w,
            height: h,
            limit: MAX_SIDE,
        });
    }
    let space = if opts.normal_map {
        MipSpace::Normal
    } else if opts.linear {
        MipSpace::Linear
    } else {
        MipSpace::Srgb
    };
    let mut levels = mips::generate(image, space);
    if opts.normal_map {
        // Basis normal-map layout: X in RGB, Y in alpha (what BC5 / EAC RG11 read).
        for level in &mut levels {
            for p in level.pixels_mut() {
                p.0 = [p.0[0], p.0[0], p.0[0], p.0[1]];
            }
        }
    }
    let basis = encode(&levels, space, opts).map_err(|reason| CookError::Encode {
        path: name.into(),
        reason,
    })?;
    let write = ktx2_writer::WriteOptions {
        srgb: space == MipSpace::Srgb,
        zstd_level: (opts.codec == Codec::Uastc).then_some(opts.zstd_level),
        writer: format!(
            "mipstream {} (Basis Universal 1.16 encoder, {})",
            env!("CARGO_PKG_VERSION"),
            match opts.codec {
                Codec::Uastc => "UASTC",
                Codec::Etc1s => "ETC1S",
            }
        ),
    };
    let ktx2 = ktx2_writer::basis_to_ktx2(&basis, &write).map_err(|reason| CookError::Encode {
        path: name.into(),
        reason,
    })?;
    if !opts.measure_loss {
        return Ok(ktx2);
    }
    with_measured_loss(name, ktx2)
}

/// `ktx2` with its measured loss stored in it ([`crate::loss`]).
pub fn with_measured_loss(name: &str, ktx2: Vec<u8>) -> Result<Vec<u8>, CookError> {
    let measure_error = |reason: String| CookError::Measure {
        path: name.into(),
        reason,
    };
    let file = crate::container::TextureFile::open(std::sync::Arc::new(
        crate::source::MemorySource::new(name, ktx2.clone()),
    ))
    .map_err(|e| measure_error(e.to_string()))?;
    let loss = measure::measure_loss(&file).map_err(|e| measure_error(e.to_string()))?;
    measure::annotate_ktx2(&ktx2, &loss).map_err(measure_error)
}

/// Reads a PNG/JPEG file, cooks it, and writes the KTX2 file.
pub fn cook_file(input: &Path, output: &Path, opts: &CookOptions) -> Result<u64, CookError> {
    let name = input.display().to_string();
    let img = image::open(input)
        .map_err(|e| CookError::Input {
            path: name.clone(),
            reason: match e {
                image::ImageError::IoError(io) => io.to_string(),
                other => format!("not a readable PNG/JPEG image: {other}"),
            },
        })?
        .to_rgba8();
    let bytes = cook_image(&name, &img, opts)?;
    std::fs::write(output, &bytes).map_err(|source| CookError::Output {
        path: output.display().to_string(),
        source,
    })?;
    Ok(bytes.len() as u64)
}

/// Runs the Basis Universal encoder over a prepared mip chain.
// The `basis-universal` crate marks encoder setup `unsafe` because the C++
// library does not validate its parameters; every value set here is in range
// (quality levels clamped, images non-empty, mip sizes consistent).
#[allow(unsafe_code)]
fn encode(levels: &[RgbaImage], space: MipSpace, opts: &CookOptions) -> Result<Vec<u8>, String> {
    let mut params = CompressorParams::new();
    match opts.codec {
        Codec::Uastc => {
            params.set_basis_format(BasisTextureFormat::UASTC4x4);
            let level = (opts.quality as u32 / 25).min(basis_universal::UASTC_QUALITY_MAX);
            params.set_uastc_quality_level(level);
        }
        Codec::Etc1s => {
            params.set_basis_format(BasisTextureFormat::ETC1S);
            let q = 1 + opts.quality.min(100) as u32 * 254 / 100;
            params.set_etc1s_quality_level(q.clamp(
                basis_universal::ETC1S_QUALITY_MIN,
                basis_universal::ETC1S_QUALITY_MAX,
            ));
        }
    }
    match space {
        MipSpace::Srgb => params.set_color_space(ColorSpace::Srgb),
        MipSpace::Linear => params.set_color_space(ColorSpace::Linear),
        MipSpace::Normal => params.tune_for_normal_maps(),
    }
    params.set_generate_mipmaps(false);
    let fill = |img: &mut basis_universal::encoding::CompressorImageRef, src: &RgbaImage| {
        img.init(src.as_raw(), src.width(), src.height(), 4);
    };
    fill(&mut params.source_image_mut(0), &levels[0]);
    for (i, level) in levels.iter().enumerate().skip(1) {
        fill(&mut params.source_mipmap_image_mut(0, i as u32 - 1), level);
    }
    let mut compressor = Compressor::new(opts.threads.max(1));
    // SAFETY: see the function comment; params outlives the calls.
    unsafe {
        if !compressor.init(&params) {
            return Err("the encoder rejected its parameters".into());
        }
        compressor.process().map_err(|e| format!("{e:?}"))?;
    }
    Ok(compressor.basis_file().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Payload;
    use crate::{container::TextureFile, source::MemorySource};
    use std::sync::Arc;

    fn gradient(w: u32, h: u32, alpha: bool) -> RgbaImage {
        RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([
                (x * 255 / w.max(1)) as u8,
                (y * 255 / h.max(1)) as u8,
                ((x ^ y) & 0xff) as u8,
                if alpha { (x * 7 % 256) as u8 } else { 255 },
            ])
        })
    }

    #[test]
    fn cooked_files_reopen_with_every_level() {
        for (codec, alpha) in [
            (Codec::Uastc, false),
            (Codec::Etc1s, true),
            (Codec::Uastc, true),
        ] {
            let opts = CookOptions {
                codec,
                quality: 0,
                ..Default::default()
            };
            let bytes = cook_image("g", &gradient(40, 24, alpha), &opts).unwrap();
            let file = TextureFile::open(Arc::new(MemorySource::new("cooked", bytes))).unwrap();
            let info = file.info();
            assert_eq!((info.width, info.height, info.levels.len()), (40, 24, 6));
            assert_eq!(info.has_alpha(), alpha, "{codec:?}");
            assert!(info.srgb);
            let want = match codec {
                Codec::Uastc => Payload::Uastc,
                Codec::Etc1s => Payload::Etc1s,
            };
            assert_eq!(info.payload, want);
            assert!(info.warnings.is_empty(), "{:?}", info.warnings);
            for l in 0..6 {
                file.read_level(l).unwrap();
            }
        }
    }

    #[test]
    fn oversized_and_empty_images_are_refused() {
        let e = cook_image("z", &RgbaImage::new(0, 4), &CookOptions::default()).unwrap_err();
        assert!(matches!(e, CookError::TooLarge { width: 0, .. }), "{e}");
    }
}
