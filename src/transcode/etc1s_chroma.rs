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
use super::etc1s::bc7_m5_lo;
use basisu::basislz::etc1s::Endpoint;
use basisu::tables::bc7_m5_equals_1::G_BC7_M5_EQUALS_1;

const CHROMA_THRESH: f32 = 10.0;
const Y_VAR_SKIP_THRESH: f32 = 3.0;
const WEIGHTS2: [u32; 4] = [0, 21, 43, 64];

#[inline]
fn clampf(v: f32, l: f32, h: f32) -> f32 {
    if v < l {
        l
    } else if v > h {
        h
    } else {
        v
    }
}

#[inline]
fn lerp(a: f32, b: f32, s: f32) -> f32 {
    a + (b - a) * s
}

#[inline]
fn from_7(v: u32) -> u32 {
    (v << 1) | (v >> 6)
}

#[inline]
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

    #[inline]
    fn to_7(&self, c: f32) -> i32 {
        let mut v = (c * 127.0) as i32;
        if c > self.0[v as usize] {
            v += 1;
        }
        v.clamp(0, 127)
    }
}

/// Filters `blocks` (`bx` x `by` BC7 mode-5 blocks, raster order, opaque)
/// whose ETC1S endpoint indices are `grid`.
pub(super) fn filter(grid: &[u16], blocks: &mut [u8], bx: u32, by: u32, endpoints: &[Endpoint]) {
    let cells = Cells::new(grid, endpoints, bx as usize, by as usize);
    let mids = Midpoints::new();
    for (i, _) in cells.edges().iter().enumerate().filter(|(_, &e)| e != 0) {
        let block: &mut [u8; 16] = (&mut blocks[i * 16..i * 16 + 16])
            .try_into()
            .expect("16 bytes");
        let Some(texel_y) = texel_luma(block) else {
            continue;
        };
        let pixels = rechroma(&texel_y, &cells.around(i % cells.w, i / cells.w));
        encode_mode5(block, &pixels, &mids);
    }
}

/// Each block's endpoint chroma, in integers: `co` = 2 Co = R - B and `cg`
/// = 4 Cg = 2G - R - B of the endpoint's base colour expanded to 8 bits.
/// Co and Cg in `f32` (what `basisu` compares) are these over 2 and 4
/// exactly: every value is a small multiple of 1/4.
struct Cells {
    co: Vec<i32>,
    cg: Vec<i32>,
    w: usize,
    h: usize,
}

impl Cells {
    fn new(grid: &[u16], endpoints: &[Endpoint], w: usize, h: usize) -> Self {
        let x = |c: u8| (c as i32) << 3 | (c as i32) >> 2;
        let (mut co, mut cg) = (
            Vec::with_capacity(grid.len()),
            Vec::with_capacity(grid.len()),
        );
        for &e in grid {
            let c = endpoints[e as usize].color5;
            let (r, g, b) = (x(c.r()), x(c.g()), x(c.b()));
            co.push(r - b);
            cg.push(2 * g - r - b);
        }
        Cells { co, cg, w, h }
    }

