//! Screen-space texel density: which mip each texture needs.
//!
//! For an object at distance `d` from a view, one world unit covers
//! `k / d` pixels (`k` = [`View::pixels_per_unit_at_1`]). A texture of `S`
//! texels across, mapped so that one UV unit spans `s` world units, puts
//! `S / s` texels on a world unit, so `S d / (s k)` texels on a pixel. The mip
//! where a texel meets a pixel is `log2` of that:
//!
//! `lod = log2(S) - log2(s) + log2(d) - log2(k)`
//!
//! The first two terms are fixed per (object, texture) binding and stored; the
//! last two are computed once per (object, view). Each texture takes the finest
//! (smallest) lod over every object and view that shows it, and sums their
//! screen coverage. Objects outside every frustum still count, coarser by
//! [`OFFSCREEN_LOD_BIAS`] mips and with a tenth of their coverage, so turning
//! the camera does not evict what is just behind it. Each view is also
//! evaluated from where its velocity takes it after the look-ahead, so loads
//! start before the camera arrives.
//!
//! The finest lod decides the level a texture wants; the coverage-weighted lod
//! at the distance most of an object's pixels are at weighs its error, so a
//! large ground under the camera wants fine levels but does not claim the
//! whole budget for the few pixels at its near edge. That distance is the
//! centre's, or for an object large next to how near it is, the geometric
//! mean of its nearest and farthest points: standing on a ground's middle,
//! its centre is as near as its nearest point, yet most of its pixels are
//! metres away (on the built-in scene, taking the centre made the planner
//! trade the ground's level 1 for a lower-bit level 0 that looked worse).

use super::clusters::Layout;
use super::coverage::{box_screen_area, REFINE_SHARE};
use super::terms::{fast_log2, Binding, Bounds};
use super::view::View;
use super::{Planner, Policy};
use glam::{Mat4, Vec3, Vec4};

/// Mips added to the lod of an object outside every view's frustum.
pub(crate) const OFFSCREEN_LOD_BIAS: f32 = 2.0;
/// Coverage multiplier for an object outside every view's frustum.
pub(crate) const OFFSCREEN_COVERAGE: f32 = 0.1;

/// Per-view constants, computed once per plan.
pub(crate) struct ViewTerms {
    eye: Vec3,
    /// The clip transform, and where the look-ahead takes it, for the
    /// box coverage of large objects ([`super::coverage`]).
    view_proj: Mat4,
    predicted_view_proj: Option<Mat4>,
    viewport: glam::Vec2,
    planes: [Vec4; 6],
    /// Eye and frustum planes where the view will be after the look-ahead,
    /// when it moves.
    predicted: Option<(Vec3, [Vec4; 6])>,
    log2_k: f32,
    k_squared: f32,
    weight: f32,
    max_coverage: f32,
    near_squared: f32,
}

impl ViewTerms {
    #[cfg(test)]
    pub(crate) fn eye(&self) -> Vec3 {
        self.eye
    }

    #[cfg(test)]
    pub(crate) fn log2_k(&self) -> f32 {
        self.log2_k
    }

    pub(crate) fn new(view: &View, look_ahead_s: f32) -> Self {
        let offset = view.velocity * look_ahead_s;
        let frustum = view.frustum();
        let k = view.pixels_per_unit_at_1();
        Self {
            eye: view.position,
            view_proj: view.view_proj,
            predicted_view_proj: (offset.length_squared() > 1e-6)
                .then(|| view.view_proj * Mat4::from_translation(-offset)),
            viewport: view.viewport.as_vec2(),
            planes: frustum.planes(),
            predicted: (offset.length_squared() > 1e-6)
                .then(|| (view.position + offset, frustum.translated(offset).planes())),
            log2_k: k.log2(),
            k_squared: k * k,
            weight: view.weight.max(0.0),
            max_coverage: view.viewport.x as f32 * view.viewport.y as f32,
            near_squared: 0.05 * 0.05,
        }
    }
}

/// Objects per chunk of the fused pass: their terms stay in L1 cache from
/// the views to the scatter.
const CHUNK: usize = super::clusters::CLUSTER_SIZE;

