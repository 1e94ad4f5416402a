//! The viewer's egui panel: controls on the left, the texture table on the
//! right, a status line at the bottom.

use super::{Mode, Sample, SortKey, Viewer, MIB};
use egui::{Color32, RichText};
use egui_plot::{Line, Plot, PlotPoints};
use mipstream::gpu::memory::human_bytes;
use mipstream::kinds::Tier;
use mipstream::streamer::{ResidencyState, TextureReport};

/// Heat-map colours, as in `shaders/scene.wgsl` (sRGB of the shader's
/// values), with a short label and the long one.
const HEAT: [(Color32, &str, &str); 5] = [
    (
        Color32::from_rgb(124, 170, 255),
        "finer",
        "finer than needed (prefetch)",
    ),
    (
        Color32::from_rgb(108, 238, 124),
        "wanted",
        "at the wanted mip",
    ),
    (Color32::from_rgb(255, 246, 89), "+1", "1 mip coarser"),
    (Color32::from_rgb(255, 188, 63), "+2", "2 mips coarser"),
    (
        Color32::from_rgb(255, 79, 63),
        "+3",
        "3 or more mips coarser",
    ),
];

/// Lays out the panel; returns the rect (points) the panels leave free.
pub(super) fn panel(ui: &mut egui::Ui, v: &mut Viewer) -> egui::Rect {
    // the panels take at most about half the width, so the scene keeps room
    let width = ui.available_width();
    egui::Panel::bottom("status").show(ui, |ui| status_line(ui, v));
    egui::Panel::left("controls")
        .default_size(330.0f32.min(width * 0.25))
        .size_range(120.0..=(width * 0.25).max(120.0))
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| controls(ui, v));
        });
    egui::Panel::right("textures")
        .default_size(470.0f32.min(width * 0.28))
        .size_range(120.0..=(width * 0.3).max(120.0))
        .show(ui, |ui| {
            egui::ScrollArea::horizontal().show(ui, |ui| {
                if !v.report.meshes.is_empty() {
                    mesh_table(ui, v);
                    ui.separator();
                }
                if v.feedback_on {
                    super::feedback::section(ui, v);
                    ui.separator();
                }
                texture_table(ui, v)
            });
        });
    let free = ui.available_rect_before_wrap();
    overlay(ui, v, free);
    free
}

/// Over the scene: in a split, the divider and each half's label (its
/// strategy, bytes held against the budget, PSNR and FLIP against full
/// resolution); in the error view, what it shows.
fn overlay(ui: &mut egui::Ui, v: &Viewer, rect: egui::Rect) {
    let mode = v.settings.mode;
    if v.meshes.is_some() || !(mode.is_split() || mode == Mode::Error) {
        return;
    }
    let painter = ui.painter_at(rect);
    let font = egui::FontId::proportional(14.0);
    let label = |at: egui::Pos2, lines: Vec<String>| {
        let text = lines.join("\n");
        let galley = painter.layout_no_wrap(text, font.clone(), Color32::WHITE);
        let r = egui::Rect::from_min_size(at, galley.size()).expand(6.0);
        painter.rect_filled(r, 4.0, Color32::from_black_alpha(170));
        painter.galley(at, galley, Color32::WHITE);
    };
    let pad = egui::vec2(12.0, 12.0);
    if mode == Mode::Error {
        label(
            rect.min + pad,
            vec![
                "FLIP error of mipstream's picture against full resolution".into(),
                format!(
                    "black: no difference (magma scale, see the panel); every {} frames",
                    super::compare::SCORE_EVERY
                ),
            ],
        );
        return;
    }
    let mid = rect.center().x;
    painter.line_segment(
        [egui::pos2(mid, rect.min.y), egui::pos2(mid, rect.max.y)],
        egui::Stroke::new(2.0, Color32::WHITE),
    );
    let describe = |h: Option<&super::HalfScore>, fallback: &str| -> Vec<String> {
        match h {
            Some(h) => vec![
                h.strategy.to_string(),
                match h.budget {
                    Some(b) => format!("{} of {}", human_bytes(h.held), human_bytes(b)),
                    None => format!("{} (no budget)", human_bytes(h.held)),
                },
                if h.strategy == "full" {
                    "the reference".to_string()
                } else {
                    format!("{:.1} dB · FLIP {:.4}", h.psnr_db, h.flip)
                },
            ],
            None => vec![fallback.to_string(), "scoring...".into()],
        }
    };
    let scores = v.split_scores();
    let right_name = match mode {
        Mode::SplitUnreal => "unreal_pool",
        Mode::SplitUnity => "unity_budget",
        _ => "full",
    };
    label(
        rect.min + pad,
        describe(scores.map(|s| &s.left), "mipstream"),
    );
    label(
        egui::pos2(mid, rect.min.y) + pad,
        describe(scores.map(|s| &s.right), right_name),
    );
}

