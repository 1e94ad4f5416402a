//! ETC1S slices decoded and converted in one pass, for the targets where
//! `basisu`'s loop was not faster than the C++ reference (docs/performance.md, "Transcoder
//! choice"): BC7 mode 5, RGBA8 and ASTC 4x4, with or without an alpha slice.
//!
//! `basisu` decodes a whole slice into a vector of (endpoint, selector)
//! indices, then converts block by block, recomputing per block what depends
//! only on the endpoint. Here the slice decode ([`decode_slice`], the same
//! stream decode as `basisu`'s `Etc1sTranscoder::decode_slice_indices` and
//! Basis Universal's `basisu_lowlevel_etc1s_transcoder::transcode_slice`, for
//! still images: ETC1S video is refused before this point) hands each block to
//! the converter as it comes, and the converters keep per slice what blocks
//! share: a BC7 block's first 64 bits depend only on its endpoint and its
//! selector's range, so they are computed once per (endpoint, range); an
//! RGBA8 block's four colours once per endpoint; ASTC blocks are `basisu`'s
//! per-block conversion without the index vector. The output is `basisu`'s
//! byte for byte (tested against it on the shared data's ETC1S files), so the
//! Khronos conformance goldens still hold.
use super::bc7_m5::{bc7_m5_hi, bc7_m5_lo};
use super::etc1s_chroma;
use basisu::basislz::amf::ApproxMoveToFront;
use basisu::basislz::astc_tables::{selector_range_index, SELECTOR_MAPPINGS};
use basisu::basislz::decoder::BitwiseDecoder;
use basisu::basislz::etc1s::{Endpoint, Etc1sTranscoder, Selector};
use basisu::basislz::etc1s_astc::{convert_etc1s_to_astc_4x4, convert_etc1s_to_astc_4x4_rgba};
use basisu::basislz::etc1s_bc7::convert_etc1s_to_bc7_m5_alpha;
use basisu::etc::block::DecoderEtcBlock;
use basisu::tables::bc7_m5_color::G_ETC1_TO_BC7_M5_COLOR;
use basisu::tables::bc7_m5_equals_1::G_BC7_M5_EQUALS_1;
use std::sync::OnceLock;

// Basis Universal's ETC1S slice-stream constants (basisu_transcoder.cpp).
const ENDPOINT_PRED_REPEAT_LAST_SYMBOL: u32 = (4 * 4 * 4 * 4 + 1) - 1;
const ENDPOINT_PRED_MIN_REPEAT_COUNT: u32 = 3;
const ENDPOINT_PRED_COUNT_VLC_BITS: u32 = 4;
const SELECTOR_HISTORY_BUF_RLE_COUNT_THRESH: u32 = 3;
const SELECTOR_HISTORY_BUF_RLE_COUNT_TOTAL: u32 = 1 << 6;

/// The selector half of the slice stream: codebook indices, references into
/// the recently-used history and run lengths of history hits.
struct Selectors<'t> {
    t: &'t Etc1sTranscoder,
    history: ApproxMoveToFront,
    /// Blocks left in the current run of "history slot 0" selectors.
    run: u32,
    total_blocks: u32,
}

impl<'t> Selectors<'t> {
    fn new(t: &'t Etc1sTranscoder, total_blocks: u32) -> Self {
        Selectors {
            t,
            history: ApproxMoveToFront::new(t.selector_history_buf_size as usize),
            run: 0,
            total_blocks,
        }
    }

