//! One strategy's run: its streamer at the budget with its policy, the
//! camera path replayed, pictures compared with `full`, memory read from
//! wgpu beside the ledger, and the figures summed up.

use super::metrics::{flip_mean, mse_rgb, percentile, psnr_from_mse};
use super::registered::Registered;
use super::{BenchError, BenchOptions, FrameRecord, Strategy, StrategyResult};
use crate::render::TexturePixel;
use crate::render_mesh::MaterialTexture;
use crate::source::PreparedScene;
use glam::UVec2;
use image::RgbaImage;
use mipstream::gpu::feedback::{FeedbackFrame, SlotFeedback};
use mipstream::gpu::regions::RegionBytes;
use mipstream::plan::Policy;
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::{gpu, streamer::Streamer};
use std::collections::HashMap;
use std::time::Duration;

/// `full`'s picture of one compared frame, and with `--trace` on a box
/// scene, each pixel's texture and lod ([`ViewMode::TextureIds`]).
#[derive(Debug, Clone)]
pub(super) struct Reference {
    picture: RgbaImage,
    /// The texture picture, and the labels of the textures its indices name.
    textures: Option<(RgbaImage, Vec<String>)>,
}

/// Per texture label: the pixels showing it, their summed squared error
/// (RGB, 0-255) against the reference, and how many of them the sampler
/// reads at each lod (bins of half a level from -4; the last bin holds
/// everything coarser).
fn texture_errors(
    reference: &Reference,
    picture: &RgbaImage,
) -> HashMap<String, (u64, f64, Vec<u32>)> {
    const BINS: usize = 40;
    let mut out: HashMap<String, (u64, f64, Vec<u32>)> = HashMap::new();
    let Some((ids, labels)) = &reference.textures else {
        return out;
    };
    for ((id, a), b) in ids
        .pixels()
        .zip(reference.picture.pixels())
        .zip(picture.pixels())
    {
        let Some((p, label)) =
            TexturePixel::decode(id.0).and_then(|p| Some((p, labels.get(p.index)?)))
        else {
            continue;
        };
        let e: f64 = (0..3)
            .map(|c| (a[c] as f64 - b[c] as f64).powi(2))
            .sum::<f64>()
            / 3.0;
        let bin = (((p.lod + 4.0) * 2.0).max(0.0) as usize).min(BINS - 1);
        let entry = out
            .entry(label.clone())
            .or_insert_with(|| (0, 0.0, vec![0; BINS]));
        entry.0 += 1;
        entry.1 += e;
        entry.2[bin] += 1;
    }
    out
}

/// What every strategy's run shares.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) g: &'a gpu::HeadlessGpu,
    pub(super) scene: &'a PreparedScene,
    pub(super) opts: &'a BenchOptions,
    pub(super) cut_frame: usize,
    pub(super) picture_frame: usize,
}

impl Ctx<'_> {
    /// Seconds into the path at frame `f` of a run of `frames`.
    pub(super) fn t_of(&self, f: usize, frames: usize) -> f32 {
        f as f32 / frames as f32 * self.scene.path().duration
    }
}

