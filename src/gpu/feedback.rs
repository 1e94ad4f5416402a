//! GPU feedback: what the engine's fragment shaders sample, per texture
//! slot, read back without ever waiting for the GPU.
//!
//! The engine's shaders include [`wgsl`] (the source of
//! `shaders/feedback.wgsl` with the engine's bind group and binding), bind
//! the storage buffer, and call `mipstream_feedback(slot, uv, size,
//! max_anisotropy, bias, frag_coord)` where they sample a streamed texture.
//! After its passes, the engine asks the streamer to record the readback
//! into its command encoder ([`crate::streamer::Streamer::record_feedback`]):
//! the buffer is copied into the next free buffer of a ring of three and
//! cleared, and that buffer is mapped when the GPU has finished the
//! engine's submission (`map_buffer_on_submit`). `update` takes the newest
//! mapped buffer, if any, and never waits: a frame whose ring is full
//! reports nothing (skipped), and feedback is as old as the GPU is behind.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The WGSL of `shaders/feedback.wgsl`, with `MIPSTREAM_FEEDBACK_GROUP` and
/// `MIPSTREAM_FEEDBACK_BINDING` where the engine's bind group and binding go
/// ([`wgsl`] fills them in).
pub const FEEDBACK_WGSL: &str = include_str!("../../shaders/feedback.wgsl");

/// Words per texture slot in the feedback buffer.
pub const WORDS_PER_SLOT: u64 = 5;

/// Buffers the readback cycles through: one being written by the GPU, one
/// mapped, one spare, so a GPU a frame or two behind still reports.
pub const RING: usize = 3;

/// The feedback module for a shader whose storage buffer is at
/// `@group(group) @binding(binding)`: paste it into the shader source.
pub fn wgsl(group: u32, binding: u32) -> String {
    FEEDBACK_WGSL
        .replace("MIPSTREAM_FEEDBACK_GROUP", &group.to_string())
        .replace("MIPSTREAM_FEEDBACK_BINDING", &binding.to_string())
}

/// What one texture slot's pixels reported in one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotFeedback {
    /// The finest lod sampled (of the texture's full-resolution level 0),
    /// to a 64th of a level, in [-16, 32] (below 0: magnified).
    pub finest_lod: f32,
    /// The mean lod of the pixels that sampled it (each pixel's lod kept in
    /// [-8, 24], to an 8th of a level): where most of its pixels are, which
    /// weighs its error as the CPU prediction's typical lod does.
    pub mean_lod: f32,
    /// Pixels that sampled it (counted one pixel in four, times four).
    pub pixels: u32,
    /// An 8x8 grid over the texture's uv square, row by row (bit `y * 8 +
    /// x`): where a pixel sampled within a level of the finest lod.
    pub regions: u64,
}

impl SlotFeedback {
    /// The finest level sampled: the finest lod floored, 0 where magnified.
    pub fn finest_level(&self) -> u32 {
        self.finest_lod.floor().max(0.0) as u32
    }
}

/// One frame's feedback.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedbackFrame {
    /// The frame (the streamer's update count) whose rendering it reports.
    pub frame: u64,
    /// Per texture slot, what was sampled (`None`: not sampled).
    pub slots: Vec<Option<SlotFeedback>>,
}

impl FeedbackFrame {
    /// Reads the words of a mapped buffer.
    pub fn parse(frame: u64, words: &[u32]) -> Self {
        let slots = words
            .chunks_exact(WORDS_PER_SLOT as usize)
            .map(|w| {
                (w[0] != 0).then(|| {
                    let reporting = (w[1] / 4).max(1);
                    SlotFeedback {
                        finest_lod: 32.0 - (w[0] - 1) as f32 / 64.0,
                        mean_lod: w[4] as f32 / reporting as f32 / 8.0 - 8.0,
                        pixels: w[1],
                        regions: w[2] as u64 | (w[3] as u64) << 32,
                    }
                })
            })
            .collect();
        Self { frame, slots }
    }

    /// Slots something sampled.
    pub fn seen(&self) -> usize {
        self.slots.iter().flatten().count()
    }
}

const FREE: u8 = 0;
const IN_FLIGHT: u8 = 1;
const MAPPED: u8 = 2;
const FAILED: u8 = 3;

#[derive(Debug)]
struct RingBuffer {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    frame: u64,
    /// The order it was recorded in (frames recorded between two updates
    /// share their frame number).
    sequence: u64,
}

/// The ring's buffers and their order.
#[derive(Debug)]
struct Ring {
    buffers: Vec<RingBuffer>,
    recorded: u64,
}

/// The storage buffer the shaders write and the ring it is read back
/// through.
#[derive(Debug)]
pub(crate) struct FeedbackRing {
    recorder: FeedbackRecorder,
}

/// Records the readback of what the shaders reported, from wherever the
/// engine records its frame: a clone of the streamer's own
/// ([`crate::streamer::Streamer::feedback_recorder`]) for a render thread
/// or render world that cannot borrow the streamer. Recording through it
/// is what [`crate::streamer::Streamer::record_feedback`] does, with the
/// frame number passed in.
#[derive(Debug, Clone)]
pub struct FeedbackRecorder {
    storage: wgpu::Buffer,
    ring: Arc<Mutex<Ring>>,
}

