//! The benchmark's charts (plotters, drawn into RGB buffers and saved with
//! `image`): resident bytes against the budget, PSNR over the path, quality
//! against budget, and one frame of every strategy side by side.

use super::{BenchError, BenchResult, Strategy};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const W: u32 = 1000;
const H: u32 = 500;

fn color(s: Strategy) -> RGBColor {
    match s {
        Strategy::Full => RGBColor(110, 110, 110),
        Strategy::UniformBias => RGBColor(230, 140, 20),
        Strategy::DistanceOnly => RGBColor(40, 110, 220),
        Strategy::UnityBudget => RGBColor(150, 60, 200),
        Strategy::UnrealPool => RGBColor(210, 40, 60),
        Strategy::Mipstream => RGBColor(20, 160, 60),
        Strategy::MipstreamGeometric => RGBColor(120, 200, 150),
        Strategy::MipstreamFeedback => RGBColor(0, 110, 110),
        Strategy::MipstreamOracle => RGBColor(0, 60, 60),
    }
}

fn font() -> Result<(), BenchError> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let ok = *FONT.get_or_init(|| {
        plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        )
        .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(BenchError::Plot(
            "the chart font could not be loaded".into(),
        ))
    }
}

fn plot_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Plot(e.to_string())
}

fn save(buf: Vec<u8>, w: u32, h: u32, path: &Path) -> Result<(), BenchError> {
    let img = image::RgbImage::from_raw(w, h, buf)
        .ok_or_else(|| BenchError::Plot("chart buffer size".into()))?;
    img.save(path)
        .map_err(|e| BenchError::Plot(format!("{}: {e}", path.display())))
}

const MIB: f64 = (1u64 << 20) as f64;

/// PSNR is drawn up to this (identical pictures score 100).
const PSNR_CAP: f64 = 100.0;

/// What the sweep's fractions are of, in words.
fn basis_words(result: &BenchResult) -> &'static str {
    match result.budget_basis {
        super::BudgetBasis::WorkingSet => "working set",
        super::BudgetBasis::Full => "full residency",
    }
}

/// A strategy's points: `(x, y, went over its budget)`.
type Line = (Strategy, Vec<(f64, f64, bool)>);