    /// The next block's selector index, `None` on a corrupt stream.
    #[inline(always)]
    fn next(&mut self, sym: &mut BitwiseDecoder<'_>) -> Option<u32> {
        let t = self.t;
        let n_sel = t.selectors.len() as u32;
        let symbol = if self.run > 0 {
            self.run -= 1;
            n_sel
        } else {
            let s = sym.decode_huffman(&t.selector_model);
            if s == t.selector_history_buf_size + n_sel {
                let run = sym.decode_huffman(&t.selector_history_buf_rle_model);
                self.run = if run == SELECTOR_HISTORY_BUF_RLE_COUNT_TOTAL - 1 {
                    sym.decode_vlc(7)
                        .wrapping_add(SELECTOR_HISTORY_BUF_RLE_COUNT_THRESH)
                } else {
                    run + SELECTOR_HISTORY_BUF_RLE_COUNT_THRESH
                };
                if self.run > self.total_blocks {
                    return None;
                }
                // a corrupt count that wrapped to 0 wraps on, as in C++
                self.run = self.run.wrapping_sub(1);
                n_sel
            } else {
                s
            }
        };
        if symbol < n_sel {
            if t.selector_history_buf_size != 0 {
                self.history.add(symbol as i32);
            }
            return Some(symbol);
        }
        let i = (symbol - n_sel) as usize;
        if i >= self.history.size() {
            return None;
        }
        let s = self.history.get(i) as u32;
        if i != 0 {
            self.history.use_index(i);
        }
        Some(s)
    }
}

/// The endpoint predictor symbols: one per 2x2 block group, two bits per
/// block, repeated runs of the previous symbol.
struct Predictors {
    /// Per column, the upper two blocks' bits of the group below.
    below: Vec<u8>,
    bits: u32,
    prev_symbol: u32,
    repeat: u32,
}

impl Predictors {
    /// The predictor of block (`x`, `y`): 0 left, 1 above, 2 upper left, 3
    /// a coded delta.
    #[inline(always)]
    fn next(&mut self, sym: &mut BitwiseDecoder<'_>, t: &Etc1sTranscoder, x: u32, y: u32) -> u32 {
        if x & 1 == 0 {
            if y & 1 == 0 {
                if self.repeat != 0 {
                    self.repeat -= 1;
                    self.bits = self.prev_symbol;
                } else {
                    self.bits = sym.decode_huffman(&t.endpoint_pred_model);
                    if self.bits == ENDPOINT_PRED_REPEAT_LAST_SYMBOL {
                        // unsigned arithmetic that wraps, as Basis Universal's
                        // (a corrupt count wraps; fuzz regressions cover it)
                        self.repeat = sym
                            .decode_vlc(ENDPOINT_PRED_COUNT_VLC_BITS)
                            .wrapping_add(ENDPOINT_PRED_MIN_REPEAT_COUNT - 1);
                        self.bits = self.prev_symbol;
                    } else {
                        self.prev_symbol = self.bits;
                    }
                }
                self.below[x as usize] = (self.bits >> 4) as u8;
            } else {
                self.bits = self.below[x as usize] as u32;
            }
        }
        let pred = self.bits & 3;
        self.bits >>= 2;
        pred
    }
}

/// Decodes an ETC1S slice of `bx` x `by` blocks, calling `visit(block,
/// endpoint, selector)` for each block in raster order with the codebook
/// indices, checked against the codebooks' sizes. `None` on a corrupt stream (`visit` may have run
/// for the blocks before the fault).
#[inline(always)]
pub(super) fn decode_slice(
    t: &Etc1sTranscoder,
    slice: &[u8],
    bx: u32,
    by: u32,
    mut visit: impl FnMut(usize, usize, usize),
) -> Option<()> {
    let total_blocks = bx.checked_mul(by)?;
    if t.endpoints.is_empty() || t.selectors.is_empty() {
        return None;
    }
    let n_end = t.endpoints.len() as u32;
    let mut sym = BitwiseDecoder::new(slice);
    let mut selectors = Selectors::new(t, total_blocks);
    let mut preds = Predictors {
        below: vec![0; bx as usize],
        bits: 0,
        prev_symbol: 0,
        repeat: 0,
    };
    // per column, the endpoint of the row above (this row's, once written)
    let mut above = vec![0u32; bx as usize];
    let mut prev = 0u32;
    let mut block = 0usize;
    for y in 0..by {
        let mut upper_left = 0u32;
        for x in 0..bx {
            let up = above[x as usize];
            let endpoint = match preds.next(&mut sym, t, x, y) {
                0 if x > 0 => prev,
                1 if y > 0 => up,
                2 if x > 0 && y > 0 => upper_left,
                3 => {
                    let e = sym
                        .decode_huffman(&t.delta_endpoint_model)
                        .wrapping_add(prev);
                    if e >= n_end {
                        e - n_end
                    } else {
                        e
                    }
                }
                _ => return None,
            };
            upper_left = up;
            above[x as usize] = endpoint;
            prev = endpoint;
            let selector = selectors.next(&mut sym)?;
            if endpoint >= n_end || selector as usize >= t.selectors.len() {
                return None;
            }
            visit(block, endpoint as usize, selector as usize);
            block += 1;
        }
    }
    Some(())
}

