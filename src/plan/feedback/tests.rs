//! The fusion's tests: the memory alone, then through the planner.

use super::*;
use crate::kinds::Tier;
use crate::plan::tests::{camera, load_scene, texture};
use crate::plan::{PlanTexture, ResidentState};

fn sum(lod: f32, coverage: f32, typical: f32) -> TextureNeedSum {
    TextureNeedSum {
        visible_lod: lod,
        hidden_lod: f32::INFINITY,
        coverage,
        lod_sum: typical * coverage,
    }
}

fn sampled(lod: f32, mean_lod: f32, pixels: f32) -> Option<Sampled> {
    Some(Sampled {
        lod,
        mean_lod,
        pixels,
    })
}

fn typical(s: &TextureNeedSum) -> f32 {
    s.lod_sum / s.coverage
}

/// Runs frames `frames` each with feedback `slots`, fusing into the
/// CPU's `cpu` sums; the fused sums of each frame.
fn run(
    m: &mut FeedbackMemory,
    frames: std::ops::RangeInclusive<u64>,
    slots: &[Option<Sampled>],
    cpu: &[TextureNeedSum],
) -> Vec<Vec<TextureNeedSum>> {
    frames
        .map(|f| {
            m.take(f, slots);
            let mut sums = cpu.to_vec();
            m.fuse(&mut sums, f);
            sums
        })
        .collect()
}

#[test]
fn a_texture_partly_hidden_converges_to_what_the_gpu_samples_gradually() {
    let mut m = FeedbackMemory::default();
    // the box claims 40,000 pixels at lod 0 (typical 1); the GPU samples
    // 5,000 pixels at finest lod 2, mean lod 3, every frame
    let cpu = [TextureNeedSum::default(), sum(0.0, 40_000.0, 1.0)];
    let frames = run(&mut m, 1..=300, &[sampled(2.0, 3.0, 5000.0)], &cpu);
    let t: Vec<&TextureNeedSum> = frames.iter().map(|s| &s[1]).collect();
    // the first frame still holds nearly all of the CPU's prediction
    assert!(t[0].coverage > 38_000.0, "{:?}", t[0]);
    assert!(t[0].visible_lod < 0.5, "{:?}", t[0]);
    // then the share kept halves every half-life, never below the GPU's
    assert!(t.windows(2).all(|w| w[1].coverage <= w[0].coverage));
    assert!(t.windows(2).all(|w| w[1].visible_lod >= w[0].visible_lod));
    let h = FUSION_HALF_LIFE as usize;
    let ratio = t[2 * h - 1].coverage / t[h - 1].coverage;
    assert!((ratio - 0.5).abs() < 1e-3, "halves: {ratio}");
    assert!((t[h - 1].coverage - 20_000.0).abs() < 1.0, "{:?}", t[h - 1]);
    // in the end, the GPU's pixels and lods
    let last = t[299];
    assert!((last.coverage - 5000.0).abs() < 1.0, "{last:?}");
    assert!((last.visible_lod - 2.0).abs() < 1e-3, "{last:?}");
    assert!((typical(last) - 3.0).abs() < 1e-3, "{last:?}");
}

#[test]
fn a_texture_seen_more_than_predicted_takes_the_gpus_numbers_at_once() {
    let mut m = FeedbackMemory::default();
    let cpu = [TextureNeedSum::default(), sum(3.0, 1000.0, 4.0)];
    let f = run(&mut m, 1..=1, &[sampled(1.5, 2.5, 3000.0)], &cpu);
    let t = f[0][1];
    assert_eq!((t.visible_lod, t.coverage, typical(&t)), (1.5, 3000.0, 2.5));
}

