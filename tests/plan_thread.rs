//! `StreamerOptions::plan_thread`: the plan made on the planner thread, a frame behind, reaching the same canonical residency as the
//! plan made inside `update`, with the budget kept every frame and
//! textures coming and going while a plan is in flight.

mod common;

use glam::{UVec2, Vec3};
use mipstream::streamer::{Budget, ObjectDesc, PlanThread, StreamerOptions, TextureDesc};
use mipstream::{Streamer, TextureId, View};
use std::time::Duration;

const NAMES: [&str; 5] = [
    "sponza_arch_diff.ktx2",
    "lion.ktx2",
    "background.ktx2",
    "sponza_column_a_diff.ktx2",
    "vase_round.ktx2",
];

fn view(z: f32) -> View {
    View::look_at(
        Vec3::new(0.0, 0.0, z),
        Vec3::new(0.0, 0.0, z - 1.0),
        Vec3::Y,
        1.0,
        UVec2::new(640, 360),
        0.1,
        1e4,
    )
}

/// Five textures on five spheres in a row; the budget a third of what
/// they hold at full resolution, so it binds.
fn scene(background: bool) -> (Streamer, Vec<TextureId>) {
    scene_planned(if background {
        PlanThread::Background
    } else {
        PlanThread::Inline
    })
}

fn scene_planned(plan_thread: PlanThread) -> (Streamer, Vec<TextureId>) {
    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            plan_thread,
            ..Default::default()
        },
    );
    let mut ids = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let t = s
            .register_texture(TextureDesc::new(common::sponza_texture(name)))
            .unwrap();
        s.register_object(
            ObjectDesc::sphere(Vec3::new(i as f32 * 3.0 - 6.0, 0.0, -4.0), 1.5)
                .with_texture(t, 4.0),
        )
        .unwrap();
        ids.push(t);
    }
    let full: u64 = ids.iter().map(|&t| s.full_bytes(t).unwrap()).sum();
    s.set_budget(Budget::Bytes(full / 3));
    (s, ids)
}

/// (wanted, planned, resident) per texture, in registration order.
fn levels(s: &Streamer) -> Vec<(u32, u32, u32)> {
    s.report()
        .textures
        .iter()
        .map(|t| (t.wanted, t.planned, t.resident))
        .collect()
}

const SETTLE: Duration = Duration::from_secs(120);

#[test]
fn the_background_plan_settles_where_the_inline_plan_does() {
    let (mut inline, _) = scene(false);
    let (mut background, _) = scene(true);
    // the canonical settle: the same levels whatever the history (a plain
    // settle's prefetch levels depend on what fitted beside what, when)
    for z in [0.0, 2.5, -1.0] {
        inline.settle_canonical(&[view(z)], SETTLE).unwrap();
        background.settle_canonical(&[view(z)], SETTLE).unwrap();
        assert_eq!(levels(&inline), levels(&background), "at z = {z}");
        inline.check_invariants().unwrap();
        background.check_invariants().unwrap();
    }
    // the inline streamer plans on the calling thread (its plans are this
    // frame's), the other on its planner thread
    for _ in 0..5 {
        let a = inline.update(&[view(-1.0)]);
        assert_eq!(
            (a.plan_worker_time, a.plan_age),
            (Duration::ZERO, 0),
            "{a:?}"
        );
    }
    let worked = (0..1000).find_map(|_| {
        std::thread::sleep(Duration::from_millis(1));
        let b = background.update(&[view(-1.0)]);
        assert!(b.plan_age >= 1, "{b:?}");
        (b.plan_worker_time > Duration::ZERO).then_some(b)
    });
    assert!(worked.is_some(), "no plan finished on the planner thread");
}

