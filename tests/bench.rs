//! The streaming benchmark in a tiny configuration (CI's smoke test of
//! `mipstream bench`; the full run is a README command): every strategy runs,
//! the JSON has the documented keys, mipstream stays within its budget, and
//! the charts are written.

mod common;

use mipstream::bench::{self, BenchOptions, Strategy};
use std::time::Duration;

#[test]
fn a_tiny_benchmark_compares_every_strategy() {
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        sweep: vec![0.2, 0.6],
        sweep_frames: Some(8),
        cache_dir: common::repo().join("target/mipstream-cache"),
        frame_pause: Duration::from_millis(1),
        ..Default::default()
    };
    let mut last = None;
    let r = bench::run(&opts, |p| last = Some((p.done, p.total))).unwrap();
    let (done, total) = last.unwrap();
    assert_eq!(done, total, "progress reaches the end");
    assert_eq!(total, 24 * 4 + 2 * 8 * 3);

    let get = |s: Strategy| r.strategies.iter().find(|x| x.strategy == s).unwrap();
    let (full, uniform, distance, ms) = (
        get(Strategy::Full),
        get(Strategy::UniformBias),
        get(Strategy::DistanceOnly),
        get(Strategy::Mipstream),
    );
    assert_eq!(r.budget_bytes, r.full_residency_bytes / 4);
    assert!(full.peak_resident_bytes >= r.full_residency_bytes);
    assert_eq!(
        ms.frames_over_budget, 0,
        "mipstream never exceeds its budget"
    );
    assert_eq!(uniform.frames_over_budget, 0, "the bias is chosen to fit");
    assert!(ms.peak_resident_bytes <= r.budget_bytes);
    // compared frames have a quality figure, and a degraded picture is worse than full
    for s in [uniform, distance, ms] {
        assert_eq!(s.frames.iter().filter(|f| f.psnr_db.is_some()).count(), 7);
        assert!(s.psnr_db_min <= s.psnr_db_mean && s.psnr_db_mean <= 100.0);
        assert!((0.0..1.0).contains(&s.flip_mean));
    }
    assert!(
        uniform.psnr_db_mean < 100.0,
        "a global bias of 1+ mips loses detail"
    );
    assert!(ms.max_upload_bytes_in_a_frame <= opts.upload_cap);
    assert_eq!(r.sweep.len(), 2);

    let json = r.to_json();
    for key in [
        "scene",
        "backend",
        "adapter",
        "frames",
        "width",
        "height",
        "budget_bytes",
        "full_residency_bytes",
        "strategies",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    for s in ["full", "uniform_bias", "distance_only", "mipstream"] {
        let o = &json["strategies"][s];
        for key in [
            "peak_resident_bytes",
            "frames_over_budget",
            "psnr_db_mean",
            "psnr_db_min",
            "flip_mean",
            "max_upload_bytes_in_a_frame",
            "update_ms_p50",
            "update_ms_p99",
            "frames_to_converge_after_cut",
        ] {
            assert!(o.get(key).is_some(), "strategies.{s}.{key} missing");
        }
    }
    assert_eq!(json["scene"], "default");
    assert_eq!(json["width"], 160);

    let dir = common::output_dir().join("bench-smoke");
    let files = bench::write_plots(&r, &dir).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "resident.png",
            "psnr.png",
            "quality_vs_budget.png",
            "quality_vs_memory.png",
            "side_by_side.png"
        ]
    );
    let side = image::open(dir.join("side_by_side.png")).unwrap();
    assert_eq!(side.width(), 160 * 4);
}

#[test]
fn bad_options_are_refused() {
    let err = bench::run(
        &BenchOptions {
            frames: 1,
            ..Default::default()
        },
        |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("--frames"), "{err}");
}
