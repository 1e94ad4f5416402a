//! CPU block decoders: one image of a plain-format level (BCn, ETC2/EAC,
//! ASTC, 8-bit channels) to tight RGBA8 rows. A leaf under both the
//! transcoder (which falls back to RGBA8 when an adapter lacks a format) and
//! [`crate::decode`] (tools and tests), so neither imports the other for it.
//! BCn and ETC2/EAC blocks go through the `texture2ddecoder` crate, ASTC
//! blocks through `astc-decode` (which handles illegal encodings).

use crate::container::RawLevel;
use crate::format::{Expand, PlainFormat};
use wgpu::TextureFormat as Tf;

/// Whether a plain format can be decoded to RGBA8 on the CPU.
pub fn can_decode(f: &PlainFormat) -> bool {
    block_decoder(f).is_some()
        || matches!(
            f.gpu,
            Tf::R8Unorm
                | Tf::Rg8Unorm
                | Tf::Rgba8Unorm
                | Tf::Rgba8UnormSrgb
                | Tf::Bgra8Unorm
                | Tf::Bgra8UnormSrgb
        )
}

/// A block decoder: block bytes in, BGRA u32 pixels out.
type BlockFn = fn(&[u8], &mut [u32]);

/// The block decoder for a compressed plain format, with its block size.
pub(crate) fn block_decoder(f: &PlainFormat) -> Option<(BlockFn, u32, u32)> {
    use texture2ddecoder as d;
    let fun: BlockFn = match f.gpu {
        Tf::Bc1RgbaUnorm | Tf::Bc1RgbaUnormSrgb => d::decode_bc1a_block,
        Tf::Bc2RgbaUnorm | Tf::Bc2RgbaUnormSrgb => d::decode_bc2_block,
        Tf::Bc3RgbaUnorm | Tf::Bc3RgbaUnormSrgb => d::decode_bc3_block,
        Tf::Bc4RUnorm => d::decode_bc4_block,
        Tf::Bc5RgUnorm => d::decode_bc5_block,
        Tf::Bc7RgbaUnorm | Tf::Bc7RgbaUnormSrgb => d::decode_bc7_block,
        Tf::Etc2Rgb8Unorm | Tf::Etc2Rgb8UnormSrgb => d::decode_etc2_rgb_block,
        Tf::Etc2Rgb8A1Unorm | Tf::Etc2Rgb8A1UnormSrgb => d::decode_etc2_rgba1_block,
        Tf::Etc2Rgba8Unorm | Tf::Etc2Rgba8UnormSrgb => d::decode_etc2_rgba8_block,
        Tf::EacR11Unorm => d::decode_eacr_block,
        Tf::EacRg11Unorm => d::decode_eacrg_block,
        Tf::Astc { .. } => return Some((astc_block, f.block_width, f.block_height)),
        _ => return None,
    };
    Some((fun, f.block_width, f.block_height))
}

/// ASTC blocks go through the `astc-decode` crate, which turns illegal
/// encodings into the spec's error colour instead of misbehaving; the
/// footprint comes from the output buffer's length (every LDR footprint has a
/// distinct texel count).
fn astc_block(data: &[u8], out: &mut [u32]) {
    let (bw, bh) = ASTC_FOOTPRINTS
        .iter()
        .copied()
        .find(|(w, h)| (w * h) as usize == out.len())
        .unwrap_or((4, 4));
    let Ok(block) = <&[u8; 16]>::try_from(data) else {
        return;
    };
    astc_decode::astc_decode_block(
        block,
        astc_decode::Footprint::new(bw, bh),
        |x, y, [r, g, b, a]| {
            if let Some(px) = out.get_mut((y * bw + x) as usize) {
                *px = u32::from_le_bytes([b, g, r, a]);
            }
        },
    );
}

/// The ASTC LDR footprints.
const ASTC_FOOTPRINTS: [(u32, u32); 14] = [
    (4, 4),
    (5, 4),
    (5, 5),
    (6, 5),
    (6, 6),
    (8, 5),
    (8, 6),
    (8, 8),
    (10, 5),
    (10, 6),
    (10, 8),
    (10, 10),
    (12, 10),
    (12, 12),
];

/// Decodes image `i` of a plain-format level to tight RGBA8 rows.
pub(crate) fn decode_plain_image(
    f: &PlainFormat,
    raw: &RawLevel,
    i: u32,
) -> Result<Vec<u8>, String> {
    let (w, h) = (raw.width as usize, raw.height as usize);
    let stored = f.image_bytes(raw.width, raw.height) as usize;
    let src = raw
        .data
        .get(i as usize * stored..(i as usize + 1) * stored)
        .ok_or_else(|| {
            format!(
                "image {i} lies outside the level's {} bytes",
                raw.data.len()
            )
        })?;
    let mut out = vec![0u8; w * h * 4];
    if let Some((fun, bw, bh)) = block_decoder(f) {
        let (bw, bh) = (bw as usize, bh as usize);
        let blocks_x = w.div_ceil(bw);
        let mut texels = vec![0u32; bw * bh];
        for (b, block) in src.chunks_exact(f.block_bytes as usize).enumerate() {
            // opaque black first: BC4/BC5/EAC decoders write only their channels
            texels.fill(u32::from_le_bytes([0, 0, 0, 255]));
            fun(block, &mut texels);
            let (x0, y0) = ((b % blocks_x) * bw, (b / blocks_x) * bh);
            for (t, px) in texels.iter().enumerate() {
                let (x, y) = (x0 + t % bw, y0 + t / bw);
                if x < w && y < h {
                    let [b, g, r, a] = px.to_le_bytes();
                    out[(y * w + x) * 4..][..4].copy_from_slice(&[r, g, b, a]);
                }
            }
        }
        return Ok(out);
    }
    let per = f.block_bytes as usize;
    for (p, texel) in src.chunks_exact(per).enumerate() {
        let rgba = match (f.gpu, f.expand) {
            (_, Expand::Rgb8) => [texel[0], texel[1], texel[2], 255],
            (_, Expand::Bgr8) => [texel[2], texel[1], texel[0], 255],
            (Tf::R8Unorm, _) => [texel[0], 0, 0, 255],
            (Tf::Rg8Unorm, _) => [texel[0], texel[1], 0, 255],
            (Tf::Bgra8Unorm | Tf::Bgra8UnormSrgb, _) => [texel[2], texel[1], texel[0], texel[3]],
            (Tf::Rgba8Unorm | Tf::Rgba8UnormSrgb, _) => [texel[0], texel[1], texel[2], texel[3]],
            _ => return Err(format!("no CPU decoder for {}", f.name)),
        };
        out[p * 4..p * 4 + 4].copy_from_slice(&rgba);
    }
    Ok(out)
}
