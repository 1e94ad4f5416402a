//! The streamer's planner, here or on a thread of its own.
//!
//! With [`super::StreamerOptions::plan_thread`] inline (the default's
//! choice below 2,048 textures), `update` plans on the calling thread.
//! On the planner thread, the
//! end of each `update` hands the planner, with that frame's views and
//! what every texture and mesh then holds, to a planner thread, and the
//! next `update` takes the finished plan back and carries it out. `update`
//! never waits for it: while the planner is still busy, the frame carries
//! out the last plan again and hands over nothing (Unreal's streaming
//! manager does the same with its asynchronous mip calculation: it goes on
//! with what it has until the task is done). So a plan is usually one
//! frame old, more when the planner thread is starved
//! ([`super::FrameStats::plan_age`]); the budget itself is still kept
//! every frame on the streamer's own books (a plan only chooses what to
//! load and drop, `work.rs` decides what fits).
//!
//! The plan is made from the same inputs by the same code whichever thread
//! runs it. Anything that changes the planner between frames (registering,
//! moving, removing, options) first takes it back, waiting for a plan in
//! flight.
//!
//! The last plan itself lives here, beside the planner (swapped out of it
//! when a plan is done), so the streamer's reports and checks read it while
//! the next one is being made.

use crate::plan::feedback::Sampled;
use crate::plan::{
    MeshPlan, MeshResident, Plan, Planner, Policy, ResidentState, TexturePlan, View,
};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a plan is made from.
#[derive(Debug, Default)]
pub(super) struct PlanInputs {
    pub(super) views: Vec<View>,
    pub(super) budget: u64,
    pub(super) resident: Vec<ResidentState>,
    pub(super) meshes: Vec<MeshResident>,
    /// The frame planned for: the one that will carry the plan out (its
    /// residency locks and history are judged at that frame).
    pub(super) frame: u64,
    /// The update the inputs were taken in.
    pub(super) taken_at: u64,
    /// GPU feedback newer than any the planner took: its frame and what
    /// each texture slot sampled.
    pub(super) feedback: Option<(u64, Vec<Option<Sampled>>)>,
}

struct Job {
    planner: Box<Planner>,
    inputs: PlanInputs,
}

type Done = std::thread::Result<(Box<Planner>, PlanInputs, Duration)>;

#[derive(Debug)]
struct Worker {
    jobs: Option<Sender<Job>>,
    /// (in a mutex only so that the streamer stays `Sync`; one thread
    /// receives, with `&mut` access)
    done: Mutex<Receiver<Done>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("frame", &self.inputs.frame)
            .finish()
    }
}

