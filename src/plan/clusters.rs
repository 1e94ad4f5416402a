//! Objects in spatial clusters, so a plan does no per-object work for the
//! ones too far away to need anything above their textures' tails.
//!
//! An object a view sees so coarse that each of its textures would be held
//! at its tail whatever was resident before (its lod, with the bias, at
//! least `tail + 1 + hysteresis`; for an object outside every view, the lod
//! it would have in view) needs nothing of those textures: the tail is
//! always resident. It adds nothing to their sums (see
//! [`super::density`]): not its lod, not its coverage. (Before, its few
//! pixels still weighed the texture's error for levels it never needed.)
//! That is the budget fit's model; the fixed rules of [`super::policy`]
//! see every object, as their engines do.
//! Whole clusters of such objects are skipped from one test on their box:
//! in an open world most objects are far, and at a million objects the
//! plan touched every one of them every frame.
//!
//! The layout keeps the objects' bounds in cluster order, as plain `f32`
//! arrays ([`Bounds`]) the per-object pass runs over in SIMD lanes. Objects
//! are sorted into clusters of [`CLUSTER_SIZE`] along a Morton curve of
//! their centres once a scene has [`MIN_CLUSTERED`] objects; objects added
//! later wait in a loose tail (always evaluated) until the layout is built
//! again, which happens when the loose, dead or moved objects pass an
//! eighth of the clustered ones. A moved object stretches its cluster's box
//! (a cluster only ever errs towards being evaluated). Skipping is exact:
//! the tests check the clustered pass against evaluating every object.

use super::terms::{fast_log2, Binding, Bounds};
use super::{ObjectSlot, Planner};
use glam::Vec3;

/// Objects per cluster (and per chunk of the per-object pass).
pub(crate) const CLUSTER_SIZE: usize = 256;

/// Below this many objects the layout stays in insertion order, one loose
/// tail: the full pass is cheap, and the order of the sums is the old one.
pub(crate) const MIN_CLUSTERED: usize = 4096;

/// Slack (in mips) a skip keeps against `f32` rounding.
const SKIP_SLACK: f32 = 1e-3;

/// No position.
const NONE: u32 = u32::MAX;

/// A run of positions in the layout and what bounds all of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cluster {
    pub(crate) start: u32,
    pub(crate) len: u32,
    lo: Vec3,
    hi: Vec3,
    /// The largest `tail - lod_offset` over its live objects' bindings: an
    /// object needs something of a texture only while its finest lod term
    /// is below this plus the planner's margin.
    reach: f32,
    dirty: bool,
}

impl Cluster {
    /// Whether a view, its eye and predicted eye at `eyes`, could see an
    /// object of this cluster fine enough to need more than tails:
    /// `log2_k` and `near_squared` as the per-object pass uses them,
    /// `margin` = `1 + hysteresis - lod_bias`.
    pub(crate) fn may_need(
        &self,
        eyes: [Vec3; 2],
        log2_k: f32,
        near_squared: f32,
        margin: f32,
    ) -> bool {
        let d2 = eyes
            .iter()
            .map(|e| {
                let d = (self.lo - *e).max(*e - self.hi).max(Vec3::ZERO);
                d.length_squared()
            })
            .fold(f32::INFINITY, f32::min);
        // the per-object pass's finest term, at the cluster's nearest point
        // (no object is nearer; its off-screen bias only adds)
        let term = 0.5 * fast_log2(d2.max(near_squared)) - log2_k;
        // (an infinite margin: every object counts, even in a cluster with
        // no binding)
        margin == f32::INFINITY || term < self.reach + margin + SKIP_SLACK
    }
}

/// The objects' bounds in cluster order, and the clusters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    pub(crate) bounds: Bounds,
    /// The object slot at each position.
    pub(crate) slot: Vec<u32>,
    /// The position of each object slot ([`NONE`]: not laid out).
    pos: Vec<u32>,
    pub(crate) clusters: Vec<Cluster>,
    /// Positions `clustered..` are the loose tail.
    pub(crate) clustered: usize,
    /// Objects removed, moved out of their cluster's box, since the build.
    stale: usize,
}

