//! Cameras as the planner sees them: where they are, what they see, and how
//! many pixels a world unit covers at a distance.

use glam::{Mat4, UVec2, Vec3, Vec4};

/// One camera the scene is rendered from this frame.
///
/// Every view counts when deciding what a texture needs: a split-screen second
/// player, a shadow or reflection camera, a capture camera far from the player.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    /// Eye position in world space.
    pub position: Vec3,
    /// Camera velocity in world units per second (0 when still). Loads are
    /// planned for where the camera will be after the planner's look-ahead.
    pub velocity: Vec3,
    /// World-to-clip transform (projection * view), wgpu conventions (depth 0..1).
    pub view_proj: Mat4,
    /// Vertical field of view in radians.
    pub fov_y: f32,
    /// Viewport size in pixels.
    pub viewport: UVec2,
    /// How much this view's pixels matter relative to others (1 = main camera).
    pub weight: f32,
}

impl View {
    /// A perspective camera at `eye` looking at `target`, with `up` as up.
    pub fn look_at(
        eye: Vec3,
        target: Vec3,
        up: Vec3,
        fov_y: f32,
        viewport: UVec2,
        near: f32,
        far: f32,
    ) -> Self {
        let aspect = viewport.x.max(1) as f32 / viewport.y.max(1) as f32;
        let proj = Mat4::perspective_rh(fov_y, aspect, near, far);
        let view = Mat4::look_at_rh(eye, target, up);
        Self {
            position: eye,
            velocity: Vec3::ZERO,
            view_proj: proj * view,
            fov_y,
            viewport,
            weight: 1.0,
        }
    }

    /// The same view moving at `velocity`.
    pub fn with_velocity(mut self, velocity: Vec3) -> Self {
        self.velocity = velocity;
        self
    }

    /// The same view with another weight.
    pub fn with_weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }

    /// Whether the planner can use this view: a viewport with pixels and
    /// finite numbers everywhere (a view that fails is skipped by
    /// [`crate::streamer::Streamer::update`] and counted in `FrameStats::rejected_views`).
    pub fn validate(&self) -> Result<(), ViewError> {
        if self.viewport.x == 0 || self.viewport.y == 0 {
            return Err(ViewError::ZeroViewport(self.viewport));
        }
        let finite = [
            ("position", self.position.is_finite()),
            ("velocity", self.velocity.is_finite()),
            ("view_proj", self.view_proj.is_finite()),
            (
                "fov_y",
                self.fov_y.is_finite() && self.fov_y > 0.0 && self.fov_y < std::f32::consts::PI,
            ),
            ("weight", self.weight.is_finite() && self.weight >= 0.0),
        ];
        match finite.iter().find(|(_, ok)| !ok) {
            Some((field, _)) => Err(ViewError::NotFinite(field)),
            None => Ok(()),
        }
    }

    /// Pixels one world unit covers at distance 1 (divide by the distance).
    pub fn pixels_per_unit_at_1(&self) -> f32 {
        self.viewport.y.max(1) as f32 / (2.0 * (self.fov_y * 0.5).tan().max(1e-6))
    }

    /// The view frustum's planes.
    pub fn frustum(&self) -> Frustum {
        Frustum::from_view_proj(self.view_proj)
    }
}

/// Why a [`View`] cannot be planned for.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The viewport has no pixels.
    #[error("the view's viewport {0} has no pixels")]
    ZeroViewport(UVec2),
    /// A field is infinite or NaN (or, for `fov_y`, outside (0, pi); for
    /// `weight`, negative).
    #[error("the view's {0} is not finite or out of range")]
    NotFinite(&'static str),
}

/// Six planes `n . p + d >= 0` for points inside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frustum {
    planes: [Vec4; 6],
}

impl Frustum {
    /// Extracts the planes of a wgpu-convention (depth 0..1) clip transform.
    pub fn from_view_proj(m: Mat4) -> Self {
        let r = [m.row(0), m.row(1), m.row(2), m.row(3)];
        let planes = [
            r[3] + r[0], // left
            r[3] - r[0], // right
            r[3] + r[1], // bottom
            r[3] - r[1], // top
            r[2],        // near (z >= 0)
            r[3] - r[2], // far
        ]
        .map(|p| p / p.truncate().length().max(1e-12));
        Self { planes }
    }

    /// The same frustum moved by `offset` (for a predicted camera position).
    pub fn translated(&self, offset: Vec3) -> Self {
        Self {
            planes: self
                .planes
                .map(|p| Vec4::new(p.x, p.y, p.z, p.w - p.truncate().dot(offset))),
        }
    }

    /// Whether a sphere touches the frustum.
    #[inline]
    pub fn intersects_sphere(&self, center: Vec3, radius: f32) -> bool {
        let c = center.extend(1.0);
        self.planes.iter().all(|p| p.dot(c) >= -radius)
    }

    /// The six planes (left, right, bottom, top, near, far) as `(normal, d)`
    /// with unit inward normals: `normal . p + d >= 0` inside.
    pub fn planes(&self) -> [Vec4; 6] {
        self.planes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frustum_culls_spheres() {
        let v = View::look_at(
            Vec3::ZERO,
            Vec3::NEG_Z,
            Vec3::Y,
            1.0,
            UVec2::new(100, 100),
            0.1,
            100.0,
        );
        let f = v.frustum();
        assert!(f.intersects_sphere(Vec3::new(0.0, 0.0, -10.0), 1.0));
        assert!(
            !f.intersects_sphere(Vec3::new(0.0, 0.0, 10.0), 1.0),
            "behind"
        );
        assert!(
            !f.intersects_sphere(Vec3::new(50.0, 0.0, -10.0), 1.0),
            "right"
        );
        assert!(
            f.intersects_sphere(Vec3::new(6.0, 0.0, -10.0), 1.5),
            "touching the edge"
        );
        assert!(
            !f.intersects_sphere(Vec3::new(0.0, 0.0, -200.0), 1.0),
            "beyond far"
        );
        let moved = f.translated(Vec3::new(0.0, 0.0, 20.0));
        assert!(moved.intersects_sphere(Vec3::new(0.0, 0.0, 10.0), 1.0));
    }

    #[test]
    fn pixels_per_unit() {
        // 90 degree fov, 200 px tall: at distance 1 the view is 2 units tall
        let v = View::look_at(
            Vec3::ZERO,
            Vec3::NEG_Z,
            Vec3::Y,
            std::f32::consts::FRAC_PI_2,
            UVec2::new(200, 200),
            0.1,
            10.0,
        );
        assert!((v.pixels_per_unit_at_1() - 100.0).abs() < 1e-3);
    }
}