/// How loud the status line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Ok,
    OverBudget,
    OutOfMemory,
}

/// The status line's text: the last out-of-memory event (PyTorch-style
/// message), else a warning when over budget, else what is held.
pub(super) fn status(r: &mipstream::streamer::ResidencyReport) -> (Level, String) {
    let held = r.totals.accounted();
    if let Some(oom) = r.oom_events.last() {
        (Level::OutOfMemory, oom.to_string())
    } else if held > r.budget {
        (
            Level::OverBudget,
            format!(
                "OVER BUDGET: holding {} of a {} budget",
                human_bytes(held),
                human_bytes(r.budget)
            ),
        )
    } else {
        (
            Level::Ok,
            format!(
                "holding {} of {} ({:.0}%), {} loads in flight",
                human_bytes(held),
                human_bytes(r.budget),
                held as f64 * 100.0 / r.budget.max(1) as f64,
                r.loads_outstanding
            ),
        )
    }
}

fn status_line(ui: &mut egui::Ui, v: &Viewer) {
    let (level, text) = status(&v.report);
    ui.horizontal(|ui| {
        match level {
            Level::Ok => ui.label(text),
            Level::OverBudget => ui.label(
                RichText::new(text)
                    .color(Color32::from_rgb(255, 90, 80))
                    .strong(),
            ),
            Level::OutOfMemory => {
                ui.label(RichText::new(text).color(Color32::from_rgb(255, 120, 100)))
            }
        };
        ui.separator();
        ui.weak("WASD/QE move, Shift faster, drag to look, P path, H hide panel");
    });
}

fn controls(ui: &mut egui::Ui, v: &mut Viewer) {
    ui.heading("mipstream");
    ui.weak(&v.adapter);
    ui.separator();
    let full_mb = v.full_bytes as f64 / MIB;
    let s = &mut v.settings;
    ui.add(
        egui::Slider::new(&mut s.budget_mb, 0.25..=(full_mb * 1.25).max(1.0))
            .text("budget MiB")
            .max_decimals(2),
    )
    .on_hover_text("GPU memory mipstream may hold; takes effect the next frame");
    ui.weak(format!(
        "full residency {:.2} MiB: the budget is {:.0}% of it",
        full_mb,
        s.budget_mb / full_mb.max(1e-9) * 100.0
    ));
    ui.add(
        egui::Slider::new(&mut s.upload_cap_mb, 0.0625..=16.0)
            .logarithmic(true)
            .text("upload cap MiB/frame")
            .max_decimals(3),
    )
    .on_hover_text("texel bytes copied to the GPU per frame at most: the stutter bound");
    ui.checkbox(&mut s.compact_tier, "compact tier under pressure")
        .on_hover_text("let tight budgets use lower-bit formats (e.g. BC1 instead of BC7)");
    ui.add(
        egui::Slider::new(&mut v.render_scale, 0.25..=1.0)
            .text("render scale")
            .max_decimals(2),
    )
    .on_hover_text("scene resolution as a fraction of its screen area; the streamer plans for it");
    let s = &mut v.settings;
    ui.checkbox(&mut s.frozen, "freeze streaming")
        .on_hover_text("stop calling update(): what is resident stays, the camera still moves");
    ui.checkbox(&mut s.play_path, "play the camera path (P)");
    ui.horizontal_wrapped(|ui| {
        for m in Mode::ALL {
            ui.selectable_value(&mut s.mode, m, m.label());
        }
    });
    match s.mode {
        Mode::Heatmap => {
            ui.horizontal_wrapped(|ui| {
                for (c, short, long) in HEAT {
                    let (rect, _) =
                        ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
                    ui.painter().rect_filled(rect, 2.0, c);
                    ui.label(short).on_hover_text(long);
                }
            });
            ui.weak("resident mip against the mip the camera wants (+n: n coarser)");
        }
        m if m.is_split() => {
            ui.weak(format!(
                "left: mipstream; right: {}, each its own streamer at the same budget and \
                 upload cap; scored against full resolution every {} frames, {} px wide",
                match m {
                    Mode::SplitUnreal => "Unreal's streaming pool",
                    Mode::SplitUnity => "Unity's mipmap streaming budget",
                    _ => "everything at full resolution",
                },
                super::compare::SCORE_EVERY,
                super::compare::SCORE_WIDTH
            ));
        }
        Mode::Error => {
            flip_legend(ui);
            ui.weak(format!(
                "FLIP error against full resolution, every {} frames, {} px wide",
                super::compare::SCORE_EVERY,
                super::compare::SCORE_WIDTH
            ));
        }
        _ => {}
    }
    ui.separator();
    numbers(ui, v);
    ui.separator();
    charts(ui, v);
}