/// What the views need of the objects of one chunk, before their bindings:
/// the finest lod term (`log2(distance) - log2(k)`), the weighted coverage,
/// and the coverage-weighted lod term at their centres.
///
/// The pass over objects is fused and chunked: a chunk's terms are computed
/// for every view and scattered into the textures' sums at once, so no
/// per-object array the size of the scene is written and read back (at a
/// million objects the old separate passes moved ~110 MB a plan and were
/// bound by memory). Where the CPU has AVX2 the same code runs in 8 lanes
/// instead of SSE2's 4; the results are bit for bit those of the
/// straightforward pass, one object at a time ([`ObjectTerms::reference`]),
/// which the tests check: the same operations in the same order, no fused
/// multiply-add.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectTerms {
    /// Finest lod term over the views that draw the object (infinite: none).
    seen: Vec<f32>,
    /// Finest lod term over the views it is outside of, with the off-screen
    /// bias (infinite: none).
    hidden: Vec<f32>,
    cover: Vec<f32>,
    typical: Vec<f32>,
    /// Of one view: the sphere coverage each object got (0 when outside
    /// the view) and the lod term its coverage weighed.
    view_cover: Vec<f32>,
    view_term: Vec<f32>,
}

/// One object as one view sees it.
#[derive(Debug, Clone, Copy)]
struct ObjectView {
    visible: bool,
    /// The finest lod term (its nearest point's).
    term: f32,
    /// The lod term its coverage weighs.
    weighed: f32,
    /// Weighted sphere coverage, pixels.
    cover: f32,
}