/// Appends one compared frame of `strategy` to the trace file (JSON lines).
/// On box scenes each texture's row ends with what the picture shows of
/// it: pixels, their summed squared error and their lods (see
/// [`texture_errors`]).
fn trace_frame(
    path: &std::path::Path,
    strategy: Strategy,
    budget: u64,
    frame: usize,
    record: &FrameRecord,
    streamer: &Streamer,
    shown: &HashMap<String, (u64, f64, Vec<u32>)>,
) -> Result<(), BenchError> {
    use std::io::Write;
    let r = streamer.report();
    let textures: Vec<serde_json::Value> = r
        .textures
        .iter()
        .map(|t| {
            let (pixels, sse, lods) = shown.get(&t.label).cloned().unwrap_or_default();
            serde_json::json!([
                t.label,
                t.wanted,
                t.planned,
                t.resident,
                t.tier == mipstream::kinds::Tier::Compact,
                t.bytes,
                t.coverage,
                pixels,
                sse,
                lods,
                t.planned_tier == mipstream::kinds::Tier::Compact
            ])
        })
        .collect();
    let meshes: Vec<serde_json::Value> = r
        .meshes
        .iter()
        .map(|m| serde_json::json!([m.label, m.wanted, m.planned, m.resident, m.bytes]))
        .collect();
    let line = serde_json::json!({
        "strategy": strategy.key(),
        "budget": budget,
        "frame": frame,
        "psnr": record.psnr_db,
        "flip": record.flip,
        "held": record.resident,
        "fit_error": r.frame.fit_error,
        "fit_gap_lp": r.frame.fit_gap_lp,
        "fit_gap_knapsack": r.frame.fit_gap_knapsack,
        "textures": textures,
        "meshes": meshes,
    });
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(f, "{line}")
    };
    write().map_err(|e| BenchError::Options(format!("--trace {}: {e}", path.display())))
}

/// GPU memory as wgpu sees it (not mipstream's ledger): its texture-memory
/// counter and the allocator report's allocated bytes, each `None` where the
/// backend has none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct DeviceMemory {
    texture_memory: Option<u64>,
    /// wgpu's buffer memory counter (upload staging and mesh buffers).
    buffer_memory: Option<u64>,
    allocated: Option<u64>,
}

impl DeviceMemory {
    fn read(device: &wgpu::Device) -> Self {
        let counted = gpu::memory::counters(device);
        let gl = gpu::memory::is_gl(device);
        Self {
            // wgpu's GL backend never counts memory: 0 there means none
            texture_memory: (!gl).then_some(counted.texture_memory.max(0) as u64),
            buffer_memory: (!gl).then_some(counted.buffer_memory.max(0) as u64),
            allocated: gpu::memory::allocator_summary(device).map(|a| a.allocated),
        }
    }

    fn zip(self, o: Self, f: impl Fn(u64, u64) -> u64) -> Self {
        Self {
            texture_memory: self
                .texture_memory
                .zip(o.texture_memory)
                .map(|(a, b)| f(a, b)),
            buffer_memory: self
                .buffer_memory
                .zip(o.buffer_memory)
                .map(|(a, b)| f(a, b)),
            allocated: self.allocated.zip(o.allocated).map(|(a, b)| f(a, b)),
        }
    }

    fn minus(self, o: Self) -> Self {
        self.zip(o, u64::saturating_sub)
    }

    fn plus(self, o: Self) -> Self {
        self.zip(o, u64::saturating_add)
    }

    /// The larger of each; a figure missing on either side stays missing
    /// unless the other is the empty start.
    fn max(self, o: Self) -> Self {
        if self == Self::default() {
            return o;
        }
        self.zip(o, u64::max)
    }
}

/// The render target every strategy draws into, read back for comparison.
struct Target {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    size: UVec2,
}

impl Target {
    fn new(g: &gpu::HeadlessGpu, size: UVec2) -> Self {
        let texture = gpu::readback::render_target(
            &g.device,
            "mipstream bench target",
            (size.x, size.y),
            wgpu::TextureFormat::Rgba8UnormSrgb,
        );
        let view = texture.create_view(&Default::default());
        Self {
            texture,
            view,
            size,
        }
    }

    fn read(&self, g: &gpu::HeadlessGpu) -> Result<RgbaImage, BenchError> {
        let px = gpu::read_rgba8(&g.device, &g.queue, &self.texture, 0, 0)?;
        RgbaImage::from_raw(self.size.x, self.size.y, px)
            .ok_or_else(|| BenchError::Options("readback size".into()))
    }
}

