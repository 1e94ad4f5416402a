//! The default scene's cameras: each perspective camera node with its world
//! pose, sampled along the animation that moves it (the node or any of its
//! ancestors), so `mipstream bench` and the viewer can follow the path an
//! artist animated instead of orbiting the scene's bounds.
//!
//! Of the animations, the first (in file order) with a channel on the
//! camera's node or an ancestor moves it; its channels on that chain are
//! evaluated as glTF defines them (`STEP`, `LINEAR` with spherical
//! interpolation of rotations, `CUBICSPLINE` Hermite splines) at
//! [`KEYS_PER_SECOND`] over the animation's time span, at most [`MAX_KEYS`]
//! keys (fewer per second for a longer one).

use super::scene::{node_name, walk};
use crate::mesh::scene_file::{CameraKey, SceneCamera};
use glam::{Mat4, Quat, Vec3};
use gltf::animation::util::ReadOutputs;
use gltf::animation::{Interpolation, Property};
use std::collections::HashMap;

/// Keys per second of an animated camera.
pub(super) const KEYS_PER_SECOND: f32 = 30.0;
/// Most keys kept for one camera.
pub(super) const MAX_KEYS: usize = 10_000;

/// One channel's keys: times and values (translation or scale `[x, y, z,
/// 0]`, rotation `[x, y, z, w]`; for a cubic spline, in-tangent, value and
/// out-tangent per key).
struct Channel {
    property: Property,
    interpolation: Interpolation,
    times: Vec<f32>,
    values: Vec<[f32; 4]>,
}

impl Channel {
    /// The value at time `t` (clamped to the keys).
    fn at(&self, t: f32) -> [f32; 4] {
        let cubic = self.interpolation == Interpolation::CubicSpline;
        let value = |k: usize| self.values[if cubic { 3 * k + 1 } else { k }];
        let n = self.times.len();
        if t <= self.times[0] || n == 1 {
            return value(0);
        }
        if t >= self.times[n - 1] {
            return value(n - 1);
        }
        let k = self.times.partition_point(|&x| x <= t) - 1;
        let dt = self.times[k + 1] - self.times[k];
        let s = if dt > 0.0 {
            (t - self.times[k]) / dt
        } else {
            0.0
        };
        let rotation = self.property == Property::Rotation;
        match self.interpolation {
            Interpolation::Step => value(k),
            Interpolation::Linear if rotation => {
                let (a, b) = (Quat::from_array(value(k)), Quat::from_array(value(k + 1)));
                a.normalize().slerp(b.normalize(), s).to_array()
            }
            Interpolation::Linear => {
                let (a, b) = (value(k), value(k + 1));
                std::array::from_fn(|i| a[i] + (b[i] - a[i]) * s)
            }
            Interpolation::CubicSpline => {
                let (s2, s3) = (s * s, s * s * s);
                let (p0, m0) = (value(k), self.values[3 * k + 2]);
                let (p1, m1) = (value(k + 1), self.values[3 * (k + 1)]);
                let v: [f32; 4] = std::array::from_fn(|i| {
                    (2.0 * s3 - 3.0 * s2 + 1.0) * p0[i]
                        + (s3 - 2.0 * s2 + s) * dt * m0[i]
                        + (-2.0 * s3 + 3.0 * s2) * p1[i]
                        + (s3 - s2) * dt * m1[i]
                });
                if rotation {
                    Quat::from_array(v).normalize().to_array()
                } else {
                    v
                }
            }
        }
    }
}

/// The channels of one animation, by node.
type Clip = (String, HashMap<usize, Vec<Channel>>);

