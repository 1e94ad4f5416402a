//! Meshes in the plan: each mesh's LOD chain joins the textures' chains in
//! the one budget fit, so geometry and texels trade bytes by what a viewer
//! would see.
//!
//! A mesh LOD's geometric error `e` (mesh units, from the cooker) shows on
//! screen as `e * k` pixels, where `k` is the pixels one mesh unit spans at
//! the nearest point of an instance's bounding sphere (the view's pixels per
//! world unit at distance 1, over that distance, times the instance's world
//! units per mesh unit). A mesh *wants* the coarsest LOD whose projected
//! error is within [`PlannerOptions::mesh_error_px`](crate::plan::PlannerOptions::mesh_error_px) for every view; with
//! hysteresis it moves only once the error passes that target by the factor
//! `2^hysteresis` (the textures' margin in mips, as a ratio). Instances
//! outside every frustum count as if `OFFSCREEN_LOD_BIAS` mips (a factor
//! of 4 in distance) further away, with `OFFSCREEN_COVERAGE` of their
//! coverage, as textures do, so a turning camera finds geometry still there.
//!
//! Visible error, in the textures' unit. A mesh cooked with measured image
//! errors (`mesh::image_error`: each LOD's squared error per covered pixel
//! against the full mesh) shows `coverage * boost * m(lod)` of squared error,
//! the unit of a texture's measured loss (under the geometric model, in
//! pixels missing their detail: over [`super::DEFAULT_DETAIL_MSE`]). Without
//! measured errors (pixels that look wrong, times boost): a LOD whose error projects to `x` pixels moves the mesh's outline
//! by about that much, and the surface under its texture and its normals
//! with it: `(4 * 2 * sqrt(pi * coverage) + 8 * coverage) * x` (the
//! perimeter of a disc of that area, weighted 4 for full-contrast edges,
//! plus every covered pixel, weighted 8 against a texture pixel missing all
//! its detail: see `OUTLINE_WEIGHT` and `SURFACE_WEIGHT`, measured). It is
//! not capped at the coverage: a mesh two pixels off is worse than one a
//! pixel off, where a texture missing all its detail is as bad as it gets.
//! Sub-pixel errors count too: a picture comparison sees them. The target
//! decides only the LOD a mesh *wants* (the end of its chain).
//!
//! The coarsest LOD is always resident (like a texture's tail): a mesh at LOD
//! `l` holds the coarsest LOD's bytes plus LOD `l`'s.

use super::density::{OFFSCREEN_COVERAGE, OFFSCREEN_LOD_BIAS};
use super::fit::{Candidate, Stickiness};
use super::{Limit, LossModel, Planner, View, DEFAULT_DETAIL_MSE};
use glam::Vec3;

/// A mesh's LOD chain as the planner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanMesh {
    /// Bytes of each LOD's vertex and index data, finest first.
    pub lod_bytes: Vec<u64>,
    /// Geometric error of each LOD in mesh units, finest first (LOD 0: 0).
    pub lod_errors: Vec<f32>,
    /// Measured image error of each LOD, finest first: squared error per
    /// covered pixel, the unit of a texture's measured loss (see
    /// `mesh::image_error`, the file's `LodInfo::image_error`). Empty when
    /// not measured: the LODs are then judged by their geometric error.
    pub image_errors: Vec<f32>,
    /// Importance multiplier (1 = normal).
    pub boost: f32,
}

impl PlanMesh {
    /// The coarsest LOD (always resident).
    pub fn coarsest(&self) -> u32 {
        self.lod_bytes.len().saturating_sub(1) as u32
    }

    /// Bytes held with `lod` resident: the coarsest LOD's, plus `lod`'s when
    /// it is finer.
    pub fn bytes(&self, lod: u32) -> u64 {
        let c = self.coarsest();
        let base = self.lod_bytes.get(c as usize).copied().unwrap_or(0);
        if lod < c {
            base + self.lod_bytes[lod as usize]
        } else {
            base
        }
    }

    fn error_of(&self, lod: u32) -> f32 {
        self.lod_errors.get(lod as usize).copied().unwrap_or(0.0)
    }

