//! Bevy's cameras as mipstream views.

use crate::convert;
use bevy::prelude::*;
use std::collections::HashMap;

/// Where each camera was last frame, for its velocity.
#[derive(Resource, Debug, Default)]
pub(crate) struct CameraMotion {
    last: HashMap<Entity, Vec3>,
}

impl CameraMotion {
    /// One view per active perspective camera with a viewport: its position,
    /// view-projection (with a finite far plane: Bevy's own is infinite
    /// reverse-Z), vertical field of view, viewport in pixels, and velocity
    /// from how far it moved since last frame. Orthographic and custom
    /// projections are skipped (no screen size per distance to plan by).
    pub(crate) fn views(
        &mut self,
        cameras: &Query<(Entity, &Camera, &GlobalTransform, &Projection)>,
        dt: f32,
    ) -> Vec<mipstream::View> {
        let mut seen = HashMap::with_capacity(self.last.len());
        let mut views = Vec::new();
        for (entity, camera, transform, projection) in cameras {
            let (Projection::Perspective(p), true) = (projection, camera.is_active) else {
                continue;
            };
            let Some(viewport) = camera.physical_viewport_size() else {
                continue;
            };
            if viewport.x == 0 || viewport.y == 0 {
                continue;
            }
            let position = transform.translation();
            let velocity = match self.last.get(&entity) {
                Some(&was) if dt > 0.0 => (position - was) / dt,
                _ => Vec3::ZERO,
            };
            seen.insert(entity, position);
            let aspect = viewport.x as f32 / viewport.y as f32;
            let near = p.near.max(1e-4);
            let far = p.far.max(near * 2.0);
            let proj = mipstream::glam::Mat4::perspective_rh(p.fov, aspect, near, far);
            let view = convert::mat4(transform.to_matrix().inverse());
            views.push(mipstream::View {
                position: convert::vec3(position),
                velocity: convert::vec3(velocity),
                view_proj: proj * view,
                fov_y: p.fov,
                viewport: mipstream::glam::UVec2::new(viewport.x, viewport.y),
                weight: 1.0,
            });
        }
        self.last = seen;
        views
    }
}
