//! Loader threads: read level byte ranges and transcode them, off the render thread.
//!
//! A [`Loader`] owns a fixed set of worker threads and a priority queue of
//! [`LoadRequest`]s. The render thread *submits* requests (cheap: a lock and a
//! heap push) and *drains* finished [`LoadResult`]s with [`Loader::drain`]
//! (never blocking) or waits for them with [`Loader::wait`] (for deterministic
//! "settle" modes and tools). Workers take the highest-priority request, read
//! the level's bytes from its [`crate::container::TextureFile`]'s source, transcode them,
//! and send the result back. With [`Loader::set_staging`] they also move the
//! texels of requests that allow it into a staging buffer of their own
//! (`crate::gpu::staging`); that is all they do on the GPU.
//!
//! Queue ownership: `Shared::queue` is filled by `submit` and emptied by the
//! workers; `Shared::cancelled` is filled by `cancel` and checked (and cleared)
//! by workers as they pop; the result channel is filled by workers and drained
//! by the owner of the `Loader`. Dropping the `Loader` stops the workers after
//! their current level and joins them.

use crate::container::{LevelError, TextureFile};
use crate::fault::{FaultKind, Faults};
use crate::gpu::staging::LoaderStaging;
use crate::kinds::Tier;
use crate::mesh::{MeshError, MeshFile, MeshLod};
use crate::transcode::{self, LevelImage, Output, TranscodeError, TranscodeOptions};
use std::collections::{BinaryHeap, HashSet};
use std::fmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whose load a request is: results carry it back and [`Loader::cancel`]
/// names requests by it and their level. Texture and mesh keys hold the
/// slot and generation of the id they load for, so a result for a removed
/// and reused slot is recognised as stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadKey {
    /// A registered texture's levels in one tier.
    Texture {
        /// The texture's slot.
        slot: u32,
        /// The slot's generation when the id was issued.
        generation: u32,
        /// The tier the levels are transcoded to.
        tier: Tier,
    },
    /// The always-resident tail read while registering (a number of its own
    /// per registration, so an earlier failed one's results are not taken).
    Tail(u64),
    /// A registered mesh's LODs.
    Mesh {
        /// The mesh's slot.
        slot: u32,
        /// The slot's generation when the id was issued.
        generation: u32,
    },
    /// Any other caller's own number (tools, tests).
    Other(u64),
}

/// One level to read and transcode.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// Whose request this is (e.g. a texture's); results carry it back.
    pub key: LoadKey,
    /// The file to read.
    pub file: TextureFile,
    /// The level to read.
    pub level: u32,
    /// What to produce, and how.
    pub options: TranscodeOptions,
    /// Larger runs first; equal priorities run in submission order.
    pub priority: f32,
    /// Whether the worker may move the texels into GPU staging memory of
    /// their own once transcoded ([`Loader::set_staging`]; without staging
    /// set, ignored). The result's [`LevelImage::staged`] says whether it did.
    pub stage: bool,
}

/// Why a load failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading the level failed.
    #[error(transparent)]
    Level(#[from] LevelError),
    /// Transcoding it failed.
    #[error(transparent)]
    Transcode(#[from] TranscodeError),
    /// A transcode failure injected by [`crate::fault::Faults`].
    #[error("{name}: level {level}: injected transcode failure")]
    InjectedTranscode {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
    },
    /// The worker panicked (a bug in mipstream or a codec); the loader survives.
    #[error("{name}: level {level}: the loader thread panicked: {message}")]
    Panicked {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
        /// The panic message.
        message: String,
    },
}

/// One mesh LOD to read (vertices and indices, checked).
#[derive(Debug, Clone)]
pub struct MeshLoadRequest {
    /// Whose request this is; results carry it back. `(key, lod)` is what
    /// [`Loader::cancel`] takes.
    pub key: LoadKey,
    /// The file to read.
    pub file: MeshFile,
    /// The LOD to read.
    pub lod: u32,
    /// Larger runs first, in one queue with the texture levels.
    pub priority: f32,
}

/// A finished mesh request.
#[derive(Debug)]
pub struct MeshLoadResult {
    /// The request's key.
    pub key: LoadKey,
    /// The request's LOD.
    pub lod: u32,
    /// The vertices and indices, or why there are none.
    pub result: Result<MeshLod, MeshLoadError>,
    /// Time spent reading.
    pub elapsed: Duration,
}

/// Why a mesh load failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshLoadError {
    /// Reading or checking the LOD failed.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// The worker panicked; the loader survives.
    #[error("{name}: LOD {lod}: the loader thread panicked: {message}")]
    Panicked {
        /// The file's name.
        name: String,
        /// The LOD.
        lod: u32,
        /// The panic message.
        message: String,
    },
}

