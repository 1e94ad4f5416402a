//! CPU decoding of any loadable level to RGBA8 pixels.
//!
//! Used by `mipstream decode`, by tests that compare what the GPU samples with
//! what the file holds, and as the fallback when an adapter cannot sample a
//! plain block-compressed format. Basis payloads go through the transcoder's
//! RGBA8 target; BCn and ETC2/EAC blocks through the `texture2ddecoder` crate,
//! ASTC blocks through `astc-decode` (which handles illegal encodings); 8-bit
//! formats are rearranged. Channels a format lacks read as a GPU samples them:
//! missing colour channels 0, missing alpha 255.

pub use crate::blocks::can_decode;
use crate::blocks::decode_plain_image;
use crate::container::{Payload, RawLevel, TextureFile};
use crate::format::Expand;
use crate::transcode::{self, LevelImage, Output, TranscodeError};

/// An RGBA8 image, rows tightly packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes, row by row.
    pub pixels: Vec<u8>,
}

/// Why a level could not be decoded to RGBA8.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// mipstream has no CPU decoder for the stored format.
    #[error("{name}: decoding {format} to RGBA8 is not supported")]
    Unsupported {
        /// The file's name.
        name: String,
        /// The stored format.
        format: &'static str,
    },
    /// The image index is out of range.
    #[error("{name}: image {image} requested but levels have {count} images")]
    NoSuchImage {
        /// The file's name.
        name: String,
        /// The image asked for.
        image: u32,
        /// Images per level.
        count: u32,
    },
    /// The payload is corrupt.
    #[error("{name}: level {level}: {reason}")]
    Corrupt {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
        /// What is wrong.
        reason: String,
    },
    /// Transcoding failed.
    #[error(transparent)]
    Transcode(#[from] TranscodeError),
}

/// Decodes image `image` (layer-major, face-minor) of a level to RGBA8.
pub fn decode_rgba8(
    file: &TextureFile,
    raw: &RawLevel,
    image: u32,
) -> Result<RgbaImage, DecodeError> {
    let info = file.info();
    let count = info.images_per_level();
    if image >= count {
        return Err(DecodeError::NoSuchImage {
            name: info.name.clone(),
            image,
            count,
        });
    }
    let pixels = match info.payload {
        Payload::Etc1s | Payload::Uastc => {
            let out = Output::Transcode(crate::format::TargetFormat::Rgba8);
            let level = transcode::transcode_level(
                file,
                raw,
                &transcode::TranscodeOptions::new(out, false),
            )?;
            level.image(image).to_vec()
        }
        Payload::Plain(f) => {
            if !can_decode(&f) {
                return Err(DecodeError::Unsupported {
                    name: info.name.clone(),
                    format: f.name,
                });
            }
            decode_plain_image(&f, raw, image).map_err(|reason| DecodeError::Corrupt {
                name: info.name.clone(),
                level: raw.level,
                reason,
            })?
        }
    };
    Ok(RgbaImage {
        width: raw.width,
        height: raw.height,
        pixels,
    })
}

/// Decodes image `image` of an upload-ready level (any row pitch) to RGBA8.
///
/// Useful to check what a GPU should sample from the same bytes.
pub fn decode_level_image(level: &LevelImage, image: u32) -> Result<RgbaImage, DecodeError> {
    let f = crate::format::PLAIN_FORMATS
        .iter()
        .find(|f| f.gpu == level.format && f.expand == Expand::None)
        .copied()
        .filter(can_decode)
        .ok_or(DecodeError::Unsupported {
            name: "level image".into(),
            format: "this GPU format",
        })?;
    if image >= level.images {
        return Err(DecodeError::NoSuchImage {
            name: "level image".into(),
            image,
            count: level.images,
        });
    }
    let tight = f.image_bytes(level.width, 1) as usize;
    let data: Vec<u8> = level
        .image(image)
        .chunks(level.bytes_per_row as usize)
        .flat_map(|row| &row[..tight])
        .copied()
        .collect();
    let raw = RawLevel {
        level: level.level,
        width: level.width,
        height: level.height,
        data,
        etc1s_slices: Vec::new(),
    };
    let pixels = decode_plain_image(&f, &raw, 0).map_err(|reason| DecodeError::Corrupt {
        name: "level image".into(),
        level: level.level,
        reason,
    })?;
    Ok(RgbaImage {
        width: level.width,
        height: level.height,
        pixels,
    })
}
