//! Fault injection: a source and device layer that fails on purpose.
//!
//! A streamer runs inside every frame of an application, so it has to survive
//! a bad disk, a codec that rejects a level and a GPU that says no. This
//! module makes those failures happen on demand, at chosen rates, from a
//! seeded generator (the same seed gives the same sequence of decisions for
//! the same sequence of calls):
//!
//! - [`FaultySource`] wraps any [`ByteSource`]: reads fail with an I/O error,
//!   come back short (the error a positioned read of a truncated file gives),
//!   or take [`FaultRates::slow_delay`] (200 ms by default) before answering;
//! - [`Streamer::set_faults`](crate::streamer::Streamer::set_faults) hands the same
//!   [`Faults`] to the loader threads (a level's transcode fails) and to the
//!   GPU layer (a texture or staging allocation fails as out-of-memory).
//!
//! Rates can change at any time ([`Faults::set_rates`], [`Faults::stop`]), so
//! a test can inject faults for a while, stop them and check that the scene
//! converges to what it would have been. [`Faults::counts`] says how many
//! faults of each kind were injected.
//!
//! ```
//! use mipstream::fault::{FaultRates, Faults, FaultySource};
//! use mipstream::{ByteSource, MemorySource};
//! use std::sync::Arc;
//!
//! let faults = Faults::new(7);
//! faults.set_rates(FaultRates { io_error: 1.0, ..FaultRates::default() });
//! let source = FaultySource::new(Arc::new(MemorySource::new("m", vec![0; 64])), faults.clone());
//! assert!(source.read_range(0, 16).is_err());
//! faults.stop();
//! assert!(source.read_range(0, 16).is_ok());
//! assert_eq!(faults.counts().io_errors, 1);
//! ```

use crate::source::{ByteSource, ReadError};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often each kind of fault happens: probabilities from 0 (never) to 1
/// (every time), per read, per transcode, per GPU allocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultRates {
    /// A read fails with an I/O error.
    pub io_error: f64,
    /// A read returns short: part of the bytes, then an end-of-file error.
    pub short_read: f64,
    /// A read takes [`slow_delay`](Self::slow_delay) before it answers.
    pub slow_read: f64,
    /// How long a slow read takes. Default: 200 ms.
    pub slow_delay: Duration,
    /// A level's transcode fails.
    pub transcode_error: f64,
    /// A GPU allocation (texture or staging buffer) fails as out-of-memory.
    pub out_of_memory: f64,
}

impl Default for FaultRates {
    /// No faults; slow reads (when enabled) take 200 ms.
    fn default() -> Self {
        Self {
            io_error: 0.0,
            short_read: 0.0,
            slow_read: 0.0,
            slow_delay: Duration::from_millis(200),
            transcode_error: 0.0,
            out_of_memory: 0.0,
        }
    }
}

/// Faults injected so far, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Reads failed with an I/O error.
    pub io_errors: u64,
    /// Reads returned short.
    pub short_reads: u64,
    /// Reads delayed.
    pub slow_reads: u64,
    /// Transcodes failed.
    pub transcode_errors: u64,
    /// GPU allocations refused.
    pub out_of_memory: u64,
}

impl FaultCounts {
    /// Every injected fault.
    pub fn total(&self) -> u64 {
        self.io_errors
            + self.short_reads
            + self.slow_reads
            + self.transcode_errors
            + self.out_of_memory
    }
}

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// See [`FaultRates::io_error`].
    IoError,
    /// See [`FaultRates::short_read`].
    ShortRead,
    /// See [`FaultRates::slow_read`].
    SlowRead,
    /// See [`FaultRates::transcode_error`].
    TranscodeError,
    /// See [`FaultRates::out_of_memory`].
    OutOfMemory,
}

/// The shared switchboard of injected faults: rates, a seeded generator and
/// counters. Cheap to consult from any thread.
pub struct Faults {
    rates: Mutex<FaultRates>,
    rng: AtomicU64,
    counts: [AtomicU64; 5],
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("rates", &self.rates())
            .field("counts", &self.counts())
            .finish()
    }
}

impl Faults {
    /// No faults yet; `seed` fixes the sequence of decisions.
    pub fn new(seed: u64) -> Arc<Self> {
        Arc::new(Self {
            rates: Mutex::new(FaultRates::default()),
            rng: AtomicU64::new(seed),
            counts: Default::default(),
        })
    }

    /// Changes the rates from now on.
    pub fn set_rates(&self, rates: FaultRates) {
        *self.rates.lock().unwrap_or_else(|e| e.into_inner()) = rates;
    }