impl ObjectTerms {
    /// Adds what `views` need of every live object in `layout` to its
    /// textures' sums: `sums[0]` is the sink of dead bindings, texture slot
    /// `t` sums into `sums[t + 1]`; object `i` shows
    /// `bindings[objects[i].start..][..len]`. A binding counts only while
    /// its finest lod is below `cutoff[b.sum]` (its texture's tail plus
    /// `margin`); clusters no view can see that fine are skipped (see
    /// [`super::clusters`]).
    #[allow(unsafe_code)]
    pub(crate) fn accumulate(&mut self, pass: &Pass<'_>, sums: &mut [TextureNeedSum]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, the only feature the function enables.
            unsafe { self.accumulate_avx2(pass, sums) };
            return;
        }
        self.accumulate_portable(pass, sums);
    }

    /// [`accumulate`](Self::accumulate) compiled for AVX2 (8 lanes).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn accumulate_avx2(&mut self, pass: &Pass<'_>, sums: &mut [TextureNeedSum]) {
        self.accumulate_portable(pass, sums);
    }

    #[inline(always)]
    fn accumulate_portable(&mut self, pass: &Pass<'_>, sums: &mut [TextureNeedSum]) {
        for v in [
            &mut self.seen,
            &mut self.hidden,
            &mut self.cover,
            &mut self.typical,
            &mut self.view_cover,
            &mut self.view_term,
        ] {
            v.resize(CHUNK, 0.0);
        }
        let layout = pass.layout;
        for c in &layout.clusters {
            let near = pass.views.iter().any(|v| {
                let eyes = [v.eye, v.predicted.map_or(v.eye, |p| p.0)];
                c.may_need(eyes, v.log2_k, v.near_squared, pass.margin)
            });
            if near {
                self.chunk(pass, c.start as usize, c.len as usize, sums);
            }
        }
        let n = layout.slot.len();
        let mut base = layout.clustered;
        while base < n {
            let len = CHUNK.min(n - base);
            self.chunk(pass, base, len, sums);
            base += len;
        }
    }

    /// The `len` (at most [`CHUNK`]) objects from layout position `base`.
    #[inline(always)]
    fn chunk(&mut self, pass: &Pass<'_>, base: usize, len: usize, sums: &mut [TextureNeedSum]) {
        let bounds = &pass.layout.bounds;
        self.seen[..len].fill(f32::INFINITY);
        self.hidden[..len].fill(f32::INFINITY);
        self.cover[..len].fill(0.0);
        self.typical[..len].fill(0.0);
        for v in pass.views {
            match v.predicted {
                Some((eye, planes)) => self.view::<true>(v, eye, &planes, bounds, base, len),
                None => self.view::<false>(v, v.eye, &v.planes, bounds, base, len),
            }
            self.refine_large(v, bounds, base, len);
        }
        for k in 0..len {
            let o = pass.objects[pass.layout.slot[base + k] as usize];
            if o.alive {
                let range = o.start as usize..(o.start + o.len) as usize;
                let need = (self.seen[k], self.hidden[k], self.cover[k], self.typical[k]);
                scatter_one(need, &pass.bindings[range], pass.cutoff, sums);
            }
        }
    }

    /// The objects of the chunk whose sphere coverage passes
    /// [`REFINE_SHARE`] of the view: coverage from their boxes instead (see
    /// [`super::coverage`]).
    #[inline(always)]
    fn refine_large(&mut self, v: &ViewTerms, b: &Bounds, base: usize, len: usize) {
        let threshold = v.max_coverage * REFINE_SHARE * v.weight;
        if threshold <= 0.0 {
            return;
        }
        for k in 0..len {
            let c = self.view_cover[k];
            if c > threshold {
                let refined = refined_cover(v, b, base + k);
                self.cover[k] += refined - c;
                self.typical[k] += (refined - c) * self.view_term[k];
            }
        }
    }

    /// One view over the chunk's objects: branch-free so it runs in SIMD
    /// lanes.
    #[inline(always)]
    fn view<const PREDICTED: bool>(
        &mut self,
        v: &ViewTerms,
        predicted_eye: Vec3,
        predicted_planes: &[Vec4; 6],
        b: &Bounds,
        base: usize,
        len: usize,
    ) {
        let r = base..base + len;
        let (cx, cy, cz) = (&b.cx[r.clone()], &b.cy[r.clone()], &b.cz[r.clone()]);
        let (hx, hy, hz) = (&b.hx[r.clone()], &b.hy[r.clone()], &b.hz[r.clone()]);
        let rad = &b.radius[r];
        let seen = &mut self.seen[..len];
        let hidden = &mut self.hidden[..len];
        let cover = &mut self.cover[..len];
        let typical = &mut self.typical[..len];
        let view_cover = &mut self.view_cover[..len];
        let view_term = &mut self.view_term[..len];
        for i in 0..len {
            let o = object_view::<PREDICTED>(
                v,
                predicted_eye,
                predicted_planes,
                [cx[i], cy[i], cz[i]],
                [hx[i], hy[i], hz[i]],
                rad[i],
            );
            let (seen_term, hidden_term) = if o.visible {
                (o.term, f32::INFINITY)
            } else {
                (f32::INFINITY, o.term)
            };
            seen[i] = min(seen[i], seen_term);
            hidden[i] = min(hidden[i], hidden_term);
            cover[i] += o.cover;
            typical[i] += o.cover * o.weighed;
            view_cover[i] = if o.visible { o.cover } else { 0.0 };
            view_term[i] = o.weighed;
        }
    }

    /// The straightforward pass the fused one must equal bit for bit: every
    /// live object in layout order, one at a time, every view, then its
    /// bindings; no cluster skipped.
    #[cfg(test)]
    pub(crate) fn reference(pass: &Pass<'_>, sums: &mut [TextureNeedSum]) {
        let bounds = &pass.layout.bounds;
        for (i, &slot) in pass.layout.slot.iter().enumerate() {
            let (mut seen, mut hidden) = (f32::INFINITY, f32::INFINITY);
            let (mut cover, mut typical) = (0.0f32, 0.0f32);
            for v in pass.views {
                let (c, h) = (
                    [bounds.cx[i], bounds.cy[i], bounds.cz[i]],
                    [bounds.hx[i], bounds.hy[i], bounds.hz[i]],
                );
                let o = match v.predicted {
                    Some((eye, planes)) => {
                        object_view::<true>(v, eye, &planes, c, h, bounds.radius[i])
                    }
                    None => object_view::<false>(v, v.eye, &v.planes, c, h, bounds.radius[i]),
                };
                if o.visible {
                    seen = min(seen, o.term);
                } else {
                    hidden = min(hidden, o.term);
                }
                cover += o.cover;
                typical += o.cover * o.weighed;
                let threshold = v.max_coverage * REFINE_SHARE * v.weight;
                if o.visible && threshold > 0.0 && o.cover > threshold {
                    let refined = refined_cover(v, bounds, i);
                    cover += refined - o.cover;
                    typical += (refined - o.cover) * o.weighed;
                }
            }
            let o = pass.objects[slot as usize];
            if o.alive {
                let range = o.start as usize..(o.start + o.len) as usize;
                let need = (seen, hidden, cover, typical);
                scatter_one(need, &pass.bindings[range], pass.cutoff, sums);
            }
        }
    }
}