    /// The measured image errors made usable, or empty: one finite,
    /// non-negative value per LOD, non-decreasing along the chain (a
    /// coarser LOD is never taken to look better than a finer one).
    fn usable_image_errors(&self) -> Vec<f32> {
        let e = &self.image_errors;
        if e.len() != self.lod_bytes.len() || e.iter().any(|m| !m.is_finite() || *m < 0.0) {
            return Vec::new();
        }
        e.iter()
            .scan(0.0f32, |top, &m| {
                *top = top.max(m);
                Some(*top)
            })
            .collect()
    }
}

/// What a mesh has resident now (input to the planner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeshResident {
    /// The finest resident LOD.
    pub lod: u32,
    /// Frame at which it became resident.
    pub since_frame: u64,
}

/// The plan for one mesh.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeshPlan {
    /// Largest pixels per mesh unit any view sees of it (0: no view does).
    pub pixels_per_unit: f32,
    /// Weighted screen coverage in pixels.
    pub coverage: f32,
    /// LOD it wants (after hysteresis).
    pub wanted: u32,
    /// LOD the budget gives it.
    pub target: u32,
    /// Why `target` is coarser than wanted, if it is.
    pub limit: Option<Limit>,
    /// Error removed per byte by moving from the resident LOD to the target.
    pub priority: f32,
}

impl Default for MeshPlan {
    fn default() -> Self {
        Self {
            pixels_per_unit: 0.0,
            coverage: 0.0,
            wanted: 0,
            target: 0,
            limit: None,
            priority: 0.0,
        }
    }
}

impl MeshPlan {
    /// Projected error of `lod` of `mesh` in pixels at the nearest view.
    pub fn screen_error_px(&self, mesh: &PlanMesh, lod: u32) -> f32 {
        mesh.error_of(lod) * self.pixels_per_unit
    }
}

/// An object's meshes with its bounds (by object slot).
#[derive(Debug, Clone, Default)]
pub(super) struct MeshObject {
    center: Vec3,
    radius: f32,
    /// (mesh slot, world units per mesh unit)
    meshes: Vec<(usize, f32)>,
}

/// What the views need of a mesh this frame.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MeshNeed {
    /// Pixels per mesh unit at the nearest instance.
    pub(super) k: f32,
    pub(super) coverage: f32,
    /// A view draws an instance (inside its frustum).
    pub(super) visible: bool,
}

/// How much worse a pixel on a moved outline is than a pixel of a texture
/// missing detail (full-contrast edges against a blur).
const OUTLINE_WEIGHT: f64 = 4.0;

/// How much a pixel of a mesh's surface changes per pixel of projected
/// error, against a pixel of a texture missing all its detail: a coarser LOD
/// moves the surface under its texture and bends its normals, so every
/// pixel it covers shades differently. Measured on FlightHelmet (`mipstream
/// bench`, 25% budget, 320x180, lavapipe): with the textures one mip coarser
/// everywhere the picture lost 0.5 dB, with the meshes one LOD coarser 4 dB;
/// weights 0, 2 and 8 gave mipstream 41.1, 41.3 and 42.5 dB.
const SURFACE_WEIGHT: f64 = 8.0;

/// Pixels that look wrong on a mesh covering `coverage` pixels with a
/// projected error of `px` pixels, in the textures' unit.
fn wrong_pixels(coverage: f64, px: f32) -> f64 {
    let coverage = coverage.max(0.0);
    let outline = 2.0 * (std::f64::consts::PI * coverage).sqrt();
    (OUTLINE_WEIGHT * outline + SURFACE_WEIGHT * coverage) * px.max(0.0) as f64
}

/// One mesh's visible-error model this frame (see the module docs).
struct MeshError<'a> {
    mesh: &'a PlanMesh,
    need: MeshNeed,
    /// The measured image errors, when usable.
    measured: Vec<f32>,
    /// Squared error per pixel in the textures' unit (measured curves).
    per_mse: f64,
    /// A wrong pixel in the textures' unit (geometric error).
    per_pixel: f64,
}

