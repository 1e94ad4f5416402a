//! GPU feedback through the streamer: the engine binds the buffer its
//! shaders report into and records the readback after its passes; `update`
//! takes the newest mapped frame without waiting ([`crate::gpu::feedback`]).

use super::Streamer;
use crate::gpu::feedback::{FeedbackFrame, FeedbackRecorder, FeedbackRing};
use crate::plan::feedback::Sampled;

impl Streamer {
    /// Sets aside GPU feedback's buffers for `slots` texture slots (a
    /// storage buffer of 20 bytes a slot and three readback copies, counted
    /// in the budget's books). Shaders report texture `id` at slot
    /// `id.index()`; slots beyond `slots` are ignored. Called again, it
    /// makes new buffers: bind [`feedback_buffer`](Self::feedback_buffer)
    /// again.
    pub fn enable_feedback(&mut self, slots: u32) {
        let ring = FeedbackRing::new(self.gpu.device(), slots);
        *self.gpu.feedback() = Some(ring);
        self.frame.feedback = None;
    }

    /// The storage buffer the engine's shaders write feedback into
    /// (`@group(g) @binding(b)` of [`crate::gpu::feedback::wgsl`]), once
    /// [`enable_feedback`](Self::enable_feedback) was called.
    pub fn feedback_buffer(&self) -> Option<&wgpu::Buffer> {
        self.gpu.feedback_ring().map(FeedbackRing::storage)
    }

    /// A handle that records the readback as
    /// [`record_feedback`](Self::record_feedback) does, for a render thread
    /// or render world that cannot borrow the streamer (it passes the
    /// frame number itself), once [`enable_feedback`](Self::enable_feedback)
    /// was called. Calling `enable_feedback` again makes a new ring: take a
    /// new recorder then.
    pub fn feedback_recorder(&self) -> Option<FeedbackRecorder> {
        self.gpu.feedback_ring().map(FeedbackRing::recorder)
    }

    /// Records, after the engine's passes of this frame in `encoder`, the
    /// copy of what its shaders reported into a free readback buffer and
    /// the clear for the next frame; the copy is mapped once the GPU has
    /// run the engine's submission of `encoder`. Returns false when every
    /// readback buffer still waits for the GPU (the frame's feedback is
    /// dropped; nothing waits) or feedback is off.
    pub fn record_feedback(&mut self, encoder: &mut wgpu::CommandEncoder) -> bool {
        let frame = self.frame.number;
        let ring = self.gpu.feedback().as_mut();
        ring.is_some_and(|f| f.record(encoder, frame))
    }

    /// Hands the streamer feedback read some other way (an engine's own
    /// readback, a benchmark's oracle) as if the ring had mapped it: the
    /// next [`update`](Self::update) takes it unless it has newer.
    /// `feedback.frame` is the update whose views it reports:
    /// [`frame`](Self::frame) for the frame just updated and drawn (what
    /// the ring records), `frame() + 1` for the view the next update plans
    /// (feedback of the very frame, no age). Slots are texture slots
    /// (`TextureId::index()`); the fusion reads each slot's finest and mean
    /// lod and its pixels. Feedback from before a `settle_canonical` is
    /// dropped.
    pub fn provide_feedback(&mut self, feedback: FeedbackFrame) {
        let newer = self
            .frame
            .feedback
            .as_ref()
            .is_none_or(|f| f.frame <= feedback.frame);
        if feedback.frame > self.frame.feedback_floor && newer {
            self.frame.feedback = Some(feedback);
        }
    }

    /// The newest feedback an `update` took in: what the frame
    /// [`FeedbackFrame::frame`] sampled.
    pub fn latest_feedback(&self) -> Option<&FeedbackFrame> {
        self.frame.feedback.as_ref()
    }

    /// The feedback the planner has not taken yet, as the planner reads
    /// it: the finest and mean lods and the pixels of each slot.
    pub(super) fn feedback_for_planner(&mut self) -> Option<(u64, Vec<Option<Sampled>>)> {
        let f = self.frame.feedback.as_ref()?;
        if self.frame.feedback_sent == Some(f.frame) {
            return None;
        }
        self.frame.feedback_sent = Some(f.frame);
        let slots = f.slots.iter().map(|s| {
            s.map(|s| Sampled {
                lod: s.finest_lod,
                mean_lod: s.mean_lod,
                pixels: s.pixels as f32,
            })
        });
        Some((f.frame, slots.collect()))
    }

    /// Drops the feedback taken and any in flight (frames up to now):
    /// `settle_canonical` plans as a fresh streamer would.
    pub(super) fn forget_feedback(&mut self) {
        self.frame.feedback = None;
        self.frame.feedback_sent = None;
        self.frame.feedback_floor = self.frame.number;
    }
}
