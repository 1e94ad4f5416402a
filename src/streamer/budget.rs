//! The budget in force and what lowers it for a while.
//!
//! - configured: [`Budget::Bytes`], or [`Budget::Auto`] as a fraction of the
//!   driver's device-local budget less what the rest of the process uses of
//!   the heaps (their usage less mipstream's own bytes; refreshed every 60
//!   frames), with a fallback;
//! - effective: the configured budget less what out-of-memory events took
//!   (each takes what failed, and a quarter of the reduction comes back per
//!   back-off period), never below the always-resident tails and coarsest
//!   mesh LODs;
//! - hard: what `update` keeps to, the effective budget, except in frames
//!   where a fixed policy's rule holds more on purpose (Unity's floors);
//! - planner's: the effective budget less the larger of the transient
//!   reserve and the headroom a blocked growth asked later plans to leave
//!   (kept [`STICKY_FRAMES`] so plans do not flip back and forth). The
//!   recycle pool is not taken off: it is a cache, dropped by any growth
//!   that needs its bytes and trimmed whenever the books pass the budget.
//!   Taken off, it made the plan's budget follow the pool's contents (a
//!   shrink fills the pool, the next plan shrinks more, the pool empties,
//!   the plan grows again): at rest at a binding budget the plan cycled
//!   every three frames and never settled.

use super::{Budget, OomEvent};
use crate::gpu::memory::{self, DriverBudget};

/// Reads a driver's budget.
type ReadDriver = Box<dyn Fn(&wgpu::Device) -> Option<DriverBudget> + Send + Sync>;

/// Where the driver's budget comes from: the driver, or a stand-in a test
/// or `mipstream gpu-check` injects ([`Streamer::inject_driver_budget`]).
pub(super) struct DriverSource(pub(super) Option<ReadDriver>);

impl std::fmt::Debug for DriverSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "injected"
        } else {
            "driver"
        })
    }
}

impl DriverSource {
    fn read(&self, device: &wgpu::Device) -> Option<DriverBudget> {
        match &self.0 {
            Some(f) => f(device),
            None => memory::driver_budget(device),
        }
    }
}

/// Frames the headroom stays raised before it may drop (about 10 s at 60
/// fps): plans do not flip back and forth.
pub(super) const STICKY_FRAMES: u64 = 600;

/// Out-of-memory events kept for the report.
const OOM_EVENTS_KEPT: usize = 64;

/// The budget and its adjustments.
#[derive(Debug)]
pub(super) struct BudgetState {
    pub(super) configured: Budget,
    pub(super) driver: Option<DriverBudget>,
    pub(super) source: DriverSource,
    /// What the rest of the process used of the device-local heaps at the
    /// last refresh (their usage less mipstream's own bytes).
    others: u64,
    /// Bytes taken off the budget by out-of-memory events.
    oom_reduction: u64,
    /// Growth waits until this frame after an out-of-memory event.
    grow_paused_until: u64,
    /// Bytes later plans leave free for a blocked growth, and since when.
    headroom: u64,
    headroom_frame: u64,
    oom_backoff_frames: u64,
    /// The last [`OOM_EVENTS_KEPT`] events, and how many there were.
    events: Vec<OomEvent>,
    event_count: u64,
}

impl BudgetState {
    pub(super) fn new(
        configured: Budget,
        driver: Option<DriverBudget>,
        oom_backoff_frames: u64,
    ) -> Self {
        Self {
            configured,
            driver,
            source: DriverSource(None),
            others: 0,
            oom_reduction: 0,
            grow_paused_until: 0,
            headroom: 0,
            headroom_frame: 0,
            oom_backoff_frames,
            events: Vec::new(),
            event_count: 0,
        }
    }

    /// A new configured budget (the headroom starts over).
    pub(super) fn set(&mut self, budget: Budget) {
        self.configured = budget;
        self.headroom = 0;
    }

    /// The configured budget in bytes, resolving [`Budget::Auto`].
    pub(super) fn configured_bytes(&self) -> u64 {
        match self.configured {
            Budget::Bytes(b) => b,
            Budget::Auto { fraction, fallback } => self
                .driver
                .as_ref()
                .and_then(|d| d.device_local_budget())
                .map_or(fallback, |b| {
                    let left = b.saturating_sub(self.others);
                    (left as f64 * fraction.clamp(0.0, 1.0) as f64) as u64
                }),
        }
    }

