//! `.basis` parsing: Binomial's own container for ETC1S and UASTC payloads.
//!
//! A 77-byte header, a table of 23-byte slice descriptors (one per image, level
//! and colour/alpha part, each pointing at its bytes with an absolute offset),
//! and for ETC1S the codebooks and Huffman tables. Each slice is validated
//! against the file size and the level dimensions it claims; the slices of one
//! level are then presented as the level's byte ranges, in the same
//! layer-major, face-minor order KTX2 uses, so reading and transcoding are
//! container-independent.

use super::{
    max_levels, mip_extent, Channels, ContainerKind, Ctx, Etc1sCodebook, Etc1sSlices, Etc1sTables,
    LevelInfo, OpenError, Parsed, Payload, Supercompression, TextureInfo,
};
use crate::source::ByteSource;
use std::sync::Arc;

/// The `.basis` signature `sB` (0x4273 little-endian).
pub(super) const MAGIC: [u8; 2] = [0x73, 0x42];

const HEADER_LEN: u64 = 77;
const SLICE_LEN: u64 = 23;
const VERSION: u16 = 0x13;

const FLAG_HAS_ALPHA_SLICES: u16 = 4;
const FLAG_GLOBAL_CODEBOOK: u16 = 8;
const FLAG_SRGB: u16 = 16;
const SLICE_HAS_ALPHA: u8 = 1;

/// One slice descriptor.
#[derive(Debug, Clone, Copy)]
struct Slice {
    image: u32,
    level: u32,
    flags: u8,
    width: u32,
    height: u32,
    blocks_x: u32,
    blocks_y: u32,
    offset: u64,
    len: u64,
}

fn u16_at(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([d[o], d[o + 1]])
}
fn u24_at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], 0])
}
fn u32_at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