#[test]
fn hidden_textures_keep_their_levels_a_while_and_come_back_at_once() {
    let mut m = FeedbackMemory::default();
    // near and large by the CPU (lod -5, typical 0, the whole screen)
    let cpu = [TextureNeedSum::default(), sum(-5.0, 500_000.0, 0.0)];
    // seen in full for a second, then hidden behind a column (a sliver
    // of 800 pixels at lod 4) for 9 frames
    run(&mut m, 1..=60, &[sampled(-1.0, 0.5, 500_000.0)], &cpu);
    let hidden = run(&mut m, 61..=69, &[sampled(4.0, 4.0, 800.0)], &cpu);
    for f in &hidden {
        let t = f[1];
        // still wanted at the CPU's lod, most of its coverage kept
        assert!(t.visible_lod < -2.0, "{t:?}");
        assert!(t.coverage > 0.6 * 500_000.0, "{t:?}");
    }
    // a gradual fade, not a drop
    let c: Vec<f32> = hidden.iter().map(|f| f[1].coverage).collect();
    assert!(
        c.windows(2).all(|w| w[1] < w[0] && w[1] > 0.9 * w[0]),
        "{c:?}"
    );
    // in view again: the GPU's numbers at once
    let back = run(&mut m, 70..=70, &[sampled(-1.0, 0.5, 500_000.0)], &cpu);
    let t = back[0][1];
    assert_eq!(
        (t.visible_lod, t.coverage, typical(&t)),
        (-1.0, 500_000.0, 0.5)
    );
}

#[test]
fn predicted_but_never_sampled_textures_fade_at_the_cpus_lods() {
    let mut m = FeedbackMemory::default();
    let cpu = [TextureNeedSum::default(), sum(1.0, 1000.0, 2.0)];
    let frames = run(&mut m, 1..=90, &[None], &cpu);
    let c: Vec<f32> = frames.iter().map(|f| f[1].coverage).collect();
    for f in &frames {
        assert_eq!(f[1].visible_lod, 1.0, "the lod stays");
        assert!((typical(&f[1]) - 2.0).abs() < 1e-4, "typical stays");
    }
    let h = FUSION_HALF_LIFE as usize;
    assert!(
        (c[h - 1] - 500.0).abs() < 1.0,
        "half after a half-life: {c:?}"
    );
    assert!(c[89] < 20.0, "{}", c[89]);
}

#[test]
fn what_the_cpu_places_off_screen_keeps_its_prediction_what_it_misses_takes_the_gpus() {
    let mut m = FeedbackMemory::default();
    // slot 0 only off-screen (look-ahead, behind the camera); slot 1 not
    // predicted at all, yet sampled
    let offscreen = TextureNeedSum {
        visible_lod: f32::INFINITY,
        hidden_lod: 2.0,
        coverage: 0.0,
        lod_sum: 0.0,
    };
    let cpu = [
        TextureNeedSum::default(),
        offscreen,
        TextureNeedSum::default(),
    ];
    let f = run(&mut m, 10..=10, &[None, sampled(5.0, 5.5, 64.0)], &cpu);
    assert_eq!(f[0][1], offscreen);
    let t = f[0][2];
    assert_eq!((t.visible_lod, t.coverage, typical(&t)), (5.0, 64.0, 5.5));
    // a frame after a turn: what the GPU saw in front is behind the
    // camera now, and the CPU's prediction of it stands
    let f = run(&mut m, 11..=11, &[sampled(0.0, 1.0, 60_000.0), None], &cpu);
    assert_eq!(f[0][1], offscreen);
    assert_eq!(f[0][2], TextureNeedSum::default(), "neither saw it");
}

/// 100 frames of a wall the CPU has at lod 2 over 10,000 pixels, of
/// which the GPU samples half (a column hides the rest) at finest lod
/// 2.5, mean 3: the remembered share comes down to a half.
fn half_hidden_wall() -> FeedbackMemory {
    let mut m = FeedbackMemory::default();
    let wall = sum(2.0, 10_000.0, 2.5);
    let f = run(
        &mut m,
        1..=100,
        &[sampled(2.5, 3.0, 5000.0)],
        &[TextureNeedSum::default(), wall],
    );
    assert!((f[99][1].coverage - 5000.0).abs() < 10.0, "{:?}", f[99][1]);
    m
}

#[test]
fn the_gpu_corrects_the_cpu_of_its_own_frame_and_the_cpu_carries_the_motion() {
    let mut m = half_hidden_wall();
    // frame 101: the camera came closer (the CPU: lod 1, 40,000
    // pixels); the newest feedback is still frame 100's
    let mut sums = vec![TextureNeedSum::default(), sum(1.0, 40_000.0, 1.5)];
    m.fuse(&mut sums, 101);
    let t = sums[1];
    // half of what the CPU predicts now, not the 5,000 pixels of before
    assert!((t.coverage - 20_000.0).abs() < 50.0, "{t:?}");
    // the GPU's lods moved as the CPU's did since frame 100
    assert!((t.visible_lod - 1.5).abs() < 1e-3, "{t:?}");
    assert!((typical(&t) - 2.0).abs() < 1e-2, "{t:?}");
}

