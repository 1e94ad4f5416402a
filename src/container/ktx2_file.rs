//! KTX2 parsing with every offset, length and dimension checked against the
//! file size and the specification before anything sized by the file is read.
//!
//! Order of work: the 80-byte header (decoded by the `ktx2` crate), the level
//! index, the DFD, key/value data and supercompression global data, each read as
//! its own range once its bounds are known to lie inside the file and under
//! [`MAX_METADATA_BYTES`]. Level sizes are checked against what the format and
//! dimensions imply, and all sections are checked not to overlap, so that a
//! later [`super::TextureFile::read_level`] reads exactly one validated range.

use super::dfd::{self, DfdSummary};
use super::{
    max_levels, mip_extent, Channels, ContainerKind, Ctx, Etc1sCodebook, Etc1sSlices, LevelInfo,
    OpenError, Parsed, Payload, Supercompression, TextureInfo,
};
use crate::format::PlainFormat;
use crate::source::ByteSource;
use std::sync::Arc;

/// The 12-byte KTX2 identifier.
pub(super) const MAGIC: [u8; 12] = super::KTX2_MAGIC;

const HEADER_LEN: u64 = 80;
const LEVEL_ENTRY_LEN: u64 = 24;
/// `KTX2_IMAGE_IS_P_FRAME` in a BasisLZ image descriptor.
const P_FRAME: u32 = 2;

/// The raw header fields mipstream uses.
struct Header {
    vk_format: u32,
    width: u32,
    height: u32,
    depth: u32,
    layer_count: u32,
    faces: u32,
    level_count: u32,
    scheme: u32,
    index: ::ktx2::Index,
}

pub(super) fn parse(src: &dyn ByteSource) -> Result<Parsed, OpenError> {
    let cx = Ctx::new(src, "KTX2");
    let head = cx.section("the KTX2 header", 0, HEADER_LEN)?;
    let h = header(&cx, &head)?;
    let supercompression = supercompression(&cx, h.scheme)?;
    check_dimensions(&cx, &h)?;

    let index_end = HEADER_LEN + LEVEL_ENTRY_LEN * h.level_count as u64;
    let index_bytes = cx.section("the level index", HEADER_LEN, index_end - HEADER_LEN)?;
    let index: Vec<::ktx2::LevelIndex> = index_bytes
        .chunks_exact(LEVEL_ENTRY_LEN as usize)
        .map(|c| ::ktx2::LevelIndex::from_bytes(c.try_into().unwrap_or(&[0; 24])))
        .collect();

    let mut warnings = Vec::new();
    let (dfd_off, dfd_len) = (
        h.index.dfd_byte_offset as u64,
        h.index.dfd_byte_length as u64,
    );
    if dfd_len == 0 {
        return Err(cx.invalid("the file has no Data Format Descriptor (dfdByteLength is 0)"));
    }
    check_section_layout(&cx, &h, index_end, supercompression)?;
    let dfd_bytes = cx.section("the DFD", dfd_off, dfd_len)?;
    let dfd = dfd::parse(&dfd_bytes, &mut warnings).map_err(|r| cx.invalid(r))?;

    let key_values = key_values(&cx, &h, &mut warnings)?;
    let payload = payload(&cx, &h, &dfd, supercompression)?;
    let (channels, srgb) = channels_and_colour(&cx, &payload, &dfd, &mut warnings)?;
    check_key_values(&cx, &key_values, &payload, &mut warnings)?;

    let layers = h.layer_count.max(1);
    let images = layers as u64 * h.faces as u64;
    let levels = levels(&cx, &h, &index, &payload, supercompression, images)?;
    check_overlaps(&cx, &h, index_end, &levels)?;

    let etc1s = match payload {
        Payload::Etc1s => Some(etc1s_global(
            &cx,
            &h,
            &levels,
            channels,
            images,
            &mut warnings,
        )?),
        _ => None,
    };
    let info = TextureInfo {
        name: src.name().to_owned(),
        file_size: src.size(),
        container: ContainerKind::Ktx2,
        payload,
        supercompression,
        width: h.width,
        height: h.height.max(1),
        layers,
        is_array: h.layer_count > 0,
        faces: h.faces,
        levels,
        srgb,
        premultiplied: dfd.flags & 1 != 0,
        channels,
        dfd: Some(dfd),
        key_values,
        warnings,
    };
    Ok(Parsed { info, etc1s })
}

