//! GPU feedback fused with the CPU prediction (pure CPU).
//!
//! The CPU prediction (`density.rs`) judges each texture from its objects'
//! boxes: a box in view counts its whole projected area, even where a wall
//! hides it, and its finest lod is that of the box's nearest point. GPU
//! feedback ([`crate::gpu::feedback`], handed in as [`Sampled`]) says what
//! the fragment shaders really sampled, a frame or more late: the pixels,
//! their finest lod and their mean lod.
//!
//! The fusion splits what the CPU predicts in view into the part the GPU
//! sampled and the part it did not (hidden behind something, or too small
//! for one pixel in four). The sampled part counts at the GPU's pixels and
//! lods. The unsampled part is remembered, not dropped: each texture keeps
//! the share `r` of its predicted coverage the GPU has been seen to sample;
//! `r` follows the GPU at once when it sees more, and when it sees less `r`
//! halves towards it every [`FUSION_HALF_LIFE`] frames. The unsampled part
//! is the CPU's coverage times `r` less the sampled pixels, at the CPU's
//! lods, and the finest lod moves from the GPU's towards the CPU's by the
//! unsampled part's share. So a vase just hidden behind a column keeps its
//! levels while the camera passes (the CPU says it is near and large), a
//! box hidden for seconds fades to what the GPU sees, and a wall seen in
//! full is judged by its real pixels at once.
//!
//! The feedback is of an earlier frame than the one planned, and it is set
//! against the CPU's prediction for that same frame (the CPU's sums of the
//! plans of the last few updates are kept): the GPU corrects what the CPU
//! gets wrong at one moment, and the CPU carries what changed since (the
//! camera moved, its look-ahead). The sampled pixels are scaled by how the
//! CPU's coverage grew since the feedback's frame and its lods shifted by
//! how the CPU's did. Without that, a floor the camera flies towards was
//! judged by the pixels it had a frame before, and it got its level 0
//! four frames later than the CPU alone gave it (annotated Sponza at its
//! whole working set, frames 186 to 195: CHANGELOG.md, 2026-12-07).
//!
//! - a texture the CPU has nothing for but the GPU sampled (the CPU's
//!   boxes missed it, or judged it coarse enough for the tail) takes the
//!   GPU's numbers;
//! - a texture the CPU places outside every view (look-ahead, objects just
//!   off screen) keeps the CPU prediction, sampled or not: the feedback is
//!   of a frame or more ago, and a camera turning round must find what is
//!   now in front of it planned as the CPU sees it, not held back by what
//!   it saw before the turn;
//! - when less than [`CUT_OVERLAP`] of the picture the CPU predicts now is
//!   the picture it predicted at the feedback's frame (a camera cut, a turn
//!   faster than the feedback), the feedback is of another picture: the
//!   plan is the CPU's alone and every remembered share starts again from
//!   all of the CPU's coverage. Without it a texture mostly hidden before
//!   a cut was counted after it at the share sampled before (the built-in
//!   scene at its whole working set, frame 225: 4,394 pixels where the CPU
//!   predicted 52,510 and the frame showed 41,546; CHANGELOG.md);
//! - feedback older than [`STALE_AFTER`] frames is ignored altogether
//!   (the renderer stopped reporting): the CPU prediction alone;
//! - the fit plans the fused need; the budget it leaves unused goes to
//!   what the CPU alone predicts finer first (the CPU's sums of the plan
//!   are kept for it: `floor.rs`, `raise_to_prediction`), then to the
//!   spare floor.
//!
//! The same feedback and inputs give the same plan; `settle_canonical`
//! clears the memory.

use super::density::TextureNeedSum;
use super::{Planner, Policy};
use std::collections::VecDeque;

/// Frames after the newest feedback's frame beyond which it is ignored.
/// Chosen, not tuned: a renderer a few frames behind still counts, one that
/// stopped reporting does not.
pub const STALE_AFTER: u64 = 8;

/// Frames over which the remembered share of a texture's predicted coverage
/// halves towards what the GPU samples. Chosen, not tuned: a quarter of a
/// second at 60 frames per second.
pub const FUSION_HALF_LIFE: f32 = 15.0;

/// How much of the picture the CPU predicts now must be the one it predicted
/// at the feedback's frame for the feedback to count (summed over textures,
/// the smaller of each texture's share of the two pictures' predicted
/// coverage): below it, most of what is on screen changed (a camera cut, a
/// turn faster than the feedback), and the fusion forgets what it learned.
/// Chosen, not tuned: a majority of the picture.
pub const CUT_OVERLAP: f32 = 0.5;