/// Transcodes an ETC1S image (colour slice, optional alpha slice) to BC7
/// mode 5 (`out`: exactly `bx * by` 16-byte blocks), with Basis Universal 2's
/// chroma filter when `chroma_filter`; `basisu`'s `transcode_slice_bc7` /
/// `transcode_image_bc7_rgba` bytes. `None` on a corrupt stream.
pub(super) fn to_bc7(
    t: &Etc1sTranscoder,
    rgb: &[u8],
    alpha: Option<&[u8]>,
    (bx, by): (u32, u32),
    chroma_filter: bool,
    out: &mut [u8],
) -> Option<()> {
    if out.len() as u64 != bx as u64 * by as u64 * 16 {
        return None;
    }
    let mut cells = chroma_filter.then(|| etc1s_chroma::Cells::new(bx as usize, by as usize));
    let mut bc7 = Bc7Blocks::new(t.endpoints.len());
    decode_slice(t, rgb, bx, by, |b, ei, si| {
        let [lo, hi] = bc7.colour(ei, &t.endpoints[ei], &t.selectors[si]);
        let dst = &mut out[b * 16..b * 16 + 16];
        dst[..8].copy_from_slice(&lo.to_le_bytes());
        dst[8..].copy_from_slice(&hi.to_le_bytes());
        if let Some(cells) = &mut cells {
            cells.set(b, &t.endpoints[ei]);
        }
    })?;
    if let Some(cells) = &cells {
        etc1s_chroma::filter(cells, out);
    }
    if let Some(alpha) = alpha {
        decode_slice(t, alpha, bx, by, |b, ei, si| {
            let block: &mut [u8; 16] = (&mut out[b * 16..b * 16 + 16])
                .try_into()
                .expect("16-byte block");
            convert_etc1s_to_bc7_m5_alpha(block, &t.endpoints[ei], &t.selectors[si]);
        })?;
    }
    Some(())
}

/// Per selector mapping, the mapping applied to a byte of four selectors.
fn mapping_bytes() -> &'static [[u8; 256]; 10] {
    static T: OnceLock<[[u8; 256]; 10]> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = [[0u8; 256]; 10];
        for (m, row) in t.iter_mut().enumerate() {
            for (b, v) in row.iter_mut().enumerate() {
                for k in 0..4 {
                    *v |= SELECTOR_MAPPINGS[m][(b >> (2 * k)) & 3] << (2 * k);
                }
            }
        }
        t
    })
}

/// What a slice's BC7 blocks share: per (endpoint, selector range) the
/// mapping of ETC1S selectors to BC7 indices and the block's first 64 bits
/// with the endpoints in either order.
struct Bc7Blocks {
    /// `[lo bits, lo bits swapped, mapping]` at `endpoint * 6 + range`; zero
    /// until computed (a computed lo word holds the mode bit).
    general: Vec<[u64; 3]>,
}

impl Bc7Blocks {
    fn new(endpoints: usize) -> Self {
        Bc7Blocks {
            general: vec![[0; 3]; endpoints * 6],
        }
    }

    /// The opaque BC7 block of endpoint `ei` (`ep`) and `sel`, as two
    /// little-endian words.
    #[inline(always)]
    fn colour(&mut self, ei: usize, ep: &Endpoint, sel: &Selector) -> [u64; 2] {
        let (lo_sel, hi_sel) = (sel.lo_selector as usize, sel.hi_selector as usize);
        match sel.num_unique_selectors {
            1 => solid(ep, lo_sel),
            2 => two_level(ep, sel, lo_sel, hi_sel),
            _ => {
                let range = selector_range_index()[lo_sel][hi_sel] as usize;
                let [lo_n, lo_s, m] = self.general(ei, ep, range);
                let map = &mapping_bytes()[m as usize];
                let s = sel.selectors;
                let mut word = map[s[0] as usize] as u32
                    | (map[s[1] as usize] as u32) << 8
                    | (map[s[2] as usize] as u32) << 16
                    | (map[s[3] as usize] as u32) << 24;
                // the anchor texel has no high bit: swap the endpoints and
                // invert every index when its index needs one
                let lo = if word & 2 != 0 {
                    word ^= u32::MAX;
                    lo_s
                } else {
                    lo_n
                };
                [lo, bc7_m5_hi(word)]
            }
        }
    }

