//! From a level's payload to upload-ready texels for one adapter.
//!
//! [`choose_targets`] decides, once per texture and adapter, what its levels
//! become: for Basis payloads BC7 where the adapter has BC, else ASTC 4x4, else
//! ETC2, else RGBA8 (normal maps BC5 / EAC RG11 when their layout allows), plus a
//! lower-bit *compact* tier the residency planner may choose under memory
//! pressure; for plain payloads the stored format, or RGBA8 decoded on the CPU
//! when the adapter lacks it.
//!
//! [`transcode_level`] turns one [`RawLevel`] into a [`LevelImage`]: the bytes
//! of every image of the level in the chosen format, with rows laid out at the
//! requested pitch (256-byte rows go straight into a staging buffer for
//! `copy_buffer_to_texture`; tight rows suit `Queue::write_texture`). It is pure
//! CPU work and runs on loader threads ([`crate::worker`]), never on the render
//! thread.

use crate::blocks;
use crate::container::{Channels, Payload, RawLevel, TextureFile, TextureInfo};
use crate::format::{Expand, PlainFormat, TargetFormat};
pub use crate::kinds::{TextureClass, Tier};
use std::fmt;
use std::sync::Arc;

/// How the channels of the uploaded texture should be read by a shader.
///
/// Basis Universal stores one- and two-channel images in colour blocks, and
/// mipstream keeps that layout on every target so a texture samples the same
/// on every adapter; this says where the data is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelLayout {
    /// Channels as authored.
    AsAuthored,
    /// One channel, replicated into red, green and blue: read `.r`.
    RedReplicated,
    /// Two channels stored as (r, r, r, g): read `.ra`.
    RedGreenInRedAlpha,
    /// A normal map with X in red and Y in green (BC5, EAC RG11).
    NormalRg,
    /// A normal map with X in red and Y in alpha (Basis normal-map layout
    /// transcoded to an RGBA format).
    NormalRa,
    /// A normal map with X, Y and Z in red, green and blue (Z reconstructed
    /// at transcode time): what a renderer that reads `.rg` or `.rgb` of
    /// any format expects (see [`NormalLayout::RedGreen`]).
    NormalRgb,
}

/// Where a renderer reads a normal map's X and Y (a [`crate::streamer::TextureDesc`] setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NormalLayout {
    /// Wherever the device's format keeps them best: red and green in
    /// two-channel formats (BC5, EAC RG11), red and alpha in four-channel
    /// ones (the Basis layout, ASTC and RGBA8); the shader asks
    /// [`crate::streamer::Streamer::channel_layout`]. Default.
    #[default]
    Any,
    /// Always red and green (Z in blue where the format has it), as Bevy's
    /// `StandardMaterial` and most glTF renderers read them: BC5 or EAC RG11
    /// where the device has one, else RGBA8 holding (X, Y, Z, 1)
    /// ([`ChannelLayout::NormalRgb`]); never ASTC, whose blocks cannot be
    /// re-arranged after transcoding.
    RedGreen,
}

/// How one level is produced for the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Transcode a Basis payload to this format.
    Transcode(TargetFormat),
    /// Upload a plain payload as stored (three-channel formats widened to four).
    AsStored,
    /// Decode a plain block-compressed payload to RGBA8 on the CPU because the
    /// adapter lacks its format.
    DecodeToRgba8,
}

/// The outputs chosen for one texture on one adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetChoice {
    /// The full-quality output.
    pub full: Output,
    /// A lower-bit alternative, where one exists.
    pub compact: Option<Output>,
    /// How shaders should read the channels.
    pub layout: ChannelLayout,
    /// Whether colour is sRGB-encoded (the texture format carries it where it can).
    pub srgb: bool,
}

impl TargetChoice {
    /// The output for a tier (the full one when the tier has none).
    pub fn output(&self, tier: Tier) -> Output {
        match tier {
            Tier::Full => self.full,
            Tier::Compact => self.compact.unwrap_or(self.full),
        }
    }