fn header(cx: &Ctx<'_>, head: &[u8]) -> Result<Header, OpenError> {
    let bytes: &[u8; 80] = head
        .try_into()
        .map_err(|_| cx.invalid("short header read"))?;
    let h = ::ktx2::Header::from_bytes(bytes).map_err(|e| cx.invalid(format!("header: {e}")))?;
    Ok(Header {
        vk_format: h.format.map_or(0, |f| f.value()),
        width: h.pixel_width,
        height: h.pixel_height,
        depth: h.pixel_depth,
        layer_count: h.layer_count,
        faces: h.face_count,
        level_count: h.level_count.max(1),
        scheme: h.supercompression_scheme.map_or(0, |s| s.value()),
        index: h.index,
    })
}

fn supercompression(cx: &Ctx<'_>, scheme: u32) -> Result<Supercompression, OpenError> {
    Ok(match scheme {
        0 => Supercompression::None,
        1 => Supercompression::BasisLz,
        2 => Supercompression::Zstd,
        3 => Supercompression::Zlib,
        4 => {
            return Err(cx.unsupported(
                "supercompression scheme 4 (UASTC HDR 6x6 intermediate, a newer Basis Universal format)",
            ))
        }
        5 => {
            return Err(cx.unsupported(
                "supercompression scheme 5 (XUASTC LDR, a newer Basis Universal format)",
            ))
        }
        s if s >= 0x10000 => {
            return Err(cx.unsupported(format!("vendor supercompression scheme {s:#x}")))
        }
        s => {
            return Err(cx.unsupported(format!(
                "supercompression scheme {s} (this reader knows 0-3: none, BasisLZ, Zstandard, zlib)"
            )))
        }
    })
}

fn check_dimensions(cx: &Ctx<'_>, h: &Header) -> Result<(), OpenError> {
    if h.faces != 1 && h.faces != 6 {
        return Err(cx.invalid(format!("faceCount is {}; it must be 1 or 6", h.faces)));
    }
    if h.depth > 0 && h.height == 0 {
        return Err(cx.invalid("pixelDepth is set but pixelHeight is 0"));
    }
    if h.faces == 6 && (h.width != h.height || h.depth != 0) {
        return Err(cx.invalid(format!(
            "cubemap faces must be square and 2D, found {}x{}x{}",
            h.width, h.height, h.depth
        )));
    }
    let most = max_levels(h.width, h.height.max(h.depth));
    if h.level_count > most {
        return Err(cx.invalid(format!(
            "levelCount is {} but a {}x{} texture has at most {most} levels",
            h.level_count, h.width, h.height
        )));
    }
    if h.depth > 0 {
        return Err(cx.unsupported(format!(
            "3D textures ({}x{}x{}); mipstream streams 2D, array and cubemap textures",
            h.width, h.height, h.depth
        )));
    }
    Ok(())
}

fn key_values(
    cx: &Ctx<'_>,
    h: &Header,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, Vec<u8>)>, OpenError> {
    let (off, len) = (
        h.index.kvd_byte_offset as u64,
        h.index.kvd_byte_length as u64,
    );
    if len == 0 {
        if off != 0 {
            warnings.push(format!("kvdByteOffset is {off} while kvdByteLength is 0"));
        }
        return Ok(Vec::new());
    }
    let kvd = cx.section("the key/value data", off, len)?;
    Ok(::ktx2::KeyValueDataIterator::new(&kvd)
        .map(|(k, v)| (k.to_owned(), v.to_vec()))
        .collect())
}

