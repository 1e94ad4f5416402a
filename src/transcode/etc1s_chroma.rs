//! Basis 2's cross-block chroma filter for ETC1S -> BC7 mode 5, ported from
//! `basisu` 0.1.0's `basislz::bc7_chroma` (Apache-2.0; itself Basis
//! Universal's `chroma_filter_bc7_mode5`) with the same arithmetic in the same
//! order, so the blocks are bit for bit `basisu`'s (tested). What differs is
//! where the time goes: each block's CoCg is computed once (`basisu`
//! recomputes it up to 73 times per filtered block, 64 of them with clamped
//! neighbour lookups), and a filtered block's endpoints come from the 3x3
//! neighbourhood read once.
//!
//! A block is filtered when one of its eight neighbours differs from it in
//! Co or Cg by more than 10 and its luma varies (variance at least 3): its
//! chroma is then re-derived per texel from a bilinear blend of the
//! neighbours' endpoint CoCg, keeping each texel's luma, and the block is
//! re-encoded as BC7 mode 5.
//!
//! On x86-64 CPUs with AVX2 the filtered blocks are re-encoded eight at a
//! time, one block a lane ([`avx2`]), with the same operations on the same
//! values: its blocks are this portable code's (tested on random levels
//! below, and against `basisu` on every ETC1S file of the shared data).
// Texel loops index several arrays (channels, lanes) by the same texel.
#![allow(clippy::needless_range_loop)]
use super::bc7_m5::{bc7_m5_hi, bc7_m5_lo};
use basisu::basislz::etc1s::Endpoint;
use basisu::tables::bc7_m5_equals_1::G_BC7_M5_EQUALS_1;

const CHROMA_THRESH: f32 = 10.0;
const Y_VAR_SKIP_THRESH: f32 = 3.0;
const WEIGHTS2: [u32; 4] = [0, 21, 43, 64];

#[inline(always)]
fn clampf(v: f32, l: f32, h: f32) -> f32 {
    if v < l {
        l
    } else if v > h {
        h
    } else {
        v
    }
}

#[inline(always)]
fn lerp(a: f32, b: f32, s: f32) -> f32 {
    a + (b - a) * s
}

#[inline(always)]
fn from_7(v: u32) -> u32 {
    (v << 1) | (v >> 6)
}

#[inline(always)]
fn interp2(l: u32, h: u32, w: usize) -> u32 {
    (l * (64 - WEIGHTS2[w]) + h * WEIGHTS2[w] + 32) >> 6
}

/// Rounds a channel in [0, 1] to a 7-bit endpoint at the midpoints between
/// the decoded values of neighbouring endpoints.
struct Midpoints([f32; 128]);

impl Midpoints {
    fn new() -> Self {
        let mut m = [0.0f32; 128];
        for (i, slot) in m.iter_mut().enumerate() {
            let vl = (i << 1) | ((i << 1) >> 7);
            let lo = vl as f32 / 255.0;
            let vh_base = 127.min(i + 1) << 1;
            let vh = vh_base | (vh_base >> 7);
            let hi = vh as f32 / 255.0;
            *slot = if i == 127 { 1e+15 } else { (lo + hi) / 2.0 };
        }
        Midpoints(m)
    }

    #[inline(always)]
    fn to_7(&self, c: f32) -> i32 {
        let mut v = (c * 127.0) as i32;
        if c > self.0[v as usize] {
            v += 1;
        }
        v.clamp(0, 127)
    }
}

/// Filters `blocks` (BC7 mode-5 blocks, raster order, opaque) whose ETC1S
/// endpoints' chroma is `cells`.
#[allow(unsafe_code)]
pub(super) fn filter(cells: &Cells, blocks: &mut [u8]) {
    if cells.w == 0 || cells.h == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2::fits(cells.w, cells.h) && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the only feature the function enables.
        unsafe { avx2::filter(cells, blocks) };
        return;
    }
    filter_blocks(cells, blocks);
}

