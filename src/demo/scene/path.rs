//! The scripted camera path: a fast fly, a slow walk, and a hard cut.

use crate::plan::View;
use glam::{UVec2, Vec3};

/// Which part of the path a point is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// High over the field at about 60 m/s.
    FastFly,
    /// At eye height among the boxes, about 2 m/s, looking around.
    SlowWalk,
    /// Just after a teleport to the far corner; the camera then stands still.
    AfterCut,
}

/// A camera on the path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathPoint {
    /// Eye position.
    pub eye: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Velocity in world units per second.
    pub velocity: Vec3,
    /// The segment.
    pub segment: Segment,
}

/// The built-in scene's camera path, or the same three moves around one
/// object ([`CameraPath::around`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CameraPath {
    /// `Some((centre, radius))`: the moves around an object of that bounding
    /// sphere instead of over the built-in field.
    pub object: Option<(Vec3, f32)>,
    /// End of the fast fly, seconds.
    pub fly_end: f32,
    /// End of the walk, and time of the cut, seconds.
    pub cut_at: f32,
    /// End of the path, seconds.
    pub duration: f32,
}

impl CameraPath {
    /// The path of the built-in scene (20 s).
    pub fn builtin() -> Self {
        Self {
            object: None,
            fly_end: 5.0,
            cut_at: 15.0,
            duration: 20.0,
        }
    }

    /// The path around an object of bounding sphere `center`, `radius` (a
    /// glTF scene): a fast approach from 60 radii to 2, a slow orbit between
    /// 1.4 and 3 radii, then a cut to 12 radii on the far side.
    pub fn around(center: Vec3, radius: f32) -> Self {
        Self {
            object: Some((center, radius.max(1e-3))),
            ..Self::builtin()
        }
    }

    /// Where the camera is at time `t` (clamped to the path).
    pub fn at(&self, t: f32) -> PathPoint {
        let t = t.clamp(0.0, self.duration);
        if let Some((c, r)) = self.object {
            return self.around_at(t, c, r);
        }
        if t < self.fly_end {
            let s = t / self.fly_end;
            let (a, b) = (Vec3::new(-110.0, 35.0, -110.0), Vec3::new(90.0, 35.0, 90.0));
            let eye = a.lerp(b, s);
            let dir = (b - a).normalize();
            PathPoint {
                eye,
                target: eye + dir * 40.0 + Vec3::new(0.0, -25.0, 0.0),
                velocity: (b - a) / self.fly_end,
                segment: Segment::FastFly,
            }
        } else if t < self.cut_at {
            let span = self.cut_at - self.fly_end;
            let s = (t - self.fly_end) / span;
            let (a, b) = (Vec3::new(-14.0, 1.7, -12.0), Vec3::new(6.0, 1.7, 8.0));
            let eye = a.lerp(b, s);
            let yaw = std::f32::consts::FRAC_PI_4 + 1.2 * (s * std::f32::consts::TAU).sin();
            PathPoint {
                eye,
                target: eye + Vec3::new(yaw.cos(), -0.1, yaw.sin()) * 10.0,
                velocity: (b - a) / span,
                segment: Segment::SlowWalk,
            }
        } else {
            let eye = Vec3::new(100.0, 6.0, -100.0);
            PathPoint {
                eye,
                target: Vec3::new(0.0, 2.0, 0.0),
                velocity: Vec3::ZERO,
                segment: Segment::AfterCut,
            }
        }
    }

    fn around_at(&self, t: f32, c: Vec3, r: f32) -> PathPoint {
        let dir = |yaw: f32, pitch: f32| {
            Vec3::new(
                yaw.cos() * pitch.cos(),
                pitch.sin(),
                yaw.sin() * pitch.cos(),
            )
        };
        if t < self.fly_end {
            // distance falls geometrically: 60 r to 2 r
            let s = t / self.fly_end;
            let d = |s: f32| r * 60.0 * (2.0f32 / 60.0).powf(s);
            let eye = c + dir(1.0, 0.3) * d(s);
            let ahead = c + dir(1.0, 0.3) * d((s + 0.01).min(1.0));
            PathPoint {
                eye,
                target: c,
                velocity: (ahead - eye) / (0.01 * self.fly_end),
                segment: Segment::FastFly,
            }
        } else if t < self.cut_at {
            let span = self.cut_at - self.fly_end;
            let s = (t - self.fly_end) / span;
            let yaw = 1.0 + s * std::f32::consts::TAU * 0.75;
            let dist = r * (2.2 + 0.8 * (s * std::f32::consts::TAU * 2.0).cos());
            let eye = c + dir(yaw, 0.15) * dist;
            let look = c + Vec3::new(0.0, r * 0.2 * (s * 9.0).sin(), 0.0);
            PathPoint {
                eye,
                target: look,
                velocity: dir(yaw + std::f32::consts::FRAC_PI_2, 0.0) * dist * 4.7 / span,
                segment: Segment::SlowWalk,
            }
        } else {
            PathPoint {
                eye: c + dir(-2.0, 0.2) * r * 12.0,
                target: c,
                velocity: Vec3::ZERO,
                segment: Segment::AfterCut,
            }
        }
    }

    /// The view at time `t` for a viewport, with a 60 degree vertical field of view.
    pub fn view(&self, t: f32, viewport: UVec2) -> View {
        let p = self.at(t);
        let (near, far) = match self.object {
            Some((_, r)) => (r * 0.02, r * 200.0),
            None => (0.1, 1000.0),
        };
        View::look_at(
            p.eye,
            p.target,
            Vec3::Y,
            60f32.to_radians(),
            viewport,
            near,
            far,
        )
        .with_velocity(p.velocity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_has_its_three_moves() {
        let p = CameraPath::builtin();
        assert_eq!(p.at(1.0).segment, Segment::FastFly);
        assert!(p.at(1.0).velocity.length() > 50.0);
        assert_eq!(p.at(10.0).segment, Segment::SlowWalk);
        assert!(p.at(10.0).velocity.length() < 3.0);
        let before = p.at(p.cut_at - 0.01).eye;
        let after = p.at(p.cut_at).eye;
        assert!(before.distance(after) > 100.0, "a hard cut");
        assert_eq!(p.at(p.cut_at).segment, Segment::AfterCut);
    }
}