    /// The budget in force, never below `tails`.
    pub(super) fn effective(&self, tails: u64) -> u64 {
        self.configured_bytes()
            .saturating_sub(self.oom_reduction)
            .max(tails)
    }

    /// What `update` keeps to: the effective budget, or no limit in frames
    /// where the plan holds more on purpose (`plan_over`).
    pub(super) fn hard(&self, tails: u64, plan_over: bool) -> u64 {
        if plan_over {
            u64::MAX / 4
        } else {
            self.effective(tails)
        }
    }

    /// The planner's budget: the effective one less the transient reserve
    /// or the headroom asked for, whichever is larger, and less `reserved`
    /// (the loaders' staging reserve, held whole as the books count it).
    pub(super) fn for_planner(&self, tails: u64, transient_reserve: f32, reserved: u64) -> u64 {
        let effective = self.effective(tails);
        let transient = (effective as f64 * transient_reserve.clamp(0.0, 0.9) as f64) as u64;
        effective
            .saturating_sub(transient.max(self.headroom))
            .saturating_sub(reserved)
    }

    /// The loader staging reserve: the option's bytes, at most a quarter of
    /// what the effective budget holds beyond the tails (a quarter of the
    /// whole budget left a budget just above the tails holding less than
    /// the tails and the reserve: over it at rest).
    pub(super) fn staging_reserve(&self, tails: u64, option: u64) -> u64 {
        let streamable = self.effective(tails).saturating_sub(tails);
        option.min(streamable / 4)
    }

    /// The recycle pool's capacity: the option's bytes, at most a
    /// sixteenth of the configured budget.
    pub(super) fn pool_capacity(&self, option: u64) -> u64 {
        option.min(self.configured_bytes() / 16)
    }

    /// Every 60 frames with [`Budget::Auto`]: the driver's budget asked
    /// again, and what the rest of the process uses beside mipstream's
    /// `own` bytes (held, retiring and staging).
    pub(super) fn refresh_driver(&mut self, frame: u64, device: &wgpu::Device, own: u64) {
        if frame.is_multiple_of(60) && matches!(self.configured, Budget::Auto { .. }) {
            self.driver = self.source.read(device);
            self.others = self
                .driver
                .as_ref()
                .and_then(|d| d.device_local_usage())
                .map_or(0, |u| u.saturating_sub(own));
        }
    }

    /// Once a frame: a quarter of an out-of-memory reduction given back per
    /// back-off period, an old headroom dropped.
    pub(super) fn tick(&mut self, frame: u64) {
        if self.oom_reduction > 0 && frame >= self.grow_paused_until {
            self.oom_reduction -= self.oom_reduction.div_ceil(4);
            self.grow_paused_until = frame + self.oom_backoff_frames;
        }
        if self.headroom > 0 && frame > self.headroom_frame + STICKY_FRAMES {
            self.headroom = 0;
        }
    }

    /// Whether growth waits at `frame` after an out-of-memory event.
    pub(super) fn growth_paused(&self, frame: u64) -> bool {
        frame < self.grow_paused_until && self.oom_reduction > 0
    }

    /// The frame until which growth waits (for the why-below ladder).
    pub(super) fn paused_until(&self) -> u64 {
        self.grow_paused_until
    }

    /// Drops the headroom earlier blocked growths asked for (plan memory,
    /// not a lowered budget: see `Streamer::settle_canonical`).
    pub(super) fn forget_headroom(&mut self) {
        self.headroom = 0;
    }

    /// Later plans leave `bytes` of the effective budget free (kept
    /// [`STICKY_FRAMES`]; the larger ask stands).
    pub(super) fn ask_headroom(&mut self, bytes: u64, frame: u64) {
        self.headroom = self.headroom.max(bytes);
        self.headroom_frame = frame;
    }