/// Every animation's translation, rotation and scale channels (weights are
/// not poses); an unreadable channel is left out with a warning.
fn clips(
    document: &gltf::Document,
    buffers: &[gltf::buffer::Data],
    warnings: &mut Vec<String>,
) -> Vec<Clip> {
    let mut out = Vec::new();
    for a in document.animations() {
        let name = a
            .name()
            .map_or_else(|| format!("#{}", a.index()), str::to_owned);
        let mut by_node: HashMap<usize, Vec<Channel>> = HashMap::new();
        for c in a.channels() {
            let reader = c.reader(|b| buffers.get(b.index()).map(|d| &d.0[..]));
            let times: Option<Vec<f32>> = reader.read_inputs().map(|i| i.collect());
            let values: Option<Vec<[f32; 4]>> = match reader.read_outputs() {
                Some(ReadOutputs::Translations(v)) | Some(ReadOutputs::Scales(v)) => {
                    Some(v.map(|[x, y, z]| [x, y, z, 0.0]).collect())
                }
                Some(ReadOutputs::Rotations(r)) => Some(r.into_f32().collect()),
                _ => None,
            };
            let property = c.target().property();
            if property == Property::MorphTargetWeights {
                continue;
            }
            let interpolation = c.sampler().interpolation();
            let per_key = if interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let ok = |t: &[f32], v: &[[f32; 4]]| {
                !t.is_empty()
                    && v.len() == t.len() * per_key
                    && t.windows(2).all(|w| w[0] <= w[1])
                    && t.iter().chain(v.iter().flatten()).all(|x| x.is_finite())
            };
            match (times, values) {
                (Some(times), Some(values)) if ok(&times, &values) => by_node
                    .entry(c.target().node().index())
                    .or_default()
                    .push(Channel {
                        property,
                        interpolation,
                        times,
                        values,
                    }),
                _ => warnings.push(format!(
                    "animation {name}: channel {} has unreadable or inconsistent keys: left out",
                    c.index()
                )),
            }
        }
        out.push((name, by_node));
    }
    out
}

/// A node's local transform at `t`: its rest pose with the clip's channels
/// on it applied.
fn local(node: &gltf::Node<'_>, channels: Option<&Vec<Channel>>, t: f32) -> Mat4 {
    let (mut tr, mut rot, mut sc) = node.transform().decomposed();
    for c in channels.into_iter().flatten() {
        let v = c.at(t);
        match c.property {
            Property::Translation => tr = [v[0], v[1], v[2]],
            Property::Rotation => rot = v,
            Property::Scale => sc = [v[0], v[1], v[2]],
            Property::MorphTargetWeights => {}
        }
    }
    Mat4::from_scale_rotation_translation(
        Vec3::from(sc),
        Quat::from_array(rot).normalize(),
        Vec3::from(tr),
    )
}

/// The pose a camera node's world transform gives, if it is one (finite,
/// not degenerate).
fn key(world: Mat4, time: f32) -> Option<CameraKey> {
    let eye = world.transform_point3(Vec3::ZERO);
    let forward = world.transform_vector3(Vec3::NEG_Z).normalize_or_zero();
    let up = world.transform_vector3(Vec3::Y);
    // up square to forward (a sheared or scaled node may tilt it)
    let up = (up - forward * up.dot(forward)).normalize_or_zero();
    (eye.is_finite() && forward != Vec3::ZERO && up != Vec3::ZERO).then(|| CameraKey {
        time,
        eye: eye.to_array(),
        forward: forward.to_array(),
        up: up.to_array(),
    })
}