/// A strategy's streamer: `full` and `distance_only` have no budget (they
/// get room for whatever they ask for and are judged against the budget);
/// every strategy gets the recycle pool mipstream's budget would allow, and
/// plans within the budget less what it holds.
fn open_streamer(ctx: &Ctx<'_>, strategy: Strategy, budget: u64) -> Streamer {
    let opts = ctx.opts;
    Streamer::with_options(
        &ctx.g.device,
        &ctx.g.queue,
        StreamerOptions {
            budget: Budget::Bytes(if strategy.has_budget() {
                budget
            } else {
                u64::MAX / 4
            }),
            upload_bytes_per_frame: opts.upload_cap,
            count_retiring: opts.count_retiring,
            recycle_pool_bytes: (4u64 << 20).min(budget / 16),
            transient_reserve: if strategy == Strategy::Mipstream {
                opts.transient_reserve
            } else {
                0.0
            },
            planner: mipstream::plan::PlannerOptions {
                error_model: match strategy {
                    Strategy::MipstreamGeometric => mipstream::plan::LossModel::Geometric,
                    _ => opts.error_model,
                },
                // the benchmark's plans are few dozen textures: certify them
                // against the integer problem too (update times include it)
                knapsack_certificate: true,
                min_residency_frames: opts.min_residency_frames(),
                // the feedback strategy plans on what the GPU samples
                fuse_feedback: matches!(
                    strategy,
                    Strategy::MipstreamFeedback | Strategy::MipstreamOracle
                ),
                ..Default::default()
            },
            ..Default::default()
        },
    )
}

/// Sets the strategy's policy on `streamer`; returns its setting in words.
fn set_policy(
    ctx: &Ctx<'_>,
    strategy: Strategy,
    budget: u64,
    frames: usize,
    streamer: &mut Streamer,
    registered: &Registered,
) -> String {
    let opts = ctx.opts;
    let setting = match strategy {
        Strategy::Full => {
            streamer.set_policy(Policy::UniformBias { bias: 0 });
            "all levels".to_string()
        }
        Strategy::UniformBias => {
            // a quality setting chosen to fit: the smallest bias whose bytes
            // fit beside the largest recycle pool the budget allows
            let room =
                budget.saturating_sub(streamer.options().recycle_pool_bytes.min(budget / 16));
            let bias = (0..16)
                .find(|&b| registered.bytes_at(streamer, b) <= room)
                .unwrap_or(16);
            streamer.set_policy(Policy::UniformBias { bias });
            format!("bias {bias}")
        }
        Strategy::DistanceOnly => {
            let max_reduction = opts.max_reduction;
            streamer.set_policy(Policy::DistanceOnly { max_reduction });
            format!("max reduction {max_reduction}")
        }
        Strategy::UnityBudget => {
            let max_level_reduction = opts.max_reduction;
            streamer.set_policy(Policy::UnityBudget {
                max_level_reduction,
            });
            format!("max reduction {max_level_reduction}")
        }
        Strategy::UnrealPool => {
            let duration = ctx.scene.path().duration;
            let frames_per_second = (frames as f32 / duration).round().max(1.0) as u32;
            streamer.set_policy(Policy::UnrealPool { frames_per_second });
            "Epic, mip bias 0".to_string()
        }
        Strategy::Mipstream if opts.transient_reserve > 0.0 => format!(
            "budget fit, {} loss, reserve {:.0}%",
            opts.error_model.key(),
            opts.transient_reserve * 100.0
        ),
        Strategy::Mipstream => format!("budget fit, {} loss", opts.error_model.key()),
        Strategy::MipstreamGeometric => "budget fit, geometric loss".to_string(),
        Strategy::MipstreamFeedback => {
            format!("budget fit, {} loss, GPU feedback", opts.error_model.key())
        }
        Strategy::MipstreamOracle => {
            format!(
                "budget fit, {} loss, exact feedback",
                opts.error_model.key()
            )
        }
    };
    match opts.min_residency_frames {
        Some(n) if setting.starts_with("budget fit") => format!("{setting}, min residency {n}"),
        _ => setting,
    }
}

