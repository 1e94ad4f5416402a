//! The frame's spine, in the order [`Streamer::update`] runs it: the
//! frame begins (views checked, the GPU's finished work taken in, the
//! driver's budget asked), finished loads come in, the plan is made or
//! taken from the planner thread, loads are asked for, the GPU work is
//! decided (`work.rs`) and carried out (`apply.rs`), and the frame ends
//! with what the GPU holds read back into its stats.

use super::plan_thread::{PlanInputs, Progress};
use super::slots::Facts;
use super::work::{self, UploadRoom};
use super::{FrameStats, Streamer};
use crate::gpu::feedback::FeedbackRing;
use crate::plan::{View, ViewError};

/// Where the frame stands: its number, what it measured, the views it
/// planned for.
#[derive(Debug, Default)]
pub(super) struct FrameState {
    pub(super) number: u64,
    pub(super) stats: FrameStats,
    pub(super) views: Vec<View>,
    /// The last view `update` skipped and why (see [`View::validate`]).
    pub(super) rejected_view: Option<(u64, ViewError)>,
    /// What last frame's work held back (its `held_back` reason to clear).
    pub(super) held: Vec<work::Asset>,
    /// The newest GPU feedback taken in.
    pub(super) feedback: Option<crate::gpu::feedback::FeedbackFrame>,
    /// The frame of the feedback last handed to the planner.
    pub(super) feedback_sent: Option<u64>,
    /// Feedback of frames up to this one is dropped when it maps
    /// (`settle_canonical` forgot it).
    pub(super) feedback_floor: u64,
}

impl Streamer {
    pub(super) fn begin_frame(&mut self, views: &[View]) {
        self.frame.number += 1;
        self.frame.stats = FrameStats {
            frame: self.frame.number,
            ..Default::default()
        };
        self.frame.views.clear();
        for v in views {
            match v.validate() {
                Ok(()) => self.frame.views.push(*v),
                Err(e) => {
                    self.frame.stats.rejected_views += 1;
                    self.frame.rejected_view = Some((self.frame.number, e));
                }
            }
        }
        // released resources the engine no longer binds dropped first
        self.gpu.begin_update();
        self.gpu.poll();
        // the newest feedback the GPU has handed back, if any (never waits)
        if let Some(f) = self
            .gpu
            .feedback()
            .as_mut()
            .and_then(FeedbackRing::take_newest)
        {
            if f.frame > self.frame.feedback_floor {
                self.frame.feedback = Some(f);
            }
        }
        if let Some(f) = &self.frame.feedback {
            self.frame.stats.feedback_age = Some(self.frame.number.saturating_sub(f.frame));
            self.frame.stats.feedback_textures = f.seen() as u32;
        }
        let own = self.gpu.accounted_bytes() + self.gpu.staging_bytes();
        self.budget
            .refresh_driver(self.frame.number, self.gpu.device(), own);
        self.budget.tick(self.frame.number);
        if self.options.loader_staging_bytes > 0 {
            self.size_staging_reserve();
            // the poll above gave back the room of finished copies
            self.restage_refused();
        }
    }

    /// Finished loads from the loader threads (never waits).
    pub(super) fn drain(&mut self) {
        for r in self.loader.drain() {
            self.accept_load(r);
        }
        for r in self.loader.drain_meshes() {
            self.accept_mesh_load(r);
        }
    }

    /// Plans within the planner's budget: the effective one less any
    /// headroom (the plan keeps room for its own growth inside it; the
    /// recycle pool gives way to it, see `budget.rs`).
    pub(super) fn plan(&mut self) {
        // in the background: the plan finished since the last update, or
        // (while the next is still running) the last one again; a plan now
        // only before the first
        let progress = if self.plans_in_background() {
            self.planner.poll()
        } else {
            Progress::Idle
        };
        match progress {
            Progress::Finished(worker_time) => self.frame.stats.plan_worker_time = worker_time,
            Progress::Running => {}
            Progress::Idle => {
                let inputs = self.plan_inputs(false);
                self.planner.plan_now(&inputs);
                self.planner.return_inputs(inputs);
                // made in this update: its certificates were the render
                // thread's time
                self.frame.stats.certificate_time = self.planner.last_plan().certificate_time;
            }
        }
        self.frame.stats.plan_age = self.frame.number - self.planner.plan_taken();
        let plan = self.planner.last_plan();
        self.frame.stats.fit_error = plan.fit_error;
        self.frame.stats.fit_gap_lp = plan.fit_gap();
        self.frame.stats.fit_gap_knapsack = plan.fit_gap_knapsack();
    }

    /// Hands the planner this frame's inputs, if it is free (in the
    /// background, at the end of `update`).
    pub(super) fn plan_next(&mut self) {
        if self.planner.is_here() {
            let inputs = self.plan_inputs(true);
            self.planner.plan_in_background(inputs);
        }
    }