fn check_key_values(
    cx: &Ctx<'_>,
    kv: &[(String, Vec<u8>)],
    payload: &Payload,
    warnings: &mut Vec<String>,
) -> Result<(), OpenError> {
    for (key, _) in kv {
        match key.as_str() {
            "KTXcubemapIncomplete" => {
                return Err(cx.unsupported("incomplete cubemaps (KTXcubemapIncomplete)"))
            }
            "KTXanimData" if *payload != Payload::Etc1s => {
                warnings.push("KTXanimData: animation frames load as array layers".into())
            }
            _ => {}
        }
    }
    Ok(())
}

fn payload(
    cx: &Ctx<'_>,
    h: &Header,
    dfd: &DfdSummary,
    sc: Supercompression,
) -> Result<Payload, OpenError> {
    let model = dfd.color_model;
    let payload = if h.vk_format == 0 {
        match model {
            163 if sc == Supercompression::BasisLz => Payload::Etc1s,
            163 => {
                return Err(cx.invalid(format!(
                    "ETC1S (DFD colour model 163) requires BasisLZ supercompression, found {}",
                    sc.name()
                )))
            }
            166 if sc == Supercompression::BasisLz => {
                return Err(cx.invalid("UASTC (DFD colour model 166) cannot use BasisLZ"))
            }
            166 => Payload::Uastc,
            m => {
                if let Some(name) = dfd::basis_model_name(m) {
                    return Err(cx.unsupported(format!("{name} payloads (DFD colour model {m})")));
                }
                if sc == Supercompression::BasisLz {
                    return Err(cx.invalid(format!(
                        "BasisLZ supercompression with DFD colour model {m}; it requires ETC1S (163)"
                    )));
                }
                return Err(
                    cx.unsupported(format!("VK_FORMAT_UNDEFINED with DFD colour model {m}"))
                );
            }
        }
    } else {
        if sc == Supercompression::BasisLz {
            return Err(cx.invalid(format!(
                "vkFormat {} with BasisLZ supercompression; BasisLZ requires VK_FORMAT_UNDEFINED",
                h.vk_format
            )));
        }
        match PlainFormat::from_vk(h.vk_format) {
            Some(f) => Payload::Plain(f),
            None => {
                return Err(cx.unsupported(format!(
                    "vkFormat {} (not a format mipstream loads)",
                    h.vk_format
                )))
            }
        }
    };
    let compressed = match payload {
        Payload::Plain(f) => f.is_compressed(),
        _ => true,
    };
    if compressed && h.height == 0 {
        return Err(cx.invalid(format!(
            "pixelHeight is 0 (a 1D texture) but {} is block-compressed",
            payload.name()
        )));
    }
    Ok(payload)
}

fn channels_and_colour(
    cx: &Ctx<'_>,
    payload: &Payload,
    dfd: &DfdSummary,
    warnings: &mut Vec<String>,
) -> Result<(Channels, bool), OpenError> {
    let ids: Vec<u8> = dfd.samples.iter().map(|s| s.channel).collect();
    let tf = dfd.transfer_function;
    match payload {
        Payload::Plain(f) => {
            if (tf == 2) != f.srgb {
                warnings.push(format!(
                    "DFD transfer function {tf} disagrees with {}; the vkFormat wins",
                    f.name
                ));
            }
            let ch = match f.channels {
                1 => Channels::R,
                2 => Channels::Rg,
                3 => Channels::Rgb,
                _ => Channels::Rgba,
            };
            Ok((ch, f.srgb))
        }
        Payload::Etc1s | Payload::Uastc => {
            if tf != 1 && tf != 2 {
                return Err(cx.invalid(format!(
                    "DFD transfer function {tf}; Basis payloads must be linear (1) or sRGB (2)"
                )));
            }
            let ch = basis_channels(payload, &ids).ok_or_else(|| {
                cx.invalid(format!(
                    "{} DFD sample channel ids {ids:?} are not a Basis layout",
                    payload.name()
                ))
            })?;
            Ok((ch, tf == 2))
        }
    }
}

