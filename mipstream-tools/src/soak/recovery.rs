//! The recovery: faults off, camera at rest, and the soaked streamer
//! compared with a fresh one that never saw a fault, registered with the same
//! textures, meshes and objects and settled at the same view.
//!
//! First at the last budget, until every texture holds its plan with no
//! failure left; then, with room for everything both want, until both hold
//! exactly the same levels and LODs.

use super::abuse::Soak;
use super::world::{register, register_mesh};
use super::{BindingComparison, SoakError};
use mipstream::gpu::HeadlessGpu;
use mipstream::streamer::{Budget, MeshId, ResidencyState, Streamer, StreamerOptions, TextureId};
use std::time::{Duration, Instant};

/// The soaked streamer's ids beside the fresh one's.
struct Pairs {
    textures: Vec<(TextureId, TextureId)>,
    meshes: Vec<(MeshId, MeshId)>,
}

impl Pairs {
    /// Textures whose level or tier differ between the two, and the largest
    /// level gap.
    fn level_gaps(&self, soaked: &Streamer, fresh: &Streamer) -> (usize, u32) {
        let gaps = self.textures.iter().filter_map(|&(s, f)| {
            let (a, b) = (
                soaked.texture_status(s).ok()?,
                fresh.texture_status(f).ok()?,
            );
            ((a.resident, a.tier) != (b.resident, b.tier)).then(|| a.resident.abs_diff(b.resident))
        });
        gaps.fold((0, 0), |(n, max), gap| (n + 1, max.max(gap)))
    }

    /// What differs between the soaked and the fresh streamer, in words.
    fn differences(&self, soaked: &Streamer, fresh: &Streamer) -> Vec<String> {
        let textures = self.textures.iter().filter_map(|&(s, f)| {
            let (a, b) = (
                soaked.texture_status(s).ok()?,
                fresh.texture_status(f).ok()?,
            );
            (a.resident != b.resident || a.tier != b.tier).then(|| {
                format!(
                    "{s}: level {} {:?} (fault-free: {} {:?})",
                    a.resident, a.tier, b.resident, b.tier
                )
            })
        });
        let meshes = self.meshes.iter().filter_map(|&(s, f)| {
            let (a, b) = (soaked.mesh_status(s).ok()?, fresh.mesh_status(f).ok()?);
            (a.resident != b.resident)
                .then(|| format!("{s}: LOD {} (fault-free: {})", a.resident, b.resident))
        });
        textures.chain(meshes).collect()
    }
}

/// Textures and meshes not at their plan (or failed), and what is in
/// flight: what kept a streamer from settling, in words.
fn unsettled(streamer: &Streamer) -> Vec<String> {
    let r = streamer.report();
    let mut out: Vec<String> = r
        .textures
        .iter()
        .filter(|t| t.resident != t.planned || matches!(t.state, ResidencyState::Failed { .. }))
        .map(|t| {
            format!(
                "{}: resident {} planned {} wanted {} {:?} {:?} {:?}",
                t.label, t.resident, t.planned, t.wanted, t.tier, t.state, t.below
            )
        })
        .chain(
            r.meshes
                .iter()
                .filter(|m| m.resident != m.planned)
                .map(|m| {
                    format!(
                        "{}: LOD {} planned {} {:?} {:?}",
                        m.label, m.resident, m.planned, m.state, m.below
                    )
                }),
        )
        .take(16)
        .collect();
    out.push(format!(
        "loads outstanding {}, effective budget {}, held {}",
        r.loads_outstanding,
        r.effective_budget,
        r.totals.accounted()
    ));
    out
}

/// `settle` (or `settle_canonical`) with the soak's 300 s limit; a timeout
/// says which step and streamer, and what had not settled.
fn settle(
    streamer: &mut Streamer,
    which: &'static str,
    step: &'static str,
    view: mipstream::plan::View,
    canonical: bool,
) -> Result<u32, SoakError> {
    let limit = Duration::from_secs(300);
    let done = if canonical {
        streamer.settle_canonical(&[view], limit)
    } else {
        streamer.settle(&[view], limit)
    };
    done.map_err(|error| SoakError::Settle {
        step,
        which,
        error: Box::new(error),
        unsettled: unsettled(streamer),
    })
}

