//! Render-thread time of `Streamer::update` along the built-in scene's camera
//! path (60 frames per second of path), on the adapter `WGPU_BACKEND` picks,
//! at a quarter of full residency. Prints p50 / p99 / max, uploads and rebinds.
//!
//! `cargo bench --bench update_path` (environment: `MIPSTREAM_FRAMES`,
//! `MIPSTREAM_VIEWPORT=WxH`).

use glam::UVec2;
use mipstream::scene::BuiltinScene;
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::Streamer;
use std::time::{Duration, Instant};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let frames: usize = std::env::var("MIPSTREAM_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1200);
    let viewport = std::env::var("MIPSTREAM_VIEWPORT")
        .ok()
        .and_then(|v| {
            let (w, h) = v.split_once('x')?;
            Some(UVec2::new(w.parse().ok()?, h.parse().ok()?))
        })
        .unwrap_or(UVec2::new(1920, 1080));
    let g = mipstream::gpu::headless(None).unwrap_or_else(|e| panic!("{e}"));
    let scene = BuiltinScene::load_or_cook(&BuiltinScene::default_cache_dir(), |d, t| {
        eprintln!("cooking {d}/{t}")
    })
    .expect("built-in scene");
    let mut s = Streamer::with_options(&g.device, &g.queue, StreamerOptions::default());
    let ids = scene.register(&mut s).expect("register");
    let full = BuiltinScene::full_residency_bytes(&s, &ids);
    s.set_budget(Budget::Bytes(full / 4));
    let mut times = Vec::with_capacity(frames);
    let (mut uploads, mut rebinds, mut max_upload) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    for f in 0..frames {
        let t = scene.path.duration * f as f32 / (frames - 1).max(1) as f32;
        let view = scene.path.view(t, viewport);
        let stats = s.update(&[view]);
        times.push(stats.update_time.as_secs_f64() * 1e3);
        uploads += stats.upload_bytes;
        max_upload = max_upload.max(stats.upload_bytes);
        rebinds += stats.rebinds as u64;
        // pace roughly like frames so loads can arrive between updates
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall = start.elapsed();
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "update() along the path on {} ({}x{}, {frames} frames, budget {} of {} full):",
        g.describe(),
        viewport.x,
        viewport.y,
        full / 4,
        full
    );
    println!(
        "  p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; uploaded {} bytes (largest frame {}), {:.2} rebinds per frame; {:.1?} wall",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().copied().unwrap_or(0.0),
        uploads,
        max_upload,
        rebinds as f64 / frames as f64,
        wall
    );
}
