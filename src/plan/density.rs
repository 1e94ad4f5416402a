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
//! at object centres (what most of its pixels need) weighs its error, so a
//! large ground under the camera wants fine levels but does not claim the
//! whole budget for the few pixels at its near edge.

use super::view::{Frustum, View};
use glam::Vec3;

/// Mips added to the lod of an object outside every view's frustum.
pub const OFFSCREEN_LOD_BIAS: f32 = 2.0;
/// Coverage multiplier for an object outside every view's frustum.
pub const OFFSCREEN_COVERAGE: f32 = 0.1;

/// One texture used by one object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Binding {
    /// Planner texture slot.
    pub(crate) texture: u32,
    /// `log2(texture size) - log2(world units per UV unit)`.
    pub(crate) lod_offset: f32,
}

/// Per-view constants, computed once per plan.
pub(crate) struct ViewTerms {
    eyes: [Vec3; 2],
    frusta: [Frustum; 2],
    log2_k: f32,
    k: f32,
    weight: f32,
    max_coverage: f32,
    near: f32,
}

impl ViewTerms {
    pub(crate) fn new(view: &View, look_ahead_s: f32) -> Self {
        let offset = view.velocity * look_ahead_s;
        let frustum = view.frustum();
        let k = view.pixels_per_unit_at_1();
        Self {
            eyes: [view.position, view.position + offset],
            frusta: [frustum, frustum.translated(offset)],
            log2_k: k.log2(),
            k,
            weight: view.weight.max(0.0),
            max_coverage: view.viewport.x as f32 * view.viewport.y as f32,
            near: 0.05,
        }
    }
}

/// Fast `log2` for positive normal floats, within 0.01 of the exact value.
#[inline]
pub(crate) fn fast_log2(x: f32) -> f32 {
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as f32 - 127.0;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000); // [1, 2)
                                                                // quadratic fit of log2(m) on [1, 2)
    exp + (-0.344_845 * m + 2.024_658) * m - 1.674_873
}

/// Accumulates, for every texture slot, the finest lod and the total weighted
/// screen coverage (pixels) over the objects and views.
pub(crate) struct DensityPass<'a> {
    pub(crate) views: &'a [ViewTerms],
    pub(crate) lod: &'a mut [f32],
    pub(crate) coverage: &'a mut [f32],
    /// Coverage-weighted sum of the lod at object centres (divide by coverage).
    pub(crate) lod_sum: &'a mut [f32],
}

impl DensityPass<'_> {
    /// One object bounded by the box `center +- half` and its bindings. The
    /// distance is to the box (exact for boxes, so a large ground under the
    /// camera is not taken as touching the eye); visibility and coverage use
    /// the box's bounding sphere.
    #[inline]
    pub(crate) fn object(&mut self, center: Vec3, half: Vec3, bindings: &[Binding]) {
        let radius = half.length();
        let mut best_term = f32::INFINITY;
        let mut cover = 0.0f32;
        // coverage-weighted lod term at the centre: what most pixels need
        let mut typical = 0.0f32;
        for v in self.views {
            let mut visible = false;
            let mut dist = f32::INFINITY;
            for i in 0..2 {
                let d = ((center - v.eyes[i]).abs() - half).max(Vec3::ZERO).length();
                dist = dist.min(d);
                visible |= v.frusta[i].intersects_sphere(center, radius);
            }
            let dist = dist.max(v.near);
            let mut term = fast_log2(dist) - v.log2_k;
            let px = (radius * v.k / dist).min(v.max_coverage.sqrt());
            let mut c = (std::f32::consts::PI * px * px).min(v.max_coverage) * v.weight;
            let mut center_term = fast_log2((center - v.eyes[0]).length().max(v.near)) - v.log2_k;
            if !visible {
                term += OFFSCREEN_LOD_BIAS;
                center_term += OFFSCREEN_LOD_BIAS;
                c *= OFFSCREEN_COVERAGE;
            }
            best_term = best_term.min(term);
            cover += c;
            typical += c * center_term.max(term);
        }
        for b in bindings {
            let t = b.texture as usize;
            let lod = b.lod_offset + best_term;
            if lod < self.lod[t] {
                self.lod[t] = lod;
            }
            self.coverage[t] += cover;
            self.lod_sum[t] += typical + cover * b.lod_offset;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::UVec2;

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
        let terms: Vec<ViewTerms> = views.iter().map(|v| ViewTerms::new(v, 0.5)).collect();
        let (mut lod, mut cov, mut sum) = (vec![f32::INFINITY], vec![0.0], vec![0.0]);
        let mut pass = DensityPass {
            views: &terms,
            lod: &mut lod,
            coverage: &mut cov,
            lod_sum: &mut sum,
        };
        let b = Binding {
            texture: 0,
            lod_offset: texels.log2() - world_per_uv.log2(),
        };
        pass.object(center, Vec3::splat(radius), &[b]);
        (lod[0], cov[0])
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
        assert!((off_cov - on_cov * OFFSCREEN_COVERAGE).abs() < 1.0);
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