    /// The wgpu format an output of this choice uploads as.
    pub fn wgpu_format(&self, info: &TextureInfo, tier: Tier) -> wgpu::TextureFormat {
        output_format(info, self.output(tier), self.srgb)
    }
}

/// Why a level could not be transcoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscodeError {
    /// The adapter cannot sample the stored format and mipstream cannot decode it.
    #[error("{name}: {format} needs adapter features {missing:?}, and mipstream has no CPU decoder for it")]
    UnsupportedFormat {
        /// The file's name.
        name: String,
        /// The stored format.
        format: &'static str,
        /// The features the adapter lacks.
        missing: wgpu::Features,
    },
    /// The output asked for does not apply to this payload.
    #[error("{name}: cannot produce {output:?} from a {payload} payload")]
    WrongOutput {
        /// The file's name.
        name: String,
        /// The payload.
        payload: &'static str,
        /// What was asked.
        output: Output,
    },
    /// The payload's bytes are corrupt.
    #[error("{name}: level {level}: {payload} data does not decode to {target}: {reason}")]
    Corrupt {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
        /// The payload.
        payload: &'static str,
        /// The target format.
        target: String,
        /// What is wrong.
        reason: String,
    },
    /// The level would decode to more than [`MAX_LEVEL_BYTES`].
    #[error("{name}: level {level} ({width}x{height}) would take more than the {limit}-byte limit for one transcoded level")]
    TooLarge {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// The limit.
        limit: u64,
    },
    /// mipstream was built without the `basis` feature.
    #[error("{name}: Basis Universal payloads need mipstream's `basis` feature")]
    BasisDisabled {
        /// The file's name.
        name: String,
    },
    /// [`UastcTranscoder::Cpp`] was asked for in a build without the
    /// `basis-cpp` feature.
    #[error("{name}: the C++ UASTC transcoder needs mipstream's `basis-cpp` feature")]
    CppTranscoderDisabled {
        /// The file's name.
        name: String,
    },
}

/// The largest transcoded level mipstream produces (1 GiB): a header can claim
/// sizes its data does not back (ETC1S levels are variable-length), and the
/// output is refused before it is allocated.
pub const MAX_LEVEL_BYTES: u64 = 1 << 30;

/// A level's texels in a GPU buffer of their own (unmapped, ready to be
/// copied from), put into [`LevelImage::staged`] by the stage that made it
/// (the loaders' staging on the GPU side), which keeps its own accounting:
/// the transcoder sees only this.
pub trait StagedBuffer: Send + Sync + fmt::Debug {
    /// The buffer: the level's rows at offset 0, at its image's pitch.
    fn buffer(&self) -> &wgpu::Buffer;
    /// Bytes of texels it holds.
    fn bytes(&self) -> u64;
}

/// Upload-ready texels of one mip level: every image (layer x face) of the level.
#[derive(Clone)]
pub struct LevelImage {
    /// The mip level in the file.
    pub level: u32,
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Images in the level (`layers * faces`), stored one after another.
    pub images: u32,
    /// The format of the bytes.
    pub format: wgpu::TextureFormat,
    /// Bytes from one row of blocks to the next.
    pub bytes_per_row: u32,
    /// Rows of blocks per image.
    pub rows_per_image: u32,
    /// The texels (empty once they are in `staged`).
    pub data: Vec<u8>,
    /// The texels, moved into a GPU buffer of their own by a later stage (a
    /// loader thread's staging); `None` for texels in `data`. The
    /// transcoder never makes one, it only carries it.
    pub staged: Option<Arc<dyn StagedBuffer>>,
}

impl fmt::Debug for LevelImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LevelImage")
            .field("level", &self.level)
            .field("size", &format_args!("{}x{}", self.width, self.height))
            .field("images", &self.images)
            .field("format", &self.format)
            .field("bytes_per_row", &self.bytes_per_row)
            .field("bytes", &self.byte_len())
            .field("staged", &self.staged.is_some())
            .finish()
    }
}

impl LevelImage {
    /// Bytes of texels, with row padding: in `data` or in the staging buffer.
    pub fn byte_len(&self) -> u64 {
        self.staged
            .as_ref()
            .map_or(self.data.len() as u64, |s| s.bytes())
    }

