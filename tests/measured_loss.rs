//! Measured loss end to end: textures annotated in memory the way `mipstream
//! annotate` does, registered beside unannotated and badly annotated ones;
//! the planner judges each by what it carries and the report says which,
//! and every plan comes with its certificate.

mod common;

use glam::{UVec2, Vec3};
use mipstream::cook::measure;
use mipstream::loss::TextureLoss;
use mipstream::plan::{LossModel, PlannerOptions};
use mipstream::streamer::{Budget, LossSource, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{MemorySource, Streamer, TextureFile, View};
use std::sync::Arc;

fn sponza_bytes(name: &str) -> Vec<u8> {
    std::fs::read(common::shared_data().join("sponza-textures").join(name)).unwrap()
}

fn open(name: &str, bytes: Vec<u8>) -> TextureFile {
    TextureFile::open(Arc::new(MemorySource::new(name, bytes))).unwrap()
}

/// `name` with its measured loss stored in it.
fn annotated(name: &str) -> TextureFile {
    let bytes = sponza_bytes(name);
    let loss = measure::measure_loss(&open(name, bytes.clone())).unwrap();
    open(name, measure::annotate_ktx2(&bytes, &loss).unwrap())
}

/// `name` carrying a loss entry with the wrong number of levels.
fn badly_annotated(name: &str) -> TextureFile {
    let bytes = sponza_bytes(name);
    let mut loss = measure::measure_loss(&open(name, bytes.clone())).unwrap();
    loss.level_error.truncate(3);
    open(name, measure::annotate_ktx2(&bytes, &loss).unwrap())
}

fn view() -> View {
    View::look_at(
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        1.0,
        UVec2::new(640, 360),
        0.1,
        1e4,
    )
}

fn streamer(model: LossModel, budget: u64) -> (Streamer, Vec<mipstream::TextureId>) {
    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(budget),
            planner: PlannerOptions {
                error_model: model,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let files = [
        annotated("vase_round_spec.ktx2"),
        TextureFile::open_path(common::shared_data().join("sponza-textures/background.ktx2"))
            .unwrap(),
        badly_annotated("lion.ktx2"),
    ];
    let mut ids = Vec::new();
    for (i, f) in files.into_iter().enumerate() {
        let t = s.register_texture(TextureDesc::new(f)).unwrap();
        s.register_object(
            ObjectDesc::sphere(Vec3::new(i as f32 * 3.0 - 3.0, 0.0, -5.0), 1.5)
                .with_texture(t, 3.0),
        )
        .unwrap();
        ids.push(t);
    }
    (s, ids)
}

#[test]
fn each_texture_is_judged_by_what_it_carries_and_the_report_says_which() {
    let (mut s, _) = streamer(LossModel::Measured, 64 << 20);
    s.update(&[view()]);
    s.check_invariants().unwrap();
    let r = s.report();
    let sources: Vec<&LossSource> = r.textures.iter().map(|t| &t.loss).collect();
    assert_eq!(sources[0], &LossSource::Measured);
    assert_eq!(sources[1], &LossSource::Geometric);
    assert!(
        matches!(sources[2], LossSource::Invalid(why) if why.contains("3 values for 11 mip levels")),
        "{sources:?}"
    );
    let warnings = r.warnings.join("\n");
    assert!(
        warnings.contains("1 of 3 texture(s) carry no measured loss"),
        "{warnings}"
    );
    assert!(
        warnings.contains("texture lion: mipstream.loss"),
        "{warnings}"
    );
    // the geometric model for everything: nothing to warn about
    let (mut s, _) = streamer(LossModel::Geometric, 64 << 20);
    s.update(&[view()]);
    let r = s.report();
    assert!(r.textures.iter().all(|t| t.loss == LossSource::Geometric));
    assert!(
        !r.warnings.iter().any(|w| w.contains("loss")),
        "{:?}",
        r.warnings
    );
    // a bad entry is a typed error of the file, never a failure to stream
    let lion = badly_annotated("lion.ktx2");
    assert!(TextureLoss::from_info(lion.info()).unwrap().is_err());
    s.settle(&[view()], std::time::Duration::from_secs(60))
        .unwrap();
    let r = s.report();
    assert!(r.textures[2].resident <= r.textures[2].wanted, "{r}");
}

#[test]
fn every_plan_within_a_binding_budget_comes_with_its_certificate() {
    // about what the three tails and one texture's finer levels need
    let (mut s, _) = streamer(LossModel::Measured, 600 << 10);
    let mut gaps = Vec::new();
    for _ in 0..40 {
        let stats = s.update(&[view()]);
        s.check_invariants().unwrap();
        let gap = stats
            .fit_gap_lp
            .expect("the budget fit certifies every plan");
        assert!((0.0..=1.0).contains(&gap), "{gap}");
        assert!(stats.fit_error >= 0.0);
        gaps.push(gap);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let report = s.report().to_string();
    assert!(report.contains("of optimal (LP bound)"), "{report}");
    // a fixed rule plans without a fit: no certificate
    s.set_policy(mipstream::plan::Policy::UniformBias { bias: 1 });
    assert!(s.update(&[view()]).fit_gap_lp.is_none());
}