/// The error view's colour scale: magma from 0 (black, no difference) to 1.
fn flip_legend(ui: &mut egui::Ui) {
    let lut = nv_flip::magma_lut().to_vec();
    let width = ui.available_width().min(240.0);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, 14.0), egui::Sense::hover());
    let steps = 48;
    for i in 0..steps {
        let t = i as f32 / (steps - 1) as f32;
        let k = ((t * 255.0) as usize).min(255) * 3;
        let x0 = rect.min.x + width * i as f32 / steps as f32;
        let r = egui::Rect::from_min_max(
            egui::pos2(x0, rect.min.y),
            egui::pos2(x0 + width / steps as f32 + 0.5, rect.max.y),
        );
        ui.painter()
            .rect_filled(r, 0.0, Color32::from_rgb(lut[k], lut[k + 1], lut[k + 2]));
    }
    ui.horizontal(|ui| {
        ui.label("0: same");
        ui.add_space((width - 110.0).max(0.0));
        ui.label("1: all wrong");
    });
}

fn numbers(ui: &mut egui::Ui, v: &Viewer) {
    let r = &v.report;
    let t = &r.totals;
    let tall = ui.ctx().content_rect().height() >= 880.0;
    egui::Grid::new("numbers").num_columns(2).show(ui, |ui| {
        let mut row = |k: &str, val: String| {
            ui.label(k);
            ui.add(egui::Label::new(val).wrap());
            ui.end_row();
        };
        row(
            "on the GPU / budget",
            format!("{} / {}", human_bytes(t.on_gpu()), human_bytes(r.budget)),
        );
        row(
            "held · retiring",
            format!(
                "{} · {}",
                human_bytes(t.accounted()),
                human_bytes(t.retiring)
            ),
        );
        row(
            "colour · normal · data",
            format!(
                "{} · {} · {}",
                human_bytes(t.color),
                human_bytes(t.normal),
                human_bytes(t.data)
            ),
        );
        row(
            "pool · staging",
            format!("{} · {}", human_bytes(t.pool), human_bytes(t.staging)),
        );
        row(
            "uploaded this frame",
            format!(
                "{} in {} levels",
                human_bytes(r.frame.upload_bytes),
                r.frame.uploads
            ),
        );
        row(
            "update() · frame",
            format!(
                "{:.2} ms · {:.1} ms",
                r.frame.update_time.as_secs_f64() * 1e3,
                v.last_frame_ms
            ),
        );
    });
    // the GPU side's own figures: folded away on short screens
    egui::CollapsingHeader::new("allocator, driver, wgpu")
        .default_open(tall)
        .show(ui, |ui| gpu_numbers(ui, v));
}

