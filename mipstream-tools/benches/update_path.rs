//! Render-thread time of `Streamer::update` along the built-in scene's camera
//! path (1200 updates per pass of the 20 s path, paced 2 ms apart so loads
//! arrive between updates as they would between frames), on the adapter
//! `WGPU_BACKEND` picks, at a quarter of full residency.
//!
//! Criterion measures the mean; afterwards the benchmark prints the
//! percentiles over every update it ran (p50 / p99 / max), the bytes uploaded
//! and the rebinds per update.
//!
//! `cargo bench --bench update_path` (environment: `MIPSTREAM_VIEWPORT=WxH`,
//! default 1920x1080).

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use glam::UVec2;
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::Streamer;
use mipstream_tools::scene::BuiltinScene;
use std::time::{Duration, Instant};

const FRAMES_PER_PASS: usize = 1200;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn bench(c: &mut Criterion) {
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

    let path = scene.path;
    let (mut frame, mut times) = (0usize, Vec::new());
    let (mut uploads, mut rebinds, mut max_upload) = (0u64, 0u64, 0u64);
    let mut group = c.benchmark_group("streamer");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(50))
        // criterion sizes samples by wall time, which the pacing dominates:
        // 5 s is about 2,500 updates, two passes along the path
        .measurement_time(Duration::from_secs(5));
    group.bench_function("update() along the built-in path", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let i = frame % FRAMES_PER_PASS;
                let t = path.duration * i as f32 / (FRAMES_PER_PASS - 1) as f32;
                let view = path.view(t, viewport);
                let start = Instant::now();
                let stats = s.update(&[view]);
                let took = start.elapsed();
                total += took;
                times.push(took.as_secs_f64() * 1e3);
                uploads += stats.upload_bytes;
                max_upload = max_upload.max(stats.upload_bytes);
                rebinds += stats.rebinds as u64;
                frame += 1;
                // pace like frames so loads can arrive between updates
                std::thread::sleep(Duration::from_millis(2));
            }
            total
        })
    });
    group.finish();

    let n = times.len().max(1);
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "update() along the path on {} ({}x{}, {} updates = {:.1} passes, budget {} of {} bytes):",
        g.describe(),
        viewport.x,
        viewport.y,
        times.len(),
        times.len() as f64 / FRAMES_PER_PASS as f64,
        full / 4,
        full
    );
    if !times.is_empty() {
        println!(
            "  p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {:.0} bytes uploaded per update (largest {}), {:.2} rebinds per update",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times.last().copied().unwrap_or(0.0),
            uploads as f64 / n as f64,
            max_upload,
            rebinds as f64 / n as f64,
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