#[test]
fn the_carried_estimate_stays_between_the_gpus_and_the_cpus() {
    let mut m = FeedbackMemory::default();
    // frame 1: the CPU has a sliver of a box (10 pixels, lod 4); the GPU
    // sampled 3,000 pixels of it (the CPU's box under-predicts) at lod
    // 1; frame 2: the CPU has it over 50,000 pixels at lod 0
    m.fuse(&mut [TextureNeedSum::default(), sum(4.0, 10.0, 4.0)], 1);
    m.take(1, &[sampled(1.0, 2.0, 3000.0)]);
    let mut sums = vec![TextureNeedSum::default(), sum(0.0, 50_000.0, 1.0)];
    m.fuse(&mut sums, 2);
    // not 3,000 times 5,000: no more than the CPU predicts now
    assert!((sums[1].coverage - 50_000.0).abs() < 1.0, "{:?}", sums[1]);
    // the lod shifted by the CPU's four levels would be -3: it stops
    // at the CPU's 0
    assert_eq!(sums[1].visible_lod, 0.0, "{:?}", sums[1]);
    assert!((typical(&sums[1]) - 1.0).abs() < 1e-4, "{:?}", sums[1]);
}

#[test]
fn a_plan_made_ahead_is_set_against_the_views_it_was_made_from() {
    let mut m = half_hidden_wall();
    // the plan for update 102 made ahead from update 101's views (the
    // CPU: lod 1, 40,000 pixels), then the GPU's feedback of 101 (20,000
    // pixels at lod 1.5, mean 2), then the plan for 103 from 102's views
    // (lod 0, 80,000 pixels)
    m.views_frame = Some(101);
    m.fuse(
        &mut [TextureNeedSum::default(), sum(1.0, 40_000.0, 1.5)],
        102,
    );
    m.take(101, &[sampled(1.5, 2.0, 20_000.0)]);
    m.views_frame = Some(102);
    let mut sums = vec![TextureNeedSum::default(), sum(0.0, 80_000.0, 0.5)];
    m.fuse(&mut sums, 103);
    // set against 101's CPU sums: twice the pixels, a level finer
    assert!((sums[1].coverage - 40_000.0).abs() < 100.0, "{:?}", sums[1]);
    assert!((sums[1].visible_lod - 0.5).abs() < 1e-3, "{:?}", sums[1]);
    // and the memory keeps no more frames than feedback can be old
    for f in 104..140 {
        m.fuse(&mut [TextureNeedSum::default(), sum(0.0, 1.0, 0.5)], f);
    }
    assert!(
        m.history.len() <= STALE_AFTER as usize + 2,
        "{}",
        m.history.len()
    );
}

/// The CPU's sums of a picture of two walls, `a` and `b` pixels.
fn two_wall_picture(a: f32, b: f32) -> Vec<TextureNeedSum> {
    let wall = |c: f32| {
        if c > 0.0 {
            sum(2.0, c, 2.5)
        } else {
            TextureNeedSum::default()
        }
    };
    vec![TextureNeedSum::default(), wall(a), wall(b)]
}

#[test]
fn a_camera_cut_forgets_the_shares_learned_before_it() {
    // 100 frames looking at wall 1 over 10,000 pixels, half of it
    // hidden, wall 2 a sliver: the share of wall 1 comes down to a half
    let mut m = FeedbackMemory::default();
    let before = two_wall_picture(10_000.0, 100.0);
    let fb = [sampled(2.5, 3.0, 5000.0), sampled(3.0, 3.0, 100.0)];
    let f = run(&mut m, 1..=100, &fb, &before);
    assert!((f[99][1].coverage - 5000.0).abs() < 10.0, "{:?}", f[99][1]);
    // frame 101 is a cut: the CPU now has wall 2 large and wall 1 (seen
    // from elsewhere, in full) at 8,000 pixels; the feedback is frame
    // 100's. The CPU's prediction stands as it is
    let after = two_wall_picture(8000.0, 40_000.0);
    assert!(overlap(&before, &after) < CUT_OVERLAP);
    let mut sums = after.clone();
    m.fuse(&mut sums, 101);
    assert_eq!(sums, after);
    // the GPU's first frame after the cut sees wall 1 in full: it counts
    // at once, not at the half remembered from before the cut
    let f = run(
        &mut m,
        102..=102,
        &[sampled(2.0, 2.5, 8000.0), sampled(1.0, 1.5, 40_000.0)],
        &after,
    );
    assert!((f[0][1].coverage - 8000.0).abs() < 1.0, "{:?}", f[0][1]);
    // and the same cut without the check would have kept the half
    let mut m = FeedbackMemory::default();
    run(&mut m, 1..=100, &fb, &before);
    m.history.clear();
    let mut sums = after.clone();
    m.fuse(&mut sums, 101);
    assert!(sums[1].coverage < 0.7 * 8000.0, "{:?}", sums[1]);
}

