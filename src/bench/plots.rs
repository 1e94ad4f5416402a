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
        Strategy::Mipstream => RGBColor(20, 160, 60),
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
            .min(70.0);
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
            .y_desc("PSNR, dB (capped at 70)")
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
                        .filter_map(|(i, r)| r.psnr_db.map(|p| (i, p.min(70.0)))),
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

    // quality against budget
    if !result.sweep.is_empty() {
        let p = dir.join("quality_vs_budget.png");
        let mut buf = vec![0u8; (W * H * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let all = || {
                result
                    .sweep
                    .iter()
                    .flat_map(|p| p.results.iter().map(|r| r.1.min(70.0)))
            };
            let lo = all().fold(60.0f64, f64::min);
            let hi = all().fold(lo + 1.0, f64::max);
            let xmax = result.sweep.iter().map(|p| p.fraction).fold(1.0, f64::max);
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("PSNR against budget (hollow: over budget): {title}"),
                    ("sans-serif", 18),
                )
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..xmax * 1.05, (lo - 2.0).max(0.0)..hi + 2.0)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("budget, fraction of full residency")
                .y_desc("PSNR of the mean error, dB (capped at 70)")
                .draw()
                .map_err(plot_err)?;
            for (k, strategy) in Strategy::ALL[1..].iter().enumerate() {
                let c = color(*strategy);
                let points: Vec<(f64, f64)> = result
                    .sweep
                    .iter()
                    .filter_map(|p| p.results.get(k).map(|r| (p.fraction, r.1.min(70.0))))
                    .collect();
                chart
                    .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                    .map_err(plot_err)?
                    .label(strategy.key())
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                // filled: within the budget; hollow: went over it
                let over: Vec<bool> = result
                    .sweep
                    .iter()
                    .filter_map(|p| p.results.get(k).map(|r| r.3 > 0))
                    .collect();
                chart
                    .draw_series(points.iter().zip(&over).map(|(&pt, &o)| {
                        Circle::new(pt, 5, if o { c.stroke_width(2) } else { c.filled() })
                    }))
                    .map_err(plot_err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(plot_err)?;
            root.present().map_err(plot_err)?;
        }
        save(buf, W, H, &p)?;
        written.push(p);
    }

    // quality against the memory each run actually held: a strategy that
    // went over its budget sits where its memory puts it
    if !result.sweep.is_empty() && result.full_residency_bytes > 0 {
        let p = dir.join("quality_vs_memory.png");
        let mut buf = vec![0u8; (W * H * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let full = result.full_residency_bytes as f64;
            let series = |k: usize| {
                let mut pts: Vec<(f64, f64, bool)> = result
                    .sweep
                    .iter()
                    .filter_map(|p| {
                        p.results
                            .get(k)
                            .map(|r| (r.2 as f64 / full, r.1.min(70.0), r.3 > 0))
                    })
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                pts
            };
            let all: Vec<(f64, f64, bool)> =
                (0..Strategy::ALL.len() - 1).flat_map(series).collect();
            let lo = all.iter().map(|p| p.1).fold(60.0f64, f64::min);
            let hi = all.iter().map(|p| p.1).fold(lo + 1.0, f64::max);
            let xmax = all.iter().map(|p| p.0).fold(1.0, f64::max);
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("PSNR against memory held (hollow: over its budget): {title}"),
                    ("sans-serif", 18),
                )
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..xmax * 1.05, (lo - 2.0).max(0.0)..hi + 2.0)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("peak memory held, fraction of full residency")
                .y_desc("PSNR of the mean error, dB (capped at 70)")
                .draw()
                .map_err(plot_err)?;
            for (k, strategy) in Strategy::ALL[1..].iter().enumerate() {
                let c = color(*strategy);
                let pts = series(k);
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|p| (p.0, p.1)),
                        c.stroke_width(2),
                    ))
                    .map_err(plot_err)?
                    .label(strategy.key())
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(pts.iter().map(|&(x, y, o)| {
                        Circle::new((x, y), 5, if o { c.stroke_width(2) } else { c.filled() })
                    }))
                    .map_err(plot_err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(plot_err)?;
            root.present().map_err(plot_err)?;
        }
        save(buf, W, H, &p)?;
        written.push(p);
    }

    // one frame of the walk for every strategy, side by side
    let pictures: Vec<_> = result
        .strategies
        .iter()
        .filter_map(|s| s.picture.as_ref().map(|p| (s, p)))
        .collect();
    if !pictures.is_empty() {
        let (pw, ph) = pictures[0].1.dimensions();
        let caption = 28;
        let (w, h) = (pw * pictures.len() as u32, ph + caption);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        for (i, (_, img)) in pictures.iter().enumerate() {
            for (x, y, px) in img.enumerate_pixels() {
                let o = (((y + caption) * w + i as u32 * pw + x) * 3) as usize;
                buf[o..o + 3].copy_from_slice(&px.0[..3]);
            }
        }
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            for (i, (s, _)) in pictures.iter().enumerate() {
                let label = match s.strategy {
                    Strategy::Full => format!("full ({})", super::human(s.peak_resident_bytes)),
                    _ => format!(
                        "{} ({}, {})",
                        s.strategy.key(),
                        s.setting,
                        super::human(s.peak_resident_bytes)
                    ),
                };
                root.draw(&Text::new(
                    label,
                    (i as i32 * pw as i32 + 8, 5),
                    ("sans-serif", 18).into_font().color(&BLACK),
                ))
                .map_err(plot_err)?;
            }
            root.present().map_err(plot_err)?;
        }
        let p = dir.join("side_by_side.png");
        save(buf, w, h, &p)?;
        written.push(p);
    }
    Ok(written)
}