impl MeshError<'_> {
    fn at(&self, lod: u32) -> f64 {
        let boost = self.mesh.boost.max(0.0) as f64;
        let coverage = self.need.coverage.max(0.0) as f64;
        match self.measured.get(lod as usize) {
            Some(&m) => boost * coverage * m as f64 * self.per_mse,
            None => {
                let px = self.mesh.error_of(lod) * self.need.k;
                boost * self.per_pixel * wrong_pixels(coverage, px)
            }
        }
    }
}

impl Planner {
    /// Sets or replaces the mesh in `slot`.
    pub fn set_mesh(&mut self, slot: usize, mesh: PlanMesh) {
        if self.meshes.len() <= slot {
            self.meshes.resize(slot + 1, None);
            self.mesh_wanted.resize(slot + 1, 0);
            self.mesh_last_seen.resize(slot + 1, u64::MAX);
        }
        self.mesh_last_seen[slot] = u64::MAX;
        self.mesh_wanted[slot] = mesh.coarsest();
        self.meshes[slot] = Some(mesh);
    }

    /// Removes the mesh in `slot`; objects that showed it stop counting it.
    pub fn remove_mesh(&mut self, slot: usize) {
        if let Some(m) = self.meshes.get_mut(slot) {
            *m = None;
        }
        for o in self.mesh_objects.iter_mut().flatten() {
            o.meshes.retain(|&(m, _)| m != slot);
        }
    }

    /// Sets the meshes the object in `slot` shows, each with the world units
    /// one mesh unit spans (the instance's scale); an empty list removes them.
    pub fn set_object_meshes(
        &mut self,
        slot: usize,
        center: Vec3,
        half: Vec3,
        meshes: &[(usize, f32)],
    ) {
        if self.mesh_objects.len() <= slot {
            self.mesh_objects.resize(slot + 1, None);
        }
        self.mesh_objects[slot] = (!meshes.is_empty()).then(|| MeshObject {
            center,
            radius: half.length(),
            meshes: meshes.to_vec(),
        });
    }

    pub(super) fn move_mesh_object(&mut self, slot: usize, center: Vec3, half: Vec3) {
        if let Some(Some(o)) = self.mesh_objects.get_mut(slot) {
            o.center = center;
            o.radius = half.length();
        }
    }

    pub(super) fn remove_mesh_object(&mut self, slot: usize) {
        if let Some(o) = self.mesh_objects.get_mut(slot) {
            *o = None;
        }
    }

    /// Per mesh: the largest pixels per mesh unit and the summed coverage
    /// over every instance and view (with the look-ahead positions).
    pub(super) fn mesh_needs(&mut self, views: &[View]) {
        self.mesh_need.clear();
        self.mesh_need
            .resize(self.meshes.len(), MeshNeed::default());
        if self.meshes.iter().all(Option::is_none) {
            return;
        }
        let look_ahead = self.options.look_ahead_s;
        let offscreen_distance = OFFSCREEN_LOD_BIAS.exp2();
        for v in views {
            let frustum = v.frustum();
            let ppu = v.pixels_per_unit_at_1();
            let area = v.viewport.x as f32 * v.viewport.y as f32;
            let ahead = v.velocity * look_ahead;
            let positions: &[Vec3] = if ahead == Vec3::ZERO {
                &[Vec3::ZERO]
            } else {
                &[Vec3::ZERO, ahead]
            };
            for o in self.mesh_objects.iter().flatten() {
                for &offset in positions {
                    let eye = v.position + offset;
                    let seen = frustum
                        .translated(offset)
                        .intersects_sphere(o.center, o.radius);
                    let (dist_factor, cov_factor) = if seen {
                        (1.0, 1.0)
                    } else {
                        (offscreen_distance, OFFSCREEN_COVERAGE)
                    };
                    let to_center = (o.center - eye).length();
                    let near = (to_center - o.radius).max(o.radius * 0.05).max(1e-4);
                    let px_per_world = ppu / (near * dist_factor);
                    let projected = o.radius * ppu / to_center.max(o.radius).max(1e-4);
                    let coverage = (std::f32::consts::PI * projected * projected).min(area)
                        * cov_factor
                        * v.weight;
                    for &(m, scale) in &o.meshes {
                        let Some(n) = self.mesh_need.get_mut(m) else {
                            continue;
                        };
                        n.k = n.k.max(px_per_world * scale.abs());
                        n.coverage += coverage;
                        n.visible |= seen;
                    }
                }
            }
        }
    }