impl Worker {
    fn spawn() -> Self {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, done) = channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("mipstream planner".into())
            .spawn(move || {
                below_the_render_thread();
                for Job {
                    mut planner,
                    inputs,
                } in inbox
                {
                    let result = catch_unwind(AssertUnwindSafe(move || {
                        let start = Instant::now();
                        plan(&mut planner, &inputs);
                        (planner, inputs, start.elapsed())
                    }));
                    if outbox.send(result).is_err() {
                        return;
                    }
                }
            })
            .expect("the planner thread starts");
        Self {
            jobs: Some(jobs),
            done: Mutex::new(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // closing the queue ends the thread once its job (if any) is done
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Lowers the calling thread's priority (nice 9 on Linux). Handing over a
/// plan wakes the planner thread, and the scheduler favours a thread that
/// slept: at normal priority the woken planner often took the core from
/// the render thread that woke it (on GL at 10,000 textures, the render
/// thread's share of the plan went from 0.03 to 1.6-1.7 ms p99 in two of
/// four runs of `bench-update`; niced, 0.03-0.06 in all four). Not being
/// able to (a platform without the call, a sandbox) is harmless.
fn below_the_render_thread() {
    #[cfg(not(target_arch = "wasm32"))]
    if let Ok(value) = thread_priority::ThreadPriorityValue::try_from(25u8) {
        let _ = thread_priority::set_current_thread_priority(
            thread_priority::ThreadPriority::Crossplatform(value),
        );
    }
}

fn plan(planner: &mut Planner, i: &PlanInputs) {
    if let Some((frame, slots)) = &i.feedback {
        planner.take_feedback(*frame, slots);
    }
    planner.views_of_update(i.taken_at);
    planner.plan_with_meshes(&i.views, i.budget, &i.resident, &i.meshes, i.frame);
}

/// The planner and its last plan.
#[derive(Debug)]
pub(super) struct PlanHandle {
    /// `None` while a plan is in flight on the worker.
    planner: Option<Box<Planner>>,
    /// The last finished plan (defaults before the first).
    plan: Plan,
    worker: Option<Worker>,
    /// A finished plan the next `update` has not used yet.
    fresh: bool,
    /// The worker's time on the last finished plan.
    worker_time: Duration,
    /// Inputs' buffers, reused from plan to plan.
    spare: PlanInputs,
    /// The planner's policy and, per texture slot, whether its measured
    /// loss judges it: what the reports read while the planner is away.
    policy: Policy,
    measured: Vec<bool>,
    /// Changes to the planner's scene or settings so far ([`Self::get`]
    /// calls), and how many there had been when the last finished plan's
    /// inputs were taken; that plan's views.
    edits: u64,
    sent_edits: u64,
    plan_edits: u64,
    plan_views: Vec<View>,
    plan_taken: u64,
}

/// Where the next plan stands ([`PlanHandle::poll`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Progress {
    /// Finished since the last poll, in this much of the worker's time.
    Finished(Duration),
    /// Still running on the worker.
    Running,
    /// None in flight and none finished unused (nothing planned yet).
    Idle,
}

impl PlanHandle {
    pub(super) fn new(planner: Planner) -> Self {
        Self {
            policy: planner.policy(),
            planner: Some(Box::new(planner)),
            plan: Plan::default(),
            worker: None,
            fresh: false,
            worker_time: Duration::ZERO,
            spare: PlanInputs::default(),
            measured: Vec::new(),
            edits: 0,
            sent_edits: 0,
            plan_edits: 0,
            plan_views: Vec::new(),
            plan_taken: 0,
        }
    }

    /// Whether the last finished plan was made from `views` and from the
    /// planner as it is now (nothing registered, moved or set since).
    pub(super) fn is_current_for(&self, views: &[View]) -> bool {
        self.plan_edits == self.edits && self.plan_views == views
    }

    /// The level policy in use.
    pub(super) fn policy(&self) -> Policy {
        self.policy
    }

    pub(super) fn set_policy(&mut self, policy: Policy) {
        self.get().set_policy(policy);
        self.policy = policy;
    }

    /// Whether texture `slot` is judged by its measured loss (see
    /// [`Planner::uses_measured_loss`]; kept by [`Self::note_loss`]).
    pub(super) fn uses_measured_loss(&self, slot: usize) -> bool {
        self.measured.get(slot).copied().unwrap_or(false)
    }

    /// Texture `slot` was set or removed.
    pub(super) fn note_loss(&mut self, slot: usize) {
        let measured = self.scratch().uses_measured_loss(slot);
        if slot >= self.measured.len() {
            self.measured.resize(slot + 1, false);
        }
        self.measured[slot] = measured;
    }

    /// The planner's options changed.
    pub(super) fn note_losses(&mut self) {
        for slot in 0..self.measured.len() {
            self.note_loss(slot);
        }
    }

    /// The planner, to change its scene or settings: taken back first if a
    /// plan is in flight (waiting for it), and the last plan no longer
    /// counts as made from the planner as it is.
    pub(super) fn get(&mut self) -> &mut Planner {
        self.edits += 1;
        self.scratch()
    }

    /// Something the plan is made from changed outside the planner (the
    /// budget): the last plan, and one in flight, no longer count as made
    /// from the inputs as they are. Nothing waits.
    pub(super) fn invalidate(&mut self) {
        self.edits += 1;
    }

    /// The planner for a question that changes no plan (its scratch state
    /// only), taken back first if a plan is in flight.
    pub(super) fn scratch(&mut self) -> &mut Planner {
        self.join();
        self.planner.as_mut().expect("joined")
    }

    /// The last finished plan.
    pub(super) fn last_plan(&self) -> &Plan {
        &self.plan
    }

    /// Plans now, on this thread.
    pub(super) fn plan_now(&mut self, inputs: &PlanInputs) {
        self.join();
        plan(self.planner.as_mut().expect("joined"), inputs);
        self.sent_edits = self.edits;
        self.finish(Duration::ZERO, inputs);
        self.fresh = false;
    }

    /// Inputs' buffers to fill for [`Self::plan_in_background`].
    pub(super) fn take_inputs(&mut self) -> PlanInputs {
        std::mem::take(&mut self.spare)
    }

    /// Gives buffers back for the next plan.
    pub(super) fn return_inputs(&mut self, inputs: PlanInputs) {
        self.spare = inputs;
    }

    /// Starts a plan on the worker; the planner comes back at a
    /// [`Self::poll`] after it is done, or at [`Self::get`].
    pub(super) fn plan_in_background(&mut self, inputs: PlanInputs) {
        self.join();
        let planner = self.planner.take().expect("joined");
        self.sent_edits = self.edits;
        let worker = self.worker.get_or_insert_with(Worker::spawn);
        let jobs = worker.jobs.as_ref().expect("open until dropped");
        if let Err(e) = jobs.send(Job { planner, inputs }) {
            // the thread is gone (it cannot be: it ends only when dropped);
            // plan here rather than lose the planner
            let Job { planner, inputs } = e.0;
            self.planner = Some(planner);
            self.plan_now(&inputs);
            self.fresh = true;
            self.spare = inputs;
        }
    }

    /// Where the next plan stands, never waiting: finished since the last
    /// call (swapped in), still running, or not started.
    pub(super) fn poll(&mut self) -> Progress {
        if self.planner.is_none() && !self.receive(false) {
            return Progress::Running;
        }
        if std::mem::take(&mut self.fresh) {
            Progress::Finished(self.worker_time)
        } else {
            Progress::Idle
        }
    }

    /// Waits for a plan in flight, if any (lockstep runs: what a frame
    /// started is finished before the next).
    pub(super) fn wait(&mut self) {
        self.join();
    }

    /// Whether the planner is here (no plan in flight).
    pub(super) fn is_here(&self) -> bool {
        self.planner.is_some()
    }

    /// The update whose inputs the last finished plan was made from.
    pub(super) fn plan_taken(&self) -> u64 {
        self.plan_taken
    }

    /// Waits for a plan in flight and swaps it in.
    fn join(&mut self) {
        if self.planner.is_none() {
            self.receive(true);
        }
    }

    /// Swaps in the plan in flight if it is done (or, with `wait`, once it
    /// is); whether it was.
    fn receive(&mut self, wait: bool) -> bool {
        let worker = self.worker.as_ref().expect("a plan is in flight");
        let done = {
            let done = worker.done.lock().unwrap_or_else(|e| e.into_inner());
            if wait {
                done.recv().map_err(|_| true)
            } else {
                done.try_recv().map_err(|e| e == TryRecvError::Disconnected)
            }
        };
        match done {
            Ok(Ok((planner, inputs, took))) => {
                self.planner = Some(planner);
                self.finish(took, &inputs);
                self.spare = inputs;
                true
            }
            // the planner panicked: the same panic, on the caller's thread
            Ok(Err(panic)) => resume_unwind(panic),
            Err(false) => false,
            Err(true) => panic!("the mipstream planner thread ended with a plan in flight"),
        }
    }

    fn finish(&mut self, took: Duration, inputs: &PlanInputs) {
        let planner = self.planner.as_mut().expect("here");
        planner.swap_plan(&mut self.plan);
        self.fresh = true;
        self.worker_time = took;
        self.plan_edits = self.sent_edits;
        self.plan_taken = inputs.taken_at;
        self.plan_views.clear();
        self.plan_views.extend_from_slice(&inputs.views);
    }

    /// A texture just registered in `slot` holds its tail until a plan
    /// made after it says otherwise (a plan in flight predates it, and the
    /// last plan's entry for the slot may be a removed texture's).
    /// (A slot past the plan's end would read as the default plan, level
    /// 0, so the plan grows to cover it.)
    pub(super) fn hold_new_texture(&mut self, slot: usize, tail_level: u32) {
        let textures = &mut self.plan.textures;
        if slot >= textures.len() {
            textures.resize(slot + 1, TexturePlan::default());
        }
        textures[slot] = TexturePlan {
            wanted: tail_level,
            target: tail_level,
            ..TexturePlan::default()
        };
    }

    /// The same for a mesh, which holds its coarsest LOD.
    pub(super) fn hold_new_mesh(&mut self, slot: usize, coarsest: u32) {
        let meshes = &mut self.plan.meshes;
        if slot >= meshes.len() {
            meshes.resize(slot + 1, MeshPlan::default());
        }
        meshes[slot] = MeshPlan {
            wanted: coarsest,
            target: coarsest,
            ..MeshPlan::default()
        };
    }
}