impl FeedbackRecorder {
    /// The storage buffer the shaders write (bind it where
    /// [`wgsl`]'s group and binding say).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.storage
    }

    /// Records, after the engine's passes in `encoder`, the copy of what
    /// its shaders reported into a free readback buffer and the clear for
    /// the next frame; the copy is mapped once the GPU has run the
    /// submission of `encoder`. `frame` is the streamer's
    /// [`frame`](crate::streamer::Streamer::frame) of the update whose
    /// views the passes drew. Returns false when every readback buffer
    /// still waits for the GPU: the frame's feedback is cleared unread,
    /// nothing waits.
    pub fn record(&self, encoder: &mut wgpu::CommandEncoder, frame: u64) -> bool {
        let mut ring = self.lock();
        let ring = &mut *ring;
        let free = ring
            .buffers
            .iter_mut()
            .find(|r| r.state.load(Ordering::Acquire) == FREE);
        let recorded = match free {
            Some(r) => {
                encoder.copy_buffer_to_buffer(&self.storage, 0, &r.buffer, 0, self.storage.size());
                r.state.store(IN_FLIGHT, Ordering::Release);
                r.frame = frame;
                ring.recorded += 1;
                r.sequence = ring.recorded;
                let state = r.state.clone();
                encoder.map_buffer_on_submit(&r.buffer, wgpu::MapMode::Read, .., move |done| {
                    let to = if done.is_ok() { MAPPED } else { FAILED };
                    state.store(to, Ordering::Release);
                });
                true
            }
            None => false,
        };
        encoder.clear_buffer(&self.storage, 0, None);
        recorded
    }

    fn lock(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FeedbackRing {
    /// Room for `slots` texture slots.
    pub(crate) fn new(device: &wgpu::Device, slots: u32) -> Self {
        let slots = u64::from(slots.max(1));
        let size = slots * WORDS_PER_SLOT * 4;
        let storage = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mipstream feedback"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let buffers = (0..RING)
            .map(|i| RingBuffer {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("mipstream feedback readback {i}")),
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU8::new(FREE)),
                frame: 0,
                sequence: 0,
            })
            .collect();
        let ring = Arc::new(Mutex::new(Ring {
            buffers,
            recorded: 0,
        }));
        Self {
            recorder: FeedbackRecorder { storage, ring },
        }
    }

    /// The buffer the shaders write.
    pub(crate) fn storage(&self) -> &wgpu::Buffer {
        &self.recorder.storage
    }

    /// A handle that records into this ring from elsewhere.
    pub(crate) fn recorder(&self) -> FeedbackRecorder {
        self.recorder.clone()
    }

    /// GPU bytes: the storage buffer and the ring.
    pub(crate) fn bytes(&self) -> u64 {
        self.storage().size() * (1 + RING as u64)
    }

    /// See [`FeedbackRecorder::record`].
    pub(crate) fn record(&mut self, encoder: &mut wgpu::CommandEncoder, frame: u64) -> bool {
        self.recorder.record(encoder, frame)
    }

    /// The newest mapped frame, if any buffer is mapped: every mapped
    /// buffer is read or dropped and goes back to the ring. Never waits.
    pub(crate) fn take_newest(&mut self) -> Option<FeedbackFrame> {
        let mut ring = self.recorder.lock();
        let mut newest: Option<FeedbackFrame> = None;
        let mut mapped: Vec<&mut RingBuffer> = ring
            .buffers
            .iter_mut()
            .filter(|r| matches!(r.state.load(Ordering::Acquire), MAPPED | FAILED))
            .collect();
        mapped.sort_by_key(|r| std::cmp::Reverse(r.sequence));
        for r in mapped {
            if r.state.load(Ordering::Acquire) == MAPPED {
                if newest.is_none() {
                    if let Ok(view) = r.buffer.slice(..).get_mapped_range() {
                        let words: &[u32] = bytemuck::cast_slice(&view);
                        newest = Some(FeedbackFrame::parse(r.frame, words));
                    }
                }
                r.buffer.unmap();
            }
            r.state.store(FREE, Ordering::Release);
        }
        newest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_as_lods_pixels_and_regions() {
        let key = |lod: f32| 1 + ((32.0 - lod) * 64.0) as u32;
        // 100 reporting pixels at a mean lod of 3: (3 + 8) * 8 each
        let sum = 100 * 88;
        let words = [
            key(2.0),
            400,
            0b101,
            1,
            sum, //
            0,
            0,
            0,
            0,
            0, //
            key(-1.5),
            4,
            0,
            0,
            52,
        ];
        let f = FeedbackFrame::parse(7, &words);
        assert_eq!(f.frame, 7);
        assert_eq!(f.seen(), 2);
        let a = f.slots[0].unwrap();
        assert_eq!((a.finest_lod, a.mean_lod, a.pixels), (2.0, 3.0, 400));
        assert_eq!(a.regions, 0b101 | 1 << 32);
        assert_eq!(f.slots[1], None);
        let c = f.slots[2].unwrap();
        assert_eq!((c.finest_lod, c.mean_lod), (-1.5, -1.5));
    }

    #[test]
    fn the_module_takes_the_engines_group_and_binding() {
        let s = wgsl(2, 5);
        assert!(s.contains("@group(2) @binding(5)"), "{s}");
        assert!(!s.contains("MIPSTREAM_FEEDBACK_GROUP"));
        assert!(!s.contains("MIPSTREAM_FEEDBACK_BINDING"));
        // (tests/feedback.rs compiles it on a device, in a real pipeline)
    }
}