pub(super) fn parse(src: &dyn ByteSource) -> Result<Parsed, OpenError> {
    let cx = Ctx::new(src, ".basis");
    let h = cx.section("the .basis header", 0, HEADER_LEN)?;
    if u16_at(&h, 2) != VERSION || u16_at(&h, 4) as u64 != HEADER_LEN {
        return Err(cx.unsupported(format!(
            ".basis version {:#x} with a {}-byte header (this reader knows version 0x13, 77 bytes)",
            u16_at(&h, 2),
            u16_at(&h, 4)
        )));
    }
    let data_size = u32_at(&h, 8) as u64;
    if HEADER_LEN + data_size > src.size() {
        return Err(cx.truncated("the .basis data", HEADER_LEN, HEADER_LEN + data_size));
    }
    let (total_slices, total_images) = (u24_at(&h, 14), u24_at(&h, 17));
    let (tex_format, flags, tex_type) = (h[20], u16_at(&h, 21), h[23]);
    let payload = match tex_format {
        0 => Payload::Etc1s,
        1 => Payload::Uastc,
        f => {
            return Err(cx.unsupported(format!(
                ".basis texture format {f} (this reader loads ETC1S (0) and UASTC LDR (1))"
            )))
        }
    };
    let (layers, faces, is_array) = match tex_type {
        0 => (1, 1, false),
        1 => (total_images, 1, true),
        2 if total_images % 6 == 0 && total_images > 0 => (total_images / 6, 6, total_images > 6),
        2 => return Err(cx.invalid(format!("cubemap with {total_images} images"))),
        3 => return Err(cx.unsupported(".basis video frames")),
        4 => return Err(cx.unsupported("3D (volume) .basis textures")),
        t => return Err(cx.invalid(format!("unknown texture type {t}"))),
    };
    if total_slices == 0 || total_images == 0 {
        return Err(cx.invalid("the file has no slices"));
    }
    let table = cx.section(
        "the slice table",
        u32_at(&h, 65) as u64,
        SLICE_LEN * total_slices as u64,
    )?;
    let slices: Vec<Slice> = table
        .chunks_exact(SLICE_LEN as usize)
        .map(|d| Slice {
            image: u24_at(d, 0),
            level: d[3] as u32,
            flags: d[4],
            width: u16_at(d, 5) as u32,
            height: u16_at(d, 7) as u32,
            blocks_x: u16_at(d, 9) as u32,
            blocks_y: u16_at(d, 11) as u32,
            offset: u32_at(d, 13) as u64,
            len: u32_at(d, 17) as u64,
        })
        .collect();

    let alpha_slices = payload == Payload::Etc1s && flags & FLAG_HAS_ALPHA_SLICES != 0;
    let images = if tex_type == 0 { 1 } else { total_images };
    let mut warnings = Vec::new();
    if tex_type == 0 && total_images > 1 {
        warnings.push(format!(
            "{total_images} independent images; image 0 is loaded"
        ));
    }
    let base = slices
        .iter()
        .find(|s| s.image == 0 && s.level == 0)
        .ok_or_else(|| cx.invalid("no slice for image 0, level 0"))?;
    let (width, height) = (base.width, base.height);
    if width == 0 || height == 0 {
        return Err(cx.invalid(format!("image 0 is {width}x{height}")));
    }
    let level_count = slices
        .iter()
        .filter(|s| s.image == 0)
        .map(|s| s.level + 1)
        .max()
        .unwrap_or(1);
    if level_count > max_levels(width, height) {
        return Err(cx.invalid(format!("{level_count} levels for a {width}x{height} image")));
    }
    let grid = slice_grid(
        &cx,
        &slices,
        images,
        level_count,
        alpha_slices,
        width,
        height,
        payload,
    )?;
    let (levels, etc1s_slices) =
        levels_from_grid(&grid, images, level_count, width, height, payload);

    let has_alpha = match payload {
        Payload::Etc1s => alpha_slices,
        _ => slices.iter().any(|s| s.flags & SLICE_HAS_ALPHA != 0),
    };
    let etc1s = if payload == Payload::Etc1s {
        if flags & FLAG_GLOBAL_CODEBOOK != 0 {
            return Err(cx.unsupported("ETC1S .basis files that use an external global codebook"));
        }
        Some(codebook(&cx, &h, etc1s_slices)?)
    } else {
        None
    };
    let info = TextureInfo {
        name: src.name().to_owned(),
        file_size: src.size(),
        container: ContainerKind::Basis,
        payload,
        supercompression: if payload == Payload::Etc1s {
            Supercompression::BasisLz
        } else {
            Supercompression::None
        },
        width,
        height,
        layers,
        is_array,
        faces,
        levels,
        srgb: flags & FLAG_SRGB != 0,
        premultiplied: false,
        channels: if has_alpha {
            Channels::Rgba
        } else {
            Channels::Rgb
        },
        dfd: None,
        key_values: Vec::new(),
        warnings,
    };
    Ok(Parsed { info, etc1s })
}

/// The slices of one (image, level): colour, and alpha for ETC1S with alpha.
type Cell = (Slice, Option<Slice>);