/// wgpu's allocator report, the driver's budget and wgpu's texture counter.
fn gpu_numbers(ui: &mut egui::Ui, v: &Viewer) {
    let r = &v.report;
    egui::Grid::new("gpu numbers")
        .num_columns(2)
        .show(ui, |ui| {
            let mut row = |k: &str, val: String| {
                ui.label(k);
                ui.add(egui::Label::new(val).wrap());
                ui.end_row();
            };
            match &r.allocator {
                Some(a) => {
                    row(
                        "allocator used / reserved",
                        format!("{} / {}", human_bytes(a.allocated), human_bytes(a.reserved)),
                    );
                    row(
                        "fragmentation",
                        format!("{:.0}% in {} blocks", a.fragmentation * 100.0, a.blocks),
                    );
                }
                None => row("allocator", "not reported by this backend".into()),
            }
            row(
                "driver budget",
                match r.driver.as_ref().and_then(|d| d.device_local_budget()) {
                    Some(b) => human_bytes(b),
                    None => "not reported by this backend".into(),
                },
            );
            let memory = human_bytes(r.counters.texture_memory.max(0) as u64);
            row(
                "wgpu texture memory",
                if r.counters.textures >= 0 {
                    format!("{memory} in {} textures", r.counters.textures)
                } else {
                    // wgpu-hal 30's Vulkan backend never counts texture creation
                    // (gfx-rs/wgpu#10038), only destruction
                    format!("{memory} (count unknown: wgpu#10038)")
                },
            );
        });
}

/// `f` of every sample, against seconds before the newest (0: now).
fn series(history: &[Sample], f: impl Fn(&Sample) -> f64) -> PlotPoints<'static> {
    let now = history.last().map_or(0.0, |s| s.t);
    history.iter().map(|s| [s.t - now, f(s)]).collect()
}

fn small_plot(id: &str, height: f32, unit: &str) -> Plot<'static> {
    Plot::new(id)
        .height(height)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .include_y(0.0)
        .x_axis_label("seconds (0 = now)")
        .y_axis_label(unit.to_owned())
}

/// A chart's legend above it, so it covers none of the data.
fn legend_row(ui: &mut egui::Ui, items: &[(&str, Color32)]) {
    ui.horizontal_wrapped(|ui| {
        for (name, c) in items {
            ui.label(RichText::new(format!("— {name}")).color(*c).small());
        }
    });
}

fn charts(ui: &mut egui::Ui, v: &Viewer) {
    let h: Vec<Sample> = v.history.iter().copied().collect();
    let mib = |b: u64| b as f64 / MIB;
    ui.label("resident against the budget");
    let resident = [
        ("budget", Color32::LIGHT_RED),
        ("held", Color32::WHITE),
        ("colour", Color32::LIGHT_BLUE),
        ("normal+data", Color32::LIGHT_GREEN),
        ("pool+staging", Color32::GRAY),
    ];
    legend_row(ui, &resident);
    small_plot("resident", 110.0, "MiB").show(ui, |p| {
        let values: [&dyn Fn(&Sample) -> f64; 5] = [
            &|s| mib(s.budget),
            &|s| mib(s.color + s.normal_data + s.pool_staging),
            &|s| mib(s.color),
            &|s| mib(s.normal_data),
            &|s| mib(s.pool_staging),
        ];
        for ((name, c), f) in resident.iter().zip(values) {
            p.line(Line::new(*name, series(&h, f)).color(*c));
        }
    });
    ui.label("uploaded per frame");
    small_plot("uploads", 70.0, "KiB").show(ui, |p| {
        p.line(
            Line::new("uploads", series(&h, |s| s.upload_bytes as f64 / 1024.0))
                .color(Color32::GOLD),
        );
    });
    ui.label("time per frame");
    legend_row(
        ui,
        &[
            ("frame", Color32::WHITE),
            ("update()", Color32::LIGHT_GREEN),
        ],
    );
    small_plot("times", 80.0, "ms").show(ui, |p| {
        p.line(Line::new("frame", series(&h, |s| s.frame_ms as f64)).color(Color32::WHITE));
        p.line(
            Line::new("update()", series(&h, |s| s.update_ms as f64)).color(Color32::LIGHT_GREEN),
        );
    });
}