    /// Per block, non-zero when one of its eight neighbours differs from it
    /// in Co or Cg by more than the threshold: each adjacent pair (across,
    /// down, both diagonals) is compared once, row against row.
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
    fn around(&self, x: usize, y: usize) -> [[[f32; 2]; 3]; 3] {
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

/// The luma of each texel of a mode-5 block, `None` when it varies too
/// little for the filter to act.
fn texel_luma(block: &[u8; 16]) -> Option<[f32; 16]> {
    let lo = u64::from_le_bytes(block[..8].try_into().expect("8 bytes"));
    let e = |k: u32| from_7((lo >> (8 + 7 * k)) as u32 & 127);
    let (lr, hr, lg, hg, lb, hb) = (e(0), e(1), e(2), e(3), e(4), e(5));
    let y_vals: [f32; 4] = std::array::from_fn(|k| {
        let cr = interp2(lr, hr, k) as i32;
        let cg = interp2(lg, hg, k) as i32;
        let cb = interp2(lb, hb, k) as i32;
        cr as f32 * 0.25 + cg as f32 * 0.5 + cb as f32 * 0.25
    });
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
    let s = 1.0f32 / 16.0;
    let mean = y_sum * s;
    ((y_sum_sq * s) - mean * mean >= Y_VAR_SKIP_THRESH).then_some(texel_y)
}

/// Each texel's luma with the chroma of a bilinear blend of the
/// neighbourhood's endpoint chroma (texel centres sit half a block off the
/// endpoint grid), as RGB. `basisu`'s arithmetic, lane by lane over the 16
/// texels: `lerp(lerp(a, b, fx), lerp(c, d, fx), fy)` per channel, then
/// `dot(ycocg, (1, 1, -1))`, `(1, 0, 1)`, `(1, -1, -1)`, whose products by
/// 1, 0 and -1 are exact and left out.
fn rechroma(texel_y: &[f32; 16], n: &[[[f32; 2]; 3]; 3]) -> [[u8; 3]; 16] {
    // ((((p + 2) & 3) as f32) + 0.5) / 4 for texel column or row p, exact
    const F: [f32; 4] = [0.625, 0.875, 0.125, 0.375];
    const FX: [f32; 16] = {
        let mut t = [0.0; 16];
        let mut k = 0;
        while k < 16 {
            t[k] = F[k & 3];
            k += 1;
        }
        t
    };
    const FY: [f32; 16] = {
        let mut t = [0.0; 16];
        let mut k = 0;
        while k < 16 {
            t[k] = F[k >> 2];
            k += 1;
        }
        t
    };
    // per channel the blend; corners a, b, c, d: upper left, upper right,
    // lower left, lower right of the texel's quadrant
    let blend = |ch: usize| -> [f32; 16] {
        let corner = |c: usize| -> [f32; 16] {
            std::array::from_fn(|k| n[(k >> 3) + (c >> 1)][((k & 3) >> 1) + (c & 1)][ch])
        };
        let (a, b, c, d) = (corner(0), corner(1), corner(2), corner(3));
        let mut f = [0.0f32; 16];
        for k in 0..16 {
            let ab = lerp(a[k], b[k], FX[k]);
            let cd = lerp(c[k], d[k], FX[k]);
            f[k] = lerp(ab, cd, FY[k]);
        }
        f
    };
    let (co, cg) = (blend(0), blend(1));
    let mut rgb = [[0.0f32; 16]; 3];
    for k in 0..16 {
        let y = texel_y[k];
        rgb[0][k] = y + co[k] - cg[k];
        rgb[1][k] = y + cg[k];
        rgb[2][k] = y - co[k] - cg[k];
    }
    // clamp to [0, 255], round half up (no NaN reaches here)
    let q = rgb.map(|c| c.map(|v| (0.5 + v.clamp(0.0, 255.0)) as i32 as u8));
    std::array::from_fn(|k| [q[0][k], q[1][k], q[2][k]])
}

/// Selectors of 16 pixels for mode-5 endpoints (7 bits a channel): the
/// number of level boundaries each pixel's projection passes.
fn eval_weights(px: &[[u8; 3]; 16], l: [u32; 3], h: [u32; 3]) -> [u8; 16] {
    let (l, h) = (l.map(from_7), h.map(from_7));
    let c: [[i32; 4]; 3] =
        std::array::from_fn(|ch| std::array::from_fn(|k| interp2(l[ch], h[ch], k) as u8 as i32));
    let a = [c[0][3] - c[0][0], c[1][3] - c[1][0], c[2][3] - c[2][0]];
    let dots: [i32; 4] = std::array::from_fn(|k| c[0][k] * a[0] + c[1][k] * a[1] + c[2][k] * a[2]);
    let (t0, t1, t2) = (dots[0] + dots[1], dots[1] + dots[2], dots[2] + dots[3]);
    let a = a.map(|v| v * 2);
    let mut out = [0u8; 16];
    for (o, p) in out.iter_mut().zip(px) {
        let d = p[0] as i32 * a[0] + p[1] as i32 * a[1] + p[2] as i32 * a[2];
        *o = (d > t0) as u8 + (d >= t1) as u8 + (d >= t2) as u8;
    }
    out
}

/// Least-squares endpoints (low, high) for the selectors `sels`, `None` when
/// the system is singular.
fn least_squares(
    px: &[[u8; 3]; 16],
    sels: &[u8; 16],
    mids: &Midpoints,
    total: [i32; 3],
) -> Option<([i32; 3], [i32; 3])> {
    const WEIGHT_VALS4: [u32; 4] = [0x000009, 0x010204, 0x040201, 0x090000];
    let mut uq = [0u32; 3];
    let mut acc = 0u32;
    for (p, &s) in px.iter().zip(sels) {
        let s = s as u32;
        acc = acc.wrapping_add(WEIGHT_VALS4[s as usize]);
        for ch in 0..3 {
            uq[ch] += s * p[ch] as u32;
        }
    }
    let q10 = [0, 1, 2].map(|ch| total[ch] * 3 - uq[ch] as i32);
    let z00 = ((acc >> 16) & 0xFF) as f32;
    let z10 = ((acc >> 8) & 0xFF) as f32;
    let z11 = (acc & 0xFF) as f32;
    let z01 = z10;
    let mut det = z00 * z11 - z01 * z10;
    if det.abs() < 1e-8 {
        return None;
    }
    det = (3.0 / 255.0) / det;
    let (iz00, iz01, iz10, iz11) = (z11 * det, -z01 * det, -z10 * det, z00 * det);
    let hi = [0, 1, 2].map(|ch| {
        mids.to_7(clampf(
            iz00 * uq[ch] as f32 + iz01 * q10[ch] as f32,
            0.0,
            1.0,
        ))
    });
    let lo = [0, 1, 2].map(|ch| {
        mids.to_7(clampf(
            iz10 * uq[ch] as f32 + iz11 * q10[ch] as f32,
            0.0,
            1.0,
        ))
    });
    Some((lo, hi))
}

/// Packs mode-5 endpoints and selectors (swapping the endpoints when the
/// anchor's selector has its high bit), opaque alpha.
fn pack(block: &mut [u8; 16], mut l: [i32; 3], mut h: [i32; 3], weights: &[u8; 16]) {
    let mut inv = 0u8;
    if weights[0] & 2 != 0 {
        std::mem::swap(&mut l, &mut h);
        inv = 3;
    }
    let lo = bc7_m5_lo([l[0], h[0], l[1], h[1], l[2], h[2]].map(|v| v as u32));
    let mut hi = 3u64;
    let mut ofs = 2;
    for (k, &w) in weights.iter().enumerate() {
        hi |= ((inv ^ w) as u64) << ofs;
        ofs += if k != 0 { 2 } else { 1 };
    }
    block[..8].copy_from_slice(&lo.to_le_bytes());
    block[8..].copy_from_slice(&hi.to_le_bytes());
}

#[inline]
fn lerp_8bit(a: i32, b: i32, s: i32) -> i32 {
    let t = (b - a) * s + 128;
    a + ((t + (t >> 8)) >> 8)
}

/// `encode_bc7_mode_5_block` (the non-HQ path) for 16 opaque pixels.
fn encode_mode5(block: &mut [u8; 16], px: &[[u8; 3]; 16], mids: &Midpoints) {
    let mut total = [0i32; 3];
    let mut min = [255i32; 3];
    let mut max = [0i32; 3];
    for p in px {
        for ch in 0..3 {
            let v = p[ch] as i32;
            total[ch] += v;
            min[ch] = min[ch].min(v);
            max[ch] = max[ch].max(v);
        }
    }
    if min == max {
        let e = min.map(|v| G_BC7_M5_EQUALS_1[v as usize]);
        let (l, h) = (e.map(|e| e[1] as i32), e.map(|e| e[0] as i32));
        pack(block, l, h, &[1; 16]);
        return;
    }
    let mean = total.map(|t| (t + 8) >> 4);
    let mut icov = [0i32; 6];
    for p in px {
        let r = p[0] as i32 - mean[0];
        let g = p[1] as i32 - mean[1];
        let b = p[2] as i32 - mean[2];
        icov[0] += r * r;
        icov[1] += r * g;
        icov[2] += r * b;
        icov[3] += g * g;
        icov[4] += g * b;
        icov[5] += b * b;
    }
    let max_var = icov[0].max(icov[3]).max(icov[5]);
    let weights_for =
        |l: [i32; 3], h: [i32; 3]| eval_weights(px, l.map(|v| v as u32), h.map(|v| v as u32));
    if max_var < 10 * 16 {
        let q = |s: i32| {
            [0, 1, 2].map(|ch| mids.to_7(lerp_8bit(min[ch], max[ch], s) as f32 * (1.0 / 255.0)))
        };
        let (l, h) = (q(16), q(239));
        pack(block, l, h, &weights_for(l, h));
        return;
    }
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
    let axis = axis.map(|v| ((v as u32) << 4) as i32);
    let (mut low, mut high) = (i32::MAX, i32::MIN);
    for (j, p) in px.iter().enumerate() {
        let d = ((p[0] as i32 * axis[0] + p[1] as i32 * axis[1] + p[2] as i32 * axis[2]) & !0xF)
            + j as i32;
        low = low.min(d);
        high = high.max(d);
    }
    let end = |j: i32| px[(j & 15) as usize].map(|v| mids.to_7(v as f32 * (1.0 / 255.0)));
    let (mut l, mut h) = (end(low), end(high));
    let mut weights = weights_for(l, h);
    if let Some((nl, nh)) = least_squares(px, &weights, mids, total) {
        (l, h) = (nl, nh);
        weights = weights_for(l, h);
    }
    pack(block, l, h, &weights);
}