#[test]
fn a_camera_moving_on_keeps_what_it_learned() {
    let mut m = FeedbackMemory::default();
    let before = two_wall_picture(10_000.0, 2000.0);
    let fb = [sampled(2.5, 3.0, 5000.0), sampled(2.5, 3.0, 2000.0)];
    run(&mut m, 1..=100, &fb, &before);
    // the camera turned a little towards wall 2: still most of the
    // same picture, and wall 1 keeps what the GPU saw of it, not all of
    // the CPU's 7,000 pixels
    let after = two_wall_picture(7000.0, 4000.0);
    assert!(overlap(&before, &after) > CUT_OVERLAP);
    let mut sums = after.clone();
    m.fuse(&mut sums, 101);
    assert!((sums[1].coverage - 5000.0).abs() < 10.0, "{:?}", sums[1]);
}

#[test]
fn overlap_measures_the_shared_picture() {
    let p = two_wall_picture;
    assert_eq!(overlap(&p(1.0, 3.0), &p(2.0, 6.0)), 1.0);
    assert_eq!(overlap(&p(1.0, 0.0), &p(0.0, 1.0)), 0.0);
    assert!((overlap(&p(3.0, 1.0), &p(1.0, 1.0)) - 0.75).abs() < 1e-6);
    assert_eq!(overlap(&p(0.0, 0.0), &p(0.0, 0.0)), 1.0);
    assert_eq!(overlap(&p(0.0, 0.0), &p(1.0, 0.0)), 0.0);
}

#[test]
fn stale_feedback_leaves_the_cpu_prediction() {
    let mut m = FeedbackMemory::default();
    m.take(10, &[sampled(3.0, 3.0, 10.0)]);
    let before = sum(1.0, 500.0, 1.0);
    let mut sums = vec![TextureNeedSum::default(), before];
    m.fuse(&mut sums, 10 + STALE_AFTER + 1);
    assert_eq!(sums[1], before);
    assert!(!m.active(10 + STALE_AFTER + 1) && m.active(10 + STALE_AFTER));
}

#[test]
fn older_feedback_changes_nothing_and_a_clear_forgets() {
    let mut m = FeedbackMemory::default();
    let cpu = [TextureNeedSum::default(), sum(1.0, 1.0, 1.0)];
    m.take(10, &[sampled(3.0, 3.5, 10.0)]);
    m.take(9, &[sampled(0.0, 0.0, 99.0)]);
    let mut sums = cpu.to_vec();
    m.fuse(&mut sums, 10);
    assert_eq!(sums[1].visible_lod, 3.0);
    m.clear();
    let mut sums = cpu.to_vec();
    m.fuse(&mut sums, 10);
    assert_eq!(sums[1], cpu[1]);
}

#[test]
fn the_same_feedback_gives_the_same_fusion() {
    let cpu = [
        TextureNeedSum::default(),
        sum(0.5, 9000.0, 2.0),
        sum(2.0, 300.0, 3.0),
    ];
    let fb = [sampled(1.0, 2.5, 2000.0), None];
    let a = run(&mut FeedbackMemory::default(), 1..=40, &fb, &cpu);
    let b = run(&mut FeedbackMemory::default(), 1..=40, &fb, &cpu);
    assert_eq!(a, b);
}