/// A finished request.
#[derive(Debug)]
pub struct LoadResult {
    /// The request's key.
    pub key: LoadKey,
    /// The request's level.
    pub level: u32,
    /// The output that was asked for.
    pub output: Output,
    /// The texels, or why there are none.
    pub result: Result<LevelImage, LoadError>,
    /// Time spent reading and transcoding.
    pub elapsed: Duration,
    /// The level was to be staged and is worth staging, but the staging
    /// reserve had no room for it then: its texels are in CPU memory
    /// ([`LevelImage::data`]). [`Loader::restage`] tries again.
    pub reserve_full: bool,
}

/// A transcoded level handed back to the workers to be moved into staging
/// ([`Loader::restage`]).
struct StageRequest {
    key: LoadKey,
    output: Output,
    image: LevelImage,
    priority: f32,
}

enum Job {
    Level(LoadRequest),
    Mesh(MeshLoadRequest),
    Stage(StageRequest),
}

impl Job {
    fn priority(&self) -> f32 {
        match self {
            Job::Level(r) => r.priority,
            Job::Mesh(r) => r.priority,
            Job::Stage(r) => r.priority,
        }
    }

    fn id(&self) -> (LoadKey, u32) {
        match self {
            Job::Level(r) => (r.key, r.level),
            Job::Mesh(r) => (r.key, r.lod),
            Job::Stage(r) => (r.key, r.image.level),
        }
    }
}

enum Finished {
    Level(LoadResult),
    Mesh(MeshLoadResult),
}

struct Queued {
    req: Job,
    seq: u64,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.req
            .priority()
            .total_cmp(&other.req.priority())
            .then(other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
struct State {
    queue: BinaryHeap<Queued>,
    cancelled: HashSet<(LoadKey, u32)>,
    seq: u64,
    busy: usize,
    /// Cancelled requests dropped by workers since the last drain.
    discarded: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    faults: Mutex<Option<Arc<Faults>>>,
    staging: Mutex<Option<LoaderStaging>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A pool of loader threads with a priority queue.
pub struct Loader {
    shared: Arc<Shared>,
    /// In a mutex only so that the loader (and the `Streamer` that owns it)
    /// is `Sync`: every use is through `&mut self` (`Mutex::get_mut`, no lock).
    results: Mutex<Receiver<Finished>>,
    /// Mesh results drained with texture results, kept for `drain_meshes`.
    mesh_inbox: Vec<MeshLoadResult>,
    /// Texture results drained with mesh results, kept for `drain`.
    level_inbox: Vec<LoadResult>,
    workers: Vec<JoinHandle<()>>,
    outstanding: usize,
    /// What the caller is done with and should not pay to free: dropped
    /// on `freer`.
    spent: Option<Sender<Box<dyn Send>>>,
    freer: Option<JoinHandle<()>>,
}

/// Buffers at least this big are freed on the loader's freeing thread
/// ([`Loader::free`]); smaller ones cost less to free than to send.
const FREE_ELSEWHERE_BYTES: usize = 64 << 10;

impl fmt::Debug for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared.lock();
        f.debug_struct("Loader")
            .field("workers", &self.workers.len())
            .field("queued", &s.queue.len())
            .field("busy", &s.busy)
            .field("outstanding", &self.outstanding)
            .finish()
    }
}

impl Loader {
    /// Starts `workers` threads (at least one).
    pub fn new(workers: usize) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            faults: Mutex::new(None),
            staging: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel();
        let workers = (0..workers.max(1))
            .map(|i| {
                let shared = shared.clone();
                let tx = tx.clone();
                std::thread::Builder::new()
                    .name(format!("mipstream-loader-{i}"))
                    .spawn(move || worker_loop(&shared, &tx))
                    .expect("spawning a loader thread")
            })
            .collect();
        let (spent, bin) = mpsc::channel::<Box<dyn Send>>();
        let freer = std::thread::Builder::new()
            .name("mipstream-free".into())
            .spawn(move || bin.into_iter().for_each(drop))
            .expect("spawning the freeing thread");
        Self {
            shared,
            results: Mutex::new(rx),
            mesh_inbox: Vec::new(),
            level_inbox: Vec::new(),
            workers,
            outstanding: 0,
            spent: Some(spent),
            freer: Some(freer),
        }
    }

