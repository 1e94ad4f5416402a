//! The viewer's view of GPU feedback (`--feedback`): the scene's renderer
//! reports what its fragments sample, the streamer reads it back a frame
//! or two late without waiting, and the panel lists, per texture, the level
//! the GPU sampled beside the level the plan wants and the pixels each
//! counts. With "plan from it" off (the default) the plan is the CPU's
//! prediction from the objects' boxes, so the table shows where that
//! prediction is wrong: boxes hidden behind others, textures magnified or
//! minified unlike their box's nearest point. With it on, the plan fuses
//! the feedback (`docs/feedback.md`) and the table shows what is left.

use super::Viewer;
use egui::Color32;
use mipstream::gpu::feedback::FeedbackFrame;
use mipstream::streamer::TextureReport;
use mipstream::TextureId;

/// One texture: the plan's level and pixels against the GPU's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FeedbackRow {
    pub(crate) id: TextureId,
    pub(crate) label: String,
    /// The level the plan wants (the CPU prediction, or the fusion).
    pub(crate) plan_level: u32,
    /// The plan's weighted screen coverage, pixels (0: not in view).
    pub(crate) plan_pixels: f32,
    /// What the GPU sampled: the finest level (the finest lod floored, in
    /// the file's levels), the finest and mean lod, and the pixels.
    pub(crate) gpu: Option<GpuSample>,
}

/// What the GPU reported for one texture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GpuSample {
    pub(crate) level: u32,
    pub(crate) finest_lod: f32,
    pub(crate) mean_lod: f32,
    pub(crate) pixels: u32,
}

/// How the plan and the GPU agree over every texture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Agreement {
    /// Both want the same level.
    pub(crate) same: u32,
    /// The GPU sampled finer than the plan wants: the plan under-asks.
    pub(crate) gpu_finer: u32,
    /// The GPU sampled coarser: the plan over-asks.
    pub(crate) gpu_coarser: u32,
    /// In view by the plan's boxes, sampled by no pixel (hidden).
    pub(crate) unseen: u32,
    /// Sampled though the plan's boxes put it out of view.
    pub(crate) unpredicted: u32,
}