/// One line per strategy of `(x, y, went over its budget)`, filled points
/// within the budget, hollow ones over it; the legend beside the plot.
fn sweep_chart(
    path: &Path,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
) -> Result<(), BenchError> {
    let all = || lines.iter().flat_map(|(_, pts)| pts.iter());
    let (lo, hi) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(0.5);
    let xmax = all().map(|p| p.0).fold(1.0, f64::max);
    let mut buf = vec![0u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        // the legend gets a column of its own: it never covers a point,
        // and is wide enough for the longest key ("mipstream_geometric",
        // about 170 px at 16 px after its 36 px line)
        // (the caption over both, centred on the whole width: over the plot
        // alone a long one ran off its left edge)
        let titled = root.titled(caption, ("sans-serif", 17)).map_err(plot_err)?;
        let (plot, legend) = titled.split_horizontally(W - 220);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..xmax * 1.05, lo - pad..hi + pad)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(plot_err)?;
        for (strategy, pts) in lines {
            let c = color(*strategy);
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, p.1)),
                    c.stroke_width(2),
                ))
                .map_err(plot_err)?;
            chart
                .draw_series(pts.iter().map(|&(x, y, over)| {
                    Circle::new((x, y), 5, if over { c.stroke_width(2) } else { c.filled() })
                }))
                .map_err(plot_err)?;
        }
        for (k, (strategy, _)) in lines.iter().enumerate() {
            let c = color(*strategy);
            let y = 60 + 26 * k as i32;
            legend
                .draw(&PathElement::new([(6, y), (30, y)], c.stroke_width(3)))
                .map_err(plot_err)?;
            legend
                .draw(&Text::new(
                    strategy.key(),
                    (36, y - 9),
                    ("sans-serif", 16).into_font().color(&BLACK),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    save(buf, W, H, path)
}

/// Writes the charts into `dir`; returns the files written.
pub fn write_plots(result: &BenchResult, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    font()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| BenchError::Plot(format!("{}: {e}", dir.display())))?;
    let mut written = Vec::new();
    let title = format!(
        "{} scene, {} ({}), {}x{}",
        result.scene, result.adapter, result.backend, result.size.x, result.size.y
    );

    // resident bytes against the budget
    let p = dir.join("resident.png");
    let mut buf = vec![0u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let peak = result
            .strategies
            .iter()
            .map(|s| s.peak_resident_bytes)
            .chain([result.budget_bytes])
            .max()
            .unwrap_or(1) as f64
            / MIB;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Resident MiB against the budget: {title}"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0..result.frames, 0.0..peak * 1.1)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("frame (fast fly, slow walk, cut)")
            .y_desc("MiB held")
            .draw()
            .map_err(plot_err)?;
        let budget = result.budget_bytes as f64 / MIB;
        chart
            .draw_series(LineSeries::new(
                [(0, budget), (result.frames, budget)],
                RED.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label("budget")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RED.stroke_width(2)));
        for s in &result.strategies {
            let c = color(s.strategy);
            chart
                .draw_series(LineSeries::new(
                    s.frames
                        .iter()
                        .enumerate()
                        .map(|(i, r)| (i, r.resident as f64 / MIB)),
                    c.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(s.strategy.key())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(
                [(result.cut_frame, 0.0), (result.cut_frame, peak * 1.1)],
                BLACK.mix(0.3),
            ))
            .map_err(plot_err)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    save(buf, W, H, &p)?;
    written.push(p);

    // PSNR over the path
    let p = dir.join("psnr.png");
    let mut buf = vec![0u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let lo = result
            .strategies
            .iter()
            .flat_map(|s| s.frames.iter().filter_map(|r| r.psnr_db))
            .fold(60.0f64, f64::min);
        let hi = result
            .strategies
            .iter()
            .flat_map(|s| s.frames.iter().filter_map(|r| r.psnr_db))
            .fold(lo + 1.0, f64::max)
            .min(PSNR_CAP);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("PSNR against full resolution: {title}"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0..result.frames, (lo - 2.0).max(0.0)..hi + 2.0)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("frame (fast fly, slow walk, cut)")
            .y_desc("PSNR, dB (100: identical)")
            .draw()
            .map_err(plot_err)?;
        for s in result
            .strategies
            .iter()
            .filter(|s| s.strategy != Strategy::Full)
        {
            let c = color(s.strategy);
            chart
                .draw_series(LineSeries::new(
                    s.frames
                        .iter()
                        .enumerate()
                        .filter_map(|(i, r)| r.psnr_db.map(|p| (i, p.min(PSNR_CAP)))),
                    c.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(s.strategy.key())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    save(buf, W, H, &p)?;
    written.push(p);

    // quality against budget and against memory held, PSNR and FLIP
    let basis = match result.budget_basis {
        super::BudgetBasis::WorkingSet => result.working_set_bytes,
        super::BudgetBasis::Full => result.full_residency_bytes,
    }
    .max(1) as f64;
    let words = basis_words(result);
    let points = result.budget_points();
    let series = |x: &dyn Fn(&super::SweepPoint, &super::SweepResult) -> f64,
                  y: &dyn Fn(&super::SweepResult) -> f64| {
        Strategy::ALL[1..]
            .iter()
            .filter(|s| result.strategies.iter().any(|r| r.strategy == **s))
            .map(|&strategy| {
                let mut pts: Vec<(f64, f64, bool)> = points
                    .iter()
                    .filter_map(|p| {
                        let r = p.results.iter().find(|r| r.strategy == strategy)?;
                        Some((x(p, r), y(r), r.went_over()))
                    })
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                (strategy, pts)
            })
            .collect::<Vec<_>>()
    };
    let psnr = |r: &super::SweepResult| r.psnr_db_mean.min(PSNR_CAP);
    // FLIP spans orders of magnitude: log10, floored at 1e-6
    let flip = |r: &super::SweepResult| r.flip_mean.max(1e-6).log10();
    let budget_x = |p: &super::SweepPoint, _: &super::SweepResult| p.fraction;
    let held_x =
        |_: &super::SweepPoint, r: &super::SweepResult| r.peak_resident_bytes as f64 / basis;
    let charts = [
        (
            "quality_vs_budget.png",
            "PSNR against budget (hollow: over budget)",
            format!("budget, fraction of the {words}"),
            "PSNR of the mean error, dB (100: identical)",
            series(&budget_x, &psnr),
        ),
        (
            "flip_vs_budget.png",
            "FLIP against budget (lower is better; hollow: over budget)",
            format!("budget, fraction of the {words}"),
            "log10 of the mean FLIP",
            series(&budget_x, &flip),
        ),
        (
            "quality_vs_memory.png",
            "PSNR against memory held (hollow: over its budget)",
            format!("peak memory held, fraction of the {words}"),
            "PSNR of the mean error, dB (100: identical)",
            series(&held_x, &psnr),
        ),
    ];
    if !result.sweep.is_empty() {
        for (file, caption, x_desc, y_desc, lines) in charts {
            let p = dir.join(file);
            sweep_chart(&p, &format!("{caption}: {title}"), &x_desc, y_desc, &lines)?;
            written.push(p);
        }
    }

    // one frame of the walk for every strategy, three to a row
    let pictures: Vec<_> = result
        .strategies
        .iter()
        .filter_map(|s| s.picture.as_ref().map(|p| (s, p)))
        .collect();
    if !pictures.is_empty() {
        let reference = pictures
            .iter()
            .find(|(s, _)| s.strategy == Strategy::Full)
            .map(|(_, p)| *p);
        let (w0, h0) = pictures[0].1.dimensions();
        // at most 640 pixels across each
        let (pw, ph) = if w0 > 640 {
            (640, (h0 * 640 / w0).max(1))
        } else {
            (w0, h0)
        };
        let caption = 46;
        let cols = pictures.len().min(3) as u32;
        let rows = (pictures.len() as u32).div_ceil(cols);
        let (w, h) = (pw * cols, (ph + caption) * rows);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        let cell = |i: usize| ((i as u32 % cols) * pw, (i as u32 / cols) * (ph + caption));
        for (i, (_, img)) in pictures.iter().enumerate() {
            let small = if (pw, ph) == (w0, h0) {
                (*img).clone()
            } else {
                image::imageops::resize(*img, pw, ph, image::imageops::FilterType::Triangle)
            };
            let (cx, cy) = cell(i);
            for (x, y, px) in small.enumerate_pixels() {
                let o = (((cy + caption + y) * w + cx + x) * 3) as usize;
                buf[o..o + 3].copy_from_slice(&px.0[..3]);
            }
        }
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            for (i, (s, img)) in pictures.iter().enumerate() {
                let held = super::human(s.peak_resident_bytes);
                let (first, second) = match (s.strategy, reference) {
                    (Strategy::Full, _) | (_, None) => {
                        (s.strategy.key().to_string(), format!("peak {held}"))
                    }
                    (_, Some(r)) => (
                        format!("{} ({})", s.strategy.key(), s.setting),
                        format!(
                            "peak {held}; this frame {:.1} dB, FLIP {:.4}",
                            super::psnr_rgb(r, img),
                            super::flip_mean(r, img)
                        ),
                    ),
                };
                let (cx, cy) = cell(i);
                for (k, line) in [first, second].into_iter().enumerate() {
                    root.draw(&Text::new(
                        line,
                        (cx as i32 + 8, cy as i32 + 4 + 20 * k as i32),
                        ("sans-serif", 17).into_font().color(&BLACK),
                    ))
                    .map_err(plot_err)?;
                }
            }
            root.present().map_err(plot_err)?;
        }
        let p = dir.join("side_by_side.png");
        save(buf, w, h, &p)?;
        written.push(p);
    }
    Ok(written)
}