/// Runs [`filter_block`] on every block that one of its neighbours differs
/// from in chroma.
fn filter_blocks(cells: &Cells, blocks: &mut [u8]) {
    let mids = Midpoints::new();
    for (i, x, y) in cells.filtered() {
        let block: &mut [u8; 16] = (&mut blocks[i * 16..i * 16 + 16])
            .try_into()
            .expect("16 bytes");
        filter_block(block, &cells.around(x, y), &mids);
    }
}

/// A block's 3x3 neighbourhood of endpoint chroma, (Co, Cg) at
/// `[dy + 1][dx + 1]`.
type Around = [[[f32; 2]; 3]; 3];

/// Filters one block: re-derives its chroma from the neighbourhood `n` and
/// re-encodes it, unless its luma varies too little.
#[inline(always)]
fn filter_block(block: &mut [u8; 16], n: &Around, mids: &Midpoints) {
    if let Some(texel_y) = texel_luma(block) {
        encode_mode5(block, &rechroma(&texel_y, n), mids);
    }
}

/// Each block's endpoint chroma, in integers: `co` = 2 Co = R - B and `cg`
/// = 4 Cg = 2G - R - B of the endpoint's base colour expanded to 8 bits.
/// Co and Cg in `f32` (what `basisu` compares) are these over 2 and 4
/// exactly: every value is a small multiple of 1/4. Filled while the slice
/// is decoded, when the endpoint is at hand.
pub(super) struct Cells {
    co: Vec<i32>,
    cg: Vec<i32>,
    w: usize,
    h: usize,
}

impl Cells {
    /// `w` x `h` blocks, every one's chroma 0 until [`set`](Self::set).
    pub(super) fn new(w: usize, h: usize) -> Self {
        Cells {
            co: vec![0; w * h],
            cg: vec![0; w * h],
            w,
            h,
        }
    }

    /// Block `b`'s endpoint is `e`.
    #[inline(always)]
    pub(super) fn set(&mut self, b: usize, e: &Endpoint) {
        let x = |c: u8| (c as i32) << 3 | (c as i32) >> 2;
        let c = e.color5;
        let (r, g, b_) = (x(c.r()), x(c.g()), x(c.b()));
        self.co[b] = r - b_;
        self.cg[b] = 2 * g - r - b_;
    }

    /// The blocks one of whose neighbours differs from them in chroma, as
    /// (index, column, row), in raster order.
    #[inline(always)]
    fn filtered(&self) -> impl Iterator<Item = (usize, usize, usize)> {
        let w = self.w;
        let edges = self.edges().into_iter().enumerate();
        edges
            .filter(|&(_, e)| e != 0)
            .map(move |(i, _)| (i, i % w, i / w))
    }

    /// Per block, non-zero when one of its eight neighbours differs from it
    /// in Co or Cg by more than the threshold: each adjacent pair (across,
    /// down, both diagonals) is compared once, row against row.
    #[inline(always)]
    fn edges(&self) -> Vec<u8> {
        let (w, h) = (self.w, self.h);
        let mut edge = vec![0u8; w * h];
        let mut d = vec![0u8; w];
        let mark = |edge: &mut [u8], d: &[u8]| edge.iter_mut().zip(d).for_each(|(e, d)| *e |= d);
        let n = w - 1;
        for y in 0..h {
            let r = y * w;
            self.differ(&mut d[..n], r, r + 1);
            mark(&mut edge[r..r + n], &d[..n]);
            mark(&mut edge[r + 1..r + w], &d[..n]);
            if y + 1 == h {
                continue;
            }
            let q = r + w;
            self.differ(&mut d[..w], r, q);
            mark(&mut edge[r..r + w], &d[..w]);
            mark(&mut edge[q..q + w], &d[..w]);
            self.differ(&mut d[..n], r, q + 1);
            mark(&mut edge[r..r + n], &d[..n]);
            mark(&mut edge[q + 1..q + w], &d[..n]);
            self.differ(&mut d[..n], r + 1, q);
            mark(&mut edge[r + 1..r + w], &d[..n]);
            mark(&mut edge[q..q + n], &d[..n]);
        }
        edge
    }

