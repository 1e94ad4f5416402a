//! Basis Universal transcoding: ETC1S through the pure-Rust `basisu` crate's
//! per-image entry points (a level transcodes from its own bytes alone), to
//! BC7 and RGBA8 through this crate's one-pass loop on `basisu`'s codebooks
//! ([`super::etc1s`]); UASTC through `basisu` or the C++ low-level transcoder
//! ([`UastcTranscoder`]).
use super::*;
use basisu::dispatch;

/// The `basisu` target id of a target format.
fn target_id(t: TargetFormat) -> i32 {
    use dispatch::target as id;
    match t {
        TargetFormat::Bc7 => id::BC7_RGBA,
        TargetFormat::Bc1 => id::BC1_RGB,
        TargetFormat::Bc3 => id::BC3_RGBA,
        TargetFormat::Bc4 => id::BC4_R,
        TargetFormat::Bc5 => id::BC5_RG,
        TargetFormat::Astc4x4 => id::ASTC_4X4_RGBA,
        TargetFormat::Etc2Rgba => id::ETC2_RGBA,
        TargetFormat::Etc2Rgb => id::ETC1_RGB,
        TargetFormat::EacR11 => id::EAC_R11,
        TargetFormat::EacRg11 => id::EAC_RG11,
        TargetFormat::Rgba8 => id::RGBA32,
    }
}

pub(super) fn transcode(
    file: &TextureFile,
    raw: &RawLevel,
    target: TargetFormat,
    opts: &TranscodeOptions,
    tight_row: usize,
    img: &mut LevelImage,
) -> Result<(), TranscodeError> {
    let info = file.info();
    let flags = if opts.etc1s_chroma_filter {
        0
    } else {
        dispatch::decode_flags::NO_ETC1S_CHROMA_FILTERING
    };
    let (w, h) = (raw.width, raw.height);
    let (bx, by) = (w.div_ceil(4), h.div_ceil(4));
    let image_bytes = target.image_bytes(w, h) as usize;
    // tight rows transcode straight into the level's memory; padded rows
    // go through one tight image and are placed row by row
    let direct = img.bytes_per_row as usize == tight_row;
    let mut tight = if direct {
        Vec::new()
    } else {
        vec![0u8; image_bytes]
    };
    let corrupt = |reason: String| TranscodeError::Corrupt {
        name: info.name.clone(),
        level: raw.level,
        payload: info.payload.name(),
        target: target.to_string(),
        reason,
    };
    let fmt = target_id(target);
    for i in 0..img.images {
        let out: &mut [u8] = if direct {
            let at = i as usize * image_bytes;
            &mut img.data[at..at + image_bytes]
        } else {
            &mut tight
        };
        let ok = match info.payload {
            Payload::Etc1s => {
                let codebook = file.etc1s().ok_or_else(|| corrupt("no codebook".into()))?;
                let s = raw
                    .etc1s_slices
                    .get(i as usize)
                    .ok_or_else(|| corrupt(format!("no slice table for image {i}")))?;
                let slice = |o: u32, n: u32| raw.data.get(o as usize..(o as usize + n as usize));
                let rgb = slice(s.rgb_offset, s.rgb_len)
                    .ok_or_else(|| corrupt(format!("image {i} colour slice out of range")))?;
                let alpha =
                    match s.alpha_len {
                        0 => None,
                        n => Some(slice(s.alpha_offset, n).ok_or_else(|| {
                            corrupt(format!("image {i} alpha slice out of range"))
                        })?),
                    };
                let t = &codebook.decoder;
                match target {
                    TargetFormat::Bc7 => {
                        etc1s::to_bc7(t, rgb, alpha, (bx, by), opts.etc1s_chroma_filter, out)
                    }
                    TargetFormat::Rgba8 => etc1s::to_rgba8(t, rgb, alpha, (w, h), out),
                    TargetFormat::Astc4x4 => etc1s::to_astc(t, rgb, alpha, (bx, by), out),
                    _ => dispatch::transcode_etc1s(
                        t, rgb, alpha, bx, by, w, h, fmt, flags, None, out,
                    ),
                }
            }
            _ => {
                let n = (bx * by) as usize * 16;
                let blocks = raw
                    .data
                    .get(i as usize * n..(i as usize + 1) * n)
                    .ok_or_else(|| corrupt(format!("image {i} is short")))?;
                match opts.uastc {
                    UastcTranscoder::Rust => dispatch::transcode_uastc(
                        blocks,
                        info.has_alpha(),
                        bx,
                        by,
                        w,
                        h,
                        fmt,
                        0,
                        out,
                    ),
                    UastcTranscoder::Cpp => {
                        cpp::transcode_uastc(blocks, info.has_alpha(), w, h, target, out)
                            .ok_or_else(|| TranscodeError::CppTranscoderDisabled {
                                name: info.name.clone(),
                            })?
                    }
                }
            }
        };
        ok.ok_or_else(|| corrupt(format!("image {i} is malformed")))?;
        if !direct {
            place_rows(&tight, tight_row, img, i);
        }
    }
    Ok(())
}