impl Layout {
    /// Sets object `slot`'s box (new objects join the loose tail).
    pub(crate) fn set(&mut self, slot: usize, center: Vec3, half: Vec3) {
        if self.pos.len() <= slot {
            self.pos.resize(slot + 1, NONE);
        }
        let p = match self.pos[slot] {
            NONE => {
                let p = self.slot.len();
                self.slot.push(slot as u32);
                self.bounds.resize(p + 1);
                self.pos[slot] = p as u32;
                p
            }
            p => p as usize,
        };
        self.bounds.set(p, center, half);
        if p < self.clustered {
            let c = &mut self.clusters[p / CLUSTER_SIZE];
            let (lo, hi) = (center - half.abs(), center + half.abs());
            if lo.cmplt(c.lo).any() || hi.cmpgt(c.hi).any() {
                c.lo = c.lo.min(lo);
                c.hi = c.hi.max(hi);
                self.stale += 1;
            }
        }
    }

    /// Object `slot`'s bindings changed: its cluster's reach is computed
    /// again before the next plan.
    pub(crate) fn bindings_changed(&mut self, slot: usize) {
        if let Some(&p) = self.pos.get(slot) {
            if (p as usize) < self.clustered {
                self.clusters[p as usize / CLUSTER_SIZE].dirty = true;
            }
        }
    }

    /// Object `slot` is gone (its position stays until the next build).
    pub(crate) fn removed(&mut self, slot: usize) {
        if self.pos.get(slot).is_some_and(|&p| p != NONE) {
            self.stale += 1;
        }
    }

    /// A texture's size or tail changed: every reach is computed again.
    pub(crate) fn textures_changed(&mut self) {
        for c in &mut self.clusters {
            c.dirty = true;
        }
    }

    /// Before a plan: builds the clusters again when the loose tail or the
    /// stale objects have grown past an eighth of the clustered ones, and
    /// computes the dirty clusters' reach (`tail[b.sum]`: the tail level of
    /// a binding's texture, `-inf` for the sink of dead bindings). Whether
    /// it built them again (the bindings are best packed in the new order).
    pub(crate) fn maintain(
        &mut self,
        objects: &[ObjectSlot],
        bindings: &[Binding],
        tail: &[f32],
    ) -> bool {
        let n = self.slot.len();
        let loose = n - self.clustered;
        let build = n >= MIN_CLUSTERED && (loose + self.stale) * 8 > self.clustered.max(1);
        if build {
            self.build(objects);
        }
        for c in self.clusters.iter_mut().filter(|c| c.dirty) {
            let range = c.start as usize..(c.start + c.len) as usize;
            c.reach = self.slot[range]
                .iter()
                .filter_map(|&s| objects.get(s as usize).filter(|o| o.alive))
                .flat_map(|o| &bindings[o.start as usize..(o.start + o.len) as usize])
                .map(|b| tail[b.sum as usize] - b.lod_offset)
                .fold(f32::NEG_INFINITY, f32::max);
            c.dirty = false;
        }
        build
    }