    /// `out[k]` = whether blocks `a + k` and `b + k` differ in chroma.
    #[inline(always)]
    fn differ(&self, out: &mut [u8], a: usize, b: usize) {
        let n = out.len();
        let (ac, ag) = (&self.co[a..a + n], &self.cg[a..a + n]);
        let (bc, bg) = (&self.co[b..b + n], &self.cg[b..b + n]);
        for k in 0..n {
            let co = (ac[k] - bc[k]).abs() > 2 * CHROMA_THRESH as i32;
            let cg = (ag[k] - bg[k]).abs() > 4 * CHROMA_THRESH as i32;
            out[k] = (co | cg) as u8;
        }
    }

    /// The 3x3 neighbourhood of (`x`, `y`) as (Co, Cg), edge-clamped:
    /// `[dy + 1][dx + 1]`.
    #[inline(always)]
    fn around(&self, x: usize, y: usize) -> Around {
        std::array::from_fn(|dy| {
            std::array::from_fn(|dx| {
                let cx = (x + dx).saturating_sub(1).min(self.w - 1);
                let cy = (y + dy).saturating_sub(1).min(self.h - 1);
                let i = cy * self.w + cx;
                [self.co[i] as f32 * 0.5, self.cg[i] as f32 * 0.25]
            })
        })
    }
}

/// The four luma levels a mode-5 block's colour endpoints (its first 64
/// bits, `lo`) interpolate, indexed by selector.
#[inline(always)]
fn luma_levels(lo: u64) -> [f32; 4] {
    let e = |k: u32| from_7((lo >> (8 + 7 * k)) as u32 & 127);
    let (lr, hr, lg, hg, lb, hb) = (e(0), e(1), e(2), e(3), e(4), e(5));
    let mut y_vals = [0.0f32; 4];
    for (k, y) in y_vals.iter_mut().enumerate() {
        let cr = interp2(lr, hr, k) as i32;
        let cg = interp2(lg, hg, k) as i32;
        let cb = interp2(lb, hb, k) as i32;
        *y = cr as f32 * 0.25 + cg as f32 * 0.5 + cb as f32 * 0.25;
    }
    y_vals
}

/// Whether luma with sum `y_sum` and sum of squares `y_sum_sq` over 16
/// texels varies enough for the filter. Both sums are exact in `f32` in any
/// order (levels are multiples of 1/4 below 256: squares are multiples of
/// 1/16 and every partial sum stays under 2^24 sixteenths), so a vector sum
/// gives the sequential sum's value.
#[inline(always)]
fn varies(y_sum: f32, y_sum_sq: f32) -> bool {
    let s = 1.0f32 / 16.0;
    let mean = y_sum * s;
    (y_sum_sq * s) - mean * mean >= Y_VAR_SKIP_THRESH
}

/// The luma of each texel of a mode-5 block, `None` when it varies too
/// little for the filter to act.
#[inline(always)]
fn texel_luma(block: &[u8; 16]) -> Option<[f32; 16]> {
    let y_vals = luma_levels(u64::from_le_bytes(block[..8].try_into().expect("8 bytes")));
    let mut sel_bits = u64::from_le_bytes(block[8..].try_into().expect("8 bytes")) >> 2;
    let mut texel_y = [0.0f32; 16];
    let (mut y_sum, mut y_sum_sq) = (0.0f32, 0.0f32);
    for (k, ty) in texel_y.iter_mut().enumerate() {
        let (mask, shift) = if k != 0 { (3, 2) } else { (1, 1) };
        let v = y_vals[(sel_bits & mask) as usize];
        sel_bits >>= shift;
        *ty = v;
        y_sum += v;
        y_sum_sq += v * v;
    }
    varies(y_sum, y_sum_sq).then_some(texel_y)
}

/// 16 texels, one array per channel (R, G, B), 0..=255.
type Texels = [[i32; 16]; 3];

/// `((((p + 2) & 3) as f32) + 0.5) / 4` for texel column or row `p`, exact:
/// where a texel centre sits between the endpoint grid's points.
const BLEND_AT: [f32; 4] = [0.625, 0.875, 0.125, 0.375];