/// What one per-object pass reads.
pub(crate) struct Pass<'a> {
    pub(crate) views: &'a [ViewTerms],
    pub(crate) layout: &'a Layout,
    pub(crate) objects: &'a [super::ObjectSlot],
    pub(crate) bindings: &'a [Binding],
    /// By sum index: the lod from which a binding needs nothing (its
    /// texture's tail plus `margin`; infinite for the sink).
    pub(crate) cutoff: &'a [f32],
    /// `1 + hysteresis - lod_bias`: past `tail + margin` a texture is held
    /// at its tail whatever was resident.
    pub(crate) margin: f32,
}

/// One object, the box `c +- h` with bounding radius `r`, as view `v` sees
/// it (with `PREDICTED`: also from where the look-ahead takes it).
#[inline(always)]
fn object_view<const PREDICTED: bool>(
    v: &ViewTerms,
    predicted_eye: Vec3,
    predicted_planes: &[Vec4; 6],
    c: [f32; 3],
    h: [f32; 3],
    r: f32,
) -> ObjectView {
    let ([x, y, z], [hx, hy, hz]) = (c, h);
    let mut d2 = box_distance_squared(v.eye, x, y, z, hx, hy, hz);
    let mut margin = plane_margin(&v.planes, x, y, z);
    if PREDICTED {
        d2 = min(d2, box_distance_squared(predicted_eye, x, y, z, hx, hy, hz));
        margin = max(margin, plane_margin(predicted_planes, x, y, z));
    }
    let visible = margin >= -r;
    let d2 = max(d2, v.near_squared);
    let (bias, scale) = if visible {
        (0.0, 1.0)
    } else {
        (OFFSCREEN_LOD_BIAS, OFFSCREEN_COVERAGE)
    };
    // log2(d) = log2(d^2) / 2
    let term = 0.5 * fast_log2(d2) - v.log2_k + bias;
    let (ex, ey, ez) = (x - v.eye.x, y - v.eye.y, z - v.eye.z);
    let c2 = max(ex * ex + ey * ey + ez * ez, v.near_squared);
    // the distance most of its pixels are at: the centre's, or, for an
    // object large next to how near it is (a ground under the camera), the
    // geometric mean of its nearest and farthest points
    let far = c2.sqrt() + r;
    let log2_typical = max(0.5 * fast_log2(c2), 0.5 * fast_log2(d2.sqrt() * far));
    let center_term = log2_typical - v.log2_k + bias;
    let px2 = r * r * v.k_squared / d2;
    let cover = min(std::f32::consts::PI * px2, v.max_coverage) * v.weight * scale;
    ObjectView {
        visible,
        term,
        weighed: max(center_term, term),
        cover,
    }
}

/// The weighted coverage of object `i`'s box in view `v` (and where its
/// look-ahead takes it), for objects large on screen.
fn refined_cover(v: &ViewTerms, b: &Bounds, i: usize) -> f32 {
    let (center, half) = (
        Vec3::new(b.cx[i], b.cy[i], b.cz[i]),
        Vec3::new(b.hx[i], b.hy[i], b.hz[i]),
    );
    let mut area = box_screen_area(v.view_proj, v.viewport, center, half);
    if let Some(m) = v.predicted_view_proj {
        area = area.max(box_screen_area(m, v.viewport, center, half));
    }
    area.min(v.max_coverage) * v.weight
}