    /// Staging an upload of it takes beyond what it already holds: its
    /// bytes, or none when a loader thread has staged it.
    pub fn unstaged_bytes(&self) -> u64 {
        if self.staged.is_some() {
            0
        } else {
            self.data.len() as u64
        }
    }

    /// What wgpu's staging buffer for a `write_texture` of it allocates at
    /// most (none when a loader thread has staged it): its rows of blocks
    /// padded to 256 bytes, as [`gpu_level_alloc_bytes`] counts them (wgpu
    /// pads rows to the device's copy pitch, and the driver rounds the
    /// buffer up).
    pub fn staging_alloc_bytes(&self) -> u64 {
        if self.staged.is_some() {
            0
        } else {
            gpu_level_alloc_bytes(self.format, self.width, self.height) * self.images as u64
        }
    }

    /// The bytes of image `i` (layer-major, face-minor). Panics for a
    /// level whose texels are in a staging buffer (`staged`).
    pub fn image(&self, i: u32) -> &[u8] {
        let n = (self.bytes_per_row * self.rows_per_image) as usize;
        &self.data[i as usize * n..(i as usize + 1) * n]
    }

    /// Bytes the level occupies on the GPU (tight, without row padding).
    pub fn gpu_bytes(&self) -> u64 {
        gpu_level_bytes(self.format, self.width, self.height) * self.images as u64
    }
}

/// Bytes one image of a level of `width` x `height` takes on the GPU in `format`.
pub fn gpu_level_bytes(format: wgpu::TextureFormat, width: u32, height: u32) -> u64 {
    let (bw, bh) = format.block_dimensions();
    let block = format.block_copy_size(None).unwrap_or(4) as u64;
    width.div_ceil(bw) as u64 * height.div_ceil(bh) as u64 * block
}

/// Bytes the books count for one image of a level: its rows of blocks
/// padded to 64 bytes, and at least 256 bytes, an upper bound of what
/// lavapipe allocates for a level (`tests/memory_counters.rs` checks it
/// shape by shape; see [`crate::gpu::store::Shape::alloc_bytes`]).
pub fn gpu_level_alloc_bytes(format: wgpu::TextureFormat, width: u32, height: u32) -> u64 {
    let (bw, bh) = format.block_dimensions();
    let block = format.block_copy_size(None).unwrap_or(4) as u64;
    let row = width.div_ceil(bw) as u64 * block;
    (row.next_multiple_of(64) * height.div_ceil(bh) as u64).max(256)
}

/// Chooses what a texture's levels become on an adapter with `features`.
pub fn choose_targets(
    info: &TextureInfo,
    class: TextureClass,
    features: wgpu::Features,
) -> Result<TargetChoice, TranscodeError> {
    choose_targets_with(info, class, NormalLayout::Any, features)
}