    /// An out-of-memory event: the budget loses what failed and growth
    /// pauses for a back-off period.
    pub(super) fn record_oom(&mut self, event: OomEvent) {
        self.oom_reduction = self.oom_reduction.saturating_add(event.bytes);
        self.grow_paused_until = event.frame + self.oom_backoff_frames;
        if self.events.len() >= OOM_EVENTS_KEPT {
            self.events.remove(0);
        }
        self.events.push(event);
        self.event_count += 1;
    }

    /// The last out-of-memory events.
    pub(super) fn events(&self) -> &[OomEvent] {
        &self.events
    }

    /// Out-of-memory events since the start.
    pub(super) fn event_count(&self) -> u64 {
        self.event_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(frame: u64, bytes: u64) -> OomEvent {
        OomEvent {
            frame,
            what: "t".into(),
            bytes,
            budget: 0,
            resident: 0,
            reserved_unallocated: None,
        }
    }

    #[test]
    fn auto_is_a_fraction_of_what_the_driver_leaves_beside_the_rest_of_the_process() {
        let auto = Budget::Auto {
            fraction: 0.5,
            fallback: 77,
        };
        let mut b = BudgetState::new(auto, None, 10);
        assert_eq!(b.configured_bytes(), 77, "no driver budget: the fallback");
        b.driver = Some(DriverBudget {
            heaps: vec![memory::HeapBudget {
                size: 2000,
                device_local: true,
                budget: Some(1000),
                usage: Some(300),
            }],
        });
        assert_eq!(b.configured_bytes(), 500);
        // the rest of the process takes 600 of the heap
        b.others = 600;
        assert_eq!(b.configured_bytes(), 200);
        b.others = 5000;
        assert_eq!(b.configured_bytes(), 0);
    }

    #[test]
    fn out_of_memory_lowers_the_budget_and_it_comes_back_a_quarter_at_a_time() {
        let mut b = BudgetState::new(Budget::Bytes(1000), None, 10);
        b.record_oom(event(5, 400));
        assert_eq!(b.effective(0), 600);
        assert_eq!(b.effective(700), 700, "never below the tails");
        assert!(b.growth_paused(14) && !b.growth_paused(15));
        assert_eq!(b.hard(0, true), u64::MAX / 4);
        // the tick gives back a quarter per period once the pause is over
        let mut reductions = Vec::new();
        for frame in 15..60 {
            b.tick(frame);
            reductions.push(1000 - b.effective(0));
        }
        assert_eq!(reductions[0], 300);
        assert_eq!(*reductions.last().unwrap(), 94); // 400, 300, 225, 168, 126, 94
        assert_eq!(b.event_count(), 1);
    }

    #[test]
    fn the_staging_reserve_and_the_pool_are_capped_by_the_budget() {
        let mut b = BudgetState::new(Budget::Bytes(1600), None, 10);
        // a quarter of what the budget holds beyond the tails
        assert_eq!(b.staging_reserve(400, 10_000), 300);
        assert_eq!(b.staging_reserve(400, 100), 100, "the option when smaller");
        assert_eq!(b.staging_reserve(1600, 100), 0, "nothing beyond the tails");
        // out-of-memory events lower the reserve with the budget in force
        b.record_oom(event(1, 800));
        assert_eq!(b.staging_reserve(400, 10_000), 100);
        // the pool: a sixteenth of the configured budget
        assert_eq!(b.pool_capacity(10_000), 100);
        assert_eq!(b.pool_capacity(50), 50);
    }

    #[test]
    fn the_planner_plans_within_the_budget_less_reserve_or_headroom() {
        let mut b = BudgetState::new(Budget::Bytes(1000), None, 10);
        assert_eq!(b.for_planner(0, 0.1, 0), 900);
        assert_eq!(
            b.for_planner(0, 0.1, 50),
            850,
            "the staging reserve is held whole"
        );
        b.ask_headroom(250, 3);
        assert_eq!(b.for_planner(0, 0.1, 0), 750);
        b.tick(3 + STICKY_FRAMES + 1);
        assert_eq!(b.for_planner(0, 0.0, 0), 1000, "the headroom expired");
        b.ask_headroom(50, 0);
        b.set(Budget::Bytes(2000));
        assert_eq!(b.for_planner(0, 0.0, 0), 2000, "a new budget starts over");
    }
}