#[cfg(feature = "basis-cpp")]
#[allow(unsafe_code)] // one call into the C++ transcoder, its bounds checked first
mod cpp {
    //! UASTC through Basis Universal 1.16's C++ low-level transcoder (the
    //! `basis-universal` crate's bindings), with the parameters its
    //! `basisu_lowlevel_uastc_transcoder::transcode_image` passes for each
    //! target, so the blocks are the reference's.
    use crate::format::TargetFormat;
    use basis_universal::sys;

    /// Transcodes `blocks` (`ceil(w/4) * ceil(h/4)` UASTC blocks) to
    /// `target` into `out`, tight rows. `Some(None)` when the data does not
    /// decode; `None` never (the feature is on).
    pub(super) fn transcode_uastc(
        blocks: &[u8],
        has_alpha: bool,
        w: u32,
        h: u32,
        target: TargetFormat,
        out: &mut [u8],
    ) -> Option<Option<()>> {
        use TargetFormat as T;
        let (bx, by) = (w.div_ceil(4), h.div_ceil(4));
        // (block format, bytes per block or pixel, BC1 three-colour blocks, channels)
        let (fmt, unit, three_colour, ch0, ch1) = match target {
            T::Bc7 => (sys::basist_block_format_cBC7, 16, false, -1, -1),
            T::Bc1 => (sys::basist_block_format_cBC1, 8, true, -1, -1),
            T::Bc3 => (sys::basist_block_format_cBC3, 16, false, -1, -1),
            T::Bc4 => (sys::basist_block_format_cBC4, 8, false, 0, -1),
            T::Bc5 => (sys::basist_block_format_cBC5, 16, false, 0, 3),
            T::Astc4x4 => (sys::basist_block_format_cASTC_4x4, 16, false, -1, -1),
            T::Etc2Rgba => (sys::basist_block_format_cETC2_RGBA, 16, false, -1, -1),
            T::Etc2Rgb => (sys::basist_block_format_cETC1, 8, false, -1, -1),
            T::EacR11 => (sys::basist_block_format_cETC2_EAC_R11, 8, false, 0, -1),
            T::EacRg11 => (sys::basist_block_format_cETC2_EAC_RG11, 16, false, 0, 3),
            T::Rgba8 => (sys::basist_block_format_cRGBA32, 4, false, -1, -1),
        };
        let pitch = if target == T::Rgba8 { w } else { bx };
        // the transcoder writes `pitch` units per row (block rows, or
        // pixel rows clipped to `h`); it takes no output size, so the
        // sizes are checked here
        let rows = if target == T::Rgba8 { h } else { by };
        let need = pitch as u64 * rows as u64 * unit as u64;
        let source = bx as u64 * by as u64 * 16;
        if out.len() as u64 != need
            || blocks.len() as u64 != source
            || source > u32::MAX as u64
            || w == 0
            || h == 0
        {
            return Some(None);
        }
        basis_universal::transcoder_init();
        // SAFETY: `new` has no preconditions; the transcoder is deleted below
        let t = unsafe { sys::low_level_uastc_transcoder_new() };
        // SAFETY: the global tables are initialised (above); `out` holds
        // exactly `rows` rows of `pitch` units of `unit` bytes, which is
        // all the transcoder writes for these dimensions; `blocks` holds
        // the `bx * by` blocks it reads; no transcoder state is passed.
        let ok = unsafe {
            sys::low_level_uastc_transcoder_transcode_slice(
                t,
                out.as_mut_ptr().cast(),
                bx,
                by,
                blocks.as_ptr(),
                blocks.len() as u32,
                fmt,
                unit,
                three_colour,
                has_alpha,
                w,
                h,
                pitch,
                std::ptr::null_mut(),
                h,
                ch0,
                ch1,
                0,
            )
        };
        // SAFETY: `t` came from `new` and is not used again
        unsafe { sys::low_level_uastc_transcoder_delete(t) };
        Some(ok.then_some(()))
    }
}

#[cfg(not(feature = "basis-cpp"))]
mod cpp {
    use crate::format::TargetFormat;

    /// `None`: the C++ transcoder is not compiled in.
    pub(super) fn transcode_uastc(
        _blocks: &[u8],
        _has_alpha: bool,
        _w: u32,
        _h: u32,
        _target: TargetFormat,
        _out: &mut [u8],
    ) -> Option<Option<()>> {
        None
    }
}
