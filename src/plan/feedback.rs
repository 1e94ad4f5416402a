//! GPU feedback fused with the CPU prediction (pure CPU).
//!
//! The CPU prediction (`density.rs`) judges each texture from its objects'
//! boxes: a box in view counts its whole projected area, even where a wall
//! hides it, and its finest lod is that of the box's nearest point. GPU
//! feedback ([`crate::gpu::feedback`], handed in as [`Sampled`]) says what
//! the fragment shaders really sampled, a frame or more late. Fused:
//! - a texture the newest feedback saw takes its pixels and its finest lod
//!   (the typical lod of its objects moves by as much);
//! - a texture the CPU predicts visible that the feedback has not seen for
//!   `u` frames (hidden behind something, or too small to be sampled by
//!   one pixel in four) keeps its lod but its coverage halves every
//!   [`FUSION_HALF_LIFE`] frames: gradual, so a wall that was hidden a
//!   moment is still held when the camera comes round;
//! - a texture the CPU does not see in a view (look-ahead, off-screen
//!   objects) keeps the CPU prediction, so prefetch works as before;
//! - feedback older than [`STALE_AFTER`] frames is ignored altogether
//!   (the renderer stopped reporting): the CPU prediction alone.
//!
//! The same feedback and inputs give the same plan; `settle_canonical`
//! clears the memory.

use super::density::TextureNeedSum;
use super::{Planner, Policy};

/// Frames after the newest feedback's frame beyond which it is ignored.
/// Chosen, not tuned: a renderer a few frames behind still counts, one that
/// stopped reporting does not.
pub const STALE_AFTER: u64 = 8;

/// Frames over which an unseen (occluded) texture's coverage halves.
/// Chosen, not tuned: a quarter of a second at 60 frames per second.
pub const FUSION_HALF_LIFE: f32 = 15.0;

/// What the GPU reported a texture sampled in one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampled {
    /// The finest lod sampled, of the texture's full-resolution level 0.
    pub lod: f32,
    /// Pixels that sampled it.
    pub pixels: f32,
}

/// What the planner remembers of GPU feedback.
#[derive(Debug, Clone, Default)]
pub(crate) struct FeedbackMemory {
    /// The frame of the newest feedback taken; `None`: none since the last
    /// clear.
    frame: Option<u64>,
    /// The frame of the first feedback taken since the last clear (unseen
    /// textures count their frames from it).
    first: u64,
    /// Per texture slot: the last frame the feedback saw it, and what it
    /// sampled then.
    last: Vec<Option<(u64, Sampled)>>,
}

impl FeedbackMemory {
    /// Takes one frame's feedback (`slots[t]` for texture slot `t`); an
    /// older frame than one taken already changes nothing.
    pub(crate) fn take(&mut self, frame: u64, slots: &[Option<Sampled>]) {
        if self.frame.is_some_and(|f| frame <= f) {
            return;
        }
        if self.frame.is_none() {
            self.first = frame;
        }
        self.frame = Some(frame);
        if self.last.len() < slots.len() {
            self.last.resize(slots.len(), None);
        }
        for (last, s) in self.last.iter_mut().zip(slots) {
            if let Some(s) = s {
                *last = Some((frame, *s));
            }
        }
    }

    /// Forgets everything taken.
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Whether feedback counts at frame `now`.
    pub(crate) fn active(&self, now: u64) -> bool {
        self.frame
            .is_some_and(|f| now.saturating_sub(f) <= STALE_AFTER)
    }