/// Each texel's luma with the chroma of a bilinear blend of the
/// neighbourhood's endpoint chroma (texel centres sit half a block off the
/// endpoint grid), as RGB. `basisu`'s arithmetic, texel by texel:
/// `lerp(lerp(a, b, fx), lerp(c, d, fx), fy)` per channel, then
/// `dot(ycocg, (1, 1, -1))`, `(1, 0, 1)`, `(1, -1, -1)`, whose products by
/// 1, 0 and -1 are exact and left out; clamped to [0, 255] and rounded half
/// up (no NaN reaches here). Corners a, b, c, d: upper left, upper right,
/// lower left, lower right of the texel's quadrant.
#[inline(always)]
fn rechroma(texel_y: &[f32; 16], n: &Around) -> Texels {
    let mut px = [[0i32; 16]; 3];
    let q = |v: f32| (0.5 + v.clamp(0.0, 255.0)) as i32;
    for ty in 0..4 {
        let (qy, fy) = (ty >> 1, BLEND_AT[ty]);
        for tx in 0..4 {
            let (qx, fx) = (tx >> 1, BLEND_AT[tx]);
            let (a, b) = (n[qy][qx], n[qy][qx + 1]);
            let (c, d) = (n[qy + 1][qx], n[qy + 1][qx + 1]);
            let co = lerp(lerp(a[0], b[0], fx), lerp(c[0], d[0], fx), fy);
            let cg = lerp(lerp(a[1], b[1], fx), lerp(c[1], d[1], fx), fy);
            let k = ty * 4 + tx;
            let y = texel_y[k];
            px[0][k] = q(y + co - cg);
            px[1][k] = q(y + cg);
            px[2][k] = q(y - co - cg);
        }
    }
    px
}

/// What selecting weights for mode-5 endpoints (7 bits a channel) needs: the
/// axis `a` (doubled) that a texel is projected on, and the projections of
/// the midpoints between the four levels. A texel's selector is the number
/// of midpoints its projection passes (`> t0`, `>= t1`, `>= t2`).
#[inline(always)]
fn weight_thresholds(l: [i32; 3], h: [i32; 3]) -> ([i32; 3], [i32; 3]) {
    let mut c = [[0i32; 4]; 3];
    for ch in 0..3 {
        let (l, h) = (from_7(l[ch] as u32), from_7(h[ch] as u32));
        for (k, c) in c[ch].iter_mut().enumerate() {
            *c = interp2(l, h, k) as i32;
        }
    }
    let a = [c[0][3] - c[0][0], c[1][3] - c[1][0], c[2][3] - c[2][0]];
    let mut dots = [0i32; 4];
    for (k, d) in dots.iter_mut().enumerate() {
        *d = c[0][k] * a[0] + c[1][k] * a[1] + c[2][k] * a[2];
    }
    (
        [a[0] * 2, a[1] * 2, a[2] * 2],
        [dots[0] + dots[1], dots[1] + dots[2], dots[2] + dots[3]],
    )
}

/// Selectors of 16 pixels for mode-5 endpoints (see [`weight_thresholds`]).
#[inline(always)]
fn eval_weights(px: &Texels, l: [i32; 3], h: [i32; 3]) -> [i32; 16] {
    let (a, [t0, t1, t2]) = weight_thresholds(l, h);
    let mut out = [0i32; 16];
    for (k, o) in out.iter_mut().enumerate() {
        let d = px[0][k] * a[0] + px[1][k] * a[1] + px[2][k] * a[2];
        *o = (d > t0) as i32 + (d >= t1) as i32 + (d >= t2) as i32;
    }
    out
}