    /// The rates in force.
    pub fn rates(&self) -> FaultRates {
        *self.rates.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops injecting faults (the counts stay).
    pub fn stop(&self) {
        let delay = self.rates().slow_delay;
        self.set_rates(FaultRates {
            slow_delay: delay,
            ..FaultRates::default()
        });
    }

    /// Faults injected so far.
    pub fn counts(&self) -> FaultCounts {
        let c = |k: FaultKind| self.counts[k as usize].load(Ordering::Relaxed);
        FaultCounts {
            io_errors: c(FaultKind::IoError),
            short_reads: c(FaultKind::ShortRead),
            slow_reads: c(FaultKind::SlowRead),
            transcode_errors: c(FaultKind::TranscodeError),
            out_of_memory: c(FaultKind::OutOfMemory),
        }
    }

    /// Decides whether a fault of `kind` happens now (and counts it if so).
    /// Layers of your own can use this to fail in step with mipstream's.
    pub fn roll(&self, kind: FaultKind) -> bool {
        let r = self.rates();
        let rate = match kind {
            FaultKind::IoError => r.io_error,
            FaultKind::ShortRead => r.short_read,
            FaultKind::SlowRead => r.slow_read,
            FaultKind::TranscodeError => r.transcode_error,
            FaultKind::OutOfMemory => r.out_of_memory,
        };
        if rate <= 0.0 {
            return false;
        }
        let hit = rate >= 1.0 || self.next_unit() < rate;
        if hit {
            self.counts[kind as usize].fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// A uniform number in [0, 1) from a shared SplitMix64 state.
    fn next_unit(&self) -> f64 {
        let s = self
            .rng
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A [`ByteSource`] that fails, comes back short or stalls at the rates of a
/// shared [`Faults`], and otherwise reads from the source it wraps.
#[derive(Debug)]
pub struct FaultySource {
    inner: Arc<dyn ByteSource>,
    faults: Arc<Faults>,
}

impl FaultySource {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ByteSource>, faults: Arc<Faults>) -> Self {
        Self { inner, faults }
    }
}

impl ByteSource for FaultySource {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        if self.faults.roll(FaultKind::SlowRead) {
            std::thread::sleep(self.faults.rates().slow_delay);
        }
        if self.faults.roll(FaultKind::IoError) {
            return Err(ReadError::Io {
                name: self.name().to_owned(),
                source: std::io::Error::other("injected I/O error"),
            });
        }
        if !buf.is_empty() && self.faults.roll(FaultKind::ShortRead) {
            // what a positioned read of a file truncated under us returns:
            // some of the bytes, then end of file
            let half = buf.len() / 2;
            self.inner.read_exact_at(offset, &mut buf[..half])?;
            return Err(ReadError::Io {
                name: self.name().to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "injected short read: {half} of {} bytes at offset {offset}",
                        buf.len()
                    ),
                ),
            });
        }
        self.inner.read_exact_at(offset, buf)
    }

    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::MemorySource;

    #[test]
    fn rates_are_honoured_and_counted() {
        let faults = Faults::new(1);
        faults.set_rates(FaultRates {
            io_error: 0.25,
            ..FaultRates::default()
        });
        let hits = (0..4000)
            .filter(|_| faults.roll(FaultKind::IoError))
            .count();
        assert!((800..1200).contains(&hits), "{hits} of 4000 at rate 0.25");
        assert_eq!(faults.counts().io_errors, hits as u64);
        assert!(!faults.roll(FaultKind::OutOfMemory));
        faults.stop();
        assert!((0..100).all(|_| !faults.roll(FaultKind::IoError)));
    }

    #[test]
    fn same_seed_same_decisions() {
        let run = |seed| {
            let f = Faults::new(seed);
            f.set_rates(FaultRates {
                transcode_error: 0.5,
                ..FaultRates::default()
            });
            (0..64)
                .map(|_| f.roll(FaultKind::TranscodeError))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn short_reads_fail_with_end_of_file_and_fill_half() {
        let faults = Faults::new(0);
        faults.set_rates(FaultRates {
            short_read: 1.0,
            ..FaultRates::default()
        });
        let data: Vec<u8> = (0..100).collect();
        let s = FaultySource::new(Arc::new(MemorySource::new("m", data)), faults.clone());
        let mut buf = [0u8; 10];
        match s.read_exact_at(20, &mut buf) {
            Err(ReadError::Io { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::UnexpectedEof)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(&buf[..5], &[20, 21, 22, 23, 24]);
        assert_eq!(faults.counts().short_reads, 1);
    }

    #[test]
    fn slow_reads_take_the_delay() {
        let faults = Faults::new(0);
        faults.set_rates(FaultRates {
            slow_read: 1.0,
            slow_delay: Duration::from_millis(30),
            ..FaultRates::default()
        });
        let s = FaultySource::new(Arc::new(MemorySource::new("m", vec![1; 8])), faults);
        let t = std::time::Instant::now();
        assert_eq!(s.read_range(0, 8).unwrap(), vec![1; 8]);
        assert!(t.elapsed() >= Duration::from_millis(30));
    }
}
