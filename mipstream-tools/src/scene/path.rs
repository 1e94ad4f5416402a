//! The scripted camera path: a fast fly, a slow walk, and a hard cut; or,
//! for a glTF scene with cameras, along its own camera and a cut back.

use glam::{UVec2, Vec3};
use mipstream::plan::View;
use std::sync::Arc;

/// Which part of the path a point is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// High over the field at about 60 m/s.
    FastFly,
    /// At eye height among the boxes, about 2 m/s, looking around.
    SlowWalk,
    /// Just after a teleport to the far corner; the camera then stands still.
    AfterCut,
    /// Along a scene's own camera ([`CameraPath::along`]).
    Track,
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

/// A camera's pose at a time on a [`CameraTrack`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackKey {
    /// Seconds from the track's start.
    pub time: f32,
    /// The eye.
    pub eye: Vec3,
    /// Where it looks (unit length).
    pub forward: Vec3,
    /// Its up (unit length).
    pub up: Vec3,
}

/// A scene's own camera as a path: its keys, field of view and planes.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraTrack {
    /// What it follows, for reports (a camera and its animation, or a tour
    /// of still cameras).
    pub name: String,
    /// Vertical field of view, radians.
    pub yfov: f32,
    /// Near plane.
    pub near: f32,
    /// Far plane.
    pub far: f32,
    /// At least two keys, times ascending from 0.
    pub keys: Vec<TrackKey>,
}

impl CameraTrack {
    /// Its length in seconds.
    pub fn length(&self) -> f32 {
        self.keys.last().map_or(0.0, |k| k.time)
    }

    /// The pose at `t` (clamped): eye and up interpolated linearly, the
    /// view direction along the shorter arc, and the velocity of that span.
    fn at(&self, t: f32) -> (TrackKey, Vec3) {
        let n = self.keys.len();
        let k = self.keys.partition_point(|k| k.time <= t).clamp(1, n - 1) - 1;
        let (a, b) = (self.keys[k], self.keys[k + 1]);
        let span = b.time - a.time;
        let s = ((t - a.time) / span).clamp(0.0, 1.0);
        let dir = |p: Vec3, q: Vec3| {
            let v = p.lerp(q, s);
            if v.length_squared() > 1e-6 {
                v.normalize()
            } else if s < 0.5 {
                p
            } else {
                q
            }
        };
        let key = TrackKey {
            time: t,
            eye: a.eye.lerp(b.eye, s),
            forward: dir(a.forward, b.forward),
            up: dir(a.up, b.up),
        };
        (key, (b.eye - a.eye) / span)
    }
}

