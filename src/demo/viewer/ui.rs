//! The viewer's egui panel: controls on the left, the texture table on the
//! right, a status line at the bottom.

use super::{Mode, Sample, SortKey, Viewer, MIB};
use crate::gpu::memory::human_bytes;
use crate::kinds::Tier;
use crate::streamer::{ResidencyState, TextureReport};
use egui::{Color32, RichText};
use egui_plot::{Corner, Legend, Line, Plot, PlotPoints};

/// Heat-map colours, as in `shaders/scene.wgsl` (sRGB of the shader's values).
const HEAT: [(Color32, &str); 5] = [
    (
        Color32::from_rgb(124, 170, 255),
        "finer than needed (prefetch)",
    ),
    (Color32::from_rgb(108, 238, 124), "at the wanted mip"),
    (Color32::from_rgb(255, 246, 89), "1 mip coarser"),
    (Color32::from_rgb(255, 188, 63), "2 mips coarser"),
    (Color32::from_rgb(255, 79, 63), "3 or more coarser"),
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
                texture_table(ui, v)
            });
        });
    ui.available_rect_before_wrap()
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
pub(super) fn status(r: &crate::streamer::ResidencyReport) -> (Level, String) {
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
    ui.horizontal(|ui| {
        ui.selectable_value(&mut s.mode, Mode::Normal, "normal");
        ui.selectable_value(&mut s.mode, Mode::Heatmap, "mip heatmap");
        ui.selectable_value(&mut s.mode, Mode::Split, "split: budget | full");
    });
    if s.mode == Mode::Heatmap {
        for (c, label) in HEAT {
            ui.horizontal(|ui| {
                let (rect, _) =
                    ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 2.0, c);
                ui.label(label);
            });
        }
        ui.weak("resident mip against the mip the camera wants");
    }
    if s.mode == Mode::Split {
        ui.weak("left: the budgeted streamer; right: a second streamer holding everything");
    }
    ui.separator();
    numbers(ui, v);
    ui.separator();
    charts(ui, v);
}

fn numbers(ui: &mut egui::Ui, v: &Viewer) {
    let r = &v.report;
    let t = &r.totals;
    egui::Grid::new("numbers").num_columns(2).show(ui, |ui| {
        let mut row = |k: &str, val: String| {
            ui.label(k);
            ui.label(val);
            ui.end_row();
        };
        row(
            "held / budget",
            format!("{} / {}", human_bytes(t.accounted()), human_bytes(r.budget)),
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

fn series(history: &[Sample], f: impl Fn(&Sample) -> f64) -> PlotPoints<'static> {
    history.iter().map(|s| [s.t, f(s)]).collect()
}

fn small_plot(id: &str, height: f32) -> Plot<'static> {
    Plot::new(id)
        .height(height)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .show_x(false)
        .include_y(0.0)
        .legend(Legend::default().position(Corner::LeftTop))
}

fn charts(ui: &mut egui::Ui, v: &Viewer) {
    let h: Vec<Sample> = v.history.iter().copied().collect();
    let mib = |b: u64| b as f64 / MIB;
    ui.label("resident MiB against the budget");
    small_plot("resident", 130.0).show(ui, |p| {
        p.line(Line::new("budget", series(&h, |s| mib(s.budget))).color(Color32::LIGHT_RED));
        p.line(
            Line::new(
                "held",
                series(&h, |s| mib(s.color + s.normal_data + s.pool_staging)),
            )
            .color(Color32::WHITE),
        );
        p.line(Line::new("colour", series(&h, |s| mib(s.color))).color(Color32::LIGHT_BLUE));
        p.line(
            Line::new("normal+data", series(&h, |s| mib(s.normal_data)))
                .color(Color32::LIGHT_GREEN),
        );
        p.line(Line::new("pool+staging", series(&h, |s| mib(s.pool_staging))).color(Color32::GRAY));
    });
    ui.label("uploaded KiB per frame");
    small_plot("uploads", 80.0).show(ui, |p| {
        p.line(
            Line::new("uploads", series(&h, |s| s.upload_bytes as f64 / 1024.0))
                .color(Color32::GOLD),
        );
    });
    ui.label("milliseconds");
    small_plot("times", 90.0).show(ui, |p| {
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
        .column(Column::auto().at_least(80.0).at_most(170.0).clip(true))
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::auto())
        .column(Column::remainder())
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
    use crate::kinds::TextureClass;

    fn row(label: &str, bytes: u64, wanted: u32, resident: u32) -> TextureReport {
        TextureReport {
            id: crate::ids::test_id(0),
            label: label.into(),
            class: TextureClass::Color,
            size: (256, 256),
            levels: 9,
            wanted,
            planned: resident,
            resident,
            tier: Tier::Full,
            format: wgpu::TextureFormat::Bc7RgbaUnormSrgb,
            bytes,
            coverage: 0.0,
            state: ResidencyState::Resident,
            below: None,
            loss: crate::streamer::LossSource::Geometric,
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