    /// What the planner plans from now: the views, the budget, what every
    /// texture and mesh holds; `ahead`: for the next update.
    pub(super) fn plan_inputs(&mut self, ahead: bool) -> PlanInputs {
        self.check_slots();
        let mut inputs = self.planner.take_inputs();
        inputs.budget = self.budget.for_planner(
            self.tail_bytes(),
            self.options.transient_reserve,
            self.gpu.fixed_bytes(),
        );
        inputs.views.clone_from(&self.frame.views);
        inputs.resident.clear();
        inputs
            .resident
            .extend_from_slice(self.textures.slots.resident());
        inputs.meshes = self.mesh_resident();
        inputs.taken_at = self.frame.number;
        inputs.feedback = self.feedback_for_planner();
        // a plan made ahead is for the next update, which carries it out
        inputs.frame = self.frame.number + u64::from(ahead);
        inputs
    }

    /// The frame's GPU work: decided on a copy of the books (`work.rs`),
    /// carried out on the store (`apply.rs`), phase by phase.
    pub(super) fn work(&mut self) {
        self.release_holds();
        // an update that begins over the budget by what the GPU holds (a
        // budget cut, an out-of-memory event, the driver's budget fell)
        // gives memory back and grows nothing until it is within again
        self.frame.stats.giving_back =
            self.options.count_retiring && self.gpu.accounted_bytes() > self.hard_budget();
        let mut room = UploadRoom::new(
            self.options.upload_bytes_per_frame,
            self.options.uploads_per_frame,
        )
        .with_copies(self.options.copies_per_frame);
        let mut work = false;
        // 1. textures shrink; one whose allocation fails is left as it is
        // and the rest decided again on the books as they now stand
        let mut failed = work::Refused::new();
        let mut deferred = false;
        work |= self.shrink_textures_with(
            &mut room,
            &mut failed,
            false,
            &mut deferred,
            work::shrink_textures,
        );
        // 1b. refused shrinks left the books over the budget: the others
        // give up more than the plan asked, each refused one set aside
        if !failed.is_empty() {
            work |= self.shrink_further_while_over(&mut room, &mut failed, &mut deferred);
        }
        // 2. meshes drop detail (frees memory, allocates nothing)
        let steps = work::shrink_meshes(&self.mesh_facts(), &mut self.context());
        work |= self.carry_out(steps, &mut room, false).work;
        // what the shrinks released went into the recycle pool: the pool is
        // a cache and never keeps the books above the budget
        self.keep_pool_within_budget();
        // 2b. a plan made on the planner thread before the budget fell (set
        // lower, or lowered by an out-of-memory event or the driver) can
        // keep more than the budget now holds: the books come within it
        // here, the least valuable bytes first, and the next plan, made on
        // the budget as it is, gives back what fits. (A plan made in this
        // update fits it: this changes nothing without the planner thread.)
        if self.frame.stats.plan_age > 0 {
            work |= self.shrink_further_while_over(&mut room, &mut failed, &mut deferred);
            self.keep_pool_within_budget();
            if self.gpu.held_bytes() > self.hard_budget() && !self.frame.stats.cut_paced {
                let steps = work::drop_meshes_further(&self.mesh_facts(), &mut self.context());
                work |= self.carry_out(steps, &mut room, false).work;
            }
        }
        // 3. growth; after a failed allocation the rest waits
        let steps = {
            let paused = self.budget.growth_paused(self.frame.number);
            let textures = self
                .textures
                .facts(self.planner.last_plan(), Facts::Growing { paused });
            let meshes = self.mesh_facts();
            let mut ctx = self.context();
            // a growth waiting for a deferred shrink's room asks no headroom
            ctx.shrinks_deferred = deferred;
            work::grow(&textures, &meshes, &mut ctx, &mut room.clone())
        };
        work |= self.carry_out(steps, &mut room, true).work;
        if work || self.gpu.has_unsubmitted() {
            let submit = std::time::Instant::now();
            self.gpu.submit();
            self.frame.stats.submit_time = submit.elapsed();
        }
    }

    /// The frame's last step: finished work's callbacks run. With
    /// [`crate::streamer::StreamerOptions::count_retiring`] never waited for: a
    /// forced shrink's staging on a backend without GPU copies is memory in
    /// the budget cut's service, counted until the GPU is done.
    pub(super) fn end_frame(&mut self, waits_before: u64) {
        self.gpu.poll();
        if !self.options.count_retiring
            && self.gpu.held_bytes() > self.hard_budget()
            && self.gpu.staging_bytes() > 0
        {
            // without retiring books: a forced eviction re-uploaded kept
            // levels (backends without GPU copies), and the budget is kept
            // on the books, so let that staging drain
            self.gpu.wait_idle();
            self.gpu.poll();
        }
        // still over only if refused shrinks left no texture to give way
        // (`shrink_further` goes down to every tail before it stops)
        self.frame.stats.stuck_over_budget =
            self.frame.stats.refused_shrinks > 0 && self.gpu.held_bytes() > self.hard_budget();
        self.frame.stats.retiring_bytes = self.gpu.retiring_bytes();
        self.frame.stats.gpu_bytes = self.gpu.accounted_bytes();
        self.frame.stats.gpu_waits = (self.gpu.waits() - waits_before) as u32;
    }
}
