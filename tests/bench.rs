//! The streaming benchmark in a tiny configuration (CI's smoke test of
//! `mipstream bench`; the full run is a docs/results.md command): every strategy runs,
//! the JSON has the documented keys, mipstream stays within its budget, and
//! the charts are written.

mod common;

use mipstream_tools::bench::{self, BenchOptions, BudgetBasis, Strategy};
use std::time::Duration;

#[test]
fn a_tiny_benchmark_compares_every_strategy() {
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        // the smaller point binds but stays above the always-resident
        // tails (at 160x90 they are a fifth of the working set, counted
        // at their allocation size), below which no budget can hold
        sweep: vec![0.3, 0.6],
        sweep_frames: Some(8),
        cache_dir: common::repo().join("target/mipstream-cache"),
        frame_pause: Duration::from_millis(1),
        ..Default::default()
    };
    let mut last = None;
    let r = bench::run(&opts, |p| last = Some((p.done, p.total))).unwrap();
    let (done, total) = last.unwrap();
    assert_eq!(done, total, "progress reaches the end");
    assert_eq!(total, 24 * 6 + 2 * 8 * 5);
    assert!(!r.lockstep);

    let get = |s: Strategy| r.strategies.iter().find(|x| x.strategy == s).unwrap();
    let keys: Vec<&str> = r.strategies.iter().map(|s| s.strategy.key()).collect();
    assert_eq!(
        keys,
        [
            "full",
            "uniform_bias",
            "distance_only",
            "unity_budget",
            "unreal_pool",
            "mipstream"
        ]
    );
    // the budget is half the working set, which at 160x90 is far below full
    // residency: the views need little, and the budget binds below that
    assert_eq!(r.budget_basis, BudgetBasis::WorkingSet);
    assert_eq!(r.budget_bytes, r.working_set_bytes / 2);
    assert!(
        r.working_set_bytes > 0 && r.working_set_bytes < r.full_residency_bytes / 2,
        "working set {} of {} full",
        r.working_set_bytes,
        r.full_residency_bytes
    );
    let full = get(Strategy::Full);
    assert!(full.peak_resident_bytes >= r.full_residency_bytes);
    // the certificates' time apart from the streamer's, for every rule:
    // only the budget fit certifies
    for s in &r.strategies {
        let certifies = s.strategy == Strategy::Mipstream;
        assert_eq!(s.certificate_ms[1] > 0.0, certifies, "{:?}", s.strategy);
        assert!(s.streamer_update_ms[0] <= s.update_ms_p50 + 1e-9);
        let per_frame = s.frames.iter().all(|f| f.certificate_ms <= f.update_ms);
        assert!(
            per_frame,
            "{:?}: certificates within the update",
            s.strategy
        );
    }
    // every strategy with a budget is kept to it, whatever its rule (only
    // Unity's floors may hold more, and it is counted, never hidden)
    for s in [
        Strategy::UniformBias,
        Strategy::UnrealPool,
        Strategy::Mipstream,
    ] {
        let s = get(s);
        assert_eq!(s.frames_over_budget, 0, "{}", s.strategy.key());
        // and by wgpu's own count right after every `update()` (GL counts
        // no memory)
        let gl = r.backend == "gl";
        assert_eq!(
            s.frames_over_budget_by_wgpu,
            (!gl).then_some(0),
            "{}: wgpu counted {:?}",
            s.strategy.key(),
            s.frames.iter().map(|f| f.gpu_bytes).collect::<Vec<_>>()
        );
        assert!(
            s.peak_resident_bytes <= r.budget_bytes,
            "{}",
            s.strategy.key()
        );
    }
    let unity = get(Strategy::UnityBudget);
    let over = unity
        .frames
        .iter()
        .filter(|f| f.resident > r.budget_bytes)
        .count();
    assert_eq!(
        unity.frames_over_budget, over,
        "over-budget frames are counted"
    );
    // compared frames: every 4th and the cut; each figure is the aggregate of
    // the per-frame ones
    let compared = r.compared_frames();
    assert!(compared.len() >= 6 && compared.iter().all(|f| f % 4 == 0 || *f == r.cut_frame));
    for s in r.strategies.iter().filter(|s| s.strategy != Strategy::Full) {
        let key = s.strategy.key();
        let frames: Vec<_> = compared.iter().map(|&f| s.frames[f]).collect();
        assert!(
            frames
                .iter()
                .all(|f| f.psnr_db.is_some() && f.flip.is_some()),
            "{key}"
        );
        let mse = frames.iter().map(|f| f.mse.unwrap()).sum::<f64>() / frames.len() as f64;
        assert!(
            (s.psnr_db_mean - bench::psnr_from_mse(mse)).abs() < 1e-9,
            "{key}"
        );
        let worst = frames
            .iter()
            .map(|f| f.psnr_db.unwrap())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(s.psnr_db_min, worst, "{key}");
        let flip = frames.iter().map(|f| f.flip.unwrap() as f64).sum::<f64>() / frames.len() as f64;
        assert!((s.flip_mean - flip).abs() < 1e-9, "{key}");
        // a frame is identical to full exactly when its FLIP is 0
        for f in &frames {
            assert_eq!(
                f.psnr_db.unwrap() >= 100.0,
                f.flip.unwrap() == 0.0,
                "{key}: {f:?}"
            );
        }
        assert!(s.max_upload_bytes_in_a_frame <= opts.upload_cap, "{key}");
    }
    assert!(
        get(Strategy::UniformBias).psnr_db_mean < 100.0,
        "a global bias of 1+ mips loses detail"
    );
    // wgpu's own figures where the backend has them (Vulkan), none on GL
    let vulkan = r.backend == "vulkan";
    for s in &r.strategies {
        assert_eq!(
            s.gpu_texture_memory_peak_bytes.is_some(),
            vulkan,
            "{}",
            s.strategy.key()
        );
        assert_eq!(
            s.allocator_allocated_peak_bytes.is_some(),
            vulkan,
            "{}",
            s.strategy.key()
        );
    }
    if vulkan {
        // the counter sees what the ledger holds (never less than the
        // textures the peak frame held, less than twice the peak plus pool)
        let ms = get(Strategy::Mipstream);
        let counted = ms.gpu_texture_memory_peak_bytes.unwrap();
        assert!(
            counted * 2 >= ms.peak_resident_bytes && counted <= 3 * full.peak_resident_bytes,
            "wgpu counted {counted}, the ledger {}",
            ms.peak_resident_bytes
        );
    }
    assert_eq!(r.sweep.len(), 2);
    for p in &r.sweep {
        assert_eq!(p.results.len(), 5);
        assert_eq!(
            p.budget_bytes,
            (r.working_set_bytes as f64 * p.fraction) as u64
        );
        let ms = p
            .results
            .iter()
            .find(|x| x.strategy == Strategy::Mipstream)
            .unwrap();
        assert_eq!(ms.frames_over_budget, 0);
    }
    // the charts and the printed table show the main run (at 0.5) among
    // the sweep's points when the sweep ran as many frames (here it did not)
    let fractions = |r: &bench::BenchResult| {
        r.budget_points()
            .iter()
            .map(|p| p.fraction)
            .collect::<Vec<_>>()
    };
    assert_eq!(fractions(&r), [0.3, 0.6], "8 sweep frames against 24");
    let table = r.table();
    assert!(table.contains("camera path: the built-in path"), "{table}");
    assert!(!table.contains("\n    0.50 "), "{table}");
    let same = bench::BenchResult {
        sweep_frames: r.frames,
        ..r.clone()
    };
    let merged = fractions(&same);
    assert_eq!(merged.len(), 3, "{merged:?}");
    assert!((merged[1] - 0.5).abs() < 1e-3, "{merged:?}");
    let points = same.budget_points();
    let order = |p: &bench::SweepPoint| p.results.iter().map(|x| x.strategy).collect::<Vec<_>>();
    assert_eq!(order(&points[1]), order(&points[0]), "columns line up");
    let main = points[1]
        .results
        .iter()
        .find(|x| x.strategy == Strategy::Mipstream)
        .unwrap();
    assert_eq!(main.psnr_db_mean, get(Strategy::Mipstream).psnr_db_mean);
    assert!(same.table().contains("\n    0.50 "), "{}", same.table());

    let json = r.to_json();
    for key in [
        "scene",
        "backend",
        "adapter",
        "frames",
        "width",
        "height",
        "budget_bytes",
        "budget_basis",
        "working_set_bytes",
        "full_residency_bytes",
        "compared_frames",
        "strategies",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["budget_basis"], "working-set");
    for s in keys {
        let o = &json["strategies"][s];
        for key in [
            "peak_resident_bytes",
            "gpu_texture_memory_peak_bytes",
            "allocator_allocated_peak_bytes",
            "frames_over_budget",
            "frames_over_budget_by_wgpu",
            "wgpu_peak_ratio",
            "psnr_db_mean",
            "psnr_db_min",
            "flip_mean",
            "max_upload_bytes_in_a_frame",
            "update_ms_p50",
            "update_ms_p99",
            "fit_gap_lp_mean",
            "fit_gap_lp_max",
            "fit_gap_knapsack_mean",
            "fit_gap_knapsack_max",
            "frames_to_converge_after_cut",
        ] {
            assert!(o.get(key).is_some(), "strategies.{s}.{key} missing");
        }
        // the certificate is the budget fit's; the fixed rules have none
        assert_eq!(
            o["fit_gap_lp_max"].is_null(),
            s != "mipstream",
            "{s}: {}",
            o["fit_gap_lp_max"]
        );
    }
    assert_eq!(json["error_model"], "measured", "the default");
    assert_eq!(json["lockstep"], false);
    assert!(json["sweep"][0]["mipstream"].get("flip_mean").is_some());
    assert_eq!(json["scene"], "default");
    assert_eq!(json["width"], 160);
    assert!(json["camera_path"].as_str().unwrap().contains("built-in"));

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
            "flip_vs_budget.png",
            "quality_vs_memory.png",
            "side_by_side.png"
        ]
    );
    let side = image::open(dir.join("side_by_side.png")).unwrap();
    assert_eq!(side.width(), 160 * 3, "three pictures to a row");
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