/// [`choose_targets`] for a renderer that reads normal maps as `normals` says.
pub fn choose_targets_with(
    info: &TextureInfo,
    class: TextureClass,
    normals: NormalLayout,
    features: wgpu::Features,
) -> Result<TargetChoice, TranscodeError> {
    let bc = features.contains(wgpu::Features::TEXTURE_COMPRESSION_BC);
    let astc = features.contains(wgpu::Features::TEXTURE_COMPRESSION_ASTC);
    let etc2 = features.contains(wgpu::Features::TEXTURE_COMPRESSION_ETC2);
    let srgb = info.srgb && class == TextureClass::Color;
    // wgpu needs a compressed texture's size to be a whole number of blocks; a
    // texture that is not gets uncompressed RGBA8 instead of a wrong size.
    let fits =
        |(bw, bh): (u32, u32)| info.width.is_multiple_of(bw) && info.height.is_multiple_of(bh);
    let choice = |full, compact: Option<TargetFormat>, layout| TargetChoice {
        full: Output::Transcode(full),
        compact: compact.map(Output::Transcode),
        layout,
        srgb,
    };
    match info.payload {
        Payload::Etc1s | Payload::Uastc => {
            use TargetFormat as T;
            // RG data keeps its second channel in alpha, so only R and RGB are opaque
            let opaque = matches!(info.channels, Channels::R | Channels::Rgb);
            if class == TextureClass::Normal && !opaque && normals == NormalLayout::RedGreen {
                return Ok(if fits((4, 4)) && bc {
                    choice(T::Bc5, None, ChannelLayout::NormalRg)
                } else if fits((4, 4)) && etc2 {
                    choice(T::EacRg11, None, ChannelLayout::NormalRg)
                } else {
                    choice(T::Rgba8, None, ChannelLayout::NormalRgb)
                });
            }
            if class == TextureClass::Normal && !opaque {
                // Basis normal maps keep X in colour and Y in alpha.
                return Ok(if !fits((4, 4)) {
                    choice(T::Rgba8, None, ChannelLayout::NormalRa)
                } else if bc {
                    choice(T::Bc5, None, ChannelLayout::NormalRg)
                } else if astc {
                    choice(T::Astc4x4, None, ChannelLayout::NormalRa)
                } else if etc2 {
                    choice(T::EacRg11, None, ChannelLayout::NormalRg)
                } else {
                    choice(T::Rgba8, None, ChannelLayout::NormalRa)
                });
            }
            let compact = |t| opaque.then_some(t);
            let layout = match info.channels {
                Channels::R => ChannelLayout::RedReplicated,
                Channels::Rg => ChannelLayout::RedGreenInRedAlpha,
                _ => ChannelLayout::AsAuthored,
            };
            Ok(if !fits((4, 4)) {
                choice(T::Rgba8, None, layout)
            } else if bc {
                choice(T::Bc7, compact(T::Bc1), layout)
            } else if astc {
                choice(T::Astc4x4, None, layout)
            } else if etc2 {
                choice(T::Etc2Rgba, compact(T::Etc2Rgb), layout)
            } else {
                choice(T::Rgba8, None, layout)
            })
        }
        Payload::Plain(f) => {
            let missing = f.gpu.required_features() - features;
            let layout = if class == TextureClass::Normal && f.channels == 2 {
                ChannelLayout::NormalRg
            } else {
                ChannelLayout::AsAuthored
            };
            let full = if missing.is_empty() && fits(f.gpu.block_dimensions()) {
                Output::AsStored
            } else if blocks::can_decode(&f) {
                Output::DecodeToRgba8
            } else {
                return Err(TranscodeError::UnsupportedFormat {
                    name: info.name.clone(),
                    format: f.name,
                    missing,
                });
            };
            Ok(TargetChoice {
                full,
                compact: None,
                layout,
                srgb: f.srgb,
            })
        }
    }
}

/// The wgpu format an output uploads as.
pub fn output_format(info: &TextureInfo, output: Output, srgb: bool) -> wgpu::TextureFormat {
    match (output, info.payload) {
        (Output::Transcode(t), _) => t.wgpu_format(srgb),
        (Output::AsStored, Payload::Plain(f)) => f.gpu,
        (Output::DecodeToRgba8, Payload::Plain(f)) if f.srgb => wgpu::TextureFormat::Rgba8UnormSrgb,
        _ => wgpu::TextureFormat::Rgba8Unorm,
    }
}

/// How a level is transcoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranscodeOptions {
    /// What to produce.
    pub output: Output,
    /// Whether an RGBA target carries sRGB colour (see [`TargetChoice::srgb`]).
    pub srgb: bool,
    /// Row pitch granularity in bytes: 1 for tight rows (`Queue::write_texture`),
    /// [`wgpu::COPY_BYTES_PER_ROW_ALIGNMENT`] for staging buffers. Default: 1.
    pub row_alignment: u32,
    /// Smooth ETC1S chroma across blocks when transcoding to BC7, as Basis
    /// Universal 2 does by default (a little closer to the source image). Off
    /// reproduces Basis Universal 1.16's output bit for bit. Default: on.
    pub etc1s_chroma_filter: bool,
    /// Re-arrange an RGBA8 normal map from the Basis layout (X in red, Y in
    /// alpha) to (X, Y, Z, 1), Z reconstructed ([`ChannelLayout::NormalRgb`]).
    /// Default: off.
    pub normal_to_rgb: bool,
    /// Which transcoder turns UASTC levels into GPU blocks. Default:
    /// [`UastcTranscoder::Cpp`] where the `basis-cpp` feature is on (`cook`
    /// turns it on, so the tools have it; the default runtime leaves it off), else
    /// [`UastcTranscoder::Rust`]. ETC1S always goes through the pure-Rust
    /// `basisu` crate.
    pub uastc: UastcTranscoder,
}