/// Channel layout from the DFD channel ids of a Basis payload.
fn basis_channels(payload: &Payload, ids: &[u8]) -> Option<Channels> {
    match (payload, ids) {
        // ETC1S: RGB=0, RRR=3, GGG=4, AAA=15; a second sample is the alpha slice.
        (Payload::Etc1s, [0]) => Some(Channels::Rgb),
        (Payload::Etc1s, [3]) => Some(Channels::R),
        (Payload::Etc1s, [0 | 3, 15]) => Some(Channels::Rgba),
        (Payload::Etc1s, [3, 4]) => Some(Channels::Rg),
        // UASTC: RGB=0, RGBA=3, RRR=4, RRRG=5, RG=6.
        (Payload::Uastc, [0]) => Some(Channels::Rgb),
        (Payload::Uastc, [3 | 5]) => Some(Channels::Rgba),
        (Payload::Uastc, [4]) => Some(Channels::R),
        (Payload::Uastc, [6]) => Some(Channels::Rg),
        _ => None,
    }
}

fn levels(
    cx: &Ctx<'_>,
    h: &Header,
    index: &[::ktx2::LevelIndex],
    payload: &Payload,
    sc: Supercompression,
    images: u64,
) -> Result<Vec<LevelInfo>, OpenError> {
    let size = cx.src.size();
    let mut out = Vec::with_capacity(index.len());
    for (i, li) in index.iter().enumerate() {
        let level = i as u32;
        let (w, hh) = (
            mip_extent(h.width, level),
            mip_extent(h.height.max(1), level),
        );
        let image_bytes = match payload {
            Payload::Plain(f) => Some(f.image_bytes(w, hh)),
            Payload::Uastc => Some(w.div_ceil(4) as u64 * hh.div_ceil(4) as u64 * 16),
            Payload::Etc1s => None,
        };
        let expected = match image_bytes.map(|b| b.checked_mul(images)) {
            Some(None) => {
                return Err(cx.invalid(format!("level {i} size overflows ({images} images)")))
            }
            Some(Some(e)) => Some(e),
            None => None,
        };
        if li.byte_length == 0 {
            return Err(cx.invalid(format!("level {i} has byteLength 0")));
        }
        let end = li.byte_offset.saturating_add(li.byte_length);
        if end > size {
            return Err(cx.truncated(format!("level {i}"), li.byte_offset, end));
        }
        let at = format!(
            "level {i} ({w}x{hh}, {images} image(s) of {})",
            payload.name()
        );
        match (sc, expected) {
            (Supercompression::None, Some(exp)) => {
                if li.byte_length != exp {
                    return Err(cx.invalid(format!(
                        "{at}: byteLength is {} but the format needs {exp}",
                        li.byte_length
                    )));
                }
                if li.uncompressed_byte_length != li.byte_length {
                    return Err(cx.invalid(format!(
                        "{at}: uncompressedByteLength {} differs from byteLength {}",
                        li.uncompressed_byte_length, li.byte_length
                    )));
                }
                let align = alignment(payload);
                if li.byte_offset % align != 0 {
                    return Err(cx.invalid(format!(
                        "{at}: byteOffset {} is not a multiple of {align}",
                        li.byte_offset
                    )));
                }
            }
            (Supercompression::Zstd | Supercompression::Zlib, Some(exp))
                if li.uncompressed_byte_length != exp =>
            {
                return Err(cx.invalid(format!(
                    "{at}: uncompressedByteLength is {} but the format needs {exp}",
                    li.uncompressed_byte_length
                )));
            }
            (Supercompression::BasisLz, _) if li.uncompressed_byte_length != 0 => {
                return Err(cx.invalid(format!(
                    "{at}: uncompressedByteLength must be 0 for BasisLZ, found {}",
                    li.uncompressed_byte_length
                )))
            }
            _ => {}
        }
        out.push(LevelInfo {
            level,
            width: w,
            height: hh,
            ranges: vec![(li.byte_offset, li.byte_length)],
            uncompressed_len: li.uncompressed_byte_length,
        });
    }
    Ok(out)
}