#[test]
fn lockstep_runs_repeat_exactly_and_both_error_models_certify_their_plans() {
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        cache_dir: common::repo().join("target/mipstream-cache"),
        strategies: vec![Strategy::Mipstream, Strategy::MipstreamGeometric],
        error_model: mipstream::plan::LossModel::Measured,
        lockstep: true,
        ..Default::default()
    };
    let a = bench::run(&opts, |_| {}).unwrap();
    let b = bench::run(&opts, |_| {}).unwrap();
    let keys: Vec<&str> = a.strategies.iter().map(|s| s.strategy.key()).collect();
    assert_eq!(keys, ["full", "mipstream", "mipstream_geometric"]);
    for (x, y) in a.strategies.iter().zip(&b.strategies) {
        let key = x.strategy.key();
        // (the bytes held include upload staging, which the GPU frees when
        // it gets to it: those may differ by a frame's upload)
        let per_frame = |s: &bench::StrategyResult| {
            s.frames
                .iter()
                .map(|f| {
                    (
                        f.uploaded,
                        f.psnr_db.map(f64::to_bits),
                        f.fit_gap.map(f64::to_bits),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(per_frame(x), per_frame(y), "{key}: lockstep runs differ");
    }
    for s in &a.strategies[1..] {
        let key = s.strategy.key();
        let (mean, max) = (s.fit_gap_lp_mean.unwrap(), s.fit_gap_lp_max.unwrap());
        assert!(
            (0.0..=1.0).contains(&max) && mean <= max,
            "{key}: {mean} {max}"
        );
        // the integer problem's bound, certified every frame beside the LP's
        let knapsack = s.fit_gap_knapsack_max.unwrap();
        assert!((0.0..=1.0).contains(&knapsack), "{key}: {knapsack}");
        assert_eq!(
            s.frames
                .iter()
                .filter(|f| f.fit_gap_knapsack.is_some())
                .count(),
            s.frames.iter().filter(|f| f.fit_gap.is_some()).count(),
            "{key}"
        );
        assert_eq!(s.frames_over_budget, 0, "{key}");
    }
    let json = a.to_json();
    assert_eq!(json["lockstep"], true);
    assert!(json["strategies"]["mipstream_geometric"]["setting"]
        .as_str()
        .unwrap()
        .contains("geometric"));
    assert_eq!(json["error_model"], "measured");
}

/// Drawing and comparing more frames changes nothing a lockstep run plans:
/// a run comparing every frame and one comparing every fourth upload the
/// same bytes every frame and score the frames both compare the same
/// (their mean PSNRs differ only because they average other frames).
#[test]
fn comparing_more_frames_changes_no_lockstep_plan() {
    let run = |quality_every| {
        let opts = BenchOptions {
            frames: 24,
            quality_every,
            size: glam::UVec2::new(160, 90),
            cache_dir: common::repo().join("target/mipstream-cache"),
            strategies: vec![Strategy::Mipstream],
            error_model: mipstream::plan::LossModel::Measured,
            lockstep: true,
            ..Default::default()
        };
        let r = bench::run(&opts, |_| {}).unwrap();
        let s = r
            .strategies
            .iter()
            .find(|s| s.strategy == Strategy::Mipstream);
        s.unwrap().frames.clone()
    };
    let (every, fourth) = (run(1), run(4));
    assert_eq!(every.len(), fourth.len());
    let mut shared = 0;
    for (f, (a, b)) in every.iter().zip(&fourth).enumerate() {
        assert_eq!(a.uploaded, b.uploaded, "frame {f}: uploads differ");
        assert!(a.psnr_db.is_some(), "frame {f} was not compared");
        if let Some(p) = b.psnr_db {
            assert_eq!(a.psnr_db.map(f64::to_bits), Some(p.to_bits()), "frame {f}");
            shared += 1;
        }
    }
    assert!(shared >= 6, "{shared} frames compared by both");
}

#[test]
fn the_trace_puts_each_texture_s_share_of_the_error_where_the_picture_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let (w, h) = (160u32, 90u32);
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(w, h),
        cache_dir: common::repo().join("target/mipstream-cache"),
        strategies: vec![Strategy::Mipstream],
        budget_fraction: 0.25,
        lockstep: true,
        trace: Some(trace.clone()),
        ..Default::default()
    };
    bench::run(&opts, |_| {}).unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    let mut with_error = 0;
    for line in &lines {
        let rows = line["textures"].as_array().unwrap();
        let (mut pixels, mut sse) = (0u64, 0.0f64);
        for row in rows {
            let row = row.as_array().unwrap();
            assert_eq!(row.len(), 11, "{row:?}");
            // the planned tier, compact or not, beside the resident one
            assert!(row[10].is_boolean() && row[4].is_boolean(), "{row:?}");
            let shown = row[7].as_u64().unwrap();
            let lods: u64 = row[9]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .sum();
            assert_eq!(lods, shown, "every pixel of a texture has its lod: {row:?}");
            pixels += shown;
            sse += row[8].as_f64().unwrap();
        }
        // the boxes cover some of the picture, the sky the rest
        assert!(pixels > 0 && pixels < (w * h) as u64, "{pixels}");
        // the sky is the same in both pictures: the textures' shares add
        // up to the frame's error
        let psnr = line["psnr"].as_f64().unwrap();
        let mse = sse / (w * h) as f64;
        if psnr < 100.0 {
            with_error += 1;
            let frame_mse = 255.0f64.powi(2) / 10f64.powf(psnr / 10.0);
            assert!(
                (mse - frame_mse).abs() <= 1e-6 * frame_mse.max(1.0),
                "frame {}: {mse} against {frame_mse}",
                line["frame"]
            );
        } else {
            assert_eq!(sse, 0.0);
        }
    }
    assert!(with_error > 0, "a quarter of the working set binds");
}

/// `mipstream bench-update` in a tiny configuration: one run per cap and
/// plan mode with its keys, the plan's share and the rest adding up to the
/// whole, the planner thread's time only where it planned, the budget a
/// quarter of full residency, bad counts refused.
#[test]
fn a_tiny_update_benchmark_splits_the_plan_from_the_rest() {
    use bench::update::{bench_update, UpdateBenchOptions};
    let opts = UpdateBenchOptions {
        objects: 300,
        textures: 40,
        frames: 12,
        warmup: 5,
        upload_caps_mib: vec![2, 8],
        plan_modes: vec![false, true],
        staging_modes: vec![false, true],
        ready_loads: true,
        copies_per_frame: 0,
        backends: None,
        cache_dir: common::repo().join("target/mipstream-cache"),
    };
    let mut updates = 0;
    let r = bench_update(&opts, |_, done, _| updates += (done > 0) as usize).unwrap();
    assert_eq!(updates, 8 * 12, "progress after every timed update");
    assert_eq!(
        (r.objects, r.textures, r.frames, r.warmup),
        (300, 40, 12, 5)
    );
    assert_eq!(
        r.runs
            .iter()
            .map(|r| (
                r.plan_in_background,
                r.loader_staging_bytes > 0,
                r.upload_cap_mib
            ))
            .collect::<Vec<_>>(),
        [
            (false, false, 2),
            (false, false, 8),
            (false, true, 2),
            (false, true, 8),
            (true, false, 2),
            (true, false, 8),
            (true, true, 2),
            (true, true, 8)
        ]
    );
    for run in &r.runs {
        assert!(run.ready_loads);
        // the reserve is twice the cap, at most a quarter of the budget
        if run.loader_staging_bytes > 0 {
            assert!(run.loader_staging_bytes <= 2 * (run.upload_cap_mib << 20));
            assert!(run.loader_staging_bytes <= run.budget_bytes / 4);
        }
        assert!(
            run.loader_staged_bytes_mean <= run.upload_bytes_mean,
            "{run:?}"
        );
        if run.loader_staging_bytes == 0 {
            assert_eq!(run.loader_staged_bytes_mean, 0.0, "{run:?}");
        }
        let [p50, p99, max] = run.update_ms;
        assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{run:?}");
        // the warm-up's updates ran, and were timed apart
        let [w50, w99, wmax] = run.warmup_update_ms;
        assert!(0.0 < w50 && w50 <= w99 && w99 <= wmax, "{run:?}");
        // each update's plan and rest add up to it, so neither passes it
        assert!(run.plan_ms[2] <= max && run.apply_ms[2] <= max, "{run:?}");
        assert!(run.plan_ms[0] > 0.0 && run.budget_bytes > 0);
        assert!(run.upload_bytes_max as f64 >= run.upload_bytes_mean);
        assert!(run.upload_bytes_max <= run.upload_cap_mib << 20);
        assert!(f64::from(run.copies_max) >= run.copies_mean, "{run:?}");
        // the planner thread planned every frame in the background, never inline
        let worker = run.plan_worker_ms;
        assert_eq!(worker[0] > 0.0, run.plan_in_background, "{run:?}");
        assert_eq!(worker[2] > 0.0, run.plan_in_background, "{run:?}");
        // a plan made inside update is this frame's; one from the thread
        // at least the last frame's
        let age = run.plan_age;
        assert_eq!(age[0] >= 1.0, run.plan_in_background, "{run:?}");
        assert_eq!(age[2] == 0.0, !run.plan_in_background, "{run:?}");
    }
    let json = r.to_json();
    for key in [
        "objects", "textures", "frames", "warmup", "adapter", "backend", "runs",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    // 40 textures: the default streamer plans inside update
    assert!(!r.default_plan_in_background);
    assert_eq!(json["default_plan_in_background"], false);
    let run = &json["runs"][0];
    for key in [
        "upload_cap_mib",
        "plan_in_background",
        "loader_staging_bytes",
        "ready_loads",
        "loader_staged_bytes_mean",
        "plan_worker_ms",
        "plan_age",
        "update_ms",
        "warmup_update_ms",
        "warmup_upload_bytes_mean",
        "plan_ms",
        "apply_ms",
        "upload_bytes_mean",
        "copies_per_frame",
        "copies_mean",
        "copies_max",
    ] {
        assert!(run.get(key).is_some(), "{key}");
    }
    assert!(run["update_ms"]["p99"].as_f64().is_some());
    // without a warm-up its spread is zeros
    let cold = bench_update(
        &UpdateBenchOptions {
            warmup: 0,
            upload_caps_mib: vec![2],
            plan_modes: vec![false],
            staging_modes: vec![false],
            ..opts.clone()
        },
        |_, _, _| {},
    )
    .unwrap();
    assert_eq!(cold.runs[0].warmup_update_ms, [0.0; 3]);
    assert_eq!(cold.runs[0].warmup_upload_bytes_mean, 0.0);
    let none = UpdateBenchOptions {
        textures: 0,
        ..opts
    };
    let err = bench_update(&none, |_, _, _| {}).unwrap_err();
    assert!(err.to_string().contains("--textures"), "{err}");
}

/// `mipstream bench-uploads` in a tiny configuration: a run per staging
/// mode, the loader-staged bytes only where the loaders stage, the keys.
#[test]
fn a_tiny_upload_benchmark_stages_on_the_loaders_only_when_asked() {
    use bench::uploads::{bench_uploads, UploadBenchOptions};
    let textures = common::files_with(&common::shared_data().join("sponza-textures"), &[".ktx2"]);
    let opts = UploadBenchOptions {
        frames: 8,
        jump_every: 4,
        groups: 2,
        warmup: 4,
        upload_caps_mib: vec![2],
        staging_modes: vec![false, true],
        copies_per_frame: 0,
        backends: None,
        textures,
    };
    let mut updates = 0;
    let r = bench_uploads(&opts, |_, _| updates += 1).unwrap();
    assert_eq!(updates, 2 * (8 + 4), "progress after every update");
    assert_eq!(r.runs.len(), 2);
    let (render, loaders) = (&r.runs[0], &r.runs[1]);
    assert_eq!(render.loader_staging_bytes, 0);
    assert_eq!(render.loader_staged_bytes_mean, 0.0);
    assert_eq!(render.restaged_mean, 0.0, "no reserve, nothing sent back");
    assert_eq!(loaders.loader_staging_bytes, 4 << 20, "twice the cap");
    assert_eq!(
        render.budget_bytes, loaders.budget_bytes,
        "the reserve comes out of the same budget"
    );
    for run in &r.runs {
        assert!(run.upload_bytes_mean > 0.0, "every jump loads: {run:?}");
        assert!(
            run.loader_staged_bytes_mean <= run.upload_bytes_mean,
            "{run:?}"
        );
        for [p50, p99, max] in [run.update_ms, run.warmup_update_ms, run.apply_ms] {
            assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{run:?}");
        }
        assert!(run.apply_ms[2] <= run.update_ms[2], "{run:?}");
        assert!(run.at_cap_updates <= 8);
        assert!(run.grown_max > 0, "every jump grows textures: {run:?}");
        assert!(run.grown_mean <= f64::from(run.grown_max), "{run:?}");
        // every texture grown or shrunk writes at least its tail's levels
        assert!(run.copies_max > run.grown_max, "{run:?}");
        assert!(run.copies_mean <= f64::from(run.copies_max), "{run:?}");
        // 8 timed updates: the slowest 1% is the slowest one
        let slowest = &run.slowest;
        assert_eq!(slowest.updates, 1, "{run:?}");
        assert_eq!(slowest.update_ms, run.update_ms[2], "{run:?}");
        assert!(slowest.grown <= f64::from(run.grown_max), "{run:?}");
        assert!(slowest.copies <= f64::from(run.copies_max), "{run:?}");
        assert!(
            slowest.upload_bytes <= run.upload_bytes_max as f64,
            "{run:?}"
        );
        assert!(
            slowest.loader_staged_bytes <= slowest.upload_bytes,
            "{run:?}"
        );
    }
    // the Sponza textures are BC7 on both backends; on GL they keep CPU
    // copies and are never loader-staged
    if r.backend == "Gl" {
        assert_eq!(loaders.loader_staged_bytes_mean, 0.0, "{loaders:?}");
    } else {
        assert!(
            loaders.loader_staged_bytes_mean > 0.0,
            "the loaders staged nothing: {loaders:?}"
        );
    }
    let json = r.to_json();
    for key in [
        "upload_cap_mib",
        "loader_staging_bytes",
        "update_ms",
        "warmup_update_ms",
        "apply_ms",
        "grown_mean",
        "grown_max",
        "copies_per_frame",
        "copies_mean",
        "copies_max",
        "behind_mean",
        "at_cap_updates",
        "at_cap_update_ms",
        "upload_bytes_mean",
        "loader_staged_bytes_mean",
        "restaged_mean",
        "slowest",
    ] {
        assert!(json["runs"][1].get(key).is_some(), "{key}");
    }
    assert_eq!(json["warmup"], 4);
    let none = UploadBenchOptions {
        frames: 0,
        ..opts.clone()
    };
    assert!(bench_uploads(&none, |_, _| {}).is_err());
    let nowhere = UploadBenchOptions { groups: 0, ..opts };
    let err = bench_uploads(&nowhere, |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("--groups"), "{err}");
}

/// `--min-residency-frames` reaches the budget fit's planner, is named in
/// its setting and in the JSON, and leaves the engine rules alone.
#[test]
fn the_minimum_residency_is_an_option_of_the_budget_fit() {
    let opts = BenchOptions {
        frames: 8,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        budget_fraction: 0.3,
        strategies: vec![Strategy::Full, Strategy::UnrealPool, Strategy::Mipstream],
        lockstep: true,
        min_residency_frames: Some(0),
        cache_dir: common::repo().join("target/mipstream-cache"),
        frame_pause: Duration::from_millis(1),
        ..Default::default()
    };
    let r = bench::run(&opts, |_| {}).unwrap();
    assert_eq!(r.min_residency_frames, 0);
    let setting = |s: Strategy| {
        r.strategies
            .iter()
            .find(|x| x.strategy == s)
            .unwrap()
            .setting
            .clone()
    };
    assert!(
        setting(Strategy::Mipstream).ends_with("min residency 0"),
        "{}",
        setting(Strategy::Mipstream)
    );
    assert!(!setting(Strategy::UnrealPool).contains("residency"));
    assert_eq!(r.to_json()["min_residency_frames"], 0);
    // the default is the planner's
    assert_eq!(
        BenchOptions::default().min_residency_frames(),
        mipstream::plan::PlannerOptions::default().min_residency_frames
    );
}