    /// Cuts the live objects into clusters by halving the longest axis of
    /// their centres' box until a part holds at most [`CLUSTER_SIZE`] (each
    /// cut at a multiple of it, so the clusters are the parts); dead
    /// objects are dropped from the layout.
    fn build(&mut self, objects: &[ObjectSlot]) {
        let mut live: Vec<(u32, Vec3, Vec3)> = (0..self.slot.len())
            .filter(|&p| objects.get(self.slot[p] as usize).is_some_and(|o| o.alive))
            .map(|p| {
                let (c, h) = self.bounds.get(p);
                (self.slot[p], c, h)
            })
            .collect();
        split(&mut live);
        self.pos.iter_mut().for_each(|p| *p = NONE);
        self.slot.clear();
        self.bounds = Bounds::default();
        self.bounds.resize(live.len());
        for (p, &(slot, c, h)) in live.iter().enumerate() {
            self.slot.push(slot);
            self.pos[slot as usize] = p as u32;
            self.bounds.set(p, c, h);
        }
        self.clusters = (0..live.len())
            .step_by(CLUSTER_SIZE)
            .map(|start| {
                let len = CLUSTER_SIZE.min(live.len() - start);
                let (lo, hi) = (start..start + len).fold(
                    (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                    |(lo, hi), p| {
                        let (c, h) = self.bounds.get(p);
                        (lo.min(c - h), hi.max(c + h))
                    },
                );
                Cluster {
                    start: start as u32,
                    len: len as u32,
                    lo,
                    hi,
                    reach: f32::INFINITY,
                    dirty: true,
                }
            })
            .collect();
        self.clustered = live.len();
        self.stale = 0;
    }
}

/// Orders `items` (slot, centre, half extents) so that every run of
/// [`CLUSTER_SIZE`] is a compact part: the longest axis of the centres'
/// box halved, at a multiple of the cluster size, until parts fit.
fn split(items: &mut [(u32, Vec3, Vec3)]) {
    if items.len() <= CLUSTER_SIZE {
        return;
    }
    let (lo, hi) = items.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), &(_, c, _)| (lo.min(c), hi.max(c)),
    );
    let extent = hi - lo;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let clusters = items.len().div_ceil(CLUSTER_SIZE);
    let mid = clusters.div_ceil(2) * CLUSTER_SIZE;
    items.select_nth_unstable_by(mid, |a, b| a.1[axis].total_cmp(&b.1[axis]));
    let (left, right) = items.split_at_mut(mid);
    split(left);
    split(right);
}

impl Planner {
    /// Sets or replaces the object in `slot`: its bounding box (`center` plus
    /// or minus `half`) and, per texture slot it uses, the world units one UV
    /// unit spans.
    pub fn set_object(&mut self, slot: usize, center: Vec3, half: Vec3, textures: &[(usize, f32)]) {
        if self.objects.len() <= slot {
            let empty = ObjectSlot {
                start: 0,
                len: 0,
                alive: false,
            };
            self.objects.resize(slot + 1, empty);
        }
        let bindings = textures.iter().filter_map(|&(t, world_per_uv)| {
            let size = self.textures.get(t)?.as_ref()?.size.max(1);
            Some(Binding {
                sum: t as u32 + 1,
                object: slot as u32,
                lod_offset: (size as f32).log2() - world_per_uv.max(1e-9).log2(),
            })
        });
        let bindings: Vec<Binding> = bindings.collect();
        let o = &mut self.objects[slot];
        let old = o.start as usize..(o.start + o.len) as usize;
        if o.alive && bindings.len() <= old.len() {
            let start = old.start;
            self.bindings[start..start + bindings.len()].copy_from_slice(&bindings);
            self.bindings[start + bindings.len()..old.end]
                .iter_mut()
                .for_each(Binding::kill);
            self.garbage += old.len() - bindings.len();
        } else {
            if o.alive {
                self.garbage += old.len();
                self.bindings[old].iter_mut().for_each(Binding::kill);
            }
            o.start = self.bindings.len() as u32;
            self.bindings.extend_from_slice(&bindings);
        }
        let o = &mut self.objects[slot];
        o.len = bindings.len() as u32;
        o.alive = true;
        self.layout.set(slot, center, half);
        self.layout.bindings_changed(slot);
        if self.garbage > 1024 && self.garbage > self.bindings.len() / 2 {
            self.compact_bindings();
        }
    }

    /// Moves the object in `slot`.
    pub fn move_object(&mut self, slot: usize, center: Vec3, half: Vec3) {
        if self.objects.get(slot).is_some_and(|o| o.alive) {
            self.layout.set(slot, center, half);
        }
        self.move_mesh_object(slot, center, half);
    }