/// The built-in scene's camera path, the same three moves around one
/// object ([`CameraPath::around`]), or a scene's own camera followed
/// ([`CameraPath::along`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CameraPath {
    /// `Some((centre, radius))`: the moves around an object of that bounding
    /// sphere instead of over the built-in field.
    pub object: Option<(Vec3, f32)>,
    /// `Some`: along this camera instead.
    pub track: Option<Arc<CameraTrack>>,
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
            track: None,
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

    /// Along `track` from its start to its end, then a cut back to its
    /// first key, held for a quarter of its length (the cut the other paths
    /// end with). `None` unless the track has two keys or more, times
    /// finite and strictly ascending from 0, and its view parameters make a
    /// view (field of view between 0 and 180 degrees, planes with
    /// `0 < near < far`).
    pub fn along(track: CameraTrack) -> Option<Self> {
        let keys = &track.keys;
        let times = keys.len() >= 2
            && keys[0].time == 0.0
            && keys.windows(2).all(|w| w[0].time < w[1].time)
            && track.length().is_finite();
        let view = track.yfov > 0.0
            && track.yfov < std::f32::consts::PI
            && track.near > 0.0
            && track.far > track.near
            && track.far.is_finite();
        let length = track.length();
        (times && view).then(|| Self {
            object: None,
            fly_end: 0.0,
            cut_at: length,
            duration: length * 1.25,
            track: Some(Arc::new(track)),
        })
    }

    /// A free camera's speed (units per second), vertical field of view and
    /// planes in this path's scene: the built-in field's 8 m/s, 60 degrees
    /// and 0.1-1000; around an object, a radius a second and the path's
    /// planes; along a track, its camera's pace, field of view and planes.
    pub fn fly_settings(&self) -> (f32, f32, (f32, f32)) {
        let (fov, planes) = self.lens();
        let speed = match (&self.track, self.object) {
            (Some(t), _) => {
                let travel: f32 = t.keys.windows(2).map(|w| w[0].eye.distance(w[1].eye)).sum();
                (travel / t.length()).max(t.near * 20.0)
            }
            (None, Some((_, r))) => r,
            (None, None) => 8.0,
        };
        (speed, fov, planes)
    }

    /// The vertical field of view and planes of the path's views.
    fn lens(&self) -> (f32, (f32, f32)) {
        let fov = 60f32.to_radians();
        match (&self.track, self.object) {
            (Some(t), _) => (t.yfov, (t.near, t.far)),
            (None, Some((_, r))) => (fov, (r * 0.02, r * 200.0)),
            (None, None) => (fov, (0.1, 1000.0)),
        }
    }

    /// Along a track: the point at `t` (clamped) and the camera's up.
    fn on_track(&self, track: &CameraTrack, t: f32) -> (PathPoint, Vec3) {
        let t = t.clamp(0.0, self.duration);
        let (k, velocity, segment) = if t < self.cut_at {
            let (k, velocity) = track.at(t);
            (k, velocity, Segment::Track)
        } else {
            (track.keys[0], Vec3::ZERO, Segment::AfterCut)
        };
        let p = PathPoint {
            eye: k.eye,
            target: k.eye + k.forward,
            velocity,
            segment,
        };
        (p, k.up)
    }

    /// What the path follows, for reports.
    pub fn describe(&self) -> String {
        match (&self.track, self.object) {
            (Some(t), _) => format!(
                "{} ({:.1} s), then a cut back to its start",
                t.name,
                t.length()
            ),
            (None, Some(_)) => {
                "around the scene's bounds (it has no camera to follow): an approach, an orbit, a cut"
                    .into()
            }
            (None, None) => "the built-in path: a fast fly, a slow walk, a cut".into(),
        }
    }

    /// Where the camera is at time `t` (clamped to the path).
    pub fn at(&self, t: f32) -> PathPoint {
        let t = t.clamp(0.0, self.duration);
        if let Some(track) = &self.track {
            return self.on_track(track, t).0;
        }
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

    /// The view at time `t` for a viewport, with a 60 degree vertical field
    /// of view (along a track: its camera's field of view, planes and up).
    pub fn view(&self, t: f32, viewport: UVec2) -> View {
        let (p, up) = match &self.track {
            Some(track) => self.on_track(track, t),
            None => (self.at(t), Vec3::Y),
        };
        let (fov, (near, far)) = self.lens();
        View::look_at(p.eye, p.target, up, fov, viewport, near, far).with_velocity(p.velocity)
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

    #[test]
    fn a_track_is_followed_then_cut_back_to_its_start() {
        let key = |time: f32, eye: Vec3, forward: Vec3| TrackKey {
            time,
            eye,
            forward,
            up: Vec3::Y,
        };
        let track = CameraTrack {
            name: "walk".into(),
            yfov: 0.8,
            near: 0.05,
            far: 500.0,
            keys: vec![
                key(0.0, Vec3::ZERO, Vec3::NEG_Z),
                key(2.0, Vec3::new(0.0, 0.0, -4.0), Vec3::NEG_X),
                key(4.0, Vec3::new(-4.0, 0.0, -4.0), Vec3::NEG_X),
            ],
        };
        // one key, or keys out of order, make no path
        let short = CameraTrack {
            keys: track.keys[..1].to_vec(),
            ..track.clone()
        };
        assert!(CameraPath::along(short).is_none());
        let mut unordered = track.clone();
        unordered.keys.swap(1, 2);
        assert!(CameraPath::along(unordered).is_none());
        let p = CameraPath::along(track).unwrap();
        assert_eq!((p.fly_end, p.cut_at, p.duration), (0.0, 4.0, 5.0));
        let a = p.at(1.0);
        assert_eq!(a.segment, Segment::Track);
        assert!(a.eye.distance(Vec3::new(0.0, 0.0, -2.0)) < 1e-6, "{a:?}");
        assert!(
            a.velocity.distance(Vec3::new(0.0, 0.0, -2.0)) < 1e-6,
            "{a:?}"
        );
        let look = (a.target - a.eye).normalize();
        let half = (Vec3::NEG_Z + Vec3::NEG_X).normalize();
        assert!(look.distance(half) < 1e-6, "turning: {look}");
        let b = p.at(3.0);
        assert!(b.eye.distance(Vec3::new(-2.0, 0.0, -4.0)) < 1e-6, "{b:?}");
        let after = p.at(4.5);
        assert_eq!(after.segment, Segment::AfterCut);
        assert_eq!((after.eye, after.velocity), (Vec3::ZERO, Vec3::ZERO));
        // the camera's own field of view and planes
        let v = p.view(1.0, UVec2::new(200, 100));
        let plain = View::look_at(
            a.eye,
            a.target,
            Vec3::Y,
            0.8,
            UVec2::new(200, 100),
            0.05,
            500.0,
        );
        assert_eq!(v.view_proj, plain.view_proj);
    }
}