    /// Fuses the memory into the CPU's sums (texture slot `t` at
    /// `sums[t + 1]`) for a plan at frame `now`.
    pub(crate) fn fuse(&self, sums: &mut [TextureNeedSum], now: u64) {
        if !self.active(now) {
            return;
        }
        let newest = self.frame.expect("active");
        for (slot, sum) in sums.iter_mut().skip(1).enumerate() {
            let last = self.last.get(slot).copied().flatten();
            match last {
                Some((f, s)) if f == newest => {
                    // seen: its pixels and lod, its typical lod moved along
                    let typical = if sum.coverage > 0.0 && sum.visible_lod.is_finite() {
                        sum.lod_sum / sum.coverage - sum.visible_lod
                    } else {
                        0.0
                    };
                    sum.visible_lod = s.lod;
                    sum.coverage = s.pixels;
                    sum.lod_sum = s.pixels * (s.lod + typical.max(0.0));
                }
                _ if sum.visible_lod.is_finite() && sum.coverage > 0.0 => {
                    // predicted in view, not sampled: hidden, or too small
                    let since = last.map_or(self.first, |(f, _)| f);
                    let unseen = newest.saturating_sub(since) as f32;
                    let keep = (-unseen / FUSION_HALF_LIFE).exp2();
                    sum.coverage *= keep;
                    sum.lod_sum *= keep;
                }
                _ => {}
            }
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

    /// Whether the plan at `frame` fuses GPU feedback.
    pub fn uses_feedback(&self, frame: u64) -> bool {
        self.policy == Policy::Budget && self.options.fuse_feedback && self.feedback.active(frame)
    }

    /// Fuses the feedback into this plan's needs (the budget fit only: the
    /// engine rules stay the CPU rules their engines ship).
    pub(super) fn fuse_feedback(&mut self, frame: u64) {
        if self.policy == Policy::Budget && self.options.fuse_feedback {
            self.feedback.fuse(&mut self.sums, frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(lod: f32, coverage: f32, typical: f32) -> TextureNeedSum {
        TextureNeedSum {
            visible_lod: lod,
            hidden_lod: f32::INFINITY,
            coverage,
            lod_sum: typical * coverage,
        }
    }

    fn sampled(lod: f32, pixels: f32) -> Option<Sampled> {
        Some(Sampled { lod, pixels })
    }

    #[test]
    fn seen_textures_take_the_gpus_pixels_and_lod() {
        let mut m = FeedbackMemory::default();
        m.take(10, &[sampled(2.0, 5000.0), None]);
        // slot 0: the box claimed 40,000 pixels at lod 0, typical 1
        let mut sums = vec![
            TextureNeedSum::default(),
            sum(0.0, 40_000.0, 1.0),
            sum(1.0, 100.0, 1.5),
        ];
        m.fuse(&mut sums, 11);
        assert_eq!(sums[1].visible_lod, 2.0);
        assert_eq!(sums[1].coverage, 5000.0);
        // its typical lod moved with its finest: 1 above it, as before
        assert_eq!(sums[1].lod_sum / sums[1].coverage, 3.0);
    }

    #[test]
    fn predicted_but_unseen_textures_fade_gradually_and_come_back_when_seen() {
        let mut m = FeedbackMemory::default();
        let cpu = || vec![TextureNeedSum::default(), sum(1.0, 1000.0, 2.0)];
        m.take(100, &[sampled(1.0, 900.0)]);
        // hidden from frame 101 on: each frame's feedback misses it
        let mut coverages = Vec::new();
        for f in 101..=160 {
            m.take(f, &[None]);
            let mut sums = cpu();
            m.fuse(&mut sums, f);
            assert_eq!(sums[1].visible_lod, 1.0, "the lod stays");
            assert_eq!(sums[1].lod_sum / sums[1].coverage, 2.0, "typical stays");
            coverages.push(sums[1].coverage);
        }
        assert!(coverages.windows(2).all(|w| w[1] < w[0]), "{coverages:?}");
        let half = coverages[FUSION_HALF_LIFE as usize - 1];
        assert!(
            (half - 500.0).abs() < 1.0,
            "half after the half-life: {half}"
        );
        assert!(coverages[59] < 100.0, "{}", coverages[59]);
        // seen again: the GPU's numbers at once
        m.take(161, &[sampled(0.5, 2000.0)]);
        let mut sums = cpu();
        m.fuse(&mut sums, 161);
        assert_eq!((sums[1].visible_lod, sums[1].coverage), (0.5, 2000.0));
    }

    #[test]
    fn what_the_cpu_does_not_see_and_stale_feedback_keep_the_cpu_prediction() {
        let mut m = FeedbackMemory::default();
        m.take(10, &[None, None]);
        // slot 0 only off-screen (look-ahead, behind the camera); slot 1 in view
        let offscreen = TextureNeedSum {
            visible_lod: f32::INFINITY,
            hidden_lod: 2.0,
            coverage: 0.0,
            lod_sum: 0.0,
        };
        let mut sums = vec![TextureNeedSum::default(), offscreen, sum(1.0, 500.0, 1.0)];
        m.fuse(&mut sums, 10);
        assert_eq!(sums[1], offscreen);
        // stale: the renderer stopped reporting, the CPU alone
        let before = sum(1.0, 500.0, 1.0);
        let mut sums = vec![TextureNeedSum::default(), offscreen, before];
        m.fuse(&mut sums, 10 + STALE_AFTER + 1);
        assert_eq!(sums[2], before);
        assert!(!m.active(10 + STALE_AFTER + 1) && m.active(10 + STALE_AFTER));
    }

    #[test]
    fn older_feedback_changes_nothing_and_a_clear_forgets() {
        let mut m = FeedbackMemory::default();
        m.take(10, &[sampled(3.0, 10.0)]);
        m.take(9, &[sampled(0.0, 99.0)]);
        let mut sums = vec![TextureNeedSum::default(), sum(1.0, 1.0, 1.0)];
        m.fuse(&mut sums, 10);
        assert_eq!(sums[1].visible_lod, 3.0);
        m.clear();
        let mut sums = vec![TextureNeedSum::default(), sum(1.0, 1.0, 1.0)];
        m.fuse(&mut sums, 10);
        assert_eq!(sums[1], sum(1.0, 1.0, 1.0));
    }
}