    /// The wanted LOD of `mesh` at `k` pixels per mesh unit, with
    /// hysteresis against `previous`.
    pub(super) fn mesh_wanted_lod(&self, mesh: &PlanMesh, k: f32, previous: u32) -> u32 {
        let coarsest = mesh.coarsest();
        if k.is_nan() || k <= 0.0 {
            return coarsest;
        }
        let target = self.options.mesh_error_px.max(1e-3);
        let px = |l: u32| mesh.error_of(l) * k;
        let strict = (0..=coarsest).rev().find(|&l| px(l) <= target).unwrap_or(0);
        let f = self.options.hysteresis.max(0.0).exp2();
        let p = previous.min(coarsest);
        let stay = px(p) <= target * f && (p == coarsest || px(p + 1) > target / f);
        if stay {
            p
        } else {
            strict
        }
    }

    /// Bytes of every mesh at exactly the LOD the last [`Planner::mesh_needs`]
    /// asks for (no hysteresis), with its coarsest LOD.
    pub(super) fn mesh_wanted_bytes(&self) -> u64 {
        let target = self.options.mesh_error_px.max(1e-3);
        self.meshes
            .iter()
            .enumerate()
            .filter_map(|(slot, m)| {
                let m = m.as_ref()?;
                let k = self.mesh_need.get(slot).map_or(0.0, |n| n.k);
                let lod = if k > 0.0 {
                    (0..=m.coarsest())
                        .rev()
                        .find(|&l| m.error_of(l) * k <= target)
                        .unwrap_or(0)
                } else {
                    m.coarsest()
                };
                Some(m.bytes(lod))
            })
            .sum()
    }

    /// Appends every mesh's chain (coarsest first) after the textures'.
    pub(super) fn build_mesh_chains(&mut self, resident: &[MeshResident], frame: u64) {
        self.mesh_order.clear();
        for slot in 0..self.meshes.len() {
            let Some(mesh) = self.meshes[slot].take() else {
                continue;
            };
            let need = self.mesh_need.get(slot).copied().unwrap_or_default();
            let wanted = self.mesh_wanted_lod(&mesh, need.k, self.mesh_wanted[slot]);
            self.mesh_wanted[slot] = wanted;
            let coarsest = mesh.coarsest();
            let model = self.mesh_error(&mesh, need);
            let r = resident.get(slot).copied();
            // as for textures: recent detail is kept while the views want it
            let locked = r.is_some_and(|r| {
                frame.saturating_sub(r.since_frame) < self.options.min_residency_frames
                    && r.lod >= wanted
            });
            // With the spare-budget floor on, every LOD is offered: steps
            // past the wanted one remove only sub-pixel error, so they get
            // the bytes the views' needs leave (the meshes' floor; the
            // textures get theirs from `raise_floor`). A picture comparison
            // sees sub-pixel outline moves: without this, a full budget left
            // every mesh a pixel off.
            let finest = if self.options.spare_floor { 0 } else { wanted };
            // growing into a finer LOD stages its buffers; the old detail is
            // released first unless cross-fades keep it (the streamer says)
            let held = r.map_or(coarsest, |r| r.lod.min(coarsest));
            let detail = |lod: u32| mesh.bytes(lod) - mesh.bytes(coarsest);
            for lod in (finest..=coarsest).rev() {
                let grow = if lod >= held {
                    0
                } else if self.keep_old_mesh_lod {
                    detail(lod) + detail(held)
                } else {
                    detail(lod)
                };
                self.chains.push(Candidate {
                    bytes: mesh.bytes(lod),
                    error: model.at(lod),
                    grow,
                });
            }
            self.offsets.push(self.chains.len() as u32);
            // chain index i holds LOD coarsest - i; the resident one, or the
            // finest offered when the resident LOD is finer still
            let resident_index =
                r.map_or(0, |r| (coarsest - r.lod.clamp(finest, coarsest)) as usize);
            self.sticky.push(Stickiness {
                resident: resident_index,
                keep_bonus: self.options.keep_bonus,
                locked,
            });
            self.mesh_order.push(slot);
            self.meshes[slot] = Some(mesh);
        }
    }