/// The share of two pictures' predicted coverage that is the same: the sum
/// over textures of the smaller of each texture's share of each picture's
/// total coverage (1: the same textures in the same proportions; 0: none
/// in common). A picture with nothing predicted is the same as another
/// only if that has nothing either.
fn overlap(a: &[TextureNeedSum], b: &[TextureNeedSum]) -> f32 {
    let visible = |s: &TextureNeedSum| {
        if s.visible_lod.is_finite() {
            s.coverage.max(0.0)
        } else {
            0.0
        }
    };
    let total = |s: &[TextureNeedSum]| s.iter().skip(1).map(visible).sum::<f32>();
    let (ta, tb) = (total(a), total(b));
    if ta <= 0.0 || tb <= 0.0 {
        return if ta <= 0.0 && tb <= 0.0 { 1.0 } else { 0.0 };
    }
    a.iter()
        .zip(b)
        .skip(1)
        .map(|(x, y)| (visible(x) / ta).min(visible(y) / tb))
        .sum()
}

/// What the GPU reported a texture sampled in one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampled {
    /// The finest lod sampled, of the texture's full-resolution level 0.
    pub lod: f32,
    /// The mean lod of the pixels that sampled it.
    pub mean_lod: f32,
    /// Pixels that sampled it.
    pub pixels: f32,
}

/// What the planner remembers of GPU feedback.
#[derive(Debug, Clone, Default)]
pub(crate) struct FeedbackMemory {
    /// The frame of the newest feedback taken; `None`: none since the last
    /// clear.
    frame: Option<u64>,
    /// Per texture slot, what the newest feedback saw.
    newest: Vec<Option<Sampled>>,
    /// Per texture slot, the remembered share of its predicted coverage the
    /// GPU samples (1 until feedback says less).
    share: Vec<f32>,
    /// The newest feedback frame folded into `share`.
    folded: Option<u64>,
    /// The CPU's own sums of the last plans, by the update whose views
    /// they were made from (oldest first): the feedback of frame `f` is
    /// compared with the CPU's prediction for frame `f`, and the CPU's
    /// change since then carried over.
    history: VecDeque<(u64, Vec<TextureNeedSum>)>,
    /// The update whose views the next plan is made from, when it is not
    /// the plan's frame (a plan made ahead).
    views_frame: Option<u64>,
}

impl FeedbackMemory {
    /// Takes one frame's feedback (`slots[t]` for texture slot `t`); an
    /// older frame than one taken already changes nothing.
    pub(crate) fn take(&mut self, frame: u64, slots: &[Option<Sampled>]) {
        if self.frame.is_some_and(|f| frame <= f) {
            return;
        }
        self.frame = Some(frame);
        self.newest.clear();
        self.newest.extend_from_slice(slots);
    }

    /// Forgets everything taken.
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Keeps the CPU's sums of the plan made from the views of update
    /// `views` (the feedback of that frame is compared with them), and
    /// drops those too old for any feedback that still counts.
    fn remember(&mut self, sums: &[TextureNeedSum], views: u64) {
        // those of this update or a later one (made again, or a settle
        // went back) and those too old go; their vectors are reused
        let mut kept = Vec::new();
        while let Some(i) = self
            .history
            .iter()
            .position(|h| h.0 >= views || h.0 + STALE_AFTER + 1 < views)
        {
            kept = self.history.remove(i).map(|h| h.1).unwrap_or_default();
        }
        kept.clear();
        kept.extend_from_slice(sums);
        self.history.push_back((views, kept));
    }

    /// Whether feedback counts at frame `now`.
    pub(crate) fn active(&self, now: u64) -> bool {
        self.frame
            .is_some_and(|f| now.saturating_sub(f) <= STALE_AFTER)
    }