/// Least-squares endpoints (low, high) from the selectors' moments `z` (sum
/// of `s^2`, of `s (3 - s)`, of `(3 - s)^2`), the selector-weighted channel
/// sums `uq` and the channel totals; `None` when the system is singular.
#[inline(always)]
fn solve(
    z: [i32; 3],
    uq: [i32; 3],
    total: [i32; 3],
    mids: &Midpoints,
) -> Option<([i32; 3], [i32; 3])> {
    let (z00, z10, z11) = (z[0] as f32, z[1] as f32, z[2] as f32);
    let z01 = z10;
    let mut det = z00 * z11 - z01 * z10;
    if det.abs() < 1e-8 {
        return None;
    }
    det = (3.0 / 255.0) / det;
    let (iz00, iz01, iz10, iz11) = (z11 * det, -z01 * det, -z10 * det, z00 * det);
    let (mut lo, mut hi) = ([0i32; 3], [0i32; 3]);
    for ch in 0..3 {
        let (uq, q10) = (uq[ch] as f32, (total[ch] * 3 - uq[ch]) as f32);
        hi[ch] = mids.to_7(clampf(iz00 * uq + iz01 * q10, 0.0, 1.0));
        lo[ch] = mids.to_7(clampf(iz10 * uq + iz11 * q10, 0.0, 1.0));
    }
    Some((lo, hi))
}

/// [`solve`] for the selectors `sels`.
#[inline(always)]
fn least_squares(
    px: &Texels,
    sels: &[i32; 16],
    mids: &Midpoints,
    total: [i32; 3],
) -> Option<([i32; 3], [i32; 3])> {
    let mut z = [0i32; 3];
    for &s in sels {
        z[0] += s * s;
        z[1] += s * (3 - s);
        z[2] += (3 - s) * (3 - s);
    }
    let mut uq = [0i32; 3];
    for ch in 0..3 {
        for k in 0..16 {
            uq[ch] += sels[k] * px[ch][k];
        }
    }
    solve(z, uq, total, mids)
}

/// Selectors as one word, texel `k` at bits `2k`.
#[inline(always)]
fn selector_word(weights: &[i32; 16]) -> u32 {
    let mut word = 0u32;
    for (k, &w) in weights.iter().enumerate() {
        word |= (w as u32) << (2 * k);
    }
    word
}

/// Packs mode-5 endpoints and selectors (`word`: texel `k` at bits `2k`),
/// swapping the endpoints (and inverting every selector) when the anchor's
/// selector has its high bit; opaque alpha.
#[inline(always)]
fn pack(block: &mut [u8; 16], mut l: [i32; 3], mut h: [i32; 3], mut word: u32) {
    if word & 2 != 0 {
        std::mem::swap(&mut l, &mut h);
        word = !word;
    }
    let lo = bc7_m5_lo([l[0], h[0], l[1], h[1], l[2], h[2]].map(|v| v as u32));
    block[..8].copy_from_slice(&lo.to_le_bytes());
    block[8..].copy_from_slice(&bc7_m5_hi(word).to_le_bytes());
}

#[inline(always)]
fn lerp_8bit(a: i32, b: i32, s: i32) -> i32 {
    let t = (b - a) * s + 128;
    a + ((t + (t >> 8)) >> 8)
}

/// A block of one colour (`min` = `max` in every channel): the table's
/// endpoints, every selector 1.
#[inline(always)]
fn pack_constant(block: &mut [u8; 16], c: [i32; 3]) {
    let e = c.map(|v| G_BC7_M5_EQUALS_1[v as usize]);
    let (l, h) = (e.map(|e| e[1] as i32), e.map(|e| e[0] as i32));
    pack(block, l, h, 0x5555_5555);
}

/// Endpoints of a block whose channels vary little (largest variance under
/// 10 per texel): the channels' ranges pulled in by 1/16 at each end.
#[inline(always)]
fn narrow_endpoints(min: [i32; 3], max: [i32; 3], mids: &Midpoints) -> ([i32; 3], [i32; 3]) {
    let q = |ch: usize, s: i32| mids.to_7(lerp_8bit(min[ch], max[ch], s) as f32 * (1.0 / 255.0));
    (
        [q(0, 16), q(1, 16), q(2, 16)],
        [q(0, 239), q(1, 239), q(2, 239)],
    )
}

