//! Creating a `wgpu::Texture` from transcoded levels `[k..n)`.
//!
//! The texture's mip 0 is file level `k`, so the texture is exactly as large as
//! the resident data and the view samples from its finest resident level. Block
//! compressed textures must start at a level whose size is a multiple of the
//! block (wgpu validates the base size only; smaller mips are padded to whole
//! blocks by the driver): [`valid_base_level`] says which levels qualify, and a
//! request for another base is refused with [`UploadError::UnalignedBase`].
//!
//! Creation runs inside wgpu error scopes so an out-of-memory or validation
//! failure comes back as an [`UploadError`] instead of an uncaptured-error panic.

use super::scope::{catching, Catch};
use crate::container::TextureInfo;
use crate::transcode::LevelImage;

/// Why levels could not be uploaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// No levels were given.
    #[error("{label}: no levels to upload")]
    Empty {
        /// The texture's label.
        label: String,
    },
    /// The levels are not consecutive, or disagree in format or image count.
    #[error("{label}: levels must be consecutive with one format; {detail}")]
    Inconsistent {
        /// The texture's label.
        label: String,
        /// What disagrees.
        detail: String,
    },
    /// The first level's size is not a multiple of the format's block.
    #[error("{label}: level {level} is {width}x{height}, not a multiple of the {block_width}x{block_height} block of {format:?}, so it cannot be a texture's base level")]
    UnalignedBase {
        /// The texture's label.
        label: String,
        /// The requested base level.
        level: u32,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// Block width.
        block_width: u32,
        /// Block height.
        block_height: u32,
        /// The format.
        format: wgpu::TextureFormat,
    },
    /// The texture exceeds the device's limits.
    #[error("{label}: {what} is {requested} but the device allows at most {limit}")]
    TooLarge {
        /// The texture's label.
        label: String,
        /// Which dimension.
        what: &'static str,
        /// The size asked for.
        requested: u32,
        /// The device limit.
        limit: u32,
    },
    /// The GPU ran out of memory creating the texture.
    #[error("{label}: out of GPU memory allocating {bytes} bytes ({width}x{height}, {levels} levels, {format:?})")]
    OutOfMemory {
        /// The texture's label.
        label: String,
        /// Bytes the texture needs.
        bytes: u64,
        /// Width of its base level.
        width: u32,
        /// Height of its base level.
        height: u32,
        /// Mip levels.
        levels: u32,
        /// The format.
        format: wgpu::TextureFormat,
    },
    /// wgpu rejected the texture or an upload (a bug or an unexpected adapter limit).
    #[error("{label}: wgpu validation failed: {message}")]
    Validation {
        /// The texture's label.
        label: String,
        /// wgpu's message.
        message: String,
    },
}

/// A texture holding levels `[first_level, first_level + level_count)` of a file.
#[derive(Debug, Clone)]
pub struct GpuTexture {
    /// The texture; its mip 0 is file level `first_level`.
    pub texture: wgpu::Texture,
    /// A view of every mip and layer, with the dimension the file implies.
    pub view: wgpu::TextureView,
    /// The view's dimension (see [`view_dimension`]).
    pub view_dimension: wgpu::TextureViewDimension,
    /// The file level stored as the texture's mip 0.
    pub first_level: u32,
    /// Mip levels in the texture.
    pub level_count: u32,
    /// The texture's format.
    pub format: wgpu::TextureFormat,
    /// Bytes of texel data the texture holds.
    pub bytes: u64,
}

/// Whether `level` of a `width` x `height` texture can be a texture's base level
/// in `format` (its size is a multiple of the format's block).
pub fn valid_base_level(format: wgpu::TextureFormat, width: u32, height: u32, level: u32) -> bool {
    let (bw, bh) = format.block_dimensions();
    let w = crate::container::mip_extent(width, level);
    let h = crate::container::mip_extent(height, level);
    w.is_multiple_of(bw) && h.is_multiple_of(bh)
}

/// Creates a texture from consecutive transcoded levels and uploads them
/// ([`write_levels`]).
pub fn upload_levels(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    info: &TextureInfo,
    levels: &[LevelImage],
) -> Result<GpuTexture, UploadError> {
    let first = levels.first().ok_or_else(|| UploadError::Empty {
        label: label.to_owned(),
    })?;
    check_consistent(label, levels)?;
    let format = first.format;
    let (bw, bh) = format.block_dimensions();
    if first.width % bw != 0 || first.height % bh != 0 {
        return Err(UploadError::UnalignedBase {
            label: label.to_owned(),
            level: first.level,
            width: first.width,
            height: first.height,
            block_width: bw,
            block_height: bh,
            format,
        });
    }
    check_limits(device, label, first)?;
    let size = wgpu::Extent3d {
        width: first.width,
        height: first.height,
        depth_or_array_layers: first.images,
    };
    let bytes: u64 = levels.iter().map(LevelImage::gpu_bytes).sum();
    let (texture, caught) = catching(device, Catch::Both, || {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size,
            mip_level_count: levels.len() as u32,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        })
    });
    if caught.out_of_memory {
        return Err(UploadError::OutOfMemory {
            label: label.to_owned(),
            bytes,
            width: first.width,
            height: first.height,
            levels: levels.len() as u32,
            format,
        });
    }
    if let Some(message) = caught.validation {
        return Err(UploadError::Validation {
            label: label.to_owned(),
            message,
        });
    }
    write_levels(device, queue, label, &texture, levels, 0)?;
    let dimension = view_dimension(info);
    let view = texture.create_view(&wgpu::TextureViewDescriptor {
        label: Some(label),
        dimension: Some(dimension),
        ..Default::default()
    });
    Ok(GpuTexture {
        texture,
        view,
        view_dimension: dimension,
        first_level: first.level,
        level_count: levels.len() as u32,
        format,
        bytes,
    })
}

