//! The canonical settled state: what a streamer holds for a scene, views and
//! budget, whatever the camera did before (for render tests and screenshots).
//!
//! [`Streamer::settle`] settles from wherever the streamer is: what it already
//! holds is sticky (hysteresis, minimum residency, the keep bonus) and loads
//! arrive in whatever order the loader threads finish them, so a streamer
//! that flew away and back can settle to other levels than one that started
//! at the view. [`Streamer::settle_canonical`] first forgets all of that (every
//! texture back to its tail, every mesh to its coarsest LOD, the recycle pool
//! emptied, the planner's memory and the headroom blocked growths asked for
//! cleared; a budget lowered by out-of-memory events stays lowered), then
//! settles in lockstep: every load an update requested arrives, and the GPU
//! finishes the update's copies, before the next update, so neither arrival
//! order nor GPU speed can change the outcome.

use super::{LoadState, MeshId, SettleError, Streamer, TextureId};
use crate::plan::View;
use std::time::{Duration, Instant};

impl Streamer {
    /// Settles to the state that depends only on the registered scene, the
    /// views and the budget in force: two streamers with the same textures,
    /// meshes and objects settle to the same levels, LODs and tiers at the
    /// same views and budget, bit for bit, whatever each did before. Slower
    /// than [`settle`](Self::settle): tails are read again, and each update
    /// waits for its loads. Returns the updates it took.
    pub fn settle_canonical(
        &mut self,
        views: &[View],
        timeout: Duration,
    ) -> Result<u32, SettleError> {
        let start = Instant::now();
        self.forget_history(start + timeout, timeout)?;
        let mut frames = 0;
        loop {
            self.update(views);
            frames += 1;
            // the GPU finishes each update's copies before the next: staging
            // (which counts in the budget) is free again at the same point
            // whatever the GPU's speed
            self.gpu.wait_idle();
            self.gpu.poll();
            // and a plan on the planner thread is done before the next
            self.planner.wait();
            // a growth the budget held back is final only in an update that
            // uploaded nothing else (a decision, not the GPU's timing)
            if self.converged_when(self.frame.stats.upload_bytes == 0) {
                return Ok(frames);
            }
            // every load this update asked for arrives before the next one
            self.accept_every_load(start, timeout)?;
            if start.elapsed() > timeout {
                return Err(SettleError::Timeout(timeout));
            }
        }
    }

    /// Blocks until every load requested so far has arrived, the GPU has
    /// finished the copies recorded so far and a plan on the planner thread
    /// ([`crate::streamer::StreamerOptions::plan_thread`] on the planner thread) is done, and takes
    /// the arrivals in, so the next [`update`](Self::update) builds them
    /// and carries that plan out. Called after every
    /// `update`, it makes a run independent of how fast the loader threads
    /// and the GPU are (lockstep: what a frame asks for is there the next
    /// frame, still within the upload cap), at the cost of blocking: for
    /// benchmarks and render tests, not for a renderer's frame loop.
    pub fn finish_loads(&mut self, timeout: Duration) -> Result<(), SettleError> {
        let start = Instant::now();
        self.gpu.wait_idle();
        self.gpu.poll();
        self.planner.wait();
        self.accept_every_load(start, timeout)
    }

    /// Blocks until every load requested so far has arrived and takes the
    /// arrivals in, without waiting for the GPU: the next
    /// [`update`](Self::update) builds them. For tests and tools that need
    /// a run independent of the loader threads' speed on a loaded machine
    /// while the GPU stays as far behind as it is.
    pub fn wait_for_loads(&mut self, timeout: Duration) -> Result<(), SettleError> {
        self.accept_every_load(Instant::now(), timeout)
    }

    /// Waits for every load in flight and takes each in (timing out
    /// `timeout` after `start`).
    fn accept_every_load(&mut self, start: Instant, timeout: Duration) -> Result<(), SettleError> {
        while self.loader.outstanding() > 0 {
            if start.elapsed() > timeout {
                return Err(SettleError::Timeout(timeout));
            }
            for r in self.loader.wait(Duration::from_millis(50)) {
                self.accept_load(r);
            }
            for r in self.loader.drain_meshes() {
                self.accept_mesh_load(r);
            }
        }
        Ok(())
    }

    /// Back to the state registration leaves: in-flight loads finished and
    /// dropped, tails alone, coarsest LODs, an empty pool, no plan memory.
    fn forget_history(&mut self, deadline: Instant, timeout: Duration) -> Result<(), SettleError> {
        while self.loader.outstanding() > 0 {
            if Instant::now() > deadline {
                return Err(SettleError::Timeout(timeout));
            }
            drop(self.loader.wait(Duration::from_millis(50)));
            drop(self.loader.drain_meshes());
        }
        for id in self
            .textures
            .entries
            .iter::<TextureId>()
            .map(|(id, _)| id)
            .collect::<Vec<_>>()
        {
            self.reset_texture_to_tail(id)?;
        }
        let frame = self.frame.number;
        for id in self
            .meshes
            .entries
            .iter::<MeshId>()
            .map(|(id, _)| id)
            .collect::<Vec<_>>()
        {
            let e = self.meshes.entries.get_mut(id).expect("listed above");
            let detail = e.detail.take();
            let fading = e.fading.take().and_then(|(old, _)| old);
            e.requested = None;
            e.pending = None;
            e.load = LoadState::default();
            e.since_frame = frame;
            for m in detail.into_iter().chain(fading) {
                self.free_mesh(id, m);
            }
        }
        self.gpu.trim_pool(0);
        self.planner.get().forget_history();
        self.forget_feedback();
        self.budget.forget_headroom();
        self.gpu.submit();
        // nothing retiring either: a settle that began with memory on its
        // way back would wait for it where a fresh streamer does not (the
        // caller binds the tails from `take_changed` before its next frame)
        self.gpu.drop_all_retiring();
        self.gpu.wait_idle();
        self.gpu.poll();
        Ok(())
    }
}
