//! The benchmark's GPU feedback strategies in a tiny configuration:
//! `mipstream_feedback` and `mipstream_oracle` on the built-in scene and on
//! a glTF scene (FlightHelmet), lockstep.

mod common;

use mipstream_tools::bench::{self, BenchOptions, Strategy};

#[test]
fn the_feedback_strategies_report_what_is_sampled_and_repeat_in_lockstep() {
    let opts = BenchOptions {
        frames: 24,
        quality_every: 4,
        size: glam::UVec2::new(160, 90),
        cache_dir: common::repo().join("target/mipstream-cache"),
        strategies: vec![
            Strategy::Mipstream,
            Strategy::MipstreamFeedback,
            Strategy::MipstreamOracle,
        ],
        lockstep: true,
        ..Default::default()
    };
    let a = bench::run(&opts, |_| {}).unwrap();
    let b = bench::run(&opts, |_| {}).unwrap();
    let [_, plain, fed, oracle] = &a.strategies[..] else {
        panic!("{:?}", a.strategies.len())
    };
    // the oracle's feedback is of the very frame: every frame has it, the
    // first included
    assert_eq!(oracle.strategy.key(), "mipstream_oracle");
    assert!(
        oracle.setting.contains("exact feedback"),
        "{}",
        oracle.setting
    );
    assert!(
        oracle.frames.iter().all(|f| f.feedback_textures > 0),
        "{:?}",
        oracle
            .frames
            .iter()
            .map(|f| f.feedback_textures)
            .collect::<Vec<_>>()
    );
    assert_eq!(oracle.frames_over_budget, 0);
    assert_eq!(fed.strategy.key(), "mipstream_feedback");
    assert!(fed.setting.contains("GPU feedback"), "{}", fed.setting);
    // the CPU alone sees no feedback; with it, every frame after the first
    // takes the frame before's (lockstep: the GPU finished it), every frame
    // drawn, compared or not
    assert!(plain.frames.iter().all(|f| f.feedback_textures == 0));
    assert!(
        fed.frames[1..].iter().all(|f| f.feedback_textures > 0),
        "{:?}",
        fed.frames
            .iter()
            .map(|f| f.feedback_textures)
            .collect::<Vec<_>>()
    );
    assert_eq!(fed.frames_over_budget, 0);
    // every frame with feedback measures what its seen textures' sampled
    // regions would hold: never more than their whole levels
    for f in &fed.frames[1..] {
        let r = f.region_bytes.expect("feedback frames measure regions");
        assert!(
            r.whole > 0 && r.regions > 0 && r.regions <= r.whole,
            "{r:?}"
        );
    }
    let ratio = fed.region_bytes_ratio.unwrap();
    assert!(ratio > 0.0 && ratio <= 1.0, "{ratio}");
    for s in [plain, oracle] {
        assert!(s.frames.iter().all(|f| f.region_bytes.is_none()));
        assert_eq!(s.region_bytes_ratio, None);
    }
    let json = a.to_json();
    assert_eq!(
        json["strategies"]["mipstream_feedback"]["region_bytes_ratio"].as_f64(),
        Some(ratio)
    );
    let per_frame = |s: &bench::StrategyResult| {
        let f = s.frames.iter();
        f.map(|f| (f.uploaded, f.feedback_textures, f.psnr_db.map(f64::to_bits)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        per_frame(fed),
        per_frame(&b.strategies[2]),
        "lockstep runs differ"
    );
    assert_eq!(
        per_frame(oracle),
        per_frame(&b.strategies[3]),
        "the oracle's lockstep runs differ"
    );
}

/// On a glTF scene the oracle plans from the material renderer's two id
/// passes (base colours, normal maps) and the feedback strategy from what
/// the materials report: both have feedback every frame they should, and
/// stay within the budget.
#[test]
fn the_feedback_strategies_run_on_a_gltf_scene() {
    use mipstream::cook::gltf::{cook_gltf, GltfCookOptions};
    let out = common::output_dir().join("bench-helmet");
    let _ = std::fs::remove_dir_all(&out);
    let gltf = common::shared_data().join("scenes/FlightHelmet/FlightHelmet.gltf");
    let cook = GltfCookOptions {
        quality: 0,
        ..GltfCookOptions::default()
    };
    cook_gltf(&gltf, &out, &cook, |_| {}).unwrap();
    let opts = BenchOptions {
        scene: mipstream_tools::source::SceneSource::Gltf(out.join("scene.json")),
        frames: 12,
        quality_every: 4,
        size: glam::UVec2::new(96, 96),
        cache_dir: common::repo().join("target/mipstream-cache"),
        strategies: vec![Strategy::MipstreamFeedback, Strategy::MipstreamOracle],
        lockstep: true,
        ..Default::default()
    };
    let a = bench::run(&opts, |_| {}).unwrap();
    let [_, fed, oracle] = &a.strategies[..] else {
        panic!("{:?}", a.strategies.len())
    };
    let seen = |s: &bench::StrategyResult| {
        s.frames
            .iter()
            .map(|f| f.feedback_textures)
            .collect::<Vec<_>>()
    };
    assert!(
        oracle.frames.iter().all(|f| f.feedback_textures > 0),
        "{:?}",
        seen(oracle)
    );
    // the path flies in: at first the helmet covers a few pixels, too few
    // for the feedback's one pixel in four (the id pass counts every one)
    assert!(
        fed.frames[3..].iter().all(|f| f.feedback_textures > 0),
        "{:?}",
        seen(fed)
    );
    for s in [fed, oracle] {
        assert_eq!(s.frames_over_budget, 0, "{}", s.strategy.key());
        assert!(
            s.psnr_db_mean > 20.0,
            "{}: {}",
            s.strategy.key(),
            s.psnr_db_mean
        );
    }
    assert!(fed.region_bytes_ratio.is_some_and(|r| r > 0.0 && r <= 1.0));
}
