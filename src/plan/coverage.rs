//! Screen coverage of large objects from their boxes.
//!
//! The per-object pass ([`super::density`]) estimates coverage from the
//! bounding sphere at the box's nearest point, capped at the viewport: cheap
//! and right for small, distant objects, but every object large next to how
//! near it is reads as "the whole screen": a ground under the camera and a
//! wall in front of it both cover everything. For the few objects whose
//! sphere estimate passes [`REFINE_SHARE`] of the viewport, the coverage is
//! taken instead from the box itself: its corners (clipped where they lie
//! behind the camera) projected to the screen, their convex hull clipped to
//! the viewport, and that polygon's area. A ground seen from eye height then
//! covers the lower part of the screen, not all of it. (What is behind what
//! is still not known: a wall in front of the ground does not take pixels
//! from it.)

use glam::{Mat4, Vec2, Vec3, Vec4};

/// Sphere-estimated coverage, as a share of the viewport, above which an
/// object's coverage is computed from its box.
pub(crate) const REFINE_SHARE: f32 = 1.0 / 64.0;

/// Clip-space `w` below which a point counts as behind the camera (box
/// edges crossing it are cut there).
const NEAR_W: f32 = 1e-3;

/// Pixels of `viewport` covered by the box `center +- half` under the
/// clip transform `view_proj` (wgpu conventions: `w` is the view depth).
pub(crate) fn box_screen_area(view_proj: Mat4, viewport: Vec2, center: Vec3, half: Vec3) -> f32 {
    let corners: [Vec4; 8] = std::array::from_fn(|i| {
        let s = Vec3::new(
            if i & 1 == 0 { -1.0 } else { 1.0 },
            if i & 2 == 0 { -1.0 } else { 1.0 },
            if i & 4 == 0 { -1.0 } else { 1.0 },
        );
        view_proj * (center + s * half).extend(1.0)
    });
    let mut points: Vec<Vec2> = Vec::with_capacity(20);
    let project = |c: Vec4| {
        let ndc = Vec2::new(c.x, c.y) / c.w;
        Vec2::new(
            (ndc.x * 0.5 + 0.5) * viewport.x,
            (0.5 - ndc.y * 0.5) * viewport.y,
        )
    };
    for c in corners {
        if c.w >= NEAR_W {
            points.push(project(c));
        }
    }
    // edges crossing the plane w = NEAR_W: the points where they cross
    for a in 0..8usize {
        for bit in [1usize, 2, 4] {
            let b = a | bit;
            if b == a {
                continue;
            }
            let (ca, cb) = (corners[a], corners[b]);
            if (ca.w >= NEAR_W) != (cb.w >= NEAR_W) {
                let t = (NEAR_W - ca.w) / (cb.w - ca.w);
                points.push(project(ca + (cb - ca) * t));
            }
        }
    }
    if points.len() < 3 {
        return 0.0;
    }
    let hull = convex_hull(points);
    let clipped = clip_to_rect(&hull, viewport);
    polygon_area(&clipped)
}

/// The convex hull, counter-clockwise (Andrew's monotone chain).
fn convex_hull(mut p: Vec<Vec2>) -> Vec<Vec2> {
    p.retain(|v| v.is_finite());
    p.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let cross = |o: Vec2, a: Vec2, b: Vec2| (a - o).perp_dot(b - o);
    let mut hull: Vec<Vec2> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &Vec2>> = if pass == 0 {
            Box::new(p.iter())
        } else {
            Box::new(p.iter().rev())
        };
        for &v in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], v) <= 0.0
            {
                hull.pop();
            }
            hull.push(v);
        }
        hull.pop();
    }
    hull
}

/// Sutherland-Hodgman clipping of a convex polygon to `[0, size]`.
fn clip_to_rect(poly: &[Vec2], size: Vec2) -> Vec<Vec2> {
    let mut out = poly.to_vec();
    // (axis, bound, keep when coordinate >= bound)
    for (axis, bound, above) in [
        (0, 0.0, true),
        (0, size.x, false),
        (1, 0.0, true),
        (1, size.y, false),
    ] {
        let inside = |v: Vec2| {
            let c = if axis == 0 { v.x } else { v.y };
            if above {
                c >= bound
            } else {
                c <= bound
            }
        };
        let input = std::mem::take(&mut out);
        for (i, &cur) in input.iter().enumerate() {
            let prev = input[(i + input.len() - 1) % input.len()];
            let cross_at = |a: Vec2, b: Vec2| {
                let (ca, cb) = if axis == 0 { (a.x, b.x) } else { (a.y, b.y) };
                a + (b - a) * ((bound - ca) / (cb - ca))
            };
            match (inside(prev), inside(cur)) {
                (true, true) => out.push(cur),
                (true, false) => out.push(cross_at(prev, cur)),
                (false, true) => {
                    out.push(cross_at(prev, cur));
                    out.push(cur);
                }
                (false, false) => {}
            }
        }
        if out.is_empty() {
            break;
        }
    }
    out
}

fn polygon_area(p: &[Vec2]) -> f32 {
    if p.len() < 3 {
        return 0.0;
    }
    let twice: f32 = (0..p.len())
        .map(|i| p[i].perp_dot(p[(i + 1) % p.len()]))
        .sum();
    twice.abs() * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::View;
    use glam::UVec2;

    fn view(eye: Vec3, at: Vec3) -> View {
        View::look_at(eye, at, Vec3::Y, 1.0, UVec2::new(1280, 720), 0.1, 1000.0)
    }

    #[test]
    fn a_box_filling_the_view_covers_the_viewport() {
        let v = view(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO);
        let vp = Vec2::new(1280.0, 720.0);
        let a = box_screen_area(v.view_proj, vp, Vec3::ZERO, Vec3::new(50.0, 50.0, 1.0));
        assert!((a - 1280.0 * 720.0).abs() < 1.0, "{a}");
        // a small box straight ahead: about its projected square
        let a = box_screen_area(v.view_proj, vp, Vec3::ZERO, Vec3::new(0.5, 0.5, 0.0));
        let side = v.pixels_per_unit_at_1() * 1.0 / 5.0;
        assert!(
            (a - side * side).abs() < 0.02 * side * side,
            "{a} vs {}",
            side * side
        );
        // behind the camera: nothing
        let a = box_screen_area(v.view_proj, vp, Vec3::new(0.0, 0.0, 20.0), Vec3::splat(0.5));
        assert_eq!(a, 0.0);
    }

    #[test]
    fn a_ground_seen_from_eye_height_covers_the_lower_half() {
        // looking level over a huge ground 1.7 below the eye: below the
        // horizon, which is the middle of the screen
        let v = view(Vec3::new(0.0, 1.7, 0.0), Vec3::new(0.0, 1.7, -10.0));
        let vp = Vec2::new(1280.0, 720.0);
        let a = box_screen_area(v.view_proj, vp, Vec3::ZERO, Vec3::new(500.0, 0.0, 500.0));
        let half = 1280.0 * 720.0 / 2.0;
        assert!((a - half).abs() < 0.03 * half, "{a} vs {half}");
    }
}
