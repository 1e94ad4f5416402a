//! The built-in scene streamed headless along its camera path under a memory
//! budget: what the demo viewer will show, as pictures and numbers.
//!
//! Cooks the scene's generated textures on first use (cached under
//! `target/mipstream-cache`), then drives the camera path (fast fly, slow walk,
//! hard cut) at 60 updates per second of path with the budget at a fraction of
//! full residency. Prints a line per second of path (bytes held against the
//! budget, uploads, rebinds, `update()` time) and the final residency report,
//! and writes `target/scene_path/path.png`: six moments of the path, rendered
//! (top) and in the mip heat-map debug view (bottom: green = resident at the
//! wanted mip; yellow, orange, red = one, two, three or more mips coarser;
//! blue = finer).
//!
//! Run: `cargo run --release --example scene_path [-- --budget 0.25 --size 640x360]`
//! (`WGPU_BACKEND=vulkan` or `gl` chooses the adapter).

use glam::UVec2;
use image::RgbaImage;
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::{gpu, Streamer};
use mipstream_tools::render::{DrawBox, SceneRenderer, ViewMode};
use mipstream_tools::scene::BuiltinScene;
use std::time::Instant;

const MOMENTS: usize = 6;

struct Args {
    fraction: f64,
    size: UVec2,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        fraction: 0.25,
        size: UVec2::new(640, 360),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let value = it.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--budget" => {
                args.fraction = value
                    .parse()
                    .ok()
                    .filter(|f: &f64| *f > 0.0)
                    .ok_or(format!(
                        "--budget {value}: expected a fraction of full residency such as 0.25"
                    ))?
            }
            "--size" => {
                let (w, h) = value
                    .split_once('x')
                    .ok_or(format!("--size {value}: expected WxH"))?;
                let parse = |s: &str| s.parse::<u32>().ok().filter(|v| (16..=4096).contains(v));
                args.size = UVec2::new(
                    parse(w).ok_or(format!("--size {value}: width 16 to 4096"))?,
                    parse(h).ok_or(format!("--size {value}: height 16 to 4096"))?,
                );
            }
            _ => return Err(format!("unknown argument {a} (use --budget F, --size WxH)")),
        }
    }
    Ok(args)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let g = gpu::headless(None)?;
    println!("adapter: {}", g.describe());
    let started = Instant::now();
    let scene = BuiltinScene::load_or_cook(&BuiltinScene::default_cache_dir(), |done, total| {
        eprint!("\rcooking the built-in scene's textures: {done}/{total}");
        if done == total {
            eprintln!();
        }
    })?;
    let mut streamer = Streamer::with_options(&g.device, &g.queue, StreamerOptions::default());
    let ids = scene.register(&mut streamer)?;
    let full = BuiltinScene::full_residency_bytes(&streamer, &ids);
    let budget = (full as f64 * args.fraction) as u64;
    streamer.set_budget(Budget::Bytes(budget));
    println!(
        "{} textures on {} boxes, full residency {:.1} MiB, budget {:.1} MiB ({:.0}%), ready in {:.1?}",
        ids.len(),
        scene.objects.len(),
        mib(full),
        mib(budget),
        args.fraction * 100.0,
        started.elapsed()
    );

    let boxes: Vec<DrawBox> = scene
        .objects
        .iter()
        .map(|o| DrawBox {
            center: o.center,
            size: o.size,
            tile: o.tile,
            texture: ids[o.texture],
            highlight: false,
        })
        .collect();
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let mut renderer = SceneRenderer::new(&g.device, format);
    let target = mipstream::gpu::readback::render_target(
        &g.device,
        "scene_path target",
        (args.size.x, args.size.y),
        format,
    );
    let target_view = target.create_view(&Default::default());

    let path = scene.path;
    let per_second = 60;
    let frames = (path.duration * per_second as f32) as usize;
    let moments: Vec<usize> = (0..MOMENTS)
        .map(|i| (i * (frames - 1)) / (MOMENTS - 1))
        .collect();
    let mut sheet = RgbaImage::new(args.size.x * MOMENTS as u32, args.size.y * 2);
    let (mut second_times, mut uploads, mut rebinds, mut peak) = (Vec::new(), 0u64, 0u64, 0u64);
    println!("   t  segment      held/budget   uploaded  rebinds  update p50/max (ms)");
    for f in 0..frames {
        let t = f as f32 / per_second as f32;
        let view = path.view(t, args.size);
        let stats = streamer.update(&[view]);
        streamer.check_invariants()?;
        let held = streamer.report().totals.accounted();
        peak = peak.max(held);
        second_times.push(stats.update_time.as_secs_f64() * 1e3);
        uploads += stats.upload_bytes;
        rebinds += stats.rebinds as u64;
        let changed = streamer.take_changed();
        renderer.sync(&g.device, &streamer, &changed);
        if let Some(i) = moments.iter().position(|&m| m == f) {
            for (row, mode) in [ViewMode::Normal, ViewMode::MipHeatmap]
                .into_iter()
                .enumerate()
            {
                renderer.render(
                    &g.device,
                    &g.queue,
                    &target_view,
                    args.size,
                    &view,
                    &boxes,
                    &streamer,
                    mode,
                );
                let px = gpu::read_rgba8(&g.device, &g.queue, &target, 0, 0)?;
                let img =
                    RgbaImage::from_raw(args.size.x, args.size.y, px).ok_or("readback size")?;
                image::imageops::replace(
                    &mut sheet,
                    &img,
                    (i as u32 * args.size.x) as i64,
                    (row as u32 * args.size.y) as i64,
                );
            }
        }
        if (f + 1) % per_second == 0 {
            second_times.sort_by(f64::total_cmp);
            println!(
                "{:>4}s {:<12} {:>5.1}/{:<5.1} MiB {:>6.1} MiB {:>8} {:>9.3} / {:.3}",
                (f + 1) / per_second,
                format!("{:?}", path.at(t).segment),
                mib(held),
                mib(budget),
                mib(uploads),
                rebinds,
                second_times[second_times.len() / 2],
                second_times.last().copied().unwrap_or(0.0)
            );
            (uploads, rebinds) = (0, 0);
            second_times.clear();
        }
        // pace like a renderer at 60 fps would, so loads arrive between frames
        std::thread::sleep(std::time::Duration::from_millis(4));
    }
    println!(
        "peak held {:.1} MiB of the {:.1} MiB budget\n",
        mib(peak),
        mib(budget)
    );
    println!("{}", streamer.report());
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/scene_path");
    std::fs::create_dir_all(&out)?;
    let file = out.join("path.png");
    sheet.save(&file)?;
    println!(
        "wrote {} ({} moments: rendered above, mip heat-map below)",
        file.display(),
        MOMENTS
    );
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}