    /// Fuses the memory into the CPU's sums (texture slot `t` at
    /// `sums[t + 1]`) for a plan at frame `now`; the first plan after a
    /// new feedback frame folds it into the remembered shares.
    ///
    /// The feedback of frame `f` is set against the CPU's prediction for
    /// frame `f` (kept from the plan made from its views): the GPU corrects
    /// what the CPU gets wrong at one moment (what hides a box, a box's
    /// nearest point), the CPU carries what changed since (the camera
    /// moved, its look-ahead). So the sampled pixels are scaled by how the
    /// CPU's coverage changed since `f`, and the sampled lods shifted by
    /// how its lods did; feedback of the very frame planned (an oracle)
    /// is taken as it is.
    pub(crate) fn fuse(&mut self, sums: &mut [TextureNeedSum], now: u64) {
        let views = self.views_frame.take().unwrap_or(now);
        self.remember(sums, views);
        if !self.active(now) {
            return;
        }
        let newest = self.frame.expect("active");
        let slots = sums.len().saturating_sub(1);
        if self.share.len() < slots {
            self.share.resize(slots, 1.0);
        }
        let fold = self.folded != Some(newest);
        // frames since the last feedback folded (the first: one)
        let decay = if fold {
            let gap = self.folded.map_or(1, |f| newest - f);
            (-(gap as f32) / FUSION_HALF_LIFE).exp2()
        } else {
            1.0
        };
        self.folded = Some(newest);
        let past = self.history.iter().find(|h| h.0 == newest).map(|h| &h.1);
        if past.is_some_and(|p| overlap(p, sums) < CUT_OVERLAP) {
            // a camera cut (or a turn faster than the feedback): the
            // feedback and the shares learned are of another picture; this
            // plan is the CPU's alone, and every share starts again from
            // all of the CPU's coverage, as for a texture entering the view
            self.share.fill(1.0);
            self.newest.fill(None);
            return;
        }
        for (slot, sum) in sums.iter_mut().skip(1).enumerate() {
            let seen = self.newest.get(slot).copied().flatten();
            let share = &mut self.share[slot];
            let predicted = sum.coverage > 0.0 && sum.visible_lod.is_finite();
            if !predicted {
                // entering the CPU's view later starts from all of it
                *share = 1.0;
                if let Some(s) = seen.filter(|_| !sum.hidden_lod.is_finite()) {
                    // sampled where the CPU's boxes saw nothing (or only
                    // the tail's worth): the GPU's numbers; a texture the
                    // CPU places outside the view now (the camera turned
                    // since the GPU's frame) keeps the CPU's prediction
                    sum.visible_lod = s.lod;
                    sum.coverage = s.pixels;
                    sum.lod_sum = s.pixels * s.mean_lod;
                }
                continue;
            }
            let typical = sum.lod_sum / sum.coverage;
            // the CPU's prediction at the feedback's frame; where it had the
            // texture in no view then, its prediction of now
            let then = past
                .and_then(|p| p.get(slot + 1))
                .filter(|p| p.coverage > 0.0 && p.visible_lod.is_finite())
                .copied()
                .unwrap_or(*sum);
            let growth = sum.coverage / then.coverage;
            let pixels = seen.map_or(0.0, |s| s.pixels);
            if fold {
                let observed = (pixels / then.coverage).min(1.0);
                *share = observed.max(*share * decay);
            }
            // what the GPU would sample now, had it seen the CPU's change:
            // between what it sampled and what the CPU predicts now, never
            // beyond both (a box entering the view from a sliver, or one
            // the CPU's boxes under-predicted, does not multiply the GPU's
            // count)
            let sampled =
                (pixels * growth).clamp(pixels.min(sum.coverage), pixels.max(sum.coverage));
            let unsampled = (sum.coverage * *share - sampled).max(0.0);
            let coverage = sampled + unsampled;
            let Some(s) = seen else {
                // none of it sampled: the CPU's lods, its remembered share
                sum.coverage = coverage;
                sum.lod_sum = unsampled * typical;
                continue;
            };
            // the GPU's lods moved as the CPU's did, again between the
            // GPU's and the CPU's of now
            let between = |gpu: f32, moved: f32, cpu: f32| moved.clamp(gpu.min(cpu), gpu.max(cpu));
            let finest = between(
                s.lod,
                s.lod + (sum.visible_lod - then.visible_lod),
                sum.visible_lod,
            );
            let mean = between(
                s.mean_lod,
                s.mean_lod + (typical - then.lod_sum / then.coverage),
                typical,
            );
            let hidden = if coverage > 0.0 {
                unsampled / coverage
            } else {
                0.0
            };
            sum.visible_lod = finest + hidden * (sum.visible_lod - finest).min(0.0);
            sum.coverage = coverage;
            sum.lod_sum = sampled * mean + unsampled * typical;
        }
    }
}

impl Planner {
    /// Takes one frame's GPU feedback (`slots[t]`: what texture slot `t`
    /// sampled); the plans after it fuse it with the CPU prediction while it
    /// is fresh. An older frame than one taken changes nothing.
    pub fn take_feedback(&mut self, frame: u64, slots: &[Option<Sampled>]) {
        self.feedback.take(frame, slots);
    }

    /// Says which update's views the next plan is made from, when that is
    /// not the plan's frame (a plan made ahead, for the next update, from
    /// this one's views): GPU feedback is numbered by the update it drew,
    /// and the fusion sets it against the CPU's prediction from the same
    /// views.
    pub fn views_of_update(&mut self, update: u64) {
        self.feedback.views_frame = Some(update);
    }

    /// Whether the plan at `frame` fuses GPU feedback.
    pub fn uses_feedback(&self, frame: u64) -> bool {
        self.policy == Policy::Budget && self.options.fuse_feedback && self.feedback.active(frame)
    }

    /// Fuses the feedback into this plan's needs (the budget fit only: the
    /// engine rules stay the CPU rules their engines ship).
    pub(super) fn fuse_feedback(&mut self, frame: u64) {
        self.cpu_sums.clear();
        if self.policy == Policy::Budget && self.options.fuse_feedback {
            if self.feedback.active(frame) {
                self.cpu_sums.extend_from_slice(&self.sums);
            }
            self.feedback.fuse(&mut self.sums, frame);
        }
    }
}

#[cfg(test)]
mod tests;