/// Adds one object's needs (`seen`, `hidden`, `cover`, `typical`) to the
/// sums of the textures its bindings show, those it needs anything of (its
/// finest lod below the binding's `cutoff`; outside every view, the lod it
/// would have in view, without [`OFFSCREEN_LOD_BIAS`]: cutting what is
/// just behind the camera by its biased lod cost the built-in path 2.9 dB
/// at a quarter of its working set, the turns and cuts finding it gone).
#[inline(always)]
fn scatter_one(
    need: (f32, f32, f32, f32),
    bindings: &[Binding],
    cutoff: &[f32],
    sums: &mut [TextureNeedSum],
) {
    let (seen, hidden, cover, typical) = need;
    let finest = min(seen, hidden - OFFSCREEN_LOD_BIAS);
    for b in bindings {
        if b.lod_offset + finest >= cutoff[b.sum as usize] {
            continue;
        }
        let a = &mut sums[b.sum as usize];
        a.visible_lod = min(a.visible_lod, b.lod_offset + seen);
        a.hidden_lod = min(a.hidden_lod, b.lod_offset + hidden);
        a.coverage += cover;
        a.lod_sum += typical + cover * b.lod_offset;
    }
}

/// `a.min(b)` without NaN handling, so it maps to one SIMD instruction.
#[inline(always)]
fn min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// `a.max(b)` without NaN handling.
#[inline(always)]
fn max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// Squared distance from `eye` to the box `(x, y, z) +- (hx, hy, hz)`.
#[inline(always)]
fn box_distance_squared(eye: Vec3, x: f32, y: f32, z: f32, hx: f32, hy: f32, hz: f32) -> f32 {
    let dx = max((eye.x - x).abs() - hx, 0.0);
    let dy = max((eye.y - y).abs() - hy, 0.0);
    let dz = max((eye.z - z).abs() - hz, 0.0);
    dx * dx + dy * dy + dz * dz
}

/// The smallest signed distance from `(x, y, z)` to the frustum's planes: a
/// sphere of radius `r` touches the frustum when this is at least `-r`.
#[inline(always)]
fn plane_margin(planes: &[Vec4; 6], x: f32, y: f32, z: f32) -> f32 {
    let mut m = f32::INFINITY;
    for p in planes {
        m = min(m, p.x * x + p.y * y + p.z * z + p.w);
    }
    m
}

/// `2^x` within 1e-8 relative of the exact value, without a libm call; `x`
/// is clamped to +-1000.
#[inline]
pub(crate) fn exp2(x: f64) -> f64 {
    let x = x.clamp(-1000.0, 1000.0);
    let t = x as i64; // towards zero
    let i = if (t as f64) > x { t - 1 } else { t };
    // 2^f = sqrt(2) * e^g with g = (f - 1/2) ln 2, |g| <= 0.35: Taylor to g^7
    let g = (x - i as f64 - 0.5) * std::f64::consts::LN_2;
    let e = 1.0
        + g * (1.0
            + g * (0.5
                + g * (1.0 / 6.0
                    + g * (1.0 / 24.0 + g * (1.0 / 120.0 + g * (1.0 / 720.0 + g / 5040.0))))));
    let scale = f64::from_bits(((i + 1023) as u64) << 52);
    std::f64::consts::SQRT_2 * e * scale
}

/// What every object showing one texture needs, summed: the finest lod over
/// the objects a view draws and over those outside every view (with the
/// off-screen bias), the total weighted screen coverage (pixels), and the
/// coverage-weighted sum of the lod at object centres (divide by coverage).
/// One 16-byte struct per texture so the scatter touches one cache line per
/// binding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TextureNeedSum {
    pub(crate) visible_lod: f32,
    pub(crate) hidden_lod: f32,
    pub(crate) coverage: f32,
    pub(crate) lod_sum: f32,
}

impl TextureNeedSum {
    /// The finest lod any object needs, drawn or not.
    pub(crate) fn lod(&self) -> f32 {
        min(self.visible_lod, self.hidden_lod)
    }
}

impl Default for TextureNeedSum {
    fn default() -> Self {
        Self {
            visible_lod: f32::INFINITY,
            hidden_lod: f32::INFINITY,
            coverage: 0.0,
            lod_sum: 0.0,
        }
    }
}

