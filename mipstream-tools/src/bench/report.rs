//! The benchmark's results as JSON (the keys docs/results.md documents) and as
//! the table `mipstream bench` prints.

use super::{BenchResult, BudgetBasis, Strategy, SweepPoint, SweepResult};

impl BenchResult {
    /// The sweep's points, with the main run among them (at its budget's
    /// fraction, unless a sweep point is already there) when the sweep ran
    /// as many frames as it did (otherwise their scores are not of the same
    /// frames), by fraction: what the charts and the printed
    /// quality-vs-budget table show.
    pub fn budget_points(&self) -> Vec<SweepPoint> {
        let basis = match self.budget_basis {
            BudgetBasis::WorkingSet => self.working_set_bytes,
            BudgetBasis::Full => self.full_residency_bytes,
        }
        .max(1) as f64;
        let fraction = self.budget_bytes as f64 / basis;
        let mut points = self.sweep.clone();
        if !points.is_empty()
            && self.sweep_frames == self.frames
            && points.iter().all(|p| (p.fraction - fraction).abs() > 1e-3)
        {
            points.push(SweepPoint {
                fraction,
                budget_bytes: self.budget_bytes,
                // in the sweep's order, so the table's columns line up
                results: points[0]
                    .results
                    .iter()
                    .filter_map(|r| self.strategies.iter().find(|s| s.strategy == r.strategy))
                    .map(|s| SweepResult {
                        strategy: s.strategy,
                        psnr_db_mean: s.psnr_db_mean,
                        flip_mean: s.flip_mean,
                        peak_resident_bytes: s.peak_resident_bytes,
                        frames_over_budget: s.frames_over_budget,
                        frames_over_budget_by_wgpu: s.frames_over_budget_by_wgpu,
                        region_bytes_ratio: s.region_bytes_ratio,
                    })
                    .collect(),
            });
            points.sort_by(|a, b| a.fraction.total_cmp(&b.fraction));
        }
        points
    }

