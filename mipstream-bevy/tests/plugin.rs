//! The plugin in a real Bevy app on lavapipe: it streams under the budget
//! every frame, a budget cut shows in the rendered image within two frames,
//! materials are re-prepared in the frame their texture changes (no bind
//! group keeps a replaced texture), and despawned entities free their
//! objects.
//!
//! One scenario per test binary run (`cargo test -p mipstream-bevy
//! --ignore-rust-version`): each builds its own app and device; a lock
//! keeps them one at a time (Bevy's task pools are process-wide).

mod common;

use bevy::prelude::*;
use common::{builtin_textures, harness, mean_abs_diff, Quad};
use mipstream_bevy::StreamingBudget;
use std::sync::{Mutex, MutexGuard};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SIZE: UVec2 = UVec2::new(512, 288);

/// The app on built-in textures `first..first + 4` at 64 MiB, settled; the
/// guard keeps the other tests' apps out meanwhile.
fn settled(first: usize) -> (MutexGuard<'static, ()>, common::Harness) {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let textures = builtin_textures();
    let mut h = harness(&textures[first..first + 4], 64 << 20, SIZE);
    h.settle(600);
    (one, h)
}

#[test]
fn a_budget_cut_shows_within_two_frames_and_held_stays_under_budget() {
    let (_one, mut h) = settled(1);
    let ms = h.mipstream();
    assert_eq!(ms.streamed_images(), 4);
    assert_eq!(ms.streamer().object_count(), 4, "one object per quad");
    let report = ms.report();
    assert!(
        report
            .textures
            .iter()
            .all(|t| t.resident <= t.wanted && t.size.0 >> t.resident > 64),
        "at 64 MiB every quad holds what it wants, finer than its 64-texel tail: {:#?}",
        report.textures
    );
    let before_frame = h.frame_count();
    h.frame();
    let full = h.picture(before_frame);

    // the cut: to the tails (and a kilobyte)
    let tails = report.tail_bytes;
    h.app.insert_resource(StreamingBudget(tails + 1024));
    let cut = h.frame_count();
    h.frame();
    assert!(h.mipstream().streamer().held_bytes() <= tails + 1024);
    for _ in 0..40 {
        h.frame();
    }
    let last = h.frame_count() - 1;
    let low = h.picture(last);
    let within_two = h.picture(cut + 1);
    common::save(&h, &full, "bevy-full.png");
    common::save(&h, &low, "bevy-cut.png");
    common::save(&h, &within_two, "bevy-cut-plus-1.png");
    let cut_shows = mean_abs_diff(&full, &low);
    assert!(
        cut_shows > 1.0,
        "the cut must change the picture: {cut_shows:.3} mean difference"
    );
    let lag = mean_abs_diff(&within_two, &low);
    assert!(
        lag < 0.2 * cut_shows,
        "two frames after the cut the picture must already be the cut one: \
         {lag:.3} from it against {cut_shows:.3} before the cut"
    );
    let audit = h
        .app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    assert!(audit.swaps >= 8, "textures swapped in: {audit:?}");
    assert_eq!(audit.stale_materials, 0, "{audit:?}");
}

#[test]
fn materials_rebind_in_the_frame_their_texture_changes() {
    let (_one, mut h) = settled(5);
    let tails = h.mipstream().report().tail_bytes;
    let recycle = h.mipstream().streamer().options().recycle_after_submits;
    assert!(
        recycle >= 2,
        "pipelined rendering needs a delayed reuse: {recycle}"
    );
    // budgets that move every few frames: textures shrink, grow and are
    // recycled while Bevy records the previous frame
    let mut changes = 0;
    for i in 0..90u64 {
        if i % 6 == 0 {
            let budget = if (i / 6) % 2 == 0 {
                tails + (96 << 10)
            } else {
                64 << 20
            };
            h.app.insert_resource(StreamingBudget(budget));
        }
        h.frame();
        changes += h.mipstream().frame_stats().rebinds as u64;
    }
    let audit = h
        .app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    assert!(
        changes >= 8,
        "the budgets must move textures: {changes} rebinds"
    );
    assert!(
        audit.swaps >= changes.min(8),
        "{audit:?} for {changes} rebinds"
    );
    assert_eq!(
        audit.stale_materials, 0,
        "every material using a changed image re-prepared that frame: {audit:?}"
    );
    assert_eq!(
        audit.not_swapped, 0,
        "every GpuImage is mipstream's current texture when bind groups are made: {audit:?}"
    );
    assert!(audit.frames >= 90, "{audit:?}");
}

#[test]
fn despawned_and_moved_entities_follow_into_the_streamer() {
    let (_one, mut h) = settled(9);
    assert_eq!(h.mipstream().streamer().object_count(), 4);
    let quads: Vec<(Entity, usize)> = h
        .app
        .world_mut()
        .query::<(Entity, &Quad)>()
        .iter(h.app.world())
        .map(|(e, q)| (e, q.0))
        .collect();
    // move one quad far away: its texture no longer wants detail
    let far = quads.iter().find(|(_, q)| *q == 0).unwrap().0;
    let texture = {
        let world = h.app.world();
        let material = world.get::<MeshMaterial3d<StandardMaterial>>(far).unwrap();
        let m = world
            .resource::<Assets<StandardMaterial>>()
            .get(material.id())
            .unwrap();
        let image = m.base_color_texture.as_ref().unwrap().id();
        h.mipstream().texture_id(image).unwrap()
    };
    let wanted_near = wanted(&h, texture);
    h.app
        .world_mut()
        .get_mut::<Transform>(far)
        .unwrap()
        .translation
        .z = -400.0;
    for _ in 0..3 {
        h.frame();
    }
    let wanted_far = wanted(&h, texture);
    assert!(
        wanted_far >= wanted_near + 2,
        "moved 400 m away, it wants coarser levels: level {wanted_near} -> {wanted_far}"
    );
    for (e, q) in &quads {
        if *q >= 2 {
            h.app.world_mut().despawn(*e);
        }
    }
    h.frame();
    assert_eq!(
        h.mipstream().streamer().object_count(),
        2,
        "the despawned quads' objects are gone"
    );
}

/// The level the streamer's planner wants for `texture` now.
fn wanted(h: &common::Harness, texture: mipstream::TextureId) -> u32 {
    h.mipstream()
        .report()
        .textures
        .iter()
        .find(|t| t.id == texture)
        .unwrap()
        .wanted
}
