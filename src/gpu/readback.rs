//! Reading an RGBA8 texture back to the CPU (screenshots, render tests).

/// Why a readback failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadbackError {
    /// The texture is not a 4-byte-per-texel colour format.
    #[error("readback needs an RGBA8/BGRA8 texture, got {0:?}")]
    Format(wgpu::TextureFormat),
    /// Mapping the staging buffer failed or the device was lost.
    #[error("mapping the readback buffer failed: {0}")]
    Map(String),
}

/// A one-level 2D texture of `width` x `height` to render into and read
/// back with [`read_rgba8`] (`RENDER_ATTACHMENT | COPY_SRC`): what the
/// tests, examples and the benchmark draw their pictures into.
pub fn render_target(
    device: &wgpu::Device,
    label: &str,
    (width, height): (u32, u32),
    format: wgpu::TextureFormat,
) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    })
}

/// Copies mip `mip`, layer `layer` of an RGBA8 (or BGRA8, swizzled to RGBA)
/// texture with `COPY_SRC` usage into tightly packed RGBA bytes. Blocks until
/// the GPU has finished.
pub fn read_rgba8(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    texture: &wgpu::Texture,
    mip: u32,
    layer: u32,
) -> Result<Vec<u8>, ReadbackError> {
    use wgpu::TextureFormat as F;
    let format = texture.format();
    let bgra = match format {
        F::Rgba8Unorm | F::Rgba8UnormSrgb => false,
        F::Bgra8Unorm | F::Bgra8UnormSrgb => true,
        other => return Err(ReadbackError::Format(other)),
    };
    let w = (texture.width() >> mip).max(1);
    let h = (texture.height() >> mip).max(1);
    let row = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("mipstream readback"),
        size: (row * h) as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("mipstream readback"),
    });
    enc.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: mip,
            origin: wgpu::Origin3d {
                x: 0,
                y: 0,
                z: layer,
            },
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    queue.submit([enc.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map_err(|e| ReadbackError::Map(e.to_string()))?;
    rx.recv()
        .map_err(|e| ReadbackError::Map(e.to_string()))?
        .map_err(|e| ReadbackError::Map(e.to_string()))?;
    let mapped = buffer
        .get_mapped_range(..)
        .map_err(|e| ReadbackError::Map(e.to_string()))?;
    let mut out = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h as usize {
        let r = &mapped[y * row as usize..y * row as usize + (w * 4) as usize];
        if bgra {
            out.extend(r.chunks_exact(4).flat_map(|p| [p[2], p[1], p[0], p[3]]));
        } else {
            out.extend_from_slice(r);
        }
    }
    drop(mapped);
    buffer.unmap();
    Ok(out)
}
