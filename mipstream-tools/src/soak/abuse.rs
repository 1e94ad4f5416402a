//! The abuse: the soaked streamer registered over the scene with faults off
//! (a fixed starting point), then, frame after frame, flights and teleports,
//! budget changes, objects and textures coming and going, the faults on, and
//! after every update the invariants and the budget checked.

use super::world::{mesh_files, register, register_mesh, Box3, Camera, Rng, Slot};
use super::{SoakError, SoakOptions, SoakReport};
use crate::scene::{BuiltinScene, FIELD_HALF};
use glam::Vec3;
use mipstream::fault::{FaultRates, Faults};
use mipstream::gpu::HeadlessGpu;
use mipstream::streamer::{Budget, MeshId, ObjectId, Streamer, StreamerOptions, TextureId};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// A soak in progress.
pub(super) struct Soak<'a> {
    pub(super) options: &'a SoakOptions,
    pub(super) streamer: Streamer,
    pub(super) slots: Vec<Slot>,
    /// Every box and, when it is registered now, its object.
    pub(super) boxes: Vec<(Box3, Option<ObjectId>)>,
    pub(super) meshes: Vec<MeshId>,
    pub(super) mesh_paths: Vec<PathBuf>,
    mesh_lods: Vec<u32>,
    pub(super) faults: Arc<Faults>,
    rng: Rng,
    pub(super) camera: Camera,
    /// The budget now, and the least and most it may become.
    pub(super) budget: u64,
    floor: u64,
    ceiling: u64,
    /// Bytes of everything at full detail.
    pub(super) full: u64,
    next_budget: u64,
    pub(super) report: SoakReport,
    /// `update()` times, ms.
    pub(super) times: Vec<f64>,
    /// wgpu's texture and buffer memory before the streamer existed, where
    /// the backend counts memory.
    gpu_base: Option<u64>,
}

/// wgpu's count of texture and buffer memory on `device`.
fn wgpu_memory(device: &wgpu::Device) -> u64 {
    mipstream::gpu::memory::counters(device).bytes()
}

impl<'a> Soak<'a> {
    /// Registers the scene, the soak's meshes and boxes with faults off, sets
    /// the first budget, then turns the faults on.
    pub(super) fn new(
        options: &'a SoakOptions,
        gpu: &HeadlessGpu,
        scene: &BuiltinScene,
        report: SoakReport,
    ) -> Result<Self, SoakError> {
        let mesh_paths = mesh_files(&options.cache_dir)?;
        let faults = Faults::new(options.seed);
        let _ = gpu.device.poll(wgpu::PollType::wait_indefinitely());
        let gpu_base =
            (!mipstream::gpu::memory::is_gl(&gpu.device)).then(|| wgpu_memory(&gpu.device));
        let mut streamer = Streamer::with_options(
            &gpu.device,
            &gpu.queue,
            StreamerOptions {
                budget: Budget::Bytes(u64::MAX / 4),
                loader_staging_bytes: options.loader_staging_bytes,
                copies_per_frame: options.copies_per_frame,
                plan_thread: options.plan_thread,
                ..StreamerOptions::default()
            },
        );
        let faulty = (options.faults.io || options.faults.slow).then_some(&faults);
        let mut slots: Vec<Slot> = scene
            .textures
            .iter()
            .zip(&scene.classes)
            .map(|(p, c)| Slot {
                path: p.clone(),
                class: *c,
                id: None,
            })
            .collect();
        for slot in &mut slots {
            let id = register(&mut streamer, slot, faulty)
                .map_err(|e| SoakError::Options(format!("registering the scene: {e}")))?;
            slot.id = Some(id);
        }
        let ids: Vec<TextureId> = slots.iter().filter_map(|s| s.id).collect();
        let mut meshes = Vec::new();
        for p in &mesh_paths {
            meshes.push(
                register_mesh(&mut streamer, p, faulty)
                    .map_err(|e| SoakError::Options(format!("registering a mesh: {e}")))?,
            );
        }
        let full = BuiltinScene::full_residency_bytes(&streamer, &ids)
            + meshes
                .iter()
                .filter_map(|&m| streamer.mesh_bytes_at(m, 0).ok())
                .sum::<u64>();
        let tails = streamer.report().tail_bytes;
        let mut soak = Self {
            options,
            streamer,
            slots,
            boxes: Vec::new(),
            mesh_lods: Vec::new(),
            meshes,
            mesh_paths,
            faults,
            gpu_base,
            rng: Rng(options.seed ^ 0x005E_ED0F_50A4),
            camera: Camera {
                from: Vec3::new(0.0, 20.0, -FIELD_HALF),
                to: Vec3::new(0.0, 20.0, FIELD_HALF),
                look: Vec3::Z,
                frame: 0,
                frames: 600,
            },
            // a few MiB above what the tails alone need: the least a budget can be
            budget: (full / 2).max(tails + (4 << 20)),
            floor: tails + (4 << 20),
            ceiling: full + full / 4,
            full,
            next_budget: 200,
            report,
            times: Vec::with_capacity(options.frames as usize),
        };
        soak.streamer.set_budget(Budget::Bytes(soak.budget));
        soak.report.budget_bytes_max = soak.budget;
        soak.report.budget_bytes_min = soak.budget;
        soak.place_boxes(scene, &ids)?;
        soak.streamer.set_faults(Some(soak.faults.clone()));
        soak.faults.set_rates(soak.rates());
        soak.mesh_lods = soak
            .meshes
            .iter()
            .map(|&m| soak.streamer.mesh_status(m).map_or(0, |s| s.resident))
            .collect();
        Ok(soak)
    }