    /// Frees `data` off the calling thread when it is big: freeing a
    /// multi-megabyte buffer can cost the caller the allocator handing
    /// memory back to the system (glibc trims its heap with system calls),
    /// and the render thread should not pay for that. Small buffers are
    /// freed here.
    pub fn free(&self, data: Vec<u8>) {
        if data.capacity() >= FREE_ELSEWHERE_BYTES {
            self.drop_elsewhere(Box::new(data));
        }
    }

    /// Drops `value` on the freeing thread.
    fn drop_elsewhere(&self, value: Box<dyn Send>) {
        if let Some(spent) = &self.spent {
            // the thread lives as long as our sender; were it gone, the
            // value would come back in the error and be dropped here
            let _ = spent.send(value);
        }
    }

    /// Makes transcodes fail at the rate of `faults` (None: never).
    pub fn set_faults(&mut self, faults: Option<Arc<Faults>>) {
        *self.shared.faults.lock().unwrap_or_else(|e| e.into_inner()) = faults;
    }

    /// Lets workers move transcoded texels into staging buffers of their
    /// own (for requests with [`LoadRequest::stage`]), out of `staging`'s
    /// reserve: the GPU side of the upload then happens here, off the
    /// thread that records the copies. `None`: texels stay in CPU memory.
    pub fn set_staging(&mut self, staging: Option<LoaderStaging>) {
        *self
            .shared
            .staging
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = staging;
    }

    /// Queues a request.
    pub fn submit(&mut self, req: LoadRequest) {
        self.push(Job::Level(req));
    }

    /// Queues a mesh LOD read (same workers, same queue, same priorities).
    pub fn submit_mesh(&mut self, req: MeshLoadRequest) {
        self.push(Job::Mesh(req));
    }

    fn push(&mut self, req: Job) {
        let mut s = self.shared.lock();
        s.cancelled.remove(&req.id());
        s.seq += 1;
        let seq = s.seq;
        s.queue.push(Queued { req, seq });
        self.outstanding += 1;
        drop(s);
        self.shared.wake.notify_one();
    }

    /// Hands a level that came back with [`LoadResult::reserve_full`] to
    /// the workers again, to be moved into staging if the reserve has room
    /// now; it comes back as a result like a load's (`key`, its level,
    /// `output`), staged or still in CPU memory with `reserve_full` set.
    /// Nothing is read or transcoded again. Without staging set it comes
    /// back as it is.
    pub fn restage(&mut self, key: LoadKey, output: Output, image: LevelImage, priority: f32) {
        self.push(Job::Stage(StageRequest {
            key,
            output,
            image,
            priority,
        }));
    }

    /// Cancels queued requests for `(key, level)`; one already running finishes
    /// and its result is discarded.
    pub fn cancel(&mut self, key: LoadKey, level: u32) {
        self.shared.lock().cancelled.insert((key, level));
    }

    /// Requests submitted whose results have not been drained yet (cancelled
    /// ones count until a worker discards them).
    pub fn outstanding(&self) -> usize {
        self.outstanding + self.level_inbox.len() + self.mesh_inbox.len()
    }