#[test]
fn the_background_plan_is_one_frame_behind_and_the_budget_holds_every_frame() {
    let (mut s, _) = scene(true);
    let far = view(12.0);
    s.settle(&[far], SETTLE).unwrap();
    let settled = levels(&s);
    // the first update at the near view carries out a plan made from the
    // far one (a frame old, or older while the thread is busy); a later
    // one, the near one's
    let near = view(-1.0);
    let first = s.update(&[near]);
    assert!(first.plan_age >= 1, "{first:?}");
    // (the plan, that is: what is resident may still move towards it, as a
    // spare-budget level the settle left waiting for room gets it)
    let plans = |l: &[(u32, u32, u32)]| l.iter().map(|&(w, p, _)| (w, p)).collect::<Vec<_>>();
    assert_eq!(
        plans(&levels(&s)),
        plans(&settled),
        "nothing replanned one frame in"
    );
    let before: Vec<u32> = settled.iter().map(|l| l.0).collect();
    let mut frames = 1;
    loop {
        let stats = s.update(&[near]);
        frames += 1;
        let wanted: Vec<u32> = levels(&s).iter().map(|l| l.0).collect();
        if stats.plan_age < frames {
            // a plan made after the camera moved
            assert!(
                wanted.iter().zip(&before).all(|(n, f)| n < f),
                "the near view's plan wants more detail: {wanted:?} vs {before:?}"
            );
            break;
        }
        assert_eq!(wanted, before, "frame {frames}: still the far view's plan");
        assert!(frames < 1000, "no plan for the near view");
        std::thread::sleep(Duration::from_millis(1));
    }
    // a path in and out: never over the budget, the books always right
    let budget = s.effective_budget();
    for f in 0..240 {
        let z = 12.0 - 13.0 * (f as f32 * std::f32::consts::PI / 120.0).sin().abs();
        s.update(&[view(z)]);
        assert!(
            s.held_bytes() <= budget,
            "frame {f}: {} > {budget}",
            s.held_bytes()
        );
        s.check_invariants().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn textures_come_and_go_while_a_plan_is_in_flight() {
    let (mut s, ids) = scene(true);
    s.settle(&[view(0.0)], SETTLE).unwrap();
    // a plan is in flight now; remove one texture and register another,
    // which takes the freed slot (its entry in the last plan is the
    // removed texture's) and must hold its tail until a plan knows it
    s.remove_texture(ids[1]).unwrap();
    let new = s
        .register_texture(TextureDesc::new(common::sponza_texture("lion.ktx2")))
        .unwrap();
    assert_eq!(new.index(), ids[1].index(), "the slot is reused");
    s.register_object(ObjectDesc::sphere(Vec3::new(-3.0, 0.0, -4.0), 1.5).with_texture(new, 4.0))
        .unwrap();
    // and one in a slot no plan has had yet
    let extra = s
        .register_texture(TextureDesc::new(common::sponza_texture("background.ktx2")))
        .unwrap();
    s.register_object(ObjectDesc::sphere(Vec3::new(9.0, 0.0, -4.0), 1.5).with_texture(extra, 4.0))
        .unwrap();
    let stats = s.update(&[view(0.0)]);
    s.check_invariants().unwrap();
    for id in [new, extra] {
        let t = s
            .report()
            .textures
            .into_iter()
            .find(|t| t.id == id)
            .unwrap();
        assert_eq!(t.planned, t.resident, "{} holds its tail: {t:?}", t.label);
        assert!(t.levels - t.resident <= 7, "the tail only: {t:?}");
    }
    assert_eq!(stats.requested, 0, "nothing requested for a plan not made");
    // the next plans know them: they stream and everything settles
    s.settle(&[view(0.0)], SETTLE).unwrap();
    s.check_invariants().unwrap();
    let report = s.report();
    let new_row = report.textures.iter().find(|t| t.id == new).unwrap();
    assert!(new_row.resident < new_row.levels - 7, "{new_row:?}");
    // removing everything mid-flight leaves nothing held but the pool
    for id in s.texture_ids() {
        s.remove_texture(id).unwrap();
        s.update(&[view(0.0)]);
    }
    s.check_invariants().unwrap();
    assert!(s.report().textures.is_empty());
}

/// A budget cut while the plan is made on the planner thread. The update
/// right after it carries out a plan made on the old budget, and still ends
/// within the new one; `settle` then holds a plan made on the new budget. A
/// soak with the planner thread found both its streamers settled at 6 MiB
/// against a 1 MiB budget: the old plan counted as current for the same
/// views, and `update` gave up more than a plan asked only after a refused
/// shrink.
#[test]
fn a_budget_cut_holds_from_the_next_update_with_the_plan_a_frame_old() {
    let (mut s, ids) = scene(true);
    let near = view(-1.0);
    let full: u64 = ids.iter().map(|&t| s.full_bytes(t).unwrap()).sum();
    s.set_budget(Budget::Bytes(full));
    s.settle(&[near], SETTLE).unwrap();
    let held = s.report().totals.accounted();
    let cut = held / 2;
    s.set_budget(Budget::Bytes(cut));
    assert!(
        !s.converged(),
        "the plan made on the old budget counts as current"
    );
    let first = s.update(&[near]);
    assert!(first.plan_age >= 1, "{first:?}");
    s.check_invariants().unwrap();
    let after = s.report().totals.accounted();
    assert!(after <= cut, "{after} bytes held after the cut to {cut}");
    s.settle(&[near], SETTLE).unwrap();
    s.check_invariants().unwrap();
    let settled = s.report().totals.accounted();
    assert!(settled <= cut, "{settled} bytes held at a budget of {cut}");
    // and where the inline plan settles on the same budget (canonically: a
    // plain settle's prefetch levels depend on history)
    let mut inline = scene(false).0;
    inline.set_budget(Budget::Bytes(cut));
    inline.settle_canonical(&[near], SETTLE).unwrap();
    s.settle_canonical(&[near], SETTLE).unwrap();
    assert_eq!(
        levels(&s),
        levels(&inline),
        "not where the same budget settles inline"
    );
}

/// Updates at `view` until one carries out a plan made for it, or panics
/// after 1,000; returns the ages of the plans carried out on the way.
fn ages_until_current(s: &mut Streamer, view: View) -> Vec<u64> {
    let mut ages = Vec::new();
    for _ in 0..1000 {
        let stats = s.update(&[view]);
        ages.push(stats.plan_age);
        s.check_invariants().unwrap();
        // the plan was taken `plan_age` updates ago: at this view or after
        if (stats.plan_age as usize) < ages.len() {
            return ages;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no plan for the view after 1,000 updates: {ages:?}");
}

/// The default, `PlanThread::Auto`: a scene of a few textures plans inside
/// `update` (every plan made from its own frame, none on the planner
/// thread); one that reaches the threshold moves its plan to the planner
/// thread, a frame behind; one that falls below it plans inside `update`
/// again, from the very next update.
#[test]
fn the_default_plans_inside_update_until_the_scene_reaches_its_threshold() {
    assert_eq!(
        StreamerOptions::default().plan_thread,
        PlanThread::Auto {
            textures: PlanThread::AUTO_TEXTURES
        }
    );
    let (mut small, _) = scene_planned(PlanThread::default());
    assert!(!small.plans_in_background());
    for z in [8.0, 0.0, -1.0] {
        let stats = small.update(&[view(z)]);
        assert_eq!(stats.plan_age, 0, "{stats:?}");
        assert_eq!(stats.plan_worker_time, Duration::ZERO, "{stats:?}");
    }

    // a threshold one texture above the scene's five
    let (mut s, _) = scene_planned(PlanThread::Auto { textures: 6 });
    s.settle(&[view(8.0)], SETTLE).unwrap();
    assert!(!s.plans_in_background());
    assert_eq!(ages_until_current(&mut s, view(0.0)), [0]);
    let sixth = s
        .register_texture(TextureDesc::new(common::sponza_texture("lion.ktx2")))
        .unwrap();
    s.register_object(ObjectDesc::sphere(Vec3::new(9.0, 0.0, -4.0), 1.5).with_texture(sixth, 4.0))
        .unwrap();
    assert!(s.plans_in_background());
    // the first update plans here (no plan is on its way yet) and hands
    // the next one to the planner thread; from then on every view's first
    // update carries out an older plan
    s.update(&[view(0.0)]);
    let ages = ages_until_current(&mut s, view(-1.0));
    assert!(
        ages[0] >= 1,
        "a plan made for the new view at once: {ages:?}"
    );
    let worked = (0..1000).find_map(|_| {
        let b = s.update(&[view(-1.0)]);
        std::thread::sleep(Duration::from_millis(1));
        (b.plan_worker_time > Duration::ZERO).then_some(b)
    });
    assert!(worked.is_some(), "no plan finished on the planner thread");
    // back below the threshold (a plan may be in flight): inside `update`
    // from the next one, whose plan is its own frame's
    s.remove_texture(sixth).unwrap();
    assert!(!s.plans_in_background());
    assert_eq!(ages_until_current(&mut s, view(2.5)), [0]);
    s.check_invariants().unwrap();
    // and it settles where a streamer that always planned inside `update`
    // does
    let (mut inline, _) = scene(false);
    inline.settle_canonical(&[view(2.5)], SETTLE).unwrap();
    s.settle_canonical(&[view(2.5)], SETTLE).unwrap();
    assert_eq!(levels(&s), levels(&inline));
}
