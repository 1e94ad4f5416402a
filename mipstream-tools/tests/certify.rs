//! Claims about the fit that anyone can re-run: `mipstream bench
//! --dump-plans` writes each compared frame's problem, `mipstream certify`
//! solves each exactly (LP value and integer optimum), and what the
//! streamer reported agrees with it.

#[path = "../../tests/common/mod.rs"]
mod common;

use mipstream::plan::certify::{FitProblem, State};
use mipstream_tools::bench::dump::{dumped_files, Dumped};
use mipstream_tools::bench::{self, BenchOptions, Strategy};
use std::process::Command;
use std::time::Duration;

fn certify(dir: &std::path::Path, json: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mipstream"))
        .env(
            "MIPSTREAM_CACHE",
            common::repo().join("target/mipstream-cache"),
        )
        .arg("certify")
        .arg(dir)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap()
}

#[test]
fn dumped_plans_are_certified_and_the_reported_gap_is_the_exact_one() {
    let dir = common::output_dir().join("certify-dump");
    let _ = std::fs::remove_dir_all(&dir);
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        budget_fraction: 0.3,
        strategies: vec![Strategy::Full, Strategy::Mipstream],
        lockstep: true,
        cache_dir: common::repo().join("target/mipstream-cache"),
        frame_pause: Duration::from_millis(1),
        dump_plans: Some(dir.clone()),
        ..Default::default()
    };
    bench::run(&opts, |_| {}).unwrap();
    let files = dumped_files(&dir).unwrap();
    // every compared frame of the budget fit (frames 0, 4, ..., 20, and the cut)
    assert!(files.len() >= 6, "{files:?}");
    let mut chosen = 0;
    for f in &files {
        let d = Dumped::read(f).unwrap();
        assert_eq!(d.strategy, "mipstream");
        assert!(
            d.problem.choice_fits(),
            "{}: the plan fits its budget",
            f.display()
        );
        // (a frame whose textures all sit at their tails has no chain)
        chosen += usize::from(!d.problem.chains.is_empty());
    }
    assert!(
        chosen * 2 >= files.len(),
        "{chosen} of {} frames had a choice",
        files.len()
    );
    let json = dir.join("certified.json.out");
    let o = certify(&dir, &json);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("LP value") && stdout.contains("optimum"),
        "{stdout}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), files.len());
    for f in frames {
        let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k} in {f}"));
        let (plan, lp, opt) = (num("plan_error"), num("lp_value"), num("optimum"));
        let eps = 1e-9 * plan.max(1.0);
        assert!(f["proven"].as_bool().unwrap(), "{f}");
        assert!(lp <= opt + eps, "{f}");
        // a plan that keeps the fit's locks is one the optimum ranges over
        if f["plan_keeps_locks"].as_bool().unwrap() {
            assert!(opt <= plan + eps, "{f}");
        }
        // dropping the locks never makes the best plan worse
        assert!(num("free_optimum") <= opt + eps, "{f}");
        // the streamer certified with the exact bound: its gap is this one
        let reported = num("reported_lp_gap");
        assert!((reported - num("lp_gap")).abs() <= 1e-3, "{f}");
    }
}

#[test]
fn a_plan_above_the_optimum_is_shown_so_and_an_empty_folder_is_an_error() {
    let dir = common::output_dir().join("certify-hand");
    let _ = std::fs::remove_dir_all(&dir);
    // two chains, budget 100: the plan takes the cheap state of the first and
    // the fine one of the second (error 10 + 1); the optimum is the other
    // way round (error 2 + 5)
    let state = |bytes, error| State {
        bytes,
        error,
        grow: 0,
    };
    let problem = FitProblem {
        frame: 1,
        budget: 100,
        chains: vec![
            vec![state(10, 10.0), state(60, 2.0)],
            vec![state(10, 5.0), state(60, 1.0)],
        ],
        resident: vec![0, 0],
        locked: vec![false, false],
        choice: vec![0, 1],
        plan_error: 11.0,
        ..FitProblem::default()
    };
    Dumped {
        strategy: "mipstream".into(),
        run_budget: 100,
        bench_frame: 0,
        problem,
        reported_lp_gap: None,
    }
    .write(&dir)
    .unwrap();
    let json = dir.join("out.json.out");
    let o = certify(&dir, &json);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let f = &v["frames"][0];
    assert_eq!(f["optimum"].as_f64(), Some(7.0));
    // nothing locked: the free optimum is the same
    assert_eq!(f["free_optimum"].as_f64(), Some(7.0));
    assert_eq!(f["plan_keeps_locks"].as_bool(), Some(true));
    assert!((f["optimum_gap"].as_f64().unwrap() - 4.0 / 11.0).abs() < 1e-12);
    // the LP may split a step: below the optimum, never above
    assert!(f["lp_value"].as_f64().unwrap() <= 7.0);
    // both chains change state: the first up, the second down
    let changes = f["changes"].as_array().unwrap();
    let pairs: Vec<_> = changes
        .iter()
        .map(|c| {
            (
                c["chain"].as_u64(),
                c["plan"].as_u64(),
                c["optimum"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [(Some(0), Some(0), Some(1)), (Some(1), Some(1), Some(0))],
        "{f}"
    );

    let empty = common::output_dir().join("certify-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = certify(&empty, &json);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no dumped plans"), "{err}");
}