    /// Requests still waiting for a worker.
    pub fn queued(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Every finished texture result, without blocking (finished mesh
    /// results wait for [`drain_meshes`](Self::drain_meshes)).
    pub fn drain(&mut self) -> Vec<LoadResult> {
        self.collect();
        std::mem::take(&mut self.level_inbox)
    }

    /// Every finished mesh result, without blocking (finished texture
    /// results wait for [`drain`](Self::drain)).
    pub fn drain_meshes(&mut self) -> Vec<MeshLoadResult> {
        self.collect();
        std::mem::take(&mut self.mesh_inbox)
    }

    /// Moves finished work from the channel into the two inboxes.
    fn collect(&mut self) {
        let got: Vec<Finished> = self.results().try_iter().collect();
        self.sort(got);
    }

    fn results(&mut self) -> &Receiver<Finished> {
        self.results.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn sort(&mut self, got: Vec<Finished>) {
        self.account(got.len());
        for f in got {
            match f {
                Finished::Level(r) => self.level_inbox.push(r),
                Finished::Mesh(r) => self.mesh_inbox.push(r),
            }
        }
    }

    /// Blocks until at least one result arrives or `timeout` passes, then drains.
    /// Returns at once when nothing is outstanding, and with what is already
    /// in: results [`drain_meshes`](Self::drain_meshes) moved off the channel
    /// count in [`outstanding`](Self::outstanding) until returned here (left
    /// behind, a caller waiting for `outstanding() == 0` waited forever).
    pub fn wait(&mut self, timeout: Duration) -> Vec<LoadResult> {
        self.collect();
        if !self.level_inbox.is_empty() {
            return std::mem::take(&mut self.level_inbox);
        }
        let deadline = Instant::now() + timeout;
        loop {
            self.account(0);
            let left = deadline.saturating_duration_since(Instant::now());
            if self.outstanding == 0 || left.is_zero() {
                return Vec::new();
            }
            let results = self.results();
            match results.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok(first) => {
                    let mut got = vec![first];
                    got.extend(results.try_iter());
                    self.sort(got);
                    // mesh results stay for `drain_meshes`
                    return std::mem::take(&mut self.level_inbox);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Vec::new(),
            }
        }
    }

    fn account(&mut self, got: usize) {
        let discarded = std::mem::take(&mut self.shared.lock().discarded);
        self.outstanding = self.outstanding.saturating_sub(got + discarded);
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        {
            let mut s = self.shared.lock();
            s.shutdown = true;
            s.queue.clear();
        }
        self.shared.wake.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        // the freeing thread ends when its channel closes
        drop(self.spent.take());
        if let Some(f) = self.freer.take() {
            let _ = f.join();
        }
    }
}

fn worker_loop(shared: &Shared, tx: &Sender<Finished>) {
    loop {
        let req = {
            let mut s = shared.lock();
            loop {
                if s.shutdown {
                    return;
                }
                match s.queue.pop() {
                    Some(q) if s.cancelled.remove(&q.req.id()) => {
                        s.discarded += 1;
                    }
                    Some(q) => {
                        s.busy += 1;
                        break q.req;
                    }
                    None => s = shared.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
                }
            }
        };
        let start = Instant::now();
        let faults = shared
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let staging = match &req {
            Job::Level(LoadRequest { stage: true, .. }) | Job::Stage(_) => shared
                .staging
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            _ => None,
        };
        let id = req.id();
        let finished = match req {
            Job::Level(req) => {
                let (result, reserve_full) = match run(&req, faults.as_deref(), staging.as_ref()) {
                    Ok((img, full)) => (Ok(img), full),
                    Err(e) => (Err(e), false),
                };
                Finished::Level(LoadResult {
                    key: req.key,
                    level: req.level,
                    output: req.options.output,
                    result,
                    elapsed: start.elapsed(),
                    reserve_full,
                })
            }
            Job::Stage(req) => {
                let level = req.image.level;
                let (image, reserve_full) = match &staging {
                    Some(s) => s.try_stage(req.image),
                    None => (req.image, false),
                };
                Finished::Level(LoadResult {
                    key: req.key,
                    level,
                    output: req.output,
                    result: Ok(image),
                    elapsed: start.elapsed(),
                    reserve_full,
                })
            }
            Job::Mesh(req) => Finished::Mesh(MeshLoadResult {
                key: req.key,
                lod: req.lod,
                result: run_mesh(&req),
                elapsed: start.elapsed(),
            }),
        };
        let mut s = shared.lock();
        s.busy -= 1;
        let cancelled = s.cancelled.remove(&id);
        if cancelled {
            s.discarded += 1;
        }
        drop(s);
        if !cancelled {
            let _ = tx.send(finished);
        }
    }
}

/// Reads one mesh LOD, turning a panic into an error.
fn run_mesh(req: &MeshLoadRequest) -> Result<MeshLod, MeshLoadError> {
    let work = || req.file.read_lod(req.lod).map_err(MeshLoadError::from);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| {
        Err(MeshLoadError::Panicked {
            name: req.file.info().name.clone(),
            lod: req.lod,
            message: panic_message(p.as_ref()),
        })
    })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Reads and transcodes one level (into staging when `staging` is given),
/// turning a codec panic into an error; says whether staging found the
/// reserve full.
fn run(
    req: &LoadRequest,
    faults: Option<&Faults>,
    staging: Option<&LoaderStaging>,
) -> Result<(LevelImage, bool), LoadError> {
    let work = || -> Result<(LevelImage, bool), LoadError> {
        let raw = req.file.read_level(req.level)?;
        if faults.is_some_and(|f| f.roll(FaultKind::TranscodeError)) {
            return Err(LoadError::InjectedTranscode {
                name: req.file.info().name.clone(),
                level: req.level,
            });
        }
        let img = transcode::transcode_level(&req.file, &raw, &req.options)?;
        Ok(match staging {
            Some(s) => s.try_stage(img),
            None => (img, false),
        })
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| {
        Err(LoadError::Panicked {
            name: req.file.info().name.clone(),
            level: req.level,
            message: panic_message(p.as_ref()),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Says on which thread it was dropped.
    struct Probe(Sender<Option<String>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().name().map(String::from));
        }
    }

    #[test]
    fn a_level_handed_back_for_staging_returns_as_a_result_of_its_key_and_level() {
        let mut loader = Loader::new(1);
        let key = LoadKey::Other(7);
        let image = LevelImage {
            level: 3,
            width: 4,
            height: 2,
            images: 1,
            format: wgpu::TextureFormat::Rgba8Unorm,
            bytes_per_row: 16,
            rows_per_image: 2,
            data: (0..32).collect(),
            staged: None,
        };
        loader.restage(key, Output::AsStored, image, f32::MAX);
        assert_eq!(loader.outstanding(), 1);
        let got = loader.wait(Duration::from_secs(10));
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!((r.key, r.level, r.output), (key, 3, Output::AsStored));
        // without staging set it comes back as it went: texels untouched
        // and not refused for room
        assert!(!r.reserve_full);
        let img = r.result.as_ref().unwrap();
        assert!(img.staged.is_none());
        assert_eq!(img.data, (0..32).collect::<Vec<u8>>());
        assert_eq!(loader.outstanding(), 0);
    }

    #[test]
    fn what_the_caller_hands_over_is_dropped_on_the_freeing_thread() {
        let loader = Loader::new(1);
        let (tx, rx) = mpsc::channel();
        loader.drop_elsewhere(Box::new(Probe(tx.clone())));
        let on = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(on.as_deref(), Some("mipstream-free"));
        // what is still queued when the loader goes is dropped before
        // the loader's drop returns, not leaked
        for _ in 0..100 {
            loader.drop_elsewhere(Box::new(Probe(tx.clone())));
        }
        drop(tx);
        drop(loader);
        assert_eq!(rx.try_iter().count(), 100);
    }
}