/// A short name for a texture format: `BC7 sRGB`, `ETC2`, `ASTC 4x4`.
fn format_name(f: wgpu::TextureFormat) -> String {
    use wgpu::TextureFormat as F;
    let base = match f {
        F::Bc1RgbaUnorm | F::Bc1RgbaUnormSrgb => "BC1".to_string(),
        F::Bc3RgbaUnorm | F::Bc3RgbaUnormSrgb => "BC3".into(),
        F::Bc4RUnorm => "BC4".into(),
        F::Bc5RgUnorm => "BC5".into(),
        F::Bc7RgbaUnorm | F::Bc7RgbaUnormSrgb => "BC7".into(),
        F::Etc2Rgb8Unorm | F::Etc2Rgb8UnormSrgb => "ETC2".into(),
        F::Etc2Rgba8Unorm | F::Etc2Rgba8UnormSrgb => "ETC2A".into(),
        F::EacR11Unorm => "EAC R11".into(),
        F::EacRg11Unorm => "EAC RG11".into(),
        F::Astc { block, .. } => format!("ASTC {}", format!("{block:?}").trim_start_matches('B')),
        F::Rgba8Unorm | F::Rgba8UnormSrgb => "RGBA8".into(),
        F::Rg8Unorm => "RG8".into(),
        F::R8Unorm => "R8".into(),
        other => format!("{other:?}"),
    };
    if f.is_srgb() {
        format!("{base} sRGB")
    } else {
        base
    }
}

/// The resident format, marked when it is the compact tier.
fn tier_name(t: &TextureReport) -> String {
    match t.tier {
        Tier::Full => format_name(t.format),
        Tier::Compact => format!("{} (compact)", format_name(t.format)),
    }
}

fn size_text((w, h): (u32, u32)) -> String {
    if w == h {
        format!("{w}²")
    } else {
        format!("{w}×{h}")
    }
}

fn why(t: &TextureReport) -> String {
    match (&t.below, &t.state) {
        (Some(b), _) => b.to_string(),
        (None, ResidencyState::Loading { .. }) => "loading".into(),
        (None, ResidencyState::Uploading { .. }) => "uploading".into(),
        _ => String::new(),
    }
}

fn sort_textures(rows: &mut [TextureReport], key: SortKey, ascending: bool) {
    rows.sort_by(|a, b| {
        let o = match key {
            SortKey::Name => a.label.cmp(&b.label),
            SortKey::Size => (a.size.0 * a.size.1).cmp(&(b.size.0 * b.size.1)),
            SortKey::Format => tier_name(a).cmp(&tier_name(b)),
            SortKey::Mip => {
                (a.resident as i64 - a.wanted as i64).cmp(&(b.resident as i64 - b.wanted as i64))
            }
            SortKey::Bytes => a.bytes.cmp(&b.bytes),
            SortKey::Why => why(a).cmp(&why(b)),
        }
        .then(a.label.cmp(&b.label));
        if ascending {
            o
        } else {
            o.reverse()
        }
    });
}