/// A planner fusing feedback (with or without the spare floor), two
/// 1024 textures on boxes at the same distance and a third that nothing
/// shows (a uniform floor raises it too); the CPU's wanted level of the
/// two.
fn two_walls(spare_floor: bool) -> (Planner, [PlanTexture; 3], u32) {
    let mut p = Planner::new(super::super::PlannerOptions {
        fuse_feedback: true,
        spare_floor,
        ..Default::default()
    });
    let tex = [
        texture(1024, false),
        texture(1024, false),
        texture(1024, false),
    ];
    let objects = [
        (-1.2, 0.0, -4.0, 1.0, 0, 2.0),
        (1.2, 0.0, -4.0, 1.0, 1, 2.0),
    ];
    load_scene(&mut p, &tex, &objects);
    let cpu = p.plan(&[camera(0.0)], u64::MAX, &[], 0).textures[0].wanted;
    assert!(cpu + 3 <= tex[0].tail_level, "the CPU wants detail: {cpu}");
    (p, tex, cpu)
}

fn held(level: u32) -> ResidentState {
    ResidentState {
        level,
        tier: Tier::Full,
        since_frame: 0,
    }
}

#[test]
fn room_the_fused_need_leaves_goes_to_what_the_cpu_predicts() {
    // the GPU samples both walls two levels coarser than the CPU's
    // nearest points say (both held there): the fit holds the fused
    // need, and the room left goes to what the CPU predicts (a surface
    // about to come nearer), as prefetch, before any floor
    let (mut p, tex, cpu) = two_walls(true);
    let coarser = cpu as f32 + 2.2;
    let seen = sampled(coarser, coarser + 0.5, 200_000.0);
    p.take_feedback(1, &[seen, seen]);
    let tail = tex[2].bytes(tex[2].tail_level, Tier::Full);
    let budget = 2 * tex[0].bytes(cpu, Tier::Full) + tail;
    let at = [held(cpu + 2), held(cpu + 2)];
    let plan = p.plan(&[camera(0.0)], budget, &at, 1).clone();
    assert!(p.uses_feedback(1));
    for t in &plan.textures[..2] {
        assert_eq!(t.wanted, cpu + 2, "the fused need: {t:?}");
        assert_eq!(t.target, cpu, "held as the CPU predicts: {t:?}");
        assert!(t.prefetch, "{t:?}");
    }
    assert_eq!(plan.textures[2].target, tex[2].tail_level);
    assert_eq!(plan.bytes, budget);
    // a level short of that room: one wall gets the CPU's level, the
    // other stays at the fused need
    let plan = p.plan(&[camera(0.0)], budget - 1, &at, 1).clone();
    let mut targets = [plan.textures[0].target, plan.textures[1].target];
    targets.sort();
    assert_eq!(targets, [cpu, cpu + 1], "{:?}", plan.textures);
    // the fit alone (no spare floor) holds the fused need
    let (mut p, _, cpu) = two_walls(false);
    p.take_feedback(1, &[seen, seen]);
    let plan = p.plan(&[camera(0.0)], u64::MAX, &at, 1).clone();
    for t in &plan.textures[..2] {
        assert_eq!((t.target, t.prefetch), (cpu + 2, false), "{t:?}");
    }
}

#[test]
fn the_cpus_prediction_takes_only_the_room_the_fused_need_leaves() {
    // wall 0 is sampled as the CPU predicts, wall 1 two levels coarser,
    // both held at the CPU's level: room for wall 0 at its level beside
    // wall 1 at its fused level, and half a level more, goes to wall 0,
    // whose finer levels the GPU samples; the CPU's prediction for wall
    // 1 gets what is left, too little for a level
    let (mut p, tex, cpu) = two_walls(true);
    let exact = sampled(cpu as f32 + 0.2, cpu as f32 + 0.7, 200_000.0);
    let coarser = sampled(cpu as f32 + 2.2, cpu as f32 + 2.7, 200_000.0);
    p.take_feedback(1, &[exact, coarser]);
    let level = |l| tex[1].bytes(l, Tier::Full);
    let tail = level(tex[2].tail_level);
    let budget = level(cpu) + level(cpu + 2) + (level(cpu + 1) - level(cpu + 2)) / 2 + tail;
    let plan = p
        .plan(&[camera(0.0)], budget, &[held(cpu), held(cpu)], 1)
        .clone();
    assert_eq!(plan.textures[0].target, cpu, "{:?}", plan.textures[0]);
    assert_eq!(plan.textures[1].target, cpu + 2, "{:?}", plan.textures[1]);
}