    /// The JSON other tools read (keys as documented in docs/results.md).
    pub fn to_json(&self) -> serde_json::Value {
        let strategies: serde_json::Map<String, serde_json::Value> = self
            .strategies
            .iter()
            .map(|s| {
                (
                    s.strategy.key().to_string(),
                    serde_json::json!({
                        "setting": s.setting,
                        "peak_resident_bytes": s.peak_resident_bytes,
                        "frames_over_budget": s.frames_over_budget,
                        "frames_over_budget_by_wgpu": s.frames_over_budget_by_wgpu,
                        "wgpu_peak_ratio": s.wgpu_peak_ratio,
                        "gpu_bytes_per_frame": s.frames.iter().map(|r| r.gpu_bytes).collect::<Vec<_>>(),
                        "psnr_db_mean": s.psnr_db_mean,
                        "psnr_db_min": s.psnr_db_min,
                        "flip_mean": s.flip_mean,
                        "gpu_texture_memory_peak_bytes": s.gpu_texture_memory_peak_bytes,
                        "allocator_allocated_peak_bytes": s.allocator_allocated_peak_bytes,
                        "max_upload_bytes_in_a_frame": s.max_upload_bytes_in_a_frame,
                        "update_ms_p50": s.update_ms_p50,
                        "update_ms_p99": s.update_ms_p99,
                        "streamer_update_ms_p50_p99": s.streamer_update_ms,
                        "certificate_ms_p50_p99": s.certificate_ms,
                        "fit_gap_lp_mean": s.fit_gap_lp_mean,
                        "fit_gap_lp_max": s.fit_gap_lp_max,
                        "fit_gap_knapsack_mean": s.fit_gap_knapsack_mean,
                        "fit_gap_knapsack_max": s.fit_gap_knapsack_max,
                        "frames_to_converge_after_cut": s.frames_to_converge_after_cut,
                        "feedback_frame_ms_with_without": s.feedback_frame_ms,
                        "region_bytes_ratio": s.region_bytes_ratio,
                        "resident_bytes_per_frame": s.frames.iter().map(|r| r.resident).collect::<Vec<_>>(),
                        "upload_bytes_per_frame": s.frames.iter().map(|r| r.uploaded).collect::<Vec<_>>(),
                        "psnr_db_per_frame": s.frames.iter().map(|r| r.psnr_db).collect::<Vec<_>>(),
                        "flip_per_frame": s.frames.iter().map(|r| r.flip).collect::<Vec<_>>(),
                        "update_ms_per_frame": s.frames.iter().map(|r| r.update_ms).collect::<Vec<_>>(),
                    }),
                )
            })
            .collect();
        let sweep: Vec<serde_json::Value> = self
            .sweep
            .iter()
            .map(|p| {
                let mut o = serde_json::json!({
                    "budget_fraction": p.fraction,
                    "budget_bytes": p.budget_bytes,
                });
                for r in &p.results {
                    o[r.strategy.key()] = serde_json::json!({
                        "psnr_db_mean": r.psnr_db_mean,
                        "flip_mean": r.flip_mean,
                        "peak_resident_bytes": r.peak_resident_bytes,
                        "frames_over_budget": r.frames_over_budget,
                        "region_bytes_ratio": r.region_bytes_ratio,
                        "frames_over_budget_by_wgpu": r.frames_over_budget_by_wgpu,
                    });
                }
                o
            })
            .collect();
        serde_json::json!({
            "scene": self.scene,
            "backend": self.backend,
            "adapter": self.adapter,
            "frames": self.frames,
            "width": self.size.x,
            "height": self.size.y,
            "budget_bytes": self.budget_bytes,
            "budget_basis": self.budget_basis.key(),
            "error_model": self.error_model.key(),
            "min_residency_frames": self.min_residency_frames,
            "lockstep": self.lockstep,
            "count_retiring": self.count_retiring,
            "working_set_bytes": self.working_set_bytes,
            "full_residency_bytes": self.full_residency_bytes,
            "compared_frames": self.compared_frames(),
            "cut_frame": self.cut_frame,
            "camera_path": self.camera_path,
            "strategies": strategies,
            "sweep": sweep,
        })
    }