/// The meshes of a glTF scene: LOD wanted and held, triangles drawn, the
/// drawn LOD's projected error, bytes, why coarser than wanted.
fn mesh_table(ui: &mut egui::Ui, v: &Viewer) {
    ui.heading("meshes");
    egui::Grid::new("meshes")
        .striped(true)
        .num_columns(6)
        .show(ui, |ui| {
            for h in [
                "name",
                "triangles",
                "LOD want/has",
                "error px",
                "bytes",
                "why below",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for m in &v.report.meshes {
                ui.label(&m.label);
                ui.label(m.triangles.to_string());
                let text = format!("{} / {}", m.wanted, m.resident);
                if m.resident > m.wanted {
                    ui.colored_label(Color32::from_rgb(255, 200, 90), text);
                } else {
                    ui.label(text);
                }
                ui.label(format!("{:.2}", m.screen_error_px));
                ui.label(human_bytes(m.bytes));
                ui.label(m.below.as_ref().map_or(String::new(), |b| b.to_string()));
                ui.end_row();
            }
        });
}

fn texture_table(ui: &mut egui::Ui, v: &mut Viewer) {
    use egui_extras::{Column, TableBuilder};
    ui.heading("textures");
    ui.weak("click a header to sort, a row to highlight its boxes (magenta)");
    let mut rows = v.report.textures.clone();
    let (key, ascending) = v.settings.sort;
    sort_textures(&mut rows, key, ascending);
    let mut clicked_header = None;
    let mut clicked_row = None;
    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
    TableBuilder::new(ui)
        .striped(true)
        .sense(egui::Sense::click())
        // every column as wide as its text: the panel scrolls sideways
        // rather than cutting the last ones
        .column(Column::auto().at_least(80.0).at_most(170.0).clip(true))
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::auto().at_least(90.0))
        .header(20.0, |mut header| {
            for (k, name) in [
                (SortKey::Name, "name"),
                (SortKey::Size, "size"),
                (SortKey::Format, "format"),
                (SortKey::Mip, "mip want/has"),
                (SortKey::Bytes, "bytes"),
                (SortKey::Why, "why below"),
            ] {
                header.col(|ui| {
                    let arrow = match (k == key, ascending) {
                        (true, true) => " ^",
                        (true, false) => " v",
                        _ => "",
                    };
                    if ui.button(format!("{name}{arrow}")).clicked() {
                        clicked_header = Some(k);
                    }
                });
            }
        })
        .body(|mut body| {
            for t in &rows {
                body.row(18.0, |mut row| {
                    row.set_selected(v.settings.selected == Some(t.id));
                    row.col(|ui| {
                        ui.label(&t.label);
                    });
                    row.col(|ui| {
                        ui.label(size_text(t.size));
                    });
                    row.col(|ui| {
                        ui.label(tier_name(t));
                    });
                    row.col(|ui| {
                        let text = format!("{} / {}", t.wanted, t.resident);
                        if t.resident > t.wanted {
                            ui.colored_label(Color32::from_rgb(255, 200, 90), text);
                        } else {
                            ui.label(text);
                        }
                    });
                    row.col(|ui| {
                        ui.label(human_bytes(t.bytes));
                    });
                    row.col(|ui| {
                        ui.label(why(t));
                    });
                    if row.response().clicked() {
                        clicked_row = Some(t.id);
                    }
                });
            }
        });
    if let Some(k) = clicked_header {
        v.settings.sort = if k == key {
            (k, !ascending)
        } else {
            (k, k == SortKey::Name)
        };
    }
    if let Some(id) = clicked_row {
        v.settings.selected = if v.settings.selected == Some(id) {
            None
        } else {
            Some(id)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mipstream::kinds::TextureClass;

    fn row(label: &str, bytes: u64, wanted: u32, resident: u32) -> TextureReport {
        TextureReport {
            id: mipstream::TextureId::detached(0),
            label: label.into(),
            class: TextureClass::Color,
            size: (256, 256),
            levels: 9,
            wanted,
            planned: resident,
            planned_tier: Tier::Full,
            resident,
            tier: Tier::Full,
            format: wgpu::TextureFormat::Bc7RgbaUnormSrgb,
            bytes,
            coverage: 0.0,
            state: ResidencyState::Resident,
            below: None,
            loss: mipstream::streamer::LossSource::Geometric,
        }
    }

    #[test]
    fn format_names_are_short() {
        assert_eq!(
            format_name(wgpu::TextureFormat::Bc7RgbaUnormSrgb),
            "BC7 sRGB"
        );
        assert_eq!(format_name(wgpu::TextureFormat::Bc5RgUnorm), "BC5");
        let astc = wgpu::TextureFormat::Astc {
            block: wgpu::AstcBlock::B6x6,
            channel: wgpu::AstcChannel::Unorm,
        };
        assert_eq!(format_name(astc), "ASTC 6x6");
    }

    #[test]
    fn the_table_sorts_by_the_clicked_column_both_ways() {
        let mut rows = vec![row("b", 10, 0, 2), row("a", 30, 0, 0), row("c", 20, 1, 1)];
        sort_textures(&mut rows, SortKey::Bytes, false);
        let names: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(names, ["a", "c", "b"]);
        sort_textures(&mut rows, SortKey::Name, true);
        let names: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        // most mips below what it wants first
        sort_textures(&mut rows, SortKey::Mip, false);
        assert_eq!(rows[0].label, "b");
    }
}