/// One strategy's run in progress.
struct Run<'a> {
    ctx: &'a Ctx<'a>,
    strategy: Strategy,
    budget: u64,
    frames: usize,
    streamer: Streamer,
    registered: Registered,
    target: Target,
    /// wgpu's memory figures before the streamer existed, with the
    /// renderer's own depth buffer added.
    baseline: DeviceMemory,
    memory_peak: DeviceMemory,
    records: Vec<FrameRecord>,
    converged_at: Option<usize>,
    picture: Option<RgbaImage>,
    /// `mipstream_feedback`'s compared frames drawn twice, timed: (with
    /// the feedback call, without), ms.
    feedback_cost: Vec<(f64, f64)>,
}

/// Runs `strategy` over `frames` frames at `budget`. `references` holds
/// `full`'s pictures by frame (filled when `strategy` is `full`).
pub(super) fn run_strategy(
    ctx: &Ctx<'_>,
    strategy: Strategy,
    budget: u64,
    frames: usize,
    references: &mut HashMap<usize, Reference>,
    progress: &mut dyn FnMut(usize),
) -> Result<StrategyResult, BenchError> {
    let g = ctx.g;
    // what earlier strategies' streamers held is freed before this one starts
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let mut streamer = open_streamer(ctx, strategy, budget);
    // the budget fit's problems kept, for `--dump-plans`
    let dump = ctx.opts.dump_plans.is_some()
        && matches!(
            strategy,
            Strategy::Mipstream
                | Strategy::MipstreamGeometric
                | Strategy::MipstreamFeedback
                | Strategy::MipstreamOracle
        );
    streamer.capture_fit_problems(dump);
    let target = Target::new(g, ctx.opts.size);
    let before = DeviceMemory::read(&g.device);
    let mut registered = Registered::new(ctx.scene, g, &mut streamer)?;
    let setting = set_policy(ctx, strategy, budget, frames, &mut streamer, &registered);
    if strategy == Strategy::MipstreamFeedback {
        let slots = streamer.texture_ids().iter().map(|id| id.index() + 1).max();
        streamer.enable_feedback(slots.unwrap_or(1) as u32);
    }
    // the renderer makes its depth buffer at its first frame: measured apart
    // so the memory figures are the streamer's
    let first = ctx.scene.path().view(0.0, ctx.opts.size);
    let registered_at = DeviceMemory::read(&g.device);
    registered.render(g, &target.view, target.size, &first, &streamer);
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let baseline = before.plus(DeviceMemory::read(&g.device).minus(registered_at));
    // a loading screen: every strategy starts settled at the first camera
    if ctx.opts.lockstep {
        streamer.settle_canonical(&[first], Duration::from_secs(120))?;
    } else {
        streamer.settle(&[first], Duration::from_secs(120))?;
    }
    let mut run = Run {
        ctx,
        strategy,
        budget,
        frames,
        streamer,
        registered,
        target,
        baseline,
        memory_peak: DeviceMemory::default(),
        records: Vec::with_capacity(frames),
        converged_at: None,
        picture: None,
        feedback_cost: Vec::new(),
    };
    for f in 0..frames {
        run.frame(f, references)?;
        progress(f + 1);
        if ctx.opts.lockstep {
            run.streamer.finish_loads(Duration::from_secs(120))?;
        } else {
            std::thread::sleep(ctx.opts.frame_pause);
        }
    }
    Ok(run.summary(setting))
}