    /// The frames compared with `full`: every `quality_every`-th and the one
    /// at the cut.
    pub fn compared_frames(&self) -> Vec<usize> {
        self.strategies
            .iter()
            .find(|s| s.strategy != Strategy::Full)
            .map(|s| {
                s.frames
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.psnr_db.is_some())
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The short table printed at the end.
    pub fn table(&self) -> String {
        use mipstream::gpu::memory::human_bytes;
        let opt = |b: Option<u64>| b.map_or("n/a".to_string(), human_bytes);
        let mut out = format!(
            "{} on {} ({}), {} frames at {}x{}, budget {} ({:.2} of the working set {}; full residency {})\n",
            self.scene,
            self.adapter,
            self.backend,
            self.frames,
            self.size.x,
            self.size.y,
            human_bytes(self.budget_bytes),
            self.budget_bytes as f64 / self.working_set_bytes.max(1) as f64,
            human_bytes(self.working_set_bytes),
            human_bytes(self.full_residency_bytes)
        );
        out += &format!("camera path: {}\n", self.camera_path);
        out += &format!(
            "{:<19} {:<26} {:>11} {:>11} {:>11} {:>5} {:>10} {:>7} {:>7} {:>8} {:>11} {:>12} {:>11} {:>9} {:>13} {:>13}\n",
            "strategy",
            "setting",
            "peak",
            "wgpu tex",
            "allocated",
            "over",
            "wgpu over",
            "PSNR",
            "min",
            "FLIP",
            "max upload",
            "update p50/99",
            "certs p50/99",
            "converge",
            "LP gap mean/max",
            "knapsack gap"
        );
        for s in &self.strategies {
            out += &format!(
                "{:<19} {:<26} {:>11} {:>11} {:>11} {:>5} {:>10} {:>7.2} {:>7.2} {:>8.5} {:>11} {:>5.2}/{:<6.2} {:>5.2}/{:<5.2} {:>9} {:>13} {:>13}\n",
                s.strategy.key(),
                s.setting,
                human_bytes(s.peak_resident_bytes),
                opt(s.gpu_texture_memory_peak_bytes),
                opt(s.allocator_allocated_peak_bytes),
                s.frames_over_budget,
                wgpu_over(s.frames_over_budget_by_wgpu, s.wgpu_peak_ratio),
                s.psnr_db_mean,
                s.psnr_db_min,
                s.flip_mean,
                human_bytes(s.max_upload_bytes_in_a_frame),
                s.streamer_update_ms[0],
                s.streamer_update_ms[1],
                s.certificate_ms[0],
                s.certificate_ms[1],
                s.frames_to_converge_after_cut
                    .map_or("never".to_string(), |f| f.to_string()),
                gaps(s.fit_gap_lp_mean, s.fit_gap_lp_max),
                gaps(s.fit_gap_knapsack_mean, s.fit_gap_knapsack_max),
            );
        }
        for s in &self.strategies {
            if let Some([with, without]) = s.feedback_frame_ms {
                out += &format!(
                    "{}: the renderer's frame (recording to GPU idle, median of the compared frames, each drawn both ways) {with:.2} ms with the GPU feedback call, {without:.2} ms without: x{:.3}\n",
                    s.strategy.key(),
                    with / without.max(1e-9),
                );
            }
            if let Some(ratio) = s.region_bytes_ratio {
                out += &format!(
                    "{}: holding only the sampled regions of the seen textures' finest levels (64 KiB tiles) would take {ratio:.3} of their whole levels (region_bytes_ratio; docs/feedback.md)\n",
                    s.strategy.key(),
                );
            }
        }
        if !self.sweep.is_empty() {
            out += &format!(
                "\nquality vs budget (fractions of the {}, the main run's among them when the sweep ran as many frames; PSNR of the mean error dB / mean FLIP; * went over the budget):\nfraction",
                match self.budget_basis {
                    BudgetBasis::WorkingSet => "working set",
                    BudgetBasis::Full => "full residency",
                }
            );
            for r in &self.sweep[0].results {
                out += &format!(" {:>22}", r.strategy.key());
            }
            out += "\n";
            for p in &self.budget_points() {
                out += &format!("{:>8.2}", p.fraction);
                for r in &p.results {
                    let mark = if r.went_over() { "*" } else { " " };
                    out += &format!(" {:>12.2} / {:.5}{mark}", r.psnr_db_mean, r.flip_mean);
                }
                out += "\n";
            }
            for p in &self.budget_points() {
                for r in &p.results {
                    if let Some(ratio) = r.region_bytes_ratio {
                        out += &format!(
                            "{} at {:.2}: region_bytes_ratio {ratio:.3}\n",
                            r.strategy.key(),
                            p.fraction
                        );
                    }
                }
            }
        }
        out
    }
}

/// Frames over the budget by wgpu's count and its peak against the budget
/// (`5 (1.31x)`; "-" where wgpu counts no memory).
fn wgpu_over(frames: Option<usize>, peak: Option<f64>) -> String {
    match (frames, peak) {
        (Some(n), Some(p)) => format!("{n} ({p:.2}x)"),
        (Some(n), None) => n.to_string(),
        _ => "-".to_string(),
    }
}

/// A certificate's mean and worst gap over a run, in percent ("-" without).
fn gaps(mean: Option<f64>, max: Option<f64>) -> String {
    match (mean, max) {
        (Some(m), Some(x)) => format!("{:.2}%/{:.2}%", m * 100.0, x * 100.0),
        _ => "-".to_string(),
    }
}