/// The rows for the report's `textures` and the newest `feedback`, the
/// most sampled first (then the most covered, then by name).
pub(crate) fn rows(
    textures: &[TextureReport],
    feedback: Option<&FeedbackFrame>,
) -> Vec<FeedbackRow> {
    let mut rows: Vec<FeedbackRow> = textures
        .iter()
        .map(|t| {
            let seen = feedback.and_then(|f| f.slots.get(t.id.index()).copied().flatten());
            FeedbackRow {
                id: t.id,
                label: t.label.clone(),
                plan_level: t.wanted,
                plan_pixels: t.coverage,
                gpu: seen.map(|s| GpuSample {
                    level: s.finest_level().min(t.levels.saturating_sub(1)),
                    finest_lod: s.finest_lod,
                    mean_lod: s.mean_lod,
                    pixels: s.pixels,
                }),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        let px = |r: &FeedbackRow| r.gpu.map_or(0, |g| g.pixels);
        px(b)
            .cmp(&px(a))
            .then(b.plan_pixels.total_cmp(&a.plan_pixels))
            .then_with(|| a.label.cmp(&b.label))
    });
    rows
}

/// Counts where the plan and the GPU agree and where not.
pub(crate) fn agreement(rows: &[FeedbackRow]) -> Agreement {
    let mut a = Agreement::default();
    for r in rows {
        match (r.gpu, r.plan_pixels > 0.0) {
            (None, true) => a.unseen += 1,
            (None, false) => {}
            (Some(_), false) => a.unpredicted += 1,
            (Some(g), true) => match g.level.cmp(&r.plan_level) {
                std::cmp::Ordering::Equal => a.same += 1,
                std::cmp::Ordering::Less => a.gpu_finer += 1,
                std::cmp::Ordering::Greater => a.gpu_coarser += 1,
            },
        }
    }
    a
}

/// The panel's feedback section.
pub(super) fn section(ui: &mut egui::Ui, v: &mut Viewer) {
    let feedback = v.streamer.latest_feedback();
    egui::CollapsingHeader::new("GPU feedback: what the GPU sampled against the plan")
        .default_open(true)
        .show(ui, |ui| {
            ui.checkbox(&mut v.settings.fuse_feedback, "plan from it")
                .on_hover_text(
                    "off: the plan is the CPU's prediction from the objects' boxes; \
                     on: the plan fuses the feedback (docs/feedback.md)",
                );
            let Some(f) = feedback else {
                ui.weak("no feedback read back yet");
                return;
            };
            let rows = rows(&v.report.textures, Some(f));
            let a = agreement(&rows);
            ui.label(format!(
                "frame {} ({} frames ago): {} textures sampled",
                f.frame,
                v.report.frame.feedback_age.unwrap_or(0),
                f.seen()
            ));
            ui.label(format!(
                "same level {}, GPU finer {}, GPU coarser {}, hidden {}, not predicted {}",
                a.same, a.gpu_finer, a.gpu_coarser, a.unseen, a.unpredicted
            ));
            egui::Grid::new("feedback rows")
                .striped(true)
                .num_columns(5)
                .show(ui, |ui| {
                    for h in [
                        "texture",
                        "plan mip",
                        "GPU mip (finest / mean lod)",
                        "plan px",
                        "GPU px",
                    ] {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for r in rows
                        .iter()
                        .filter(|r| r.gpu.is_some() || r.plan_pixels > 0.0)
                    {
                        ui.label(&r.label);
                        ui.label(r.plan_level.to_string());
                        match r.gpu {
                            Some(g) => {
                                let text = format!(
                                    "{} ({:.1} / {:.1})",
                                    g.level, g.finest_lod, g.mean_lod
                                );
                                let colour = match g.level.cmp(&r.plan_level) {
                                    std::cmp::Ordering::Less => Color32::from_rgb(255, 170, 80),
                                    std::cmp::Ordering::Greater => Color32::from_rgb(120, 180, 255),
                                    std::cmp::Ordering::Equal => ui.visuals().text_color(),
                                };
                                ui.colored_label(colour, text);
                            }
                            None => {
                                ui.weak("not sampled");
                            }
                        }
                        ui.label(format!("{:.0}", r.plan_pixels));
                        ui.label(r.gpu.map_or_else(|| "0".into(), |g| g.pixels.to_string()));
                        ui.end_row();
                    }
                });
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use mipstream::gpu::feedback::SlotFeedback;

    fn sampled(finest_lod: f32, pixels: u32) -> Option<SlotFeedback> {
        Some(SlotFeedback {
            finest_lod,
            mean_lod: finest_lod + 1.0,
            pixels,
            regions: 1,
        })
    }

    fn texture(index: u32, label: &str, wanted: u32, coverage: f32) -> TextureReport {
        TextureReport {
            id: TextureId::detached(index),
            label: label.into(),
            class: mipstream::kinds::TextureClass::Color,
            size: (256, 256),
            levels: 9,
            wanted,
            planned: wanted,
            planned_tier: mipstream::kinds::Tier::Full,
            resident: wanted,
            tier: mipstream::kinds::Tier::Full,
            format: wgpu::TextureFormat::Bc7RgbaUnormSrgb,
            bytes: 0,
            coverage,
            state: mipstream::streamer::ResidencyState::Resident,
            below: None,
            loss: mipstream::streamer::LossSource::Geometric,
        }
    }

    #[test]
    fn rows_put_the_gpu_level_beside_the_plan_and_count_the_disagreements() {
        // the plan: a wants level 1, b level 2, c level 0, d level 3 (all in
        // view), e is out of view
        let report = [
            texture(0, "a", 1, 900.0),
            texture(1, "b", 2, 400.0),
            texture(2, "c", 0, 50.0),
            texture(3, "d", 3, 10.0),
            texture(4, "e", 6, 0.0),
        ];
        let ids: Vec<TextureId> = report.iter().map(|t| t.id).collect();
        let mut slots = vec![None; 5];
        slots[ids[0].index()] = sampled(1.4, 800); // same level
        slots[ids[1].index()] = sampled(0.9, 300); // GPU finer
        slots[ids[2].index()] = sampled(2.0, 40); // GPU coarser
        slots[ids[4].index()] = sampled(-1.0, 4); // not predicted; magnified
        let f = FeedbackFrame { frame: 3, slots };
        let rows = rows(&report, Some(&f));
        let order: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(order, ["a", "b", "c", "e", "d"]);
        assert_eq!(rows[1].gpu.unwrap().level, 0);
        assert_eq!(rows[3].gpu.unwrap().level, 0, "magnified: level 0");
        assert_eq!(rows[4].gpu, None);
        assert_eq!(
            agreement(&rows),
            Agreement {
                same: 1,
                gpu_finer: 1,
                gpu_coarser: 1,
                unseen: 1,
                unpredicted: 1,
            }
        );
        // no feedback: every texture in view is unseen
        let none = agreement(&super::rows(&report, None));
        assert_eq!((none.unseen, none.same), (4, 0));
    }
}
