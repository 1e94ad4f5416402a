//! The viewer's fly camera: WASD to move, Q/E down/up, Shift to go faster,
//! a mouse drag to look around.

use crate::scene::CameraPath;
use glam::{UVec2, Vec3};
use mipstream::plan::View;

/// Keys the camera reads, held or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveKeys {
    /// W.
    pub forward: bool,
    /// S.
    pub back: bool,
    /// A.
    pub left: bool,
    /// D.
    pub right: bool,
    /// E.
    pub up: bool,
    /// Q.
    pub down: bool,
    /// Shift: four times the speed.
    pub fast: bool,
}

/// A free-flying camera.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlyCamera {
    /// Eye position.
    pub eye: Vec3,
    /// Heading, radians (0 looks along +X, π/2 along +Z).
    pub yaw: f32,
    /// Elevation, radians, within ±89°.
    pub pitch: f32,
    /// Metres per second at normal speed.
    pub speed: f32,
    /// Vertical field of view, radians.
    pub fov_y: f32,
    /// Near and far planes.
    pub planes: (f32, f32),
    velocity: Vec3,
}

impl FlyCamera {
    /// A camera at `eye` looking at `target`.
    pub fn looking_at(eye: Vec3, target: Vec3) -> Self {
        let d = (target - eye).normalize_or(Vec3::X);
        Self {
            eye,
            yaw: d.z.atan2(d.x),
            pitch: d.y.clamp(-1.0, 1.0).asin(),
            speed: 8.0,
            fov_y: 60f32.to_radians(),
            planes: (0.1, 1000.0),
            velocity: Vec3::ZERO,
        }
    }

    /// A camera at `eye` looking at `target` in the scene of `path`: its
    /// speed, field of view and planes fitted to that scene (see
    /// [`CameraPath::fly_settings`]).
    pub fn in_scene(eye: Vec3, target: Vec3, path: &CameraPath) -> Self {
        let (speed, fov_y, planes) = path.fly_settings();
        Self {
            speed,
            fov_y,
            planes,
            ..Self::looking_at(eye, target)
        }
    }

    /// The unit direction the camera looks in.
    pub fn forward(&self) -> Vec3 {
        Vec3::new(
            self.yaw.cos() * self.pitch.cos(),
            self.pitch.sin(),
            self.yaw.sin() * self.pitch.cos(),
        )
    }

    /// Turns by a mouse movement of `dx, dy` pixels.
    pub fn look(&mut self, dx: f32, dy: f32) {
        const RADIANS_PER_PIXEL: f32 = 0.004;
        self.yaw += dx * RADIANS_PER_PIXEL;
        self.pitch = (self.pitch - dy * RADIANS_PER_PIXEL).clamp(-1.55, 1.55);
    }

    /// Moves for `dt` seconds with `keys` held.
    pub fn advance(&mut self, keys: MoveKeys, dt: f32) {
        let f = self.forward();
        let right = f.cross(Vec3::Y).normalize_or(Vec3::X);
        let axis = |pos: bool, neg: bool| pos as i32 as f32 - neg as i32 as f32;
        let dir = f * axis(keys.forward, keys.back)
            + right * axis(keys.right, keys.left)
            + Vec3::Y * axis(keys.up, keys.down);
        let speed = self.speed * if keys.fast { 4.0 } else { 1.0 };
        self.velocity = dir.normalize_or_zero() * speed;
        self.eye += self.velocity * dt.max(0.0);
    }

    /// The streamer's view of this camera for a viewport, with its velocity so
    /// the planner can look ahead.
    pub fn view(&self, viewport: UVec2) -> View {
        View::look_at(
            self.eye,
            self.eye + self.forward(),
            Vec3::Y,
            self.fov_y,
            viewport,
            self.planes.0,
            self.planes.1,
        )
        .with_velocity(self.velocity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looking_at_then_forward_points_at_the_target() {
        let c = FlyCamera::looking_at(Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 6.0, 3.0));
        let want = Vec3::new(3.0, 4.0, 0.0).normalize();
        assert!(c.forward().distance(want) < 1e-5, "{:?}", c.forward());
    }

    #[test]
    fn a_camera_in_a_small_scene_flies_at_its_scale_and_sees_close_up() {
        // a helmet-sized object: 0.4 units of radius
        let path = CameraPath::around(Vec3::ZERO, 0.4);
        let c = FlyCamera::in_scene(Vec3::new(0.0, 0.0, 0.05), Vec3::ZERO, &path);
        assert_eq!(c.speed, 0.4);
        // a surface 5 cm ahead is drawn (the built-in field's 0.1 near
        // plane would clip it)
        let depth = |c: &FlyCamera| {
            c.view(UVec2::new(64, 64))
                .view_proj
                .project_point3(Vec3::ZERO)
                .z
        };
        assert!((0.0..1.0).contains(&depth(&c)), "{}", depth(&c));
        let field = FlyCamera::looking_at(c.eye, Vec3::ZERO);
        assert!(!(0.0..1.0).contains(&depth(&field)), "{}", depth(&field));
        // the built-in field keeps its settings
        let b = FlyCamera::in_scene(Vec3::ZERO, Vec3::X, &CameraPath::builtin());
        assert_eq!((b.speed, b.planes), (8.0, (0.1, 1000.0)));
    }

    #[test]
    fn keys_move_along_the_view_and_shift_is_faster() {
        let mut c = FlyCamera::looking_at(Vec3::ZERO, Vec3::Z);
        let w = MoveKeys {
            forward: true,
            ..Default::default()
        };
        c.advance(w, 0.5);
        assert!(
            c.eye.distance(Vec3::new(0.0, 0.0, 4.0)) < 1e-4,
            "{:?}",
            c.eye
        );
        let before = c.eye;
        c.advance(MoveKeys { fast: true, ..w }, 0.5);
        assert!((c.eye.distance(before) - 16.0).abs() < 1e-3);
        // D strafes to the right of +Z, which is -X with Y up
        let p = c.eye;
        c.advance(
            MoveKeys {
                right: true,
                ..Default::default()
            },
            1.0,
        );
        assert!((c.eye - p).x < -7.9, "{:?}", c.eye - p);
        // looking up never flips over
        c.look(0.0, -1e6);
        assert!(c.pitch <= 1.55);
    }
}
