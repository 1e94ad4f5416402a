//! GPU feedback through the streamer: the engine binds the buffer its
//! shaders report into and records the readback after its passes; `update`
//! takes the newest mapped frame without waiting ([`crate::gpu::feedback`]).

use super::Streamer;
use crate::gpu::feedback::FeedbackFrame;

impl Streamer {
    /// Sets aside GPU feedback's buffers for `slots` texture slots (a
    /// storage buffer of 16 bytes a slot and three readback copies, counted
    /// in the budget's books). Shaders report texture `id` at slot
    /// `id.index()`; slots beyond `slots` are ignored. Called again, it
    /// makes new buffers: bind [`feedback_buffer`](Self::feedback_buffer)
    /// again.
    pub fn enable_feedback(&mut self, slots: u32) {
        self.gpu.enable_feedback(slots);
        self.frame.feedback = None;
    }

    /// The storage buffer the engine's shaders write feedback into
    /// (`@group(g) @binding(b)` of [`crate::gpu::feedback::wgsl`]), once
    /// [`enable_feedback`](Self::enable_feedback) was called.
    pub fn feedback_buffer(&self) -> Option<&wgpu::Buffer> {
        self.gpu.feedback_storage()
    }

    /// Records, after the engine's passes of this frame in `encoder`, the
    /// copy of what its shaders reported into a free readback buffer and
    /// the clear for the next frame; the copy is mapped once the GPU has
    /// run the engine's submission of `encoder`. Returns false when every
    /// readback buffer still waits for the GPU (the frame's feedback is
    /// dropped; nothing waits) or feedback is off.
    pub fn record_feedback(&mut self, encoder: &mut wgpu::CommandEncoder) -> bool {
        let frame = self.frame.number;
        self.gpu.record_feedback(encoder, frame)
    }

    /// The newest feedback an `update` took in: what the frame
    /// [`FeedbackFrame::frame`] sampled.
    pub fn latest_feedback(&self) -> Option<&FeedbackFrame> {
        self.frame.feedback.as_ref()
    }
}