    #[inline(always)]
    fn general(&mut self, ei: usize, ep: &Endpoint, range: usize) -> [u64; 3] {
        let slot = &mut self.general[ei * 6 + range];
        if slot[0] == 0 {
            *slot = general_entry(ep, range);
        }
        *slot
    }
}

/// A block of one selector: `basisu`'s single-colour endpoints, all
/// indices 1.
fn solid(ep: &Endpoint, sel: usize) -> [u64; 2] {
    let (r, g, b) = DecoderEtcBlock::get_block_color5(ep.color5, ep.inten5 as u32, sel);
    let [er, eg, eb] = [r, g, b].map(|c| G_BC7_M5_EQUALS_1[c as usize]);
    let e = [er[1], er[0], eg[1], eg[0], eb[1], eb[0]].map(u32::from);
    [bc7_m5_lo(e), 3 | 0x2aaa_aaab << 2]
}

/// A block of two selectors: their two colours as the endpoints (7 bits),
/// indices 0 and 3.
fn two_level(ep: &Endpoint, sel: &Selector, lo_sel: usize, hi_sel: usize) -> [u64; 2] {
    let c = DecoderEtcBlock::get_block_colors5(ep.color5, ep.inten5 as u32);
    let word = u32::from_le_bytes(sel.selectors);
    // one bit per texel whose selector is not the low one
    let diff = word ^ (lo_sel as u32 * 0x5555_5555);
    let mut mask = (diff | (diff >> 1)) & 0x5555_5555;
    let (a, z) = if mask & 1 != 0 {
        mask ^= 0x5555_5555;
        (c[hi_sel], c[lo_sel])
    } else {
        (c[lo_sel], c[hi_sel])
    };
    let e = [a.r(), z.r(), a.g(), z.g(), a.b(), z.b()].map(|v| v as u32 >> 1);
    [bc7_m5_lo(e), bc7_m5_hi(mask * 3)]
}

/// `basisu`'s general case (`convert_etc1s_to_bc7_m5_color`): the mapping
/// of least summed R, G and B error for this intensity table, base colour and
/// selector range, and the block's first 64 bits either way round.
fn general_entry(ep: &Endpoint, range: usize) -> [u64; 3] {
    const RANGES: usize = 6;
    const MAPPINGS: usize = 10;
    let it = ep.inten5 as usize;
    let base = |c: u8| (it * 32 + c as usize) * (RANGES * MAPPINGS) + range * MAPPINGS;
    let [br, bg, bb] = [ep.color5.r(), ep.color5.g(), ep.color5.b()].map(base);
    let t = &G_ETC1_TO_BC7_M5_COLOR;
    let mut best = (u32::MAX, 0usize);
    for m in 0..MAPPINGS {
        let e = t[br + m].m_err as u32 + t[bg + m].m_err as u32 + t[bb + m].m_err as u32;
        if e < best.0 {
            best = (e, m);
        }
    }
    let m = best.1;
    let (r, g, b) = (t[br + m], t[bg + m], t[bb + m]);
    let lo = [r.m_lo, g.m_lo, b.m_lo].map(u32::from);
    let hi = [r.m_hi, g.m_hi, b.m_hi].map(u32::from);
    [
        bc7_m5_lo([lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]]),
        bc7_m5_lo([hi[0], lo[0], hi[1], lo[1], hi[2], lo[2]]),
        m as u64,
    ]
}