impl Soak<'_> {
    /// Stops the faults and brings the soaked streamer back; records in the
    /// report how long it took and what still differs. Returns the fresh
    /// streamer (the caller drops both before counting leaks).
    pub(super) fn recover(&mut self, gpu: &HeadlessGpu) -> Result<Streamer, SoakError> {
        self.faults.stop();
        let view = self.camera.view(self.options.viewport);
        let (mut fresh, pairs) = self.fresh_twin(gpu)?;
        settle(
            &mut fresh,
            "fresh",
            "settling at the last budget",
            view,
            false,
        )?;
        // first at the last budget: every texture gets back to its planned
        // level with no failure left (which levels those are may differ from
        // the fresh streamer's where the budget is tight: the planner keeps
        // what is resident rather than swapping one texture's detail for
        // another's)
        let mut frame = 0;
        let settled = self.run_until(&mut frame, |s| s.converged() && !s.has_failures());
        self.report.frames_to_settle = frame;
        if !settled {
            // what kept it from settling, for the report (a flaky failure of
            // this step must say which texture and why)
            self.report.unsettled = unsettled(&self.streamer);
        }
        // then at a budget that binds: how far from a fresh streamer there
        if settled {
            self.report.binding = Some(self.compare_binding(&mut frame, &mut fresh, &pairs)?);
        }
        // then with room for everything both want: the same levels, exactly
        let roomy = self.full * 2 + (16 << 20);
        self.streamer.set_budget(Budget::Bytes(roomy));
        fresh.set_budget(Budget::Bytes(roomy));
        settle(
            &mut fresh,
            "fresh",
            "settling with room for everything",
            view,
            false,
        )?;
        if settled {
            self.report.recovered = self.run_until(&mut frame, |s| {
                s.converged() && !s.has_failures() && pairs.differences(s, &fresh).is_empty()
            });
        }
        self.report.frames_to_recover = frame;
        if !self.report.recovered {
            if std::env::var_os("MIPSTREAM_SOAK_DEBUG").is_some() {
                eprintln!("{}", self.streamer.report());
            }
            self.report.unrecovered = pairs.differences(&self.streamer, &fresh);
            self.report.unrecovered.truncate(16);
        }
        self.report.oom_events = self.streamer.oom_event_count();
        self.report.fault_counts = self.faults.counts();
        Ok(fresh)
    }

    /// Both streamers at half of what the view wants: plain settles compared
    /// (history may differ, within a bound), then both `settle_canonical`
    /// (must be identical). The soaked streamer first updates at rest until
    /// the budget out-of-memory events took off it is given back (a quarter
    /// per back-off period): until then the two plan for other budgets.
    fn compare_binding(
        &mut self,
        frame: &mut u64,
        fresh: &mut Streamer,
        pairs: &Pairs,
    ) -> Result<BindingComparison, SoakError> {
        let view = self.camera.view(self.options.viewport);
        let budget = fresh.wanted_bytes(&[view]) / 2;
        self.streamer.set_budget(Budget::Bytes(budget));
        fresh.set_budget(Budget::Bytes(budget));
        settle(fresh, "fresh", "settling at a binding budget", view, false)?;
        let in_force = fresh.effective_budget();
        self.run_until(frame, |s| {
            s.converged() && !s.has_failures() && s.effective_budget() == in_force
        });
        let held = |s: &Streamer| {
            let t = s.report().totals;
            t.accounted() - t.staging
        };
        let mut c = BindingComparison {
            budget_bytes: budget,
            soaked_held_bytes: held(&self.streamer),
            fresh_held_bytes: held(fresh),
            textures: pairs.textures.len(),
            ..Default::default()
        };
        (c.textures_differing, c.max_level_difference) = pairs.level_gaps(&self.streamer, fresh);
        c.soaked_effective_bytes = self.streamer.effective_budget();
        c.fresh_effective_bytes = fresh.effective_budget();
        let step = "settle_canonical at a binding budget";
        settle(&mut self.streamer, "soaked", step, view, true)?;
        settle(fresh, "fresh", step, view, true)?;
        // (a budget in force that changed during the settle counts too)
        c.soaked_effective_bytes = c
            .soaked_effective_bytes
            .min(self.streamer.effective_budget());
        if c.soaked_effective_bytes == c.fresh_effective_bytes {
            c.canonical_differences = pairs.differences(&self.streamer, fresh);
            c.canonical_held_bytes = (held(&self.streamer), held(fresh));
            c.canonical_max_level_difference = pairs.level_gaps(&self.streamer, fresh).1;
        }
        c.canonical_differences.truncate(16);
        Ok(c)
    }

    /// Updates the soaked streamer at rest (checking invariants) until `done`
    /// or the recovery frames run out; `frame` counts on from where it is.
    fn run_until(&mut self, frame: &mut u64, done: impl Fn(&Streamer) -> bool) -> bool {
        let view = self.camera.view(self.options.viewport);
        while *frame < self.options.recovery_frames {
            *frame += 1;
            let start = Instant::now();
            let stats = self.streamer.update(&[view]);
            self.report.loader_staged_bytes += stats.loader_staged_bytes;
            self.report.plan_age_max = self.report.plan_age_max.max(stats.plan_age);
            if let Err(e) = self.streamer.check_invariants() {
                self.note(format!("recovery frame {frame}: {e}"));
            }
            if done(&self.streamer) {
                return true;
            }
            self.pace(start);
        }
        false
    }

    /// A streamer that never saw a fault, at the last budget, with the same
    /// textures, meshes and objects.
    fn fresh_twin(&self, gpu: &HeadlessGpu) -> Result<(Streamer, Pairs), SoakError> {
        let mut fresh = Streamer::with_options(
            &gpu.device,
            &gpu.queue,
            StreamerOptions {
                budget: Budget::Bytes(self.budget),
                loader_staging_bytes: self.options.loader_staging_bytes,
                copies_per_frame: self.options.copies_per_frame,
                plan_thread: self.options.plan_thread,
                ..StreamerOptions::default()
            },
        );
        let reference = |e: String| SoakError::Options(format!("the fault-free reference: {e}"));
        let mut textures = Vec::new();
        for slot in &self.slots {
            if let Some(id) = slot.id {
                textures.push((id, register(&mut fresh, slot, None).map_err(reference)?));
            }
        }
        let mut fresh_meshes = Vec::new();
        for p in &self.mesh_paths {
            fresh_meshes.push(register_mesh(&mut fresh, p, None).map_err(reference)?);
        }
        for (b, obj) in &self.boxes {
            if obj.is_some() {
                if let Some(&(_, f)) = self.slots[b.texture]
                    .id
                    .and_then(|id| textures.iter().find(|(s, _)| *s == id))
                {
                    fresh.register_object(b.desc(f, &fresh_meshes))?;
                }
            }
        }
        let meshes = self.meshes.iter().copied().zip(fresh_meshes).collect();
        Ok((fresh, Pairs { textures, meshes }))
    }
}
