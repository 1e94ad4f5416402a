//! Upload staging the loader threads fill, so the render thread records
//! copies and never touches texel bytes.
//!
//! With [`crate::streamer::StreamerOptions::loader_staging_bytes`] set, a
//! loader thread that has transcoded a level moves its texels into a
//! `MAP_WRITE | COPY_SRC` buffer of the level's own, created mapped, and
//! unmaps it: the level then travels as a [`StagedBuffer`] instead of a
//! `Vec<u8>`, and the render thread's upload is one
//! `copy_buffer_to_texture` (no `Queue::write_texture`, which copies every
//! byte on the calling thread).
//!
//! Ownership and accounting: the [`StagingReserve`] is a byte count set
//! aside out of the budget (the books count all of it, used or not, so
//! what loader threads allocate between two frames can never take the
//! streamer over its budget). A loader takes bytes from it before it creates
//! a buffer and they come back when the last handle of the staged level is
//! dropped: after the GPU has finished the copy (the store keeps a handle in
//! the submission's finished-work callback), or when the level is dropped
//! unused (a cancelled or stale load, a removed texture). A level that
//! finds the reserve full comes back to the streamer in CPU memory marked
//! so ([`crate::worker::LoadResult::reserve_full`]); the streamer hands it
//! back to the loaders ([`crate::worker::Loader::restage`]) after its next
//! poll has returned the room of finished copies, a few times at most,
//! before it uploads it from CPU memory. A level that is small, larger than
//! the whole reserve, has padded rows on a backend that mishandles them
//! (GL, compressed formats) or whose buffer cannot be created stays in CPU
//! memory and is uploaded as before.

use super::scope::{catching, Catch};
use crate::transcode::{LevelImage, StagedBuffer};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Levels smaller than this stay in CPU memory: their `write_texture` is
/// cheaper than a buffer of their own.
pub const MIN_STAGED_BYTES: u64 = 16 << 10;

/// Bytes set aside for loader-filled staging, and how many are in use.
#[derive(Debug, Default)]
pub struct StagingReserve {
    capacity: AtomicU64,
    used: AtomicU64,
}

impl StagingReserve {
    /// A reserve of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity: AtomicU64::new(capacity),
            used: AtomicU64::new(0),
        }
    }

    /// Bytes set aside.
    pub fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::Acquire)
    }

    /// Changes the bytes set aside (bytes in use above it stay until freed).
    pub fn set_capacity(&self, bytes: u64) {
        self.capacity.store(bytes, Ordering::Release);
    }

    /// Bytes held by staged levels not yet freed.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// What the books count: the reserve, or more while a lowered one
    /// still holds more.
    pub fn accounted(&self) -> u64 {
        self.capacity().max(self.used())
    }

    /// Takes `bytes` if they fit.
    fn take(&self, bytes: u64) -> bool {
        let cap = self.capacity();
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u + bytes <= cap).then_some(u + bytes)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// A level's texels in a staging buffer of their own: what
/// [`LevelImage::staged`] holds. Its reserve bytes come back when the last
/// clone of the `Arc` is dropped.
struct Staged {
    buffer: wgpu::Buffer,
    bytes: u64,
    reserve: Arc<StagingReserve>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.reserve.give_back(self.bytes);
    }
}

impl StagedBuffer for Staged {
    fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl fmt::Debug for Staged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Staged")
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// What a loader thread needs to stage levels: the device and the reserve.
#[derive(Clone, Debug)]
pub struct LoaderStaging {
    device: wgpu::Device,
    reserve: Arc<StagingReserve>,
    /// Whether `copy_buffer_to_texture` takes padded rows of compressed
    /// formats on this backend (wgpu's GL backend does not).
    padded_compressed_rows: bool,
}

impl LoaderStaging {
    /// Staging on `device` out of `reserve`.
    pub fn new(device: &wgpu::Device, reserve: Arc<StagingReserve>) -> Self {
        Self {
            device: device.clone(),
            reserve,
            padded_compressed_rows: super::memory::copies_compressed_textures(device),
        }
    }

    /// The reserve it takes from.
    pub fn reserve(&self) -> &Arc<StagingReserve> {
        &self.reserve
    }

    /// Moves `img`'s texels into a staging buffer of their own (run on a
    /// loader thread), or returns it as it is when it is small, its rows
    /// cannot be copied from a buffer on this backend, the reserve is full
    /// or the buffer cannot be created. The flag says whether the texels
    /// stayed in CPU memory only because the reserve had no room for them
    /// then (a level worth staging, worth trying again once copies have
    /// returned room).
    pub fn try_stage(&self, mut img: LevelImage) -> (LevelImage, bool) {
        let bytes = img.data.len() as u64;
        let (bw, _) = img.format.block_dimensions();
        let block = img.format.block_copy_size(None).unwrap_or(4);
        let tight = img.width.div_ceil(bw) * block;
        // buffer copies take rows at a multiple of 256 bytes; padded ones
        // only where the backend handles them
        let rows_ok = img
            .bytes_per_row
            .is_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
            && (img.bytes_per_row == tight || self.padded_compressed_rows || bw == 1);
        if img.staged.is_some()
            || bytes < MIN_STAGED_BYTES
            || !bytes.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            || !rows_ok
        {
            return (img, false);
        }
        if !self.reserve.take(bytes) {
            // a level larger than the whole reserve never fits: not worth
            // trying again
            let could_fit = bytes <= self.reserve.capacity();
            return (img, could_fit);
        }
        let (buffer, caught) = catching(&self.device, Catch::Both, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("mipstream loader staging"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        });
        let failed = caught.any();
        // from here the reserve bytes come back when `staged` drops
        let staged = Staged {
            buffer,
            bytes,
            reserve: self.reserve.clone(),
        };
        if failed {
            return (img, false);
        }
        match staged.buffer.get_mapped_range_mut(..) {
            Ok(mut view) => view.copy_from_slice(&img.data),
            Err(_) => return (img, false),
        }
        staged.buffer.unmap();
        img.data = Vec::new();
        img.staged = Some(Arc::new(staged));
        (img, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_refuses_what_does_not_fit_and_takes_back_what_is_freed() {
        let r = StagingReserve::new(100);
        assert!(r.take(60));
        assert!(!r.take(41), "60 + 41 is over 100");
        assert!(r.take(40));
        assert_eq!(r.used(), 100);
        r.give_back(60);
        assert_eq!(r.used(), 40);
        r.set_capacity(10);
        assert_eq!(
            r.accounted(),
            40,
            "a lowered reserve counts what it still holds"
        );
        assert!(!r.take(1));
        r.give_back(40);
        assert_eq!(r.accounted(), 10);
    }
}