/// The transcoder for UASTC levels. Both produce the same blocks (bit-exact
/// with the Khronos conformance goldens); they differ in speed
/// (`mipstream bench-transcode`): the C++ reference is 1.2-1.6x faster on every
/// UASTC target measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UastcTranscoder {
    /// Basis Universal 1.16's C++ low-level UASTC transcoder, compiled in by
    /// the `basis-universal` crate (feature `basis-cpp`; needs a C++ compiler
    /// to build). Without the feature, asking for it is
    /// [`TranscodeError::CppTranscoderDisabled`].
    #[cfg_attr(feature = "basis-cpp", default)]
    Cpp,
    /// The pure-Rust `basisu` crate (feature `basis`).
    #[cfg_attr(not(feature = "basis-cpp"), default)]
    Rust,
}

impl TranscodeOptions {
    /// Options for `output` with the defaults above.
    pub fn new(output: Output, srgb: bool) -> Self {
        Self {
            output,
            srgb,
            row_alignment: 1,
            etc1s_chroma_filter: true,
            normal_to_rgb: false,
            uastc: UastcTranscoder::default(),
        }
    }

    /// The options that produce `output` in `choice`'s channel layout.
    pub fn for_choice(choice: &TargetChoice, output: Output) -> Self {
        let mut o = Self::new(output, choice.srgb);
        o.normal_to_rgb = choice.layout == ChannelLayout::NormalRgb;
        o
    }

    /// The same options with another row alignment.
    pub fn with_row_alignment(mut self, row_alignment: u32) -> Self {
        self.row_alignment = row_alignment;
        self
    }
}

/// Produces the upload-ready texels of one level.
pub fn transcode_level(
    file: &TextureFile,
    raw: &RawLevel,
    opts: &TranscodeOptions,
) -> Result<LevelImage, TranscodeError> {
    let TranscodeOptions {
        output,
        srgb,
        row_alignment,
        ..
    } = *opts;
    let info = file.info();
    let format = output_format(info, output, srgb);
    let (bw, bh) = format.block_dimensions();
    let block = format.block_copy_size(None).unwrap_or(4) as u64;
    let align = row_alignment.max(1) as u64;
    let tight_row = raw.width.div_ceil(bw) as u64 * block;
    let pitch = tight_row.div_ceil(align) * align;
    let rows = raw.height.div_ceil(bh) as u64;
    let images = info.images_per_level() as u64;
    let total = pitch.checked_mul(rows).and_then(|b| b.checked_mul(images));
    match total {
        Some(t) if t <= MAX_LEVEL_BYTES && pitch <= u32::MAX as u64 => {}
        _ => {
            return Err(TranscodeError::TooLarge {
                name: info.name.clone(),
                level: raw.level,
                width: raw.width,
                height: raw.height,
                limit: MAX_LEVEL_BYTES,
            })
        }
    }
    let mut img = LevelImage {
        level: raw.level,
        width: raw.width,
        height: raw.height,
        images: images as u32,
        format,
        bytes_per_row: pitch as u32,
        rows_per_image: rows as u32,
        data: Vec::new(),
        staged: None,
    };
    let tight_row = tight_row as u32;
    img.data = vec![0u8; total.unwrap_or(0) as usize];
    let wrong = || TranscodeError::WrongOutput {
        name: info.name.clone(),
        payload: info.payload.name(),
        output,
    };
    match (output, info.payload) {
        (Output::Transcode(t), Payload::Etc1s | Payload::Uastc) => {
            basis::transcode(file, raw, t, opts, tight_row as usize, &mut img)?;
            if opts.normal_to_rgb && t == TargetFormat::Rgba8 {
                normal_ra_to_rgb(&mut img.data);
            }
        }
        (Output::AsStored, Payload::Plain(f)) => copy_plain(&f, raw, tight_row as usize, &mut img),
        (Output::DecodeToRgba8, Payload::Plain(f)) => {
            for i in 0..img.images {
                let rgba = blocks::decode_plain_image(&f, raw, i).map_err(|reason| {
                    TranscodeError::Corrupt {
                        name: info.name.clone(),
                        level: raw.level,
                        payload: f.name,
                        target: "rgba8".into(),
                        reason,
                    }
                })?;
                place_rows(&rgba, tight_row as usize, &mut img, i);
            }
        }
        _ => return Err(wrong()),
    }
    Ok(img)
}