/// Transcodes an ETC1S image (colour slice, optional alpha slice) to RGBA8
/// (`out`: exactly `w * h * 4` bytes, tight rows; alpha from the alpha
/// slice's green, else 255); `basisu`'s `transcode_slice_rgba32` /
/// `transcode_image_rgba32` bytes. `None` on a corrupt stream.
pub(super) fn to_rgba8(
    t: &Etc1sTranscoder,
    rgb: &[u8],
    alpha: Option<&[u8]>,
    (w, h): (u32, u32),
    out: &mut [u8],
) -> Option<()> {
    let (bx, by) = (w.div_ceil(4), h.div_ceil(4));
    if out.len() as u64 != w as u64 * h as u64 * 4 {
        return None;
    }
    let row = w as usize * 4;
    // texels of block `b` inside the image: (first byte, columns, rows)
    let texels = |b: usize| {
        let (x0, y0) = ((b as u32 % bx) * 4, (b as u32 / bx) * 4);
        let at = y0 as usize * row + x0 as usize * 4;
        (at, (w - x0).min(4) as usize, (h - y0).min(4) as usize)
    };
    // per endpoint its four colours, zero until computed (alpha is 255)
    let mut colours = vec![[0u32; 4]; t.endpoints.len()];
    decode_slice(t, rgb, bx, by, |b, ei, si| {
        let (c, sel) = (&mut colours[ei], &t.selectors[si]);
        if c[0] == 0 {
            let ep = &t.endpoints[ei];
            let cs = DecoderEtcBlock::get_block_colors5(ep.color5, ep.inten5 as u32);
            *c = cs.map(|c| u32::from_le_bytes([c.r(), c.g(), c.b(), 255]));
        }
        let c = *c;
        let (at, cols, rows) = texels(b);
        for (y, &s) in sel.selectors.iter().enumerate().take(rows) {
            let s = s as usize;
            let px = [c[s & 3], c[(s >> 2) & 3], c[(s >> 4) & 3], c[s >> 6]];
            let dst = &mut out[at + y * row..at + y * row + cols * 4];
            for (d, p) in dst.chunks_exact_mut(4).zip(px) {
                d.copy_from_slice(&p.to_le_bytes());
            }
        }
    })?;
    if let Some(alpha) = alpha {
        decode_slice(t, alpha, bx, by, |b, ei, si| {
            let (ep, sel) = (&t.endpoints[ei], &t.selectors[si]);
            let a = DecoderEtcBlock::get_block_colors5_g(ep.color5, ep.inten5 as u32);
            let (at, cols, rows) = texels(b);
            for (y, &s) in sel.selectors.iter().enumerate().take(rows) {
                for x in 0..cols {
                    out[at + y * row + x * 4 + 3] = a[(s as usize >> (2 * x)) & 3] as u8;
                }
            }
        })?;
    }
    Some(())
}

/// Transcodes an ETC1S image (colour slice, optional alpha slice) to ASTC
/// 4x4 (`out`: exactly `bx * by` 16-byte blocks) with `basisu`'s block
/// conversions; `basisu`'s `transcode_slice_astc` / `transcode_image_astc_rgba`
/// bytes. `None` on a corrupt stream.
pub(super) fn to_astc(
    t: &Etc1sTranscoder,
    rgb: &[u8],
    alpha: Option<&[u8]>,
    (bx, by): (u32, u32),
    out: &mut [u8],
) -> Option<()> {
    if out.len() as u64 != bx as u64 * by as u64 * 16 {
        return None;
    }
    // an alpha block converts together with its colour block: the alpha
    // slice's (endpoint, selector) pairs first
    let mut alpha_blocks = Vec::new();
    if let Some(alpha) = alpha {
        alpha_blocks.reserve_exact(out.len() / 16);
        decode_slice(t, alpha, bx, by, |_, ei, si| alpha_blocks.push((ei, si)))?;
    }
    decode_slice(t, rgb, bx, by, |b, ei, si| {
        let (ep, sel) = (&t.endpoints[ei], &t.selectors[si]);
        let block = match alpha_blocks.get(b) {
            Some(&(ai, asi)) => {
                convert_etc1s_to_astc_4x4_rgba(ep, sel, &t.endpoints[ai], &t.selectors[asi])
            }
            None => convert_etc1s_to_astc_4x4(ep, sel),
        };
        out[b * 16..b * 16 + 16].copy_from_slice(&block);
    })
}
