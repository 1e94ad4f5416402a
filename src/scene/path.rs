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

/// The built-in scene's camera path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CameraPath {
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
            fly_end: 5.0,
            cut_at: 15.0,
            duration: 20.0,
        }
    }

    /// Where the camera is at time `t` (clamped to the path).
    pub fn at(&self, t: f32) -> PathPoint {
        let t = t.clamp(0.0, self.duration);
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

    /// The view at time `t` for a viewport, with a 60 degree vertical field of view.
    pub fn view(&self, t: f32, viewport: UVec2) -> View {
        let p = self.at(t);
        View::look_at(
            p.eye,
            p.target,
            Vec3::Y,
            60f32.to_radians(),
            viewport,
            0.1,
            1000.0,
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