/// The default scene's perspective cameras (orthographic ones are left out
/// with a warning), in node order.
pub(super) fn cameras(
    document: &gltf::Document,
    buffers: &[gltf::buffer::Data],
    warnings: &mut Vec<String>,
) -> Vec<SceneCamera> {
    let mut found = Vec::new();
    // the instances' walk already warned of a cut tree
    walk(document, &mut Vec::new(), |node, world, chain| {
        if let Some(camera) = node.camera() {
            found.push((node.clone(), camera, world, chain.to_vec()));
        }
    });
    if found.is_empty() {
        return Vec::new();
    }
    found.sort_by_key(|(n, ..)| n.index());
    let clips = clips(document, buffers, warnings);
    let nodes: Vec<gltf::Node<'_>> = document.nodes().collect();
    let mut out = Vec::new();
    for (node, camera, world, chain) in found {
        let name = node_name(&node);
        let gltf::camera::Projection::Perspective(p) = camera.projection() else {
            warnings.push(format!(
                "camera {name} is orthographic: left out (the views are perspective)"
            ));
            continue;
        };
        let clip = clips
            .iter()
            .find(|(_, by_node)| chain.iter().any(|n| by_node.contains_key(n)));
        let (keys, expected): (Vec<CameraKey>, usize) = match clip {
            None => (key(world, 0.0).into_iter().collect(), 1),
            Some((_, by_node)) => {
                let times = chain
                    .iter()
                    .filter_map(|n| by_node.get(n))
                    .flatten()
                    .flat_map(|c| [c.times[0], c.times[c.times.len() - 1]]);
                let (start, end) =
                    times.fold((f32::MAX, f32::MIN), |(a, b), t| (a.min(t), b.max(t)));
                let steps =
                    (((end - start) * KEYS_PER_SECOND).ceil() as usize).clamp(1, MAX_KEYS - 1);
                let keys = (0..=steps)
                    .filter_map(|i| {
                        let t = start + (end - start) * i as f32 / steps as f32;
                        let world = chain.iter().fold(Mat4::IDENTITY, |w, &n| {
                            w * local(&nodes[n], by_node.get(&n), t)
                        });
                        key(world, t - start)
                    })
                    .collect();
                (keys, steps + 1)
            }
        };
        // a degenerate pose anywhere makes the keys useless as a path
        if keys.len() != expected {
            warnings.push(format!(
                "camera {name} has a degenerate pose (a zero scale?): left out"
            ));
            continue;
        }
        // an animation whose keys all sit at one time is a still camera
        let keys = if keys.len() > 1 && keys[keys.len() - 1].time <= 0.0 {
            vec![keys[0]]
        } else {
            keys
        };
        out.push(SceneCamera {
            name,
            yfov: p.yfov(),
            znear: p.znear(),
            zfar: p.zfar(),
            animation: clip.map(|(n, _)| n.clone()),
            keys,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(property: Property, interpolation: Interpolation, values: Vec<[f32; 4]>) -> Channel {
        Channel {
            property,
            interpolation,
            times: vec![1.0, 3.0],
            values,
        }
    }

    #[test]
    fn channels_interpolate_as_gltf_defines() {
        let linear = channel(
            Property::Translation,
            Interpolation::Linear,
            vec![[0.0, 0.0, 4.0, 0.0], [2.0, 0.0, 0.0, 0.0]],
        );
        assert_eq!(linear.at(0.0), [0.0, 0.0, 4.0, 0.0], "clamped before");
        assert_eq!(linear.at(2.0), [1.0, 0.0, 2.0, 0.0]);
        assert_eq!(linear.at(9.0), [2.0, 0.0, 0.0, 0.0], "clamped after");
        let step = channel(
            Property::Translation,
            Interpolation::Step,
            vec![[0.0; 4], [1.0, 1.0, 1.0, 0.0]],
        );
        assert_eq!(step.at(2.9), [0.0; 4]);
        assert_eq!(step.at(3.0), [1.0, 1.0, 1.0, 0.0]);
        // a quarter turn about y, slerped: halfway is an eighth
        let q = Quat::from_rotation_y(std::f32::consts::FRAC_PI_2).to_array();
        let turn = channel(
            Property::Rotation,
            Interpolation::Linear,
            vec![Quat::IDENTITY.to_array(), q],
        );
        let half = Quat::from_array(turn.at(2.0));
        let eighth = Quat::from_rotation_y(std::f32::consts::FRAC_PI_4);
        assert!(half.angle_between(eighth) < 1e-4, "{half:?}");
        // a cubic spline with zero tangents eases: a quarter of the way in
        // time is 5/32 of the way in value (3s^2 - 2s^3)
        let z = [0.0; 4];
        let cubic = channel(
            Property::Translation,
            Interpolation::CubicSpline,
            vec![z, z, z, z, [1.0, 0.0, 0.0, 0.0], z],
        );
        assert!(
            (cubic.at(1.5)[0] - 5.0 / 32.0).abs() < 1e-6,
            "{:?}",
            cubic.at(1.5)
        );
        // and with the tangents of a straight line it is that line
        let slope = [0.5, 0.0, 0.0, 0.0];
        let line = channel(
            Property::Translation,
            Interpolation::CubicSpline,
            vec![z, z, slope, slope, [1.0, 0.0, 0.0, 0.0], z],
        );
        assert!((line.at(1.5)[0] - 0.25).abs() < 1e-6, "{:?}", line.at(1.5));
    }

    #[test]
    fn a_pose_looks_down_the_nodes_negative_z_with_its_y_up() {
        let world = Mat4::from_rotation_translation(
            Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
            Vec3::new(1.0, 2.0, 3.0),
        );
        let k = key(world, 0.5).unwrap();
        assert_eq!(k.eye, [1.0, 2.0, 3.0]);
        assert!(Vec3::from(k.forward).distance(Vec3::NEG_X) < 1e-6, "{k:?}");
        assert!(Vec3::from(k.up).distance(Vec3::Y) < 1e-6, "{k:?}");
        assert!(key(Mat4::from_scale(Vec3::ZERO), 0.0).is_none());
    }
}