/// Re-arranges RGBA8 texels from X in red, Y in alpha to (X, Y, Z, 1), Z
/// reconstructed as `sqrt(1 - x^2 - y^2)` on the usual `2v - 1` mapping.
/// Row padding (zeros) stays zeros' worth of garbage nobody samples.
pub(crate) fn normal_ra_to_rgb(rgba: &mut [u8]) {
    for px in rgba.chunks_exact_mut(4) {
        let (x, y) = (px[0], px[3]);
        let fx = x as f32 / 127.5 - 1.0;
        let fy = y as f32 / 127.5 - 1.0;
        let fz = (1.0 - fx * fx - fy * fy).max(0.0).sqrt();
        px.copy_from_slice(&[x, y, ((fz + 1.0) * 127.5).round() as u8, 255]);
    }
}

/// Copies tight rows `src` of image `i` into `img` at its row pitch.
pub(crate) fn place_rows(src: &[u8], tight_row: usize, img: &mut LevelImage, i: u32) {
    let pitch = img.bytes_per_row as usize;
    let image_len = pitch * img.rows_per_image as usize;
    let dst = &mut img.data[i as usize * image_len..(i as usize + 1) * image_len];
    if pitch == tight_row {
        dst[..src.len()].copy_from_slice(src);
        return;
    }
    for (row, chunk) in src.chunks(tight_row).enumerate() {
        dst[row * pitch..row * pitch + chunk.len()].copy_from_slice(chunk);
    }
}

fn copy_plain(f: &PlainFormat, raw: &RawLevel, tight_row: usize, img: &mut LevelImage) {
    let stored = f.image_bytes(raw.width, raw.height) as usize;
    for i in 0..img.images {
        let src = &raw.data[i as usize * stored..(i as usize + 1) * stored];
        match f.expand {
            Expand::None => place_rows(src, tight_row, img, i),
            Expand::Rgb8 | Expand::Bgr8 => {
                let swap = f.expand == Expand::Bgr8;
                let wide: Vec<u8> = src
                    .chunks_exact(3)
                    .flat_map(|p| {
                        if swap {
                            [p[2], p[1], p[0], 255]
                        } else {
                            [p[0], p[1], p[2], 255]
                        }
                    })
                    .collect();
                place_rows(&wide, tight_row, img, i)
            }
        }
    }
}

#[cfg(feature = "basis")]
mod basis;
#[cfg(feature = "basis")]
mod bc7_m5;
#[cfg(feature = "basis")]
mod etc1s;
#[cfg(feature = "basis")]
mod etc1s_chroma;

#[cfg(not(feature = "basis"))]
mod basis {
    use super::*;

    pub(super) fn transcode(
        file: &TextureFile,
        _raw: &RawLevel,
        _target: TargetFormat,
        _opts: &TranscodeOptions,
        _tight_row: usize,
        _img: &mut LevelImage,
    ) -> Result<(), TranscodeError> {
        Err(TranscodeError::BasisDisabled {
            name: file.info().name.clone(),
        })
    }
}