    /// The scene's boxes (a few showing meshes), and as many places again
    /// where boxes appear and disappear.
    fn place_boxes(&mut self, scene: &BuiltinScene, ids: &[TextureId]) -> Result<(), SoakError> {
        let n = self.meshes.len();
        for (i, o) in scene.objects.iter().enumerate() {
            let b = Box3 {
                center: o.center,
                size: o.size,
                texture: o.texture,
                tile: o.tile,
                // a few instances per mesh, so the nearest moves with the camera
                mesh: (i % 50 == 1).then_some(i / 50 % n),
            };
            let id = self
                .streamer
                .register_object(b.desc(ids[o.texture], &self.meshes))?;
            self.boxes.push((b, Some(id)));
        }
        for i in 0..scene.objects.len() {
            let rng = &mut self.rng;
            let size = Vec3::new(
                rng.range(1.0, 12.0),
                rng.range(1.0, 12.0),
                rng.range(1.0, 12.0),
            );
            let b = Box3 {
                center: Vec3::new(0.0, size.y * 0.5, 0.0),
                size,
                texture: i % self.slots.len(),
                tile: rng.range(1.0, 8.0),
                mesh: (i % 50 == 3).then_some(i / 50 % n),
            };
            self.boxes.push((b, None));
        }
        Ok(())
    }

    /// The fault rates of the kinds asked for (0 for the others).
    fn rates(&self) -> FaultRates {
        let (on, r) = (self.options.faults, &self.options.rates);
        let rate = |enabled: bool, rate: f64| if enabled { rate } else { 0.0 };
        FaultRates {
            io_error: rate(on.io, r.io_error),
            short_read: rate(on.io, r.short_read),
            transcode_error: rate(on.io, r.transcode_error),
            slow_read: rate(on.slow, r.slow_read),
            slow_delay: r.slow_delay,
            out_of_memory: rate(on.oom, r.out_of_memory),
        }
    }

    /// The memory guarantee by wgpu's count, right after `update()`: never
    /// above the books (held and retiring), and within the budget in force
    /// unless the update was giving memory back.
    fn check_wgpu(&mut self, frame: u64, giving_back: bool) {
        let Some(base) = self.gpu_base else { return };
        let counted = wgpu_memory(self.streamer.device()).saturating_sub(base);
        let (books, budget) = (self.streamer.gpu_bytes(), self.streamer.effective_budget());
        let ratio = counted as f64 / budget.max(1) as f64;
        let peak = self.report.wgpu_peak_ratio.get_or_insert(0.0);
        *peak = peak.max(ratio);
        let over = self.report.frames_over_budget_by_wgpu.get_or_insert(0);
        let broken = if counted > books {
            Some(format!("wgpu counts {counted} bytes, the books {books}"))
        } else if counted > budget && !giving_back {
            Some(format!(
                "wgpu counts {counted} bytes over the budget of {budget}"
            ))
        } else {
            None
        };
        if let Some(what) = broken {
            *over += 1;
            if self.report.violation_messages.len() < 8 {
                self.report
                    .violation_messages
                    .push(format!("frame {frame}: {what}"));
            }
        }
    }