/// Required alignment of uncompressed level data: lcm(texel block bytes, 4).
fn alignment(payload: &Payload) -> u64 {
    let block = match payload {
        Payload::Plain(f) => f.block_bytes as u64,
        _ => 16,
    };
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    block * 4 / gcd(block, 4)
}

/// The specification places the metadata sections back to back: the DFD right
/// after the level index, the key/value data right after the DFD, and the
/// global data at the next multiple of 8. A section elsewhere means the index
/// points at the wrong bytes.
fn check_section_layout(
    cx: &Ctx<'_>,
    h: &Header,
    index_end: u64,
    sc: Supercompression,
) -> Result<(), OpenError> {
    let ix = &h.index;
    if ix.dfd_byte_offset as u64 != index_end {
        return Err(cx.invalid(format!(
            "dfdByteOffset is {} but the DFD must start right after the level index, at {index_end}",
            ix.dfd_byte_offset
        )));
    }
    let mut end = index_end + ix.dfd_byte_length as u64;
    if ix.kvd_byte_length > 0 {
        if ix.kvd_byte_offset as u64 != end {
            return Err(cx.invalid(format!(
                "kvdByteOffset is {} but the key/value data must start right after the DFD, at {end}",
                ix.kvd_byte_offset
            )));
        }
        end += ix.kvd_byte_length as u64;
    }
    if ix.sgd_byte_length > 0 {
        if sc != Supercompression::BasisLz {
            return Err(cx.invalid(format!(
                "sgdByteLength is {} but {} supercompression has no global data",
                ix.sgd_byte_length,
                sc.name()
            )));
        }
        let want = end.next_multiple_of(8);
        if ix.sgd_byte_offset != want {
            return Err(cx.invalid(format!(
                "sgdByteOffset is {} but the global data must start at {want} (the next multiple of 8)",
                ix.sgd_byte_offset
            )));
        }
    }
    Ok(())
}

fn check_overlaps(
    cx: &Ctx<'_>,
    h: &Header,
    index_end: u64,
    levels: &[LevelInfo],
) -> Result<(), OpenError> {
    let mut sections: Vec<(u64, u64, String)> =
        vec![(0, index_end, "the header and level index".into())];
    let ix = &h.index;
    sections.push((
        ix.dfd_byte_offset as u64,
        ix.dfd_byte_length as u64,
        "the DFD".into(),
    ));
    if ix.kvd_byte_length > 0 {
        sections.push((
            ix.kvd_byte_offset as u64,
            ix.kvd_byte_length as u64,
            "the key/value data".into(),
        ));
    }
    if ix.sgd_byte_length > 0 {
        sections.push((
            ix.sgd_byte_offset,
            ix.sgd_byte_length,
            "the global data".into(),
        ));
    }
    for l in levels {
        let (o, n) = l.ranges[0];
        sections.push((o, n, format!("level {}", l.level)));
    }
    sections.sort_by_key(|s| (s.0, s.1));
    for pair in sections.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.0 < a.0 + a.1 {
            return Err(cx.invalid(format!(
                "{} (bytes {}..{}) overlaps {} (bytes {}..{})",
                a.2,
                a.0,
                a.0 + a.1,
                b.2,
                b.0,
                b.0 + b.1
            )));
        }
    }
    Ok(())
}