    /// Writes the meshes' part of the plan from the fit's choices
    /// (`first_chain`: the index of the first mesh chain).
    pub(super) fn write_mesh_plan(&mut self, resident: &[MeshResident], first_chain: usize) {
        self.plan.meshes.clear();
        self.plan
            .meshes
            .resize(self.meshes.len(), MeshPlan::default());
        for (i, &slot) in self.mesh_order.iter().enumerate() {
            let mesh = self.meshes[slot].as_ref().expect("planned meshes exist");
            let chain = first_chain + i;
            let base = self.offsets[chain] as usize;
            let chosen_index = self.choice[chain] as usize;
            let coarsest = mesh.coarsest();
            let lod = coarsest - chosen_index as u32;
            let need = self.mesh_need.get(slot).copied().unwrap_or_default();
            let wanted = self.mesh_wanted[slot];
            let now = resident.get(slot).map_or(coarsest, |r| r.lod.min(coarsest));
            let priority = if lod == now {
                0.0
            } else {
                let e_now = self.mesh_error(mesh, need).at(now);
                let e_to = self.chains[base + chosen_index].error;
                let bytes = mesh.bytes(lod).saturating_sub(mesh.bytes(now)).max(1);
                ((e_now - e_to).max(0.0) / bytes as f64) as f32
            };
            self.plan.tail_bytes += mesh.bytes(coarsest);
            self.plan.meshes[slot] = MeshPlan {
                pixels_per_unit: need.k,
                coverage: need.coverage,
                wanted,
                target: lod,
                limit: (lod > wanted).then_some(Limit::Budget),
                priority,
            };
        }
    }