    /// One frame of abuse; false when the streamer panicked (the soak ends).
    pub(super) fn frame(&mut self, frame: u64) -> bool {
        let start = Instant::now();
        self.move_camera();
        self.change_budget(frame);
        self.churn_objects();
        self.churn_textures();
        let view = self.camera.view(self.options.viewport);
        let streamer = &mut self.streamer;
        let update =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| streamer.update(&[view])));
        let Ok(stats) = update else {
            self.report.panics += 1;
            return false;
        };
        self.times.push(stats.update_time.as_secs_f64() * 1e3);
        for (m, last) in self.meshes.iter().zip(&mut self.mesh_lods) {
            if let Ok(st) = self.streamer.mesh_status(*m) {
                self.report.mesh_lod_changes += (st.resident != *last) as u64;
                *last = st.resident;
            }
        }
        self.report.failed_loads += stats.failed_loads as u64;
        self.report.refused_shrinks += u64::from(stats.refused_shrinks);
        self.report.loader_staged_bytes += stats.loader_staged_bytes;
        self.report.plan_age_max = self.report.plan_age_max.max(stats.plan_age);
        self.report.panics += stats.panicked_loads as u64;
        if let Err(e) = self.streamer.check_invariants() {
            if std::env::var_os("MIPSTREAM_SOAK_DEBUG").is_some() {
                eprintln!(
                    "frame {frame}: {e}\n{stats:?}\n{:?}\n{}",
                    self.streamer.oom_events(),
                    self.streamer.report()
                );
            }
            self.note(format!("frame {frame}: {e}"));
        }
        self.check_wgpu(frame, stats.giving_back);
        let held = self.streamer.held_bytes();
        self.report.peak_resident_bytes = self.report.peak_resident_bytes.max(held);
        if held > self.budget && stats.stuck_over_budget {
            self.report.frames_stuck_over_budget += 1;
        } else if held > self.budget {
            if std::env::var_os("MIPSTREAM_SOAK_DEBUG").is_some() {
                eprintln!("frame {frame}: over the budget\n{}", self.streamer.report());
            }
            self.report.frames_over_budget += 1;
            if self.report.violation_messages.len() < 8 {
                self.report.violation_messages.push(format!(
                    "frame {frame}: held {held} bytes over the budget of {}",
                    self.budget
                ));
            }
        }
        self.pace(start);
        true
    }

    /// Keeps flying, or starts a new flight, or teleports.
    fn move_camera(&mut self) {
        let (c, rng) = (&mut self.camera, &mut self.rng);
        c.frame += 1;
        if c.frame < c.frames {
            return;
        }
        let teleport = rng.chance(0.3);
        let from = if teleport {
            self.report.teleports += 1;
            rng.point()
        } else {
            c.to
        };
        *c = Camera {
            from,
            to: if teleport && rng.chance(0.5) {
                from // stand and look
            } else {
                rng.point()
            },
            look: Vec3::new(rng.range(-1.0, 1.0), 0.0, rng.range(-1.0, 1.0)).normalize_or(Vec3::Z),
            frame: 0,
            frames: 20 + rng.below(300) as u64,
        };
    }

    /// Every 30-280 frames a new budget between the floor and the ceiling
    /// (log-uniform), a fifth of the time straight to the floor.
    fn change_budget(&mut self, frame: u64) {
        if !self.options.faults.budget || frame < self.next_budget {
            return;
        }
        let (lo, hi) = (
            (self.floor as f64).ln(),
            (self.ceiling.max(self.floor + 1) as f64).ln(),
        );
        self.budget = (lo + (hi - lo) * self.rng.unit() as f64).exp() as u64;
        if self.rng.chance(0.2) {
            self.budget = self.floor; // a hard cut to the least
        }
        self.streamer.set_budget(Budget::Bytes(self.budget));
        let r = &mut self.report;
        r.budget_changes += 1;
        r.budget_bytes_max = r.budget_bytes_max.max(self.budget);
        r.budget_bytes_min = r.budget_bytes_min.min(self.budget);
        self.next_budget = frame + 30 + self.rng.below(250) as u64;
    }

    /// Now and then a box disappears, or appears somewhere new.
    fn churn_objects(&mut self) {
        if !self.rng.chance(0.05) {
            return;
        }
        let i = self.rng.below(self.boxes.len());
        if let (b, Some(id)) = self.boxes[i] {
            if self.streamer.remove_object(id).is_ok() {
                self.report.objects_removed += 1;
            }
            self.boxes[i] = (b, None);
        } else if let Some(tex) = self.slots[self.boxes[i].0.texture].id {
            let b = Box3 {
                center: Vec3::new(
                    self.rng.range(-FIELD_HALF, FIELD_HALF),
                    self.boxes[i].0.size.y * 0.5,
                    self.rng.range(-FIELD_HALF, FIELD_HALF),
                ),
                ..self.boxes[i].0
            };
            if let Ok(id) = self.streamer.register_object(b.desc(tex, &self.meshes)) {
                self.report.objects_added += 1;
                self.boxes[i] = (b, Some(id));
            }
        }
    }

    /// Now and then a texture is removed; every missing one is registered
    /// again (through the faults) and its boxes point at the new id.
    fn churn_textures(&mut self) {
        if self.rng.chance(0.01) {
            let t = self.rng.below(self.slots.len());
            if let Some(id) = self.slots[t].id.take() {
                let _ = self.streamer.remove_texture(id);
            }
        }
        let faulty = (self.options.faults.io || self.options.faults.slow).then_some(&self.faults);
        for (t, slot) in self.slots.iter_mut().enumerate() {
            if slot.id.is_some() {
                continue;
            }
            match register(&mut self.streamer, slot, faulty) {
                Ok(id) => {
                    slot.id = Some(id);
                    self.report.textures_reregistered += 1;
                    for (b, obj) in self.boxes.iter_mut().filter(|(b, _)| b.texture == t) {
                        if let Some(o) = obj {
                            if self
                                .streamer
                                .set_object(*o, b.desc(id, &self.meshes))
                                .is_err()
                            {
                                *obj = None;
                            }
                        }
                    }
                }
                Err(_) => self.report.failed_registrations += 1,
            }
        }
    }

    /// Counts an invariant violation, keeping the first few messages.
    pub(super) fn note(&mut self, message: String) {
        self.report.invariant_violations += 1;
        if self.report.violation_messages.len() < 8 {
            self.report.violation_messages.push(message);
        }
    }

    /// Waits out the rest of the frame time.
    pub(super) fn pace(&self, since: Instant) {
        let left = self.options.frame_time.saturating_sub(since.elapsed());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
    }
}