/// The texels' principal axis from their covariance `icov` (rr, rg, rb, gg,
/// gb, bb; largest diagonal `max_var`) by one power iteration, in integers
/// scaled so a projection keeps 4 free low bits for the texel's index.
#[inline(always)]
fn principal_axis(icov: [i32; 6], max_var: i32) -> [i32; 3] {
    let cov = icov.map(|v| v as f32);
    let sc = 1.0f32 / max_var as f32;
    let (wx, wy, wz) = (sc * cov[0], sc * cov[3], sc * cov[5]);
    let alt_r = cov[0] * wx + cov[1] * wy + cov[2] * wz;
    let alt_g = cov[1] * wx + cov[3] * wy + cov[4] * wz;
    let alt_b = cov[2] * wx + cov[4] * wy + cov[5] * wz;
    let mut axis = [306i32, 601, 117];
    let k = alt_r.abs().max(alt_g.abs()).max(alt_b.abs());
    if k as f64 >= 0.0000125f32 as f64 {
        let m = 2048.0f32 / k;
        axis = [(alt_r * m) as i32, (alt_g * m) as i32, (alt_b * m) as i32];
    }
    axis.map(|v| ((v as u32) << 4) as i32)
}

/// The 7-bit endpoint nearest a texel's colour.
#[inline(always)]
fn endpoint_of(p: [i32; 3], mids: &Midpoints) -> [i32; 3] {
    p.map(|v| mids.to_7(v as f32 * (1.0 / 255.0)))
}

