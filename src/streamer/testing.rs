//! Hooks for tests, the soak, `mipstream gpu-check` and `mipstream bench
//! --dump-plans`: faults injected, a stand-in for the driver's budget, the
//! fit's problems kept. Hidden from the API docs; a renderer has no use for
//! them.

use super::budget::DriverSource;
use super::Streamer;
use crate::gpu::memory::DriverBudget;

impl Streamer {
    /// Makes the next `count` GPU allocations fail as out-of-memory (to test
    /// that the streamer degrades and recovers).
    #[doc(hidden)]
    pub fn inject_out_of_memory(&mut self, count: u32) {
        self.gpu.inject_out_of_memory(count);
    }

    /// Injects faults at the rates of `faults` (None: stop): transcodes on the
    /// loader threads fail and GPU allocations fail as out-of-memory. Wrap
    /// texture sources in [`crate::fault::FaultySource`] for I/O faults.
    /// A test and soak hook; see [`crate::fault`].
    #[doc(hidden)]
    pub fn set_faults(&mut self, faults: Option<std::sync::Arc<crate::fault::Faults>>) {
        self.loader.set_faults(faults.clone());
        self.gpu.set_faults(faults);
    }

    /// Reads the driver's budget from `source` instead of the driver, from
    /// the next update on (it is asked every 60 updates, and on this call).
    /// For tests and `mipstream gpu-check` on drivers without
    /// `VK_EXT_memory_budget` (lavapipe): a stand-in heap whose usage follows
    /// wgpu's counters lets [`crate::streamer::Budget::Auto`] fall when something else
    /// allocates.
    #[doc(hidden)]
    pub fn inject_driver_budget(
        &mut self,
        source: impl Fn(&wgpu::Device) -> Option<DriverBudget> + Send + Sync + 'static,
    ) {
        self.budget.source = DriverSource(Some(Box::new(source)));
        let own = self.gpu.accounted_bytes() + self.gpu.staging_bytes();
        self.budget.refresh_driver(0, self.gpu.device(), own);
    }

    /// Whether each plan keeps the budget fit's problem
    /// ([`Streamer::fit_problem`]); for `mipstream bench --dump-plans`.
    #[doc(hidden)]
    pub fn capture_fit_problems(&mut self, capture: bool) {
        self.planner.get().set_capture(capture);
    }

    /// The budget fit's problem of the plan this update carried out, when
    /// [`Streamer::capture_fit_problems`] is on (a fixed rule has none).
    #[doc(hidden)]
    pub fn fit_problem(&self) -> Option<&crate::plan::certify::FitProblem> {
        self.planner.last_plan().problem.as_deref()
    }
}