fn etc1s_global(
    cx: &Ctx<'_>,
    h: &Header,
    levels: &[LevelInfo],
    channels: Channels,
    images: u64,
    warnings: &mut Vec<String>,
) -> Result<Etc1sCodebook, OpenError> {
    let (off, len) = (h.index.sgd_byte_offset, h.index.sgd_byte_length);
    if len < 20 {
        return Err(cx.invalid(format!(
            "BasisLZ global data is {len} bytes, less than its 20-byte header"
        )));
    }
    let sgd = cx.section("the BasisLZ global data", off, len)?;
    let u16_at = |o: usize| u16::from_le_bytes([sgd[o], sgd[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([sgd[o], sgd[o + 1], sgd[o + 2], sgd[o + 3]]);
    let (num_e, num_s) = (u16_at(0), u16_at(2));
    let (e_len, s_len, t_len, x_len) = (
        u32_at(4) as u64,
        u32_at(8) as u64,
        u32_at(12) as u64,
        u32_at(16) as u64,
    );
    let image_count = images * levels.len() as u64;
    let expected = 20 + 20 * image_count + e_len + s_len + t_len + x_len;
    if expected != len {
        return Err(cx.invalid(format!(
            "BasisLZ global data is {len} bytes but its header and {image_count} image descriptors need {expected}"
        )));
    }
    if x_len != 0 {
        warnings.push(format!(
            "BasisLZ extendedByteLength is {x_len} (should be 0); ignored"
        ));
    }
    if num_e == 0 || num_s == 0 || e_len == 0 || s_len == 0 || t_len == 0 {
        return Err(cx.invalid("BasisLZ global data has an empty codebook or table"));
    }
    let has_alpha_slices = matches!(channels, Channels::Rgba | Channels::Rg);
    let mut slices = Vec::with_capacity(levels.len());
    for (li, level) in levels.iter().enumerate() {
        let level_len = level.ranges[0].1;
        let mut per_image = Vec::with_capacity(images as usize);
        for img in 0..images as usize {
            let o = 20 + 20 * (li * images as usize + img);
            let flags = u32_at(o);
            let s = Etc1sSlices {
                rgb_offset: u32_at(o + 4),
                rgb_len: u32_at(o + 8),
                alpha_offset: u32_at(o + 12),
                alpha_len: u32_at(o + 16),
            };
            let at = format!("level {li} image {img}");
            if flags & !P_FRAME != 0 {
                return Err(cx.invalid(format!("{at}: unknown imageFlags {flags:#x}")));
            }
            if flags & P_FRAME != 0 {
                return Err(cx.unsupported("ETC1S video (P-frames)"));
            }
            if s.rgb_len == 0 {
                return Err(cx.invalid(format!("{at}: rgbSliceByteLength is 0")));
            }
            if s.rgb_offset as u64 + s.rgb_len as u64 > level_len {
                return Err(cx.invalid(format!(
                    "{at}: colour slice {}..{} lies outside the level's {level_len} bytes",
                    s.rgb_offset,
                    s.rgb_offset as u64 + s.rgb_len as u64
                )));
            }
            if has_alpha_slices != (s.alpha_len != 0) {
                return Err(cx.invalid(format!(
                    "{at}: alphaSliceByteLength is {} but the DFD {} an alpha slice",
                    s.alpha_len,
                    if has_alpha_slices {
                        "declares"
                    } else {
                        "declares no"
                    }
                )));
            }
            if s.alpha_offset as u64 + s.alpha_len as u64 > level_len {
                return Err(cx.invalid(format!(
                    "{at}: alpha slice {}..{} lies outside the level's {level_len} bytes",
                    s.alpha_offset,
                    s.alpha_offset as u64 + s.alpha_len as u64
                )));
            }
            per_image.push(s);
        }
        slices.push(per_image);
    }
    let e_at = 20 + 20 * image_count as usize;
    let s_at = e_at + e_len as usize;
    let t_at = s_at + s_len as usize;
    let codebooks = super::Etc1sTables {
        num_endpoints: num_e,
        endpoints: &sgd[e_at..s_at],
        num_selectors: num_s,
        selectors: &sgd[s_at..t_at],
        tables: &sgd[t_at..t_at + t_len as usize],
    };
    #[allow(clippy::let_unit_value)] // `()` without the `basis` feature
    let decoder = codebooks.decode().map_err(|r| cx.invalid(r))?;
    Ok(Etc1sCodebook {
        decoder,
        slices: Arc::new(slices),
    })
}