    /// Removes the object in `slot`.
    pub fn remove_object(&mut self, slot: usize) {
        self.remove_mesh_object(slot);
        if let Some(o) = self.objects.get_mut(slot).filter(|o| o.alive) {
            self.layout.removed(slot);
            o.alive = false;
            self.garbage += o.len as usize;
            let range = o.start as usize..(o.start + o.len) as usize;
            self.bindings[range].iter_mut().for_each(Binding::kill);
        }
    }

    /// Packs the live objects' bindings in layout order (the per-object
    /// pass reads them in that order).
    pub(super) fn compact_bindings(&mut self) {
        let mut packed = Vec::with_capacity(self.bindings.len() - self.garbage);
        let objects = self.layout.slot.iter().map(|&s| s as usize);
        for slot in objects {
            let o = &mut self.objects[slot];
            if !o.alive {
                continue;
            }
            let start = o.start as usize;
            o.start = packed.len() as u32;
            packed.extend_from_slice(&self.bindings[start..start + o.len as usize]);
        }
        self.bindings = packed;
        self.garbage = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::density::{ObjectTerms, Pass, TextureNeedSum, ViewTerms};
    use crate::plan::tests::texture;
    use crate::plan::PlannerOptions;
    use crate::plan::View;
    use glam::UVec2;
    use proptest::prelude::*;

    fn view(eye: Vec3, yaw: f32, velocity: Vec3) -> View {
        let dir = Vec3::new(yaw.sin(), -0.1, yaw.cos());
        View::look_at(eye, eye + dir, Vec3::Y, 1.0, UVec2::new(640, 360), 0.1, 1e4)
            .with_velocity(velocity)
    }

    /// The planner's sums from its clustered pass, and from the
    /// straightforward one over the same layout.
    fn both_passes(p: &mut Planner, views: &[View]) -> (Vec<[u32; 4]>, Vec<[u32; 4]>) {
        p.densities(views);
        let bits = |s: &[TextureNeedSum]| -> Vec<[u32; 4]> {
            s.iter()
                .map(|n| [n.visible_lod, n.hidden_lod, n.coverage, n.lod_sum].map(f32::to_bits))
                .collect()
        };
        let fused = bits(&p.sums);
        let terms: Vec<ViewTerms> = views
            .iter()
            .map(|v| ViewTerms::new(v, p.options.look_ahead_s))
            .collect();
        let margin = 1.0 + p.options.hysteresis - p.options.lod_bias;
        let pass = Pass {
            views: &terms,
            layout: &p.layout,
            objects: &p.objects,
            bindings: &p.bindings,
            cutoff: &p.cutoff,
            margin,
        };
        let mut sums = vec![TextureNeedSum::default(); p.sums.len()];
        ObjectTerms::reference(&pass, &mut sums);
        (fused, bits(&sums))
    }

    /// A field of `n` objects over `side` metres, `textures` textures.
    fn field(n: usize, side: f32, textures: usize, seed: u32) -> Planner {
        let mut p = Planner::default();
        for t in 0..textures {
            p.set_texture(t, texture(256 << (t % 4), t % 2 == 0));
        }
        for o in 0..n {
            let h = |k: u32| {
                let mut x = (o as u32 * 8 + k) ^ seed;
                for _ in 0..2 {
                    x ^= x >> 16;
                    x = x.wrapping_mul(0x7feb_352d);
                    x ^= x >> 15;
                    x = x.wrapping_mul(0x846c_a68b);
                }
                (x >> 8) as f32 / (1u32 << 24) as f32
            };
            let c = Vec3::new((h(1) - 0.5) * side, h(2) * 4.0, (h(3) - 0.5) * side);
            let t = (h(4) * textures as f32) as usize % textures;
            p.set_object(
                o,
                c,
                Vec3::splat(0.5 + h(5) * 2.0),
                &[(t, 0.5 + h(6) * 4.0)],
            );
        }
        p
    }

    #[test]
    fn far_clusters_are_skipped_and_near_ones_kept() {
        // 40,000 objects 5 m apart: 157 clusters of ~80 m
        let mut p = field(40_000, 1_000.0, 64, 1);
        let views = [view(Vec3::new(0.0, 2.0, 0.0), 0.3, Vec3::ZERO)];
        let (fused, reference) = both_passes(&mut p, &views);
        assert_eq!(fused, reference);
        assert_eq!(p.layout.clustered, 40_000);
        let terms = ViewTerms::new(&views[0], p.options.look_ahead_s);
        let needed = p
            .layout
            .clusters
            .iter()
            .filter(|c| c.may_need([terms.eye(); 2], terms.log2_k(), 0.05 * 0.05, 1.25))
            .count();
        // the few near the eye are kept
        assert!(
            needed > 0 && needed * 10 < p.layout.clusters.len(),
            "{needed}"
        );
        // objects do count near the eye, not beyond
        assert!(p.sums[1..].iter().any(|s| s.coverage > 0.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

        /// Whatever the scene, its churn and the views: the clustered,
        /// chunked, SIMD pass gives bit for bit the sums of the
        /// straightforward one, before and after objects move, go, come
        /// back with other textures and join the loose tail.
        #[test]
        fn the_clustered_pass_equals_the_straightforward_one(
            n in 4_100usize..5_000,
            side in 50.0f32..3_000.0,
            seed in any::<u32>(),
            eyes in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0, 0.0f32..6.3, any::<bool>()), 1..3),
            churn in prop::collection::vec((0usize..5_000, 0u8..4, -1.0f32..1.0, -1.0f32..1.0), 0..600),
            bias in -1.0f32..1.0,
            hysteresis in 0.0f32..0.5,
        ) {
            let mut p = field(n, side, 12, seed);
            p.set_options(PlannerOptions { lod_bias: bias, hysteresis, ..Default::default() });
            let views: Vec<View> = eyes
                .iter()
                .map(|&(x, z, yaw, moving)| {
                    let v = if moving { Vec3::new(30.0, 0.0, -20.0) } else { Vec3::ZERO };
                    view(Vec3::new(x * side * 0.5, 2.0, z * side * 0.5), yaw, v)
                })
                .collect();
            let (fused, reference) = both_passes(&mut p, &views);
            prop_assert_eq!(fused, reference);
            for &(o, what, x, z) in &churn {
                let c = Vec3::new(x * side * 0.5, 1.0, z * side * 0.5);
                match what {
                    0 => p.move_object(o, c, Vec3::splat(1.0)),
                    1 => p.remove_object(o),
                    2 => p.set_object(o, c, Vec3::splat(3.0), &[(o % 12, 1.0), ((o + 5) % 12, 0.25)]),
                    _ => p.set_object(o + 5_000, c, Vec3::splat(0.5), &[(o % 12, 2.0)]),
                }
            }
            let (fused, reference) = both_passes(&mut p, &views);
            prop_assert_eq!(fused, reference);
            // a texture's tail changes: every reach is computed again
            p.set_texture(3, texture(4096, false));
            let (fused, reference) = both_passes(&mut p, &views);
            prop_assert_eq!(fused, reference);
        }
    }

    #[test]
    fn clusters_are_compact_parts_of_a_field() {
        // a 64 x 64 grid of points, 1 apart: 16 clusters of 16 x 16
        let mut items: Vec<(u32, Vec3, Vec3)> = (0..64 * 64)
            .map(|i| {
                let c = Vec3::new((i % 64) as f32, 0.0, (i / 64) as f32);
                (i as u32, c, Vec3::ZERO)
            })
            .collect();
        split(&mut items);
        let mut slots: Vec<u32> = items.iter().map(|i| i.0).collect();
        slots.sort_unstable();
        assert!(slots.iter().enumerate().all(|(i, &s)| s == i as u32));
        for part in items.chunks(CLUSTER_SIZE) {
            let (lo, hi) = part.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(lo, hi), &(_, c, _)| (lo.min(c), hi.max(c)),
            );
            assert_eq!(hi - lo, Vec3::new(15.0, 0.0, 15.0), "{lo} {hi}");
        }
    }
}