/// Places every slice in an image x level grid, checking each one.
#[allow(clippy::too_many_arguments)]
fn slice_grid(
    cx: &Ctx<'_>,
    slices: &[Slice],
    images: u32,
    levels: u32,
    alpha_slices: bool,
    width: u32,
    height: u32,
    payload: Payload,
) -> Result<Vec<Option<Cell>>, OpenError> {
    let size = cx.src.size();
    let mut grid: Vec<Option<Cell>> = vec![None; (images * levels) as usize];
    for (i, s) in slices.iter().enumerate() {
        if s.image >= images {
            continue;
        }
        if s.level >= levels {
            return Err(cx.invalid(format!("slice {i} is level {} of {levels}", s.level)));
        }
        let (w, h) = (mip_extent(width, s.level), mip_extent(height, s.level));
        if (s.width, s.height) != (w, h)
            || (s.blocks_x, s.blocks_y) != (w.div_ceil(4), h.div_ceil(4))
        {
            return Err(cx.invalid(format!(
                "slice {i} (image {}, level {}) is {}x{} in {}x{} blocks; expected {w}x{h}",
                s.image, s.level, s.width, s.height, s.blocks_x, s.blocks_y
            )));
        }
        if s.len == 0 || s.offset + s.len > size {
            return Err(cx.truncated(format!("slice {i}"), s.offset, s.offset + s.len));
        }
        if payload == Payload::Uastc && s.len != (s.blocks_x * s.blocks_y) as u64 * 16 {
            return Err(cx.invalid(format!(
                "UASTC slice {i} is {} bytes for {}x{} blocks",
                s.len, s.blocks_x, s.blocks_y
            )));
        }
        let cell = &mut grid[(s.image * levels + s.level) as usize];
        let is_alpha = alpha_slices && s.flags & SLICE_HAS_ALPHA != 0;
        match (cell.as_mut(), is_alpha) {
            (None, false) => *cell = Some((*s, None)),
            (Some((_, a @ None)), true) => *a = Some(*s),
            _ => {
                return Err(cx.invalid(format!(
                    "slice {i} repeats or misorders image {} level {}",
                    s.image, s.level
                )))
            }
        }
    }
    for (i, cell) in grid.iter().enumerate() {
        let (image, level) = (i as u32 / levels, i as u32 % levels);
        match cell {
            Some((_, a)) if a.is_some() == alpha_slices => {}
            _ => {
                return Err(cx.invalid(format!(
                    "image {image} level {level} is missing its {}",
                    if cell.is_some() {
                        "alpha slice"
                    } else {
                        "slice"
                    }
                )))
            }
        }
    }
    Ok(grid)
}

fn levels_from_grid(
    grid: &[Option<Cell>],
    images: u32,
    level_count: u32,
    width: u32,
    height: u32,
    payload: Payload,
) -> (Vec<LevelInfo>, Vec<Vec<Etc1sSlices>>) {
    let mut levels = Vec::new();
    let mut etc1s = Vec::new();
    for level in 0..level_count {
        let mut ranges = Vec::new();
        let mut per_image = Vec::new();
        let mut at = 0u64;
        for image in 0..images {
            let Some((rgb, alpha)) = grid[(image * level_count + level) as usize] else {
                continue;
            };
            ranges.push((rgb.offset, rgb.len));
            let mut s = Etc1sSlices {
                rgb_offset: at as u32,
                rgb_len: rgb.len as u32,
                alpha_offset: 0,
                alpha_len: 0,
            };
            at += rgb.len;
            if let Some(a) = alpha {
                ranges.push((a.offset, a.len));
                s.alpha_offset = at as u32;
                s.alpha_len = a.len as u32;
                at += a.len;
            }
            per_image.push(s);
        }
        levels.push(LevelInfo {
            level,
            width: mip_extent(width, level),
            height: mip_extent(height, level),
            uncompressed_len: if payload == Payload::Uastc { at } else { 0 },
            ranges,
        });
        etc1s.push(per_image);
    }
    (levels, etc1s)
}

fn codebook(
    cx: &Ctx<'_>,
    h: &[u8],
    slices: Vec<Vec<Etc1sSlices>>,
) -> Result<Etc1sCodebook, OpenError> {
    let endpoints = cx.section(
        "the endpoint codebook",
        u32_at(h, 41) as u64,
        u24_at(h, 45) as u64,
    )?;
    let selectors = cx.section(
        "the selector codebook",
        u32_at(h, 50) as u64,
        u24_at(h, 54) as u64,
    )?;
    let tables = cx.section(
        "the Huffman tables",
        u32_at(h, 57) as u64,
        u32_at(h, 61) as u64,
    )?;
    let (num_endpoints, num_selectors) = (u16_at(h, 39), u16_at(h, 48));
    if num_endpoints == 0
        || num_selectors == 0
        || endpoints.is_empty()
        || selectors.is_empty()
        || tables.is_empty()
    {
        return Err(cx.invalid("ETC1S file with an empty codebook or table"));
    }
    #[allow(clippy::let_unit_value)] // `()` without the `basis` feature
    let decoder = Etc1sTables {
        num_endpoints,
        endpoints: &endpoints,
        num_selectors,
        selectors: &selectors,
        tables: &tables,
    }
    .decode()
    .map_err(|r| cx.invalid(r))?;
    Ok(Etc1sCodebook {
        decoder,
        slices: Arc::new(slices),
    })
}