impl Run<'_> {
    /// `mipstream_oracle`'s feedback for the update about to plan `view`:
    /// an id pass of that view (each pixel's texture and the lod it
    /// samples, every pixel; glTF scenes: one pass for the materials' base
    /// colour textures, one for their normal maps), each texture's finest
    /// and mean lod of its full chain and its pixels.
    fn exact_feedback(&mut self, view: &mipstream::View) -> Result<FeedbackFrame, BenchError> {
        let g = self.ctx.g;
        // the views a settle or the last update changed, bound first
        let changed = self.streamer.take_changed();
        self.registered.sync(g, &self.streamer, &changed);
        let (target, size) = (&self.target.view, self.target.size);
        let textures = self.streamer.texture_ids();
        let slots = textures.iter().map(|id| id.index() + 1).max().unwrap_or(0);
        // (finest, sum of lods, pixels) by slot
        let mut acc = vec![(f32::INFINITY, 0.0f64, 0u32); slots];
        let mut add = |slot: usize, lod: f32| {
            if let Some(a) = acc.get_mut(slot) {
                a.0 = a.0.min(lod);
                a.1 += lod as f64;
                a.2 += 1;
            }
        };
        if self
            .registered
            .render_texture_ids(g, target, size, view, &self.streamer)
        {
            let ids = self.target.read(g)?;
            // the box pass's lod is of the bound copy, whose level 0 is the
            // chain's `first_level`; its index is in `texture_ids` order
            let first: Vec<f32> = textures
                .iter()
                .map(|&id| {
                    self.streamer
                        .resident(id)
                        .map_or(0.0, |r| r.first_level as f32)
                })
                .collect();
            for p in ids.pixels().filter_map(|p| TexturePixel::decode(p.0)) {
                if let (Some(id), Some(&k)) = (textures.get(p.index), first.get(p.index)) {
                    add(id.index(), p.lod + k);
                }
            }
        } else {
            // the glTF pass's index is the slot, its lod of the full chain
            for which in [MaterialTexture::BaseColor, MaterialTexture::Normal] {
                let (target, size) = (&self.target.view, self.target.size);
                self.registered
                    .render_material_ids(g, target, size, view, &self.streamer, which);
                let ids = self.target.read(g)?;
                for p in ids.pixels().filter_map(|p| TexturePixel::decode(p.0)) {
                    add(p.index, p.lod);
                }
            }
        }
        let slots = acc
            .into_iter()
            .map(|(finest, sum, pixels)| {
                (pixels > 0).then(|| SlotFeedback {
                    finest_lod: finest,
                    mean_lod: (sum / pixels as f64) as f32,
                    pixels,
                    regions: 0,
                })
            })
            .collect();
        Ok(FeedbackFrame {
            frame: self.streamer.frame() + 1,
            slots,
        })
    }

    /// One frame: update, check, sync the renderer, and on compared frames
    /// draw and compare with `full`'s picture of the same frame.
    fn frame(
        &mut self,
        f: usize,
        references: &mut HashMap<usize, Reference>,
    ) -> Result<(), BenchError> {
        let (ctx, g) = (self.ctx, self.ctx.g);
        let view = ctx
            .scene
            .path()
            .view(ctx.t_of(f, self.frames), ctx.opts.size);
        if self.strategy == Strategy::MipstreamOracle {
            // exact feedback of this very frame, for the update about to plan it
            let exact = self.exact_feedback(&view)?;
            self.streamer.provide_feedback(exact);
        }
        let stats = self.streamer.update(&[view]);
        // wgpu's count the moment `update()` returns
        let now = DeviceMemory::read(&g.device).minus(self.baseline);
        let gpu_bytes = now
            .texture_memory
            .zip(now.buffer_memory)
            .map(|(t, b)| t + b);
        if std::env::var_os("MIPSTREAM_BENCH_DEBUG").is_some()
            && gpu_bytes.is_some_and(|b| b > self.streamer.gpu_bytes())
        {
            let t = self.streamer.report().totals;
            eprintln!(
                "frame {f}: wgpu {now:?} ({gpu_bytes:?}) > books {} (held {}, retiring {}, staging {}, pool {}) {stats:?}",
                self.streamer.gpu_bytes(),
                t.accounted(),
                t.retiring,
                t.staging,
                t.pool
            );
        }
        self.streamer
            .check_invariants()
            .map_err(|violation| BenchError::Invariant {
                strategy: self.strategy.key(),
                frame: f,
                violation,
            })?;
        let changed = self.streamer.take_changed();
        self.registered.sync(g, &self.streamer, &changed);
        self.memory_peak = self
            .memory_peak
            .max(DeviceMemory::read(&g.device).minus(self.baseline));
        let report = self.streamer.report();
        let mut record = FrameRecord {
            resident: report.totals.accounted(),
            uploaded: stats.upload_bytes,
            update_ms: stats.update_time.as_secs_f64() * 1e3,
            certificate_ms: stats.certificate_time.as_secs_f64() * 1e3,
            fit_gap: stats.fit_gap_lp,
            fit_gap_knapsack: stats.fit_gap_knapsack,
            gpu_bytes,
            feedback_textures: stats.feedback_textures,
            region_bytes: (self.strategy == Strategy::MipstreamFeedback)
                .then(|| super::metrics::feedback_region_bytes(&self.streamer, &report.textures))
                .flatten(),
            ..Default::default()
        };
        if f >= ctx.cut_frame && self.converged_at.is_none() && self.streamer.converged() {
            self.converged_at = Some(f - ctx.cut_frame);
        }
        let compare = f.is_multiple_of(ctx.opts.quality_every) || f == ctx.cut_frame;
        if let (true, Some(dir), Some(problem)) =
            (compare, &ctx.opts.dump_plans, self.streamer.fit_problem())
        {
            super::dump::Dumped {
                strategy: self.strategy.key().to_owned(),
                run_budget: self.budget,
                bench_frame: f as u64,
                problem: problem.clone(),
                reported_lp_gap: stats.fit_gap_lp,
            }
            .write(dir)?;
        }
        let feedback = self.strategy == Strategy::MipstreamFeedback;
        if feedback && !(compare || f == ctx.picture_frame) {
            // GPU feedback needs every frame drawn (compared frames draw below)
            let (target, size) = (&self.target.view, self.target.size);
            self.registered
                .render(g, target, size, &view, &self.streamer);
        }
        if compare || f == ctx.picture_frame {
            let (target, size) = (&self.target.view, self.target.size);
            if feedback {
                // the feedback call's cost: the frame drawn twice, with it
                // (the draw whose feedback counts) and without, in turns
                // first so that neither always finds the caches warm; the
                // picture is the same
                let with_first = self.feedback_cost.len().is_multiple_of(2);
                let mut timed = |on| {
                    self.registered
                        .render_timed(g, target, size, &view, &self.streamer, on)
                };
                let (with, without) = if with_first {
                    let w = timed(true);
                    (w, timed(false))
                } else {
                    let wo = timed(false);
                    (timed(true), wo)
                };
                self.feedback_cost.push((with, without));
            } else {
                self.registered
                    .render(g, target, size, &view, &self.streamer);
            }
            let img = self.target.read(g)?;
            if self.strategy == Strategy::Full {
                let textures = if ctx.opts.trace.is_some()
                    && self.registered.render_texture_ids(
                        g,
                        &self.target.view,
                        self.target.size,
                        &view,
                        &self.streamer,
                    ) {
                    let report = self.streamer.report();
                    let label = |id| {
                        let row = report.textures.iter().find(|t| t.id == id);
                        row.map_or_else(String::new, |t| t.label.clone())
                    };
                    let labels = self.streamer.texture_ids().into_iter().map(label).collect();
                    Some((self.target.read(g)?, labels))
                } else {
                    None
                };
                references.insert(
                    f,
                    Reference {
                        picture: img.clone(),
                        textures,
                    },
                );
            } else if let Some(reference) = references.get(&f) {
                let mse = mse_rgb(&reference.picture, &img);
                record.mse = Some(mse);
                record.psnr_db = Some(psnr_from_mse(mse));
                record.flip = Some(flip_mean(&reference.picture, &img));
                if let Some(path) = &ctx.opts.trace {
                    let shown = texture_errors(reference, &img);
                    trace_frame(
                        path,
                        self.strategy,
                        self.budget,
                        f,
                        &record,
                        &self.streamer,
                        &shown,
                    )?;
                }
            }
            if f == ctx.picture_frame {
                self.picture = Some(img);
            }
        }
        if feedback {
            // what this frame's draw sampled goes to the readback ring; in
            // lockstep the GPU finishes it before the next update, which takes
            // it (a fixed point: a frame late, every run)
            let mut encoder = g.device.create_command_encoder(&Default::default());
            self.streamer.record_feedback(&mut encoder);
            g.queue.submit([encoder.finish()]);
            if ctx.opts.lockstep {
                let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
            }
        }
        self.records.push(record);
        Ok(())
    }

    /// The run's figures.
    fn summary(self, setting: String) -> StrategyResult {
        let mut records = self.records;
        let full = self.strategy == Strategy::Full;
        if full {
            for r in &mut records {
                r.psnr_db = None;
            }
        }
        let mut times: Vec<f64> = records.iter().map(|r| r.update_ms).collect();
        times.sort_by(f64::total_cmp);
        let spread = |f: &dyn Fn(&FrameRecord) -> f64| {
            let mut v: Vec<f64> = records.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            [percentile(&v, 0.5), percentile(&v, 0.99)]
        };
        let streamer_update_ms = spread(&|r| (r.update_ms - r.certificate_ms).max(0.0));
        let certificate_ms = spread(&|r| r.certificate_ms);
        let mean = |v: Vec<f64>| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let mse = mean(records.iter().filter_map(|r| r.mse).collect());
        let flip = mean(
            records
                .iter()
                .filter_map(|r| r.flip.map(f64::from))
                .collect(),
        );
        let worst = records
            .iter()
            .filter_map(|r| r.psnr_db)
            .fold(f64::INFINITY, f64::min);
        StrategyResult {
            strategy: self.strategy,
            setting,
            peak_resident_bytes: records.iter().map(|r| r.resident).max().unwrap_or(0),
            frames_over_budget: records.iter().filter(|r| r.resident > self.budget).count(),
            frames_over_budget_by_wgpu: records
                .iter()
                .map(|r| r.gpu_bytes.map(|b| (b > self.budget) as usize))
                .sum(),
            wgpu_peak_ratio: records
                .iter()
                .filter_map(|r| r.gpu_bytes)
                .max()
                .map(|b| b as f64 / self.budget.max(1) as f64),
            psnr_db_mean: if full { 100.0 } else { psnr_from_mse(mse) },
            psnr_db_min: if full { 100.0 } else { worst },
            gpu_texture_memory_peak_bytes: self.memory_peak.texture_memory,
            allocator_allocated_peak_bytes: self.memory_peak.allocated,
            flip_mean: if full { 0.0 } else { flip },
            max_upload_bytes_in_a_frame: records.iter().map(|r| r.uploaded).max().unwrap_or(0),
            update_ms_p50: percentile(&times, 0.5),
            update_ms_p99: percentile(&times, 0.99),
            streamer_update_ms,
            certificate_ms,
            fit_gap_lp_mean: {
                let gaps: Vec<f64> = records.iter().filter_map(|r| r.fit_gap).collect();
                (!gaps.is_empty()).then(|| mean(gaps))
            },
            fit_gap_lp_max: records.iter().filter_map(|r| r.fit_gap).reduce(f64::max),
            fit_gap_knapsack_mean: {
                let gaps: Vec<f64> = records.iter().filter_map(|r| r.fit_gap_knapsack).collect();
                (!gaps.is_empty()).then(|| mean(gaps))
            },
            fit_gap_knapsack_max: records
                .iter()
                .filter_map(|r| r.fit_gap_knapsack)
                .reduce(f64::max),
            frames_to_converge_after_cut: self.converged_at,
            feedback_frame_ms: (!self.feedback_cost.is_empty()).then(|| {
                let median = |f: &dyn Fn(&(f64, f64)) -> f64| {
                    let mut v: Vec<f64> = self.feedback_cost.iter().map(f).collect();
                    v.sort_by(f64::total_cmp);
                    percentile(&v, 0.5)
                };
                [median(&|c| c.0), median(&|c| c.1)]
            }),
            region_bytes_ratio: {
                let mut sum = RegionBytes::default();
                records
                    .iter()
                    .filter_map(|r| r.region_bytes)
                    .for_each(|r| sum += r);
                (sum.whole > 0).then(|| sum.ratio())
            },
            picture: self.picture,
            frames: records,
        }
    }
}