/// Writes `levels` into `texture`, the first at mip `first_mip`: with
/// `Queue::write_texture`, or for levels a loader thread staged
/// ([`LevelImage::staged`]) with a copy from their buffer, submitted here.
pub fn write_levels(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    texture: &wgpu::Texture,
    levels: &[LevelImage],
    first_mip: u32,
) -> Result<(), UploadError> {
    let ((), caught) = catching(device, Catch::Validation, || {
        let mut encoder = None;
        for (i, l) in levels.iter().enumerate() {
            put_level(
                queue,
                texture,
                first_mip + i as u32,
                l,
                &mut encoder,
                || {
                    device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some(label),
                    })
                },
            );
        }
        if let Some(encoder) = encoder {
            queue.submit([encoder.finish()]);
            // their reserve bytes come back once the GPU has copied them
            let staged: Vec<_> = levels.iter().filter_map(|l| l.staged.clone()).collect();
            queue.on_submitted_work_done(move || drop(staged));
        }
    });
    match caught.validation {
        None => Ok(()),
        Some(message) => Err(UploadError::Validation {
            label: label.to_owned(),
            message,
        }),
    }
}

/// Puts `l` into mip `mip` of `texture`: texels in memory with
/// `Queue::write_texture`, loader-staged ones ([`LevelImage::staged`]) as a
/// copy from their buffer recorded in `encoder` (made with `make` the first
/// time one is needed).
pub(crate) fn put_level(
    queue: &wgpu::Queue,
    texture: &wgpu::Texture,
    mip: u32,
    l: &LevelImage,
    encoder: &mut Option<wgpu::CommandEncoder>,
    make: impl FnOnce() -> wgpu::CommandEncoder,
) {
    let (bw, bh) = l.format.block_dimensions();
    let dst = wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: mip,
        origin: wgpu::Origin3d::ZERO,
        aspect: wgpu::TextureAspect::All,
    };
    let layout = wgpu::TexelCopyBufferLayout {
        offset: 0,
        bytes_per_row: Some(l.bytes_per_row),
        rows_per_image: Some(l.rows_per_image),
    };
    let extent = wgpu::Extent3d {
        width: l.width.div_ceil(bw) * bw,
        height: l.height.div_ceil(bh) * bh,
        depth_or_array_layers: l.images,
    };
    match &l.staged {
        Some(staged) => encoder.get_or_insert_with(make).copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: staged.buffer(),
                layout,
            },
            dst,
            extent,
        ),
        None => queue.write_texture(dst, &l.data, layout, extent),
    }
}

/// The view dimension a file's layout implies.
///
/// A one-layer array is viewed as a plain 2D texture: wgpu's GL backend cannot
/// tell the two apart (it picks the GL texture target from the layer count), so
/// this keeps bind group layouts identical on every backend.
pub fn view_dimension(info: &TextureInfo) -> wgpu::TextureViewDimension {
    match (info.faces, info.layers) {
        (6, 1) => wgpu::TextureViewDimension::Cube,
        (6, _) => wgpu::TextureViewDimension::CubeArray,
        (_, 1) => wgpu::TextureViewDimension::D2,
        _ => wgpu::TextureViewDimension::D2Array,
    }
}

fn check_consistent(label: &str, levels: &[LevelImage]) -> Result<(), UploadError> {
    let first = &levels[0];
    for (i, l) in levels.iter().enumerate() {
        let detail = if l.level != first.level + i as u32 {
            format!(
                "level {} follows level {}",
                l.level,
                first.level + i as u32 - 1
            )
        } else if l.format != first.format {
            format!(
                "level {} is {:?}, level {} is {:?}",
                l.level, l.format, first.level, first.format
            )
        } else if l.images != first.images {
            format!(
                "level {} has {} images, level {} has {}",
                l.level, l.images, first.level, first.images
            )
        } else if (l.width, l.height)
            != (
                crate::container::mip_extent(first.width, i as u32),
                crate::container::mip_extent(first.height, i as u32),
            )
        {
            format!(
                "level {} is {}x{}, which is not a mip of {}x{}",
                l.level, l.width, l.height, first.width, first.height
            )
        } else {
            continue;
        };
        return Err(UploadError::Inconsistent {
            label: label.to_owned(),
            detail,
        });
    }
    Ok(())
}

fn check_limits(device: &wgpu::Device, label: &str, first: &LevelImage) -> Result<(), UploadError> {
    let limits = device.limits();
    let checks = [
        ("width", first.width, limits.max_texture_dimension_2d),
        ("height", first.height, limits.max_texture_dimension_2d),
        (
            "array layer count",
            first.images,
            limits.max_texture_array_layers,
        ),
    ];
    for (what, requested, limit) in checks {
        if requested > limit {
            return Err(UploadError::TooLarge {
                label: label.to_owned(),
                what,
                requested,
                limit,
            });
        }
    }
    Ok(())
}