    /// The error model of `mesh` this frame, in the textures' unit: under
    /// measured loss squared error per pixel; under the geometric model
    /// pixels missing their detail, a measured mesh's squared error over
    /// [`super::DEFAULT_DETAIL_MSE`]. A geometric wrong pixel weighs what a
    /// texture missing all its detail does (`detail_scale`).
    fn mesh_error<'a>(&self, mesh: &'a PlanMesh, need: MeshNeed) -> MeshError<'a> {
        let per_mse = if self.options.error_model == LossModel::Measured {
            1.0
        } else {
            1.0 / DEFAULT_DETAIL_MSE
        };
        MeshError {
            mesh,
            need,
            measured: mesh.usable_image_errors(),
            per_mse,
            per_pixel: self.detail_scale,
        }
    }

    /// The mesh in `slot`, if any.
    pub fn mesh(&self, slot: usize) -> Option<&PlanMesh> {
        self.meshes.get(slot).and_then(Option::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{camera, texture};
    use super::*;
    use crate::kinds::Tier;
    use crate::plan::{PlanTexture, Planner};

    /// A mesh of 6 LODs halving from 64 KiB, errors doubling from 0.001.
    fn mesh() -> PlanMesh {
        PlanMesh {
            image_errors: Vec::new(),
            lod_bytes: (0..6).map(|l| 65536u64 >> l).collect(),
            lod_errors: (0..6)
                .map(|l| if l == 0 { 0.0 } else { 0.001 * (1 << l) as f32 })
                .collect(),
            boost: 1.0,
        }
    }

    /// Without the spare-budget floor: the plan is what the views need.
    fn planner_with_mesh_at(z: f32) -> Planner {
        let mut p = Planner::new(crate::plan::PlannerOptions {
            spare_floor: false,
            ..Default::default()
        });
        p.set_mesh(0, mesh());
        p.set_object_meshes(0, Vec3::new(0.0, 0.0, z), Vec3::splat(0.5), &[(0, 1.0)]);
        p
    }

    #[test]
    fn the_wanted_lod_is_the_coarsest_within_a_pixel_of_error() {
        let mut lods = Vec::new();
        for z in [-1.0, -3.0, -10.0, -30.0, -100.0, -1000.0] {
            let mut p = planner_with_mesh_at(z);
            let plan = p.plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0);
            let m = plan.meshes[0];
            let mesh = mesh();
            assert!(m.screen_error_px(&mesh, m.wanted) <= 1.0, "{z}: {m:?}");
            if m.wanted > 0 {
                assert!(m.screen_error_px(&mesh, m.wanted - 1) <= 1.0);
            }
            if m.wanted < mesh.coarsest() {
                assert!(m.screen_error_px(&mesh, m.wanted + 1) > 1.0, "{z}: {m:?}");
            }
            assert_eq!(
                m.target, m.wanted,
                "an unlimited budget gives what is wanted"
            );
            lods.push(m.wanted);
        }
        assert!(lods.windows(2).all(|w| w[0] <= w[1]), "{lods:?}");
        assert_eq!(lods[0], 0, "{lods:?}");
        assert_eq!(*lods.last().unwrap(), mesh().coarsest(), "{lods:?}");
    }

    #[test]
    fn spare_budget_takes_meshes_past_the_lod_they_need() {
        let mut p = Planner::default(); // the spare-budget floor on
        p.set_mesh(0, mesh());
        p.set_object_meshes(
            0,
            Vec3::new(0.0, 0.0, -100.0),
            Vec3::splat(0.5),
            &[(0, 1.0)],
        );
        let plan = p
            .plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
            .clone();
        let m = plan.meshes[0];
        assert!(m.wanted > 0, "{m:?}");
        assert_eq!(m.target, 0, "room for everything: the finest LOD");
        assert_eq!(m.limit, None);
        // with room for the wanted LOD only, the wanted LOD
        let budget = mesh().bytes(m.wanted);
        let plan = p
            .plan_with_meshes(&[camera(0.0)], budget, &[], &[], 1)
            .clone();
        assert_eq!(plan.meshes[0].target, m.wanted, "{:?}", plan.meshes[0]);
    }

    #[test]
    fn jitter_around_a_lod_boundary_does_not_flip_the_wanted_lod() {
        let mut p = planner_with_mesh_at(-10.0);
        // find a distance where the wanted LOD changes, then jitter around it
        let wanted_at = |p: &mut Planner, z: f32| {
            p.move_object(0, Vec3::new(0.0, 0.0, z), Vec3::splat(0.5));
            p.plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
                .meshes[0]
                .wanted
        };
        let mut fresh = planner_with_mesh_at(-10.0);
        let first = wanted_at(&mut fresh, -10.0);
        let edge = (10..400)
            .map(|i| -10.0 - i as f32 * 0.25)
            .find(|&z| wanted_at(&mut fresh, z) != first)
            .expect("a boundary between 10 and 110 units");
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..50 {
            let z = edge + if i % 2 == 0 { 0.05 } else { -0.05 };
            seen.insert(wanted_at(&mut p, z));
        }
        assert_eq!(seen.len(), 1, "flickered between {seen:?}");
    }

    #[test]
    fn meshes_and_textures_share_one_budget_by_benefit_per_byte() {
        // a mesh right in front of the camera and a texture far away: with
        // room for one of them, the mesh's detail removes more error per byte
        let tex: PlanTexture = texture(1024, false);
        let mut p = Planner::new(crate::plan::PlannerOptions {
            spare_floor: false,
            ..Default::default()
        });
        p.set_texture(0, tex.clone());
        p.set_object(
            0,
            Vec3::new(30.0, 0.0, -300.0),
            Vec3::splat(1.0),
            &[(0, 2.0)],
        );
        p.set_mesh(0, mesh());
        p.set_object_meshes(1, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(0.5), &[(0, 1.0)]);
        let unlimited = p
            .plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
            .clone();
        assert_eq!(unlimited.meshes[0].target, 0);
        let base = tex.bytes(tex.tail_level, Tier::Full) + mesh().bytes(mesh().coarsest());
        // the detail, and room to stage it
        let budget = base + 2 * (mesh().bytes(0) - mesh().bytes(mesh().coarsest()));
        let plan = p
            .plan_with_meshes(&[camera(0.0)], budget, &[], &[], 1)
            .clone();
        assert_eq!(plan.meshes[0].target, 0, "{:?}", plan.meshes);
        assert!(plan.bytes <= budget, "{} > {budget}", plan.bytes);
        // and the other way round: the mesh far, the texture close
        p.move_object(0, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(1.0));
        p.move_object(1, Vec3::new(30.0, 0.0, -3000.0), Vec3::splat(0.5));
        let tex_budget =
            base + 2 * tex.bytes(0, Tier::Full) - tex.bytes(tex.tail_level, Tier::Full);
        let plan = p
            .plan_with_meshes(&[camera(0.0)], tex_budget, &[], &[], 100)
            .clone();
        assert_eq!(
            plan.meshes[0].target,
            mesh().coarsest(),
            "{:?}",
            plan.meshes
        );
        assert!(
            plan.textures[0].target < tex.tail_level,
            "{:?}",
            plan.textures
        );
        assert!(plan.bytes <= tex_budget);
    }

    #[test]
    fn under_measured_loss_a_mesh_is_weighed_in_the_measured_unit() {
        // one measured texture far off (at its tail, nothing missing) and a
        // mesh close by held at its coarsest LOD: the plan's error is the
        // mesh's alone, which under measured loss is counted in the measured
        // unit (the textures' mean tail error per wrong pixel), not left in
        // pixels where a texture's squared error would always outweigh it
        let tex = texture(1024, false);
        let tail_error = 500.0;
        let measured_tex = PlanTexture {
            loss: Some(crate::plan::PlanLoss {
                full: (0..tex.level_count)
                    .map(|l| tail_error * l as f32 / tex.tail_level as f32)
                    .collect(),
                ..Default::default()
            }),
            ..tex.clone()
        };
        let error = |model: crate::plan::LossModel| {
            let mut p = Planner::new(crate::plan::PlannerOptions {
                spare_floor: false,
                error_model: model,
                ..Default::default()
            });
            p.set_texture(0, measured_tex.clone());
            p.set_object(
                0,
                Vec3::new(30.0, 0.0, -30000.0),
                Vec3::splat(1.0),
                &[(0, 2.0)],
            );
            p.set_mesh(0, mesh());
            p.set_object_meshes(1, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(0.5), &[(0, 1.0)]);
            let base = tex.bytes(tex.tail_level, Tier::Full) + mesh().bytes(mesh().coarsest());
            let plan = p.plan_with_meshes(&[camera(0.0)], base, &[], &[], 0);
            assert_eq!(plan.meshes[0].target, mesh().coarsest());
            assert_eq!(plan.textures[0].target, tex.tail_level);
            plan.fit_error
        };
        let geometric = error(crate::plan::LossModel::Geometric);
        let measured = error(crate::plan::LossModel::Measured);
        assert!(geometric > 0.0);
        let ratio = measured / geometric;
        assert!(
            (ratio - tail_error as f64).abs() < 1e-3 * tail_error as f64,
            "{measured} / {geometric} = {ratio}"
        );
    }

    #[test]
    fn a_mesh_with_measured_image_errors_is_judged_by_them_in_both_models() {
        // the mesh close by held at its coarsest LOD, nothing else in view:
        // the plan's error is the mesh's, coverage times the measured error
        // per covered pixel (over the default detail error under the
        // geometric model), whatever its geometric error
        let m = PlanMesh {
            image_errors: vec![0.0, 3.0, 7.0, 20.0, 50.0, 90.0],
            ..mesh()
        };
        let run = |model: crate::plan::LossModel, m: &PlanMesh| {
            let mut p = Planner::new(crate::plan::PlannerOptions {
                spare_floor: false,
                error_model: model,
                ..Default::default()
            });
            p.set_mesh(0, m.clone());
            p.set_object_meshes(0, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(0.5), &[(0, 1.0)]);
            let base = m.bytes(m.coarsest());
            let plan = p.plan_with_meshes(&[camera(0.0)], base, &[], &[], 0);
            assert_eq!(plan.meshes[0].target, m.coarsest());
            (plan.fit_error, plan.meshes[0].coverage as f64)
        };
        let (measured, coverage) = run(crate::plan::LossModel::Measured, &m);
        assert!(coverage > 0.0);
        assert!(
            (measured - coverage * 90.0).abs() < 1e-6 * measured,
            "{measured}"
        );
        let (geometric, _) = run(crate::plan::LossModel::Geometric, &m);
        let expect = coverage * 90.0 / crate::plan::DEFAULT_DETAIL_MSE;
        assert!((geometric - expect).abs() < 1e-6 * expect, "{geometric}");
        // unusable errors (one per LOD, finite, not negative) are ignored:
        // the geometric error judges the mesh as before
        for bad in [vec![0.0, 1.0], vec![0.0, 3.0, f32::NAN, 20.0, 50.0, 90.0]] {
            let b = PlanMesh {
                image_errors: bad,
                ..mesh()
            };
            assert_eq!(
                run(crate::plan::LossModel::Measured, &b).0,
                run(crate::plan::LossModel::Measured, &mesh()).0
            );
        }
        // a curve that dips is taken as its running maximum
        let dipping = PlanMesh {
            image_errors: vec![0.0, 3.0, 7.0, 2.0, 50.0, 1.0],
            ..mesh()
        };
        let (e, _) = run(crate::plan::LossModel::Measured, &dipping);
        assert!((e - coverage * 50.0).abs() < 1e-6 * e, "{e}");
    }

    #[test]
    fn a_mesh_a_pixel_off_is_worse_than_a_texture_missing_all_its_detail() {
        // per covered pixel, in the textures' unit (a texture missing all
        // its detail is wrong on each pixel it covers, weight 1)
        for coverage in [100.0, 10_000.0, 1e6] {
            let one = wrong_pixels(coverage, 1.0);
            assert!(one > coverage, "{coverage}: {one}");
            // linear in the error, with no cap: two pixels off is twice as bad
            let two = wrong_pixels(coverage, 2.0);
            assert!((two - 2.0 * one).abs() < 1e-6 * one, "{one} {two}");
            assert!(wrong_pixels(coverage, 0.1) > 0.0, "sub-pixel error counts");
            assert_eq!(wrong_pixels(coverage, 0.0), 0.0);
        }
        // thin meshes (small coverage) weigh their outline more per pixel
        let per_pixel = |c: f64| wrong_pixels(c, 1.0) / c;
        assert!(per_pixel(100.0) > per_pixel(1e6));
    }

    #[test]
    fn a_budget_that_cannot_pay_keeps_the_coarsest_lod_and_says_why() {
        let mut p = planner_with_mesh_at(-1.0);
        let plan = p.plan_with_meshes(&[camera(0.0)], 0, &[], &[], 0).clone();
        let m = plan.meshes[0];
        assert_eq!(m.target, mesh().coarsest());
        assert_eq!(m.wanted, 0);
        assert_eq!(m.limit, Some(Limit::Budget));
        assert_eq!(plan.tail_bytes, mesh().bytes(mesh().coarsest()));
    }

    #[test]
    fn removed_meshes_and_objects_are_ignored() {
        let mut p = planner_with_mesh_at(-1.0);
        p.remove_object(0);
        let plan = p
            .plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
            .clone();
        assert_eq!(plan.meshes[0].target, mesh().coarsest(), "nothing shows it");
        p.set_object_meshes(1, Vec3::new(0.0, 0.0, -1.0), Vec3::splat(0.5), &[(0, 1.0)]);
        assert_eq!(
            p.plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
                .meshes[0]
                .target,
            0
        );
        p.remove_mesh(0);
        let plan = p
            .plan_with_meshes(&[camera(0.0)], u64::MAX, &[], &[], 0)
            .clone();
        assert_eq!(plan.bytes, 0);
    }
}