impl Planner {
    /// Every texture's needs from the objects and `views`, into `sums`.
    pub(super) fn densities(&mut self, views: &[View]) {
        let n = self.textures.len();
        self.sums.clear();
        self.sums.resize(n + 1, TextureNeedSum::default());
        let terms: Vec<ViewTerms> = views
            .iter()
            .map(|v| ViewTerms::new(v, self.options.look_ahead_s))
            .collect();
        // the fixed rules see every object, as their engines do (Unreal's
        // pool ranks textures by when anything last drew them, however far)
        let margin = if self.policy == Policy::Budget {
            1.0 + self.options.hysteresis - self.options.lod_bias
        } else {
            f32::INFINITY
        };
        self.tails.clear();
        self.tails.push(f32::NEG_INFINITY);
        let tails = self.textures.iter();
        let tails = tails.map(|t| t.map_or(f32::NEG_INFINITY, |t| t.tail_level as f32));
        self.tails.extend(tails);
        let (objects, bindings) = (&self.objects[..], &self.bindings[..]);
        if self.layout.maintain(objects, bindings, &self.tails) {
            self.compact_bindings();
        }
        let (objects, bindings) = (&self.objects[..], &self.bindings[..]);
        self.cutoff.clear();
        self.cutoff.extend(self.tails.iter().map(|t| t + margin));
        self.cutoff[0] = f32::INFINITY;
        let pass = Pass {
            views: &terms,
            layout: &self.layout,
            objects,
            bindings,
            cutoff: &self.cutoff,
            margin,
        };
        self.object_terms.accumulate(&pass, &mut self.sums);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::UVec2;

    #[test]
    fn exp2_is_close() {
        for i in -4000..4000 {
            let x = i as f64 * 0.0137;
            let (fast, exact) = (exp2(x), x.exp2());
            assert!(
                ((fast - exact) / exact).abs() < 1e-8,
                "{x}: {fast} vs {exact}"
            );
        }
        assert!(exp2(-5000.0) > 0.0 && exp2(5000.0).is_finite());
    }

    #[test]
    fn fast_log2_is_close() {
        for x in [0.001f32, 0.37, 1.0, 1.5, 2.0, 3.0, 1000.0, 123456.0] {
            assert!(
                (fast_log2(x) - x.log2()).abs() < 0.01,
                "{x}: {} vs {}",
                fast_log2(x),
                x.log2()
            );
        }
    }

    fn view_at(z: f32) -> View {
        // 90 degree fov, 1024 px tall: k = 512 px per unit at distance 1
        View::look_at(
            Vec3::new(0.0, 0.0, z),
            Vec3::new(0.0, 0.0, z - 1.0),
            Vec3::Y,
            std::f32::consts::FRAC_PI_2,
            UVec2::new(1024, 1024),
            0.1,
            1e4,
        )
    }

    fn lod_of(
        views: &[View],
        center: Vec3,
        radius: f32,
        texels: f32,
        world_per_uv: f32,
    ) -> (f32, f32) {
        let need = need_of(views, center, Vec3::splat(radius), texels, world_per_uv);
        (need.lod(), need.coverage)
    }

    fn need_of(
        views: &[View],
        center: Vec3,
        half: Vec3,
        texels: f32,
        world_per_uv: f32,
    ) -> TextureNeedSum {
        let terms: Vec<ViewTerms> = views.iter().map(|v| ViewTerms::new(v, 0.5)).collect();
        let mut layout = Layout::default();
        layout.set(0, center, half);
        let b = Binding {
            sum: 1,
            object: 0,
            lod_offset: texels.log2() - world_per_uv.log2(),
        };
        let slot = crate::plan::ObjectSlot {
            start: 0,
            len: 1,
            alive: true,
        };
        let pass = Pass {
            views: &terms,
            layout: &layout,
            objects: &[slot],
            bindings: &[b],
            // no tail: every lod counts
            cutoff: &[f32::INFINITY; 2],
            margin: 1.25,
        };
        let mut acc = [TextureNeedSum::default(); 2];
        ObjectTerms::default().accumulate(&pass, &mut acc);
        acc[1]
    }

    /// The coverage-weighted lod most pixels of the object need.
    fn typical(n: &TextureNeedSum) -> f32 {
        n.lod_sum / n.coverage
    }

    #[test]
    fn a_ground_under_the_camera_is_mostly_seen_far_beyond_its_centre() {
        // eye 1.7 above the middle of a 200 x 200 ground, looking along it
        let eye = Vec3::new(0.0, 1.7, 0.0);
        let view = View::look_at(
            eye,
            eye + Vec3::new(0.0, -0.1, -1.0),
            Vec3::Y,
            std::f32::consts::FRAC_PI_2,
            UVec2::new(1024, 1024),
            0.1,
            1e4,
        );
        let half = Vec3::new(100.0, 0.01, 100.0);
        let ground = need_of(&[view], Vec3::ZERO, half, 1024.0, 200.0);
        // the nearest pixel is 1.7 away, as is the centre; the far edge
        // ~143: most pixels are at the geometric mean, ~15.6 away, about
        // 3.2 mips coarser than the nearest (the centre said 0)
        let coarser = typical(&ground) - ground.lod();
        let expected = (1.7f32 * (1.7 + half.length())).sqrt().log2() - 1.7f32.log2();
        assert!((coarser - expected).abs() < 0.05, "{coarser} vs {expected}");
        // a small object far off keeps its centre's distance
        let far = view_at(50.0);
        let small = need_of(&[far], Vec3::ZERO, Vec3::splat(1.0), 1024.0, 1.0);
        let at_centre = lod_of(&[view_at(50.0)], Vec3::ZERO, 0.0, 1024.0, 1.0).0;
        assert!((typical(&small) - at_centre).abs() < 0.02);
    }

    #[test]
    fn a_texel_per_pixel_at_the_right_distance() {
        // a 1024-texel texture over 1 world unit, seen from 2 units: 512 px per
        // unit / 2 = 256 px for 1024 texels: 4 texels per pixel = mip 2
        let (lod, cov) = lod_of(&[view_at(2.0)], Vec3::ZERO, 0.0, 1024.0, 1.0);
        assert!((lod - 2.0).abs() < 0.02, "{lod}");
        assert_eq!(cov, 0.0, "a point covers nothing");
        // twice as far: one mip coarser
        let (far, _) = lod_of(&[view_at(4.0)], Vec3::ZERO, 0.0, 1024.0, 1.0);
        assert!((far - lod - 1.0).abs() < 0.02);
        // the texture stretched over 4 units: two mips finer
        let (big, _) = lod_of(&[view_at(2.0)], Vec3::ZERO, 0.0, 1024.0, 4.0);
        assert!((lod - big - 2.0).abs() < 0.02);
    }

    #[test]
    fn offscreen_objects_weigh_less_and_the_finest_view_wins() {
        let behind = view_at(-5.0); // looks towards -z, the object at 0 is behind it
        let (off, off_cov) = lod_of(&[behind], Vec3::ZERO, 1.0, 1024.0, 1.0);
        let front = view_at(5.0);
        let (on, on_cov) = lod_of(&[front], Vec3::ZERO, 1.0, 1024.0, 1.0);
        assert!((off - on - OFFSCREEN_LOD_BIAS).abs() < 0.02, "{off} {on}");
        // off screen: a tenth of the bounding sphere's estimate (its
        // nearest point 4 units away); on screen, this large a box gets the
        // area its box projects to: the near face, 2 units square at 4
        let k = front.pixels_per_unit_at_1();
        let sphere = std::f32::consts::PI * 3.0 * k * k / 16.0;
        assert!(
            (off_cov - sphere * OFFSCREEN_COVERAGE).abs() < 1.0,
            "{off_cov}"
        );
        let face = (2.0 * k / 4.0).powi(2);
        assert!((on_cov - face).abs() < 0.02 * face, "{on_cov} vs {face}");
        // a capture camera close by decides, even with a far main camera
        let (both, _) = lod_of(
            &[view_at(500.0), view_at(2.0).with_weight(0.1)],
            Vec3::ZERO,
            0.0,
            1024.0,
            1.0,
        );
        assert!((both - 2.0).abs() < 0.02);
    }

    #[test]
    fn moving_cameras_plan_for_where_they_will_be() {
        // 100 units away, approaching at 150 units/s: in 0.5 s it is 25 away
        let v = view_at(100.0).with_velocity(Vec3::new(0.0, 0.0, -150.0));
        let (lod, _) = lod_of(&[v], Vec3::ZERO, 0.0, 1024.0, 1.0);
        let (at25, _) = lod_of(&[view_at(25.0)], Vec3::ZERO, 0.0, 1024.0, 1.0);
        assert!((lod - at25).abs() < 0.02);
    }
}