/// `encode_bc7_mode_5_block` (the non-HQ path) for 16 opaque pixels.
#[inline(always)]
fn encode_mode5(block: &mut [u8; 16], px: &Texels, mids: &Midpoints) {
    let mut total = [0i32; 3];
    let mut min = [255i32; 3];
    let mut max = [0i32; 3];
    for ch in 0..3 {
        for &v in &px[ch] {
            total[ch] += v;
            min[ch] = min[ch].min(v);
            max[ch] = max[ch].max(v);
        }
    }
    if min == max {
        pack_constant(block, min);
        return;
    }
    let mean = total.map(|t| (t + 8) >> 4);
    let mut icov = [0i32; 6];
    for k in 0..16 {
        let r = px[0][k] - mean[0];
        let g = px[1][k] - mean[1];
        let b = px[2][k] - mean[2];
        icov[0] += r * r;
        icov[1] += r * g;
        icov[2] += r * b;
        icov[3] += g * g;
        icov[4] += g * b;
        icov[5] += b * b;
    }
    let max_var = icov[0].max(icov[3]).max(icov[5]);
    if max_var < 10 * 16 {
        let (l, h) = narrow_endpoints(min, max, mids);
        pack(block, l, h, selector_word(&eval_weights(px, l, h)));
        return;
    }
    let axis = principal_axis(icov, max_var);
    let (mut low, mut high) = (i32::MAX, i32::MIN);
    for j in 0..16 {
        let d = ((px[0][j] * axis[0] + px[1][j] * axis[1] + px[2][j] * axis[2]) & !0xF) + j as i32;
        low = low.min(d);
        high = high.max(d);
    }
    let end = |j: i32| endpoint_of([0, 1, 2].map(|ch| px[ch][(j & 15) as usize]), mids);
    let (mut l, mut h) = (end(low), end(high));
    let mut weights = eval_weights(px, l, h);
    if let Some((nl, nh)) = least_squares(px, &weights, mids, total) {
        (l, h) = (nl, nh);
        weights = eval_weights(px, l, h);
    }
    pack(block, l, h, selector_word(&weights));
}

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use basisu::color::Color32;

    /// xorshift64*: reproducible noise without a dependency.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A random level: endpoint colours, the grid of endpoint indices and
    /// mode-5 blocks, a third of them with colour endpoints close together.
    /// With `smooth`, the endpoints' chroma differs just past the filter's
    /// threshold, so a filtered block's colours vary little (the
    /// narrow-range path).
    fn level(
        noise: &mut Noise,
        w: usize,
        h: usize,
        smooth: bool,
    ) -> (Vec<Endpoint>, Vec<u16>, Vec<u8>) {
        let base = [8 + noise.below(16), 8 + noise.below(8), 8 + noise.below(16)];
        let endpoints: Vec<Endpoint> = (0..64)
            .map(|_| {
                let c = if smooth {
                    [base[0], base[1] + 3 * noise.below(2), base[2]]
                } else {
                    [noise.below(32), noise.below(32), noise.below(32)]
                };
                Endpoint {
                    color5: Color32::new(c[0] as u32, c[1] as u32, c[2] as u32, 255),
                    inten5: 0,
                }
            })
            .collect();
        let grid = (0..w * h).map(|_| noise.below(64) as u16).collect();
        let mut blocks = Vec::with_capacity(w * h * 16);
        for _ in 0..w * h {
            let mut lo = 32u64 | noise.next() & !0xFF;
            if smooth || noise.below(3) == 0 {
                // each channel's high endpoint a few steps above its low
                // one (smooth: 2 to 4, luma that just varies enough)
                let step = if smooth {
                    2 + noise.below(3)
                } else {
                    noise.below(3)
                };
                for ch in 0..3u32 {
                    let at = 8 + 14 * ch;
                    let l = (lo >> at) & 127;
                    let h = (l + step).min(127);
                    lo = lo & !(0x3FFF << at) | l << at | h << (at + 7);
                }
            }
            blocks.extend_from_slice(&lo.to_le_bytes());
            blocks.extend_from_slice(&noise.next().to_le_bytes());
        }
        (endpoints, grid, blocks)
    }

    /// Which path of `encode_mode5` the portable code takes for `block`,
    /// `None` when the filter leaves it.
    fn path(block: &[u8], n: &Around) -> Option<&'static str> {
        let y = texel_luma(block.try_into().expect("16 bytes"))?;
        let px = rechroma(&y, n);
        let (min, max) = (
            px.map(|c| *c.iter().min().unwrap()),
            px.map(|c| *c.iter().max().unwrap()),
        );
        if min == max {
            return Some("constant");
        }
        let var = |c: &[i32; 16]| {
            let mean = (c.iter().sum::<i32>() + 8) >> 4;
            c.iter().map(|v| (v - mean) * (v - mean)).sum::<i32>()
        };
        Some(if px.iter().map(var).max().unwrap() < 160 {
            "narrow"
        } else {
            "axis"
        })
    }

    #[test]
    fn the_avx2_filter_writes_the_portable_codes_blocks() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!(
                "this CPU has no AVX2: the portable filter is the only one, nothing to compare"
            );
            return;
        }
        let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
        let mut paths = std::collections::BTreeMap::new();
        let mut changed = 0;
        let mut sizes: Vec<(usize, usize)> = (0..120)
            .map(|_| (1 + noise.below(13) as usize, 1 + noise.below(9) as usize))
            .collect();
        sizes.extend([(64, 48), (1, 1), (8, 1), (1, 8), (17, 3)]);
        for (w, h) in sizes {
            let smooth = noise.below(3) == 0;
            let (endpoints, grid, blocks) = level(&mut noise, w, h, smooth);
            let mut cells = Cells::new(w, h);
            for (b, &e) in grid.iter().enumerate() {
                cells.set(b, &endpoints[e as usize]);
            }
            for (i, x, y) in cells.filtered() {
                let n = cells.around(x, y);
                if let Some(p) = path(&blocks[i * 16..i * 16 + 16], &n) {
                    *paths.entry(p).or_insert(0) += 1;
                }
            }
            let mut portable = blocks.clone();
            filter_blocks(&cells, &mut portable);
            let mut vector = blocks.clone();
            // SAFETY: the CPU has AVX2 (checked above).
            #[allow(unsafe_code)]
            unsafe {
                avx2::filter(&cells, &mut vector)
            };
            for (i, (p, v)) in portable.chunks(16).zip(vector.chunks(16)).enumerate() {
                assert_eq!(p, v, "{w}x{h} level, block {i}: AVX2 and portable differ");
            }
            changed += portable
                .chunks(16)
                .zip(blocks.chunks(16))
                .filter(|(p, b)| p != b)
                .count();
        }
        assert!(changed > 1000, "only {changed} blocks filtered");
        // both encoder paths a filtered block can take are exercised (a
        // filtered block's luma varies, so its texels are never all one
        // colour: the constant path is the portable code's alone)
        eprintln!("{paths:?}");
        assert!(paths.get("narrow").copied().unwrap_or(0) > 200, "{paths:?}");
        assert!(paths.get("axis").copied().unwrap_or(0) > 1000, "{paths:?}");
    }
}
