//! The plugin in a real Bevy app on lavapipe: it streams under the budget
//! every frame, a budget cut shows in the rendered image within two frames,
//! materials are re-prepared in the frame their texture changes (no bind
//! group keeps a replaced texture), despawned entities free their objects,
//! and a cooked scene's meshes stream by LOD into Bevy's mesh allocator
//! with every entity drawn every frame.
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
    let recycle = h.mipstream().streamer().options().frames_in_flight;
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

#[test]
fn a_cooked_scene_streams_mesh_lods_through_bevys_meshes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let textures = builtin_textures();
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bevy-test/grid-scene");
    let places = [Vec3::new(-1.1, 0.0, 0.0), Vec3::new(1.1, 0.0, 0.0)];
    let scene = common::grid_scene(&dir, &textures[2], &places, 2.0);
    let mut h = common::scene_harness(scene, 64 << 20, SIZE, Vec3::new(0.0, 0.0, 40.0));
    // without the spare-budget floor (which would hold LOD 0 anyway, there
    // being room), LODs follow the camera
    h.app
        .world_mut()
        .resource_mut::<mipstream_bevy::Mipstream>()
        .streamer_mut()
        .set_planner_options(mipstream::plan::PlannerOptions {
            spare_floor: false,
            ..Default::default()
        });
    h.settle(600);
    let mesh = {
        let s = h.mipstream().streamer();
        assert_eq!((s.mesh_ids().len(), s.object_count()), (1, 2));
        s.mesh_ids()[0]
    };
    let status = |h: &common::Harness| h.mipstream().streamer().mesh_status(mesh).unwrap();
    assert!(
        status(&h).resident >= 3,
        "40 m away: a coarse LOD, {:?}",
        status(&h)
    );
    assert_eq!(h.mipstream().held_mesh_lods(), 1);
    // Bevy's own (its renderer adds a few)
    let own_meshes = h.app.world().resource::<Assets<Mesh>>().len() - 1;
    let far = h.picture(h.frame_count() - 1);
    let clear = far[..4].to_vec();
    let background = |p: &[u8]| {
        p.chunks_exact(4)
            .filter(|px| px.iter().zip(&clear).all(|(a, b)| a.abs_diff(*b) <= 2))
            .count() as f64
            / (p.len() / 4) as f64
    };
    assert!(background(&far) > 0.9, "far away the grids are small");
    // come close: finer LODs arrive and every frame draws both grids
    let mut camera = h
        .app
        .world_mut()
        .query_filtered::<&mut Transform, With<common::TestCamera>>();
    *camera.single_mut(h.app.world_mut()).unwrap() =
        Transform::from_xyz(0.0, 0.0, 2.5).looking_at(Vec3::ZERO, Vec3::Y);
    let moved = h.frame_count();
    let mut frames = 0;
    while status(&h).resident != 0 {
        h.frame();
        frames += 1;
        assert!(frames < 300, "LOD 0 never arrived: {:?}", status(&h));
    }
    h.settle(300);
    let last = h.frame_count() - 1;
    for f in moved + 1..last {
        let p = h.picture(f);
        let b = background(&p);
        if b > 0.3 {
            common::save(&h, &p, "grid-scene-blank.png");
            panic!(
                "frame {f}: {:.0}% background: a grid was not drawn",
                b * 100.0
            );
        }
    }
    let near = h.picture(last);
    common::save(&h, &near, "grid-scene-near.png");
    let audit = h
        .app
        .world()
        .resource::<mipstream_bevy::BindingAudit>()
        .counts();
    assert!(audit.mesh_checks >= 2 * frames as u64, "{audit:?}");
    assert_eq!(
        (
            audit.meshes_not_current,
            audit.meshes_not_drawable,
            audit.mesh_size_mismatches
        ),
        (0, 0, 0),
        "{audit:?}"
    );
    assert!(h.mipstream().mesh_uploads() >= 2);
    assert_eq!(h.mipstream().held_mesh_lods(), 2, "the coarsest and LOD 0");
    // and Bevy's diagnostics say so (after a "below" count taken since)
    use mipstream_bevy::MipstreamDiagnostics as D;
    for _ in 0..D::REPORT_EVERY {
        h.frame();
    }
    let store = h
        .app
        .world()
        .resource::<bevy::diagnostic::DiagnosticsStore>();
    let value = |p| store.get(&p).and_then(|d| d.value()).expect("measured");
    assert_eq!(value(D::MESH_LODS), 2.0);
    assert_eq!(value(D::MESHES_BELOW), 0.0);
    let mesh_mib = h.mipstream().report().totals.mesh as f64 / (1u64 << 20) as f64;
    assert!(
        (value(D::MESH_MIB) - mesh_mib).abs() < 1e-9,
        "{} vs {mesh_mib}",
        value(D::MESH_MIB)
    );
    // away again: the detail goes, from mipstream and from Bevy's assets
    *camera.single_mut(h.app.world_mut()).unwrap() =
        Transform::from_xyz(0.0, 0.0, 200.0).looking_at(Vec3::ZERO, Vec3::Y);
    let mut frames = 0;
    loop {
        h.frame();
        let st = status(&h);
        let bevy_meshes = h.app.world().resource::<Assets<Mesh>>().len();
        if st.resident == st.planned
            && st.resident > 0
            && bevy_meshes == own_meshes + h.mipstream().held_mesh_lods()
        {
            break;
        }
        frames += 1;
        assert!(frames < 300, "{st:?}, {bevy_meshes} Bevy meshes");
    }
    let st = status(&h);
    assert!(st.resident >= 3, "{st:?}");
    assert_eq!(
        h.mipstream().held_mesh_lods(),
        1 + usize::from(st.resident != st.coarsest)
    );
    assert_eq!(
        h.mipstream().report().totals.mesh,
        h.mipstream()
            .streamer()
            .mesh_bytes_at(mesh, st.resident)
            .unwrap()
    );
    // the scene despawns: its mesh, objects and textures leave the streamer
    let root = h
        .app
        .world_mut()
        .query_filtered::<Entity, With<Children>>()
        .iter(h.app.world())
        .find(|&e| {
            h.app
                .world()
                .get::<Name>(e)
                .is_some_and(|n| n.as_str() == "grid")
        })
        .expect("the scene root");
    h.app.world_mut().despawn(root);
    for _ in 0..4 {
        h.frame();
    }
    let s = h.mipstream().streamer();
    assert_eq!((s.mesh_ids().len(), s.object_count()), (0, 0));
    assert_eq!(h.mipstream().held_mesh_lods(), 0);
    assert_eq!(h.mipstream().report().totals.mesh, 0);
    assert_eq!(
        h.mipstream().streamed_images(),
        0,
        "the material's image was dropped"
    );
}

#[test]
fn a_broken_scene_is_a_typed_error_and_spawns_nothing() {
    use mipstream_bevy::{spawn_streamed_scene, SceneSpawnError};
    let missing = std::path::Path::new("/nonexistent/scene.json");
    assert!(matches!(
        spawn_streamed_scene(&mut World::new(), missing, Transform::IDENTITY),
        Err(SceneSpawnError::Scene(_))
    ));
    let (_one, mut h) = settled(4);
    let textures = builtin_textures();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bevy-test/broken-scene");
    let scene = common::grid_scene(&dir, &textures[0], &[Vec3::ZERO], 1.0);
    // what is registered and spawned
    let state = |h: &common::Harness| {
        let ms = h.mipstream();
        (
            ms.streamer().mesh_ids().len(),
            ms.held_mesh_lods(),
            ms.streamer().object_count(),
            ms.streamed_images(),
            h.app.world().entities().count_spawned(),
        )
    };
    let before = state(&h);
    // a mesh file cut short
    let mesh = std::fs::read(dir.join("grid.msmesh")).unwrap();
    std::fs::write(dir.join("grid.msmesh"), &mesh[..mesh.len() / 2]).unwrap();
    let err = spawn_streamed_scene(h.app.world_mut(), &scene, Transform::IDENTITY).unwrap_err();
    assert!(matches!(err, SceneSpawnError::Mesh { .. }), "{err}");
    assert!(err.to_string().contains("grid.msmesh"), "{err}");
    // a texture that is not KTX2
    std::fs::write(dir.join("grid.msmesh"), &mesh).unwrap();
    let text = std::fs::read_to_string(&scene).unwrap();
    std::fs::write(dir.join("not.ktx2"), b"not a texture").unwrap();
    let broken = text.replace(&*textures[0].to_string_lossy(), "not.ktx2");
    std::fs::write(&scene, broken).unwrap();
    let err = spawn_streamed_scene(h.app.world_mut(), &scene, Transform::IDENTITY).unwrap_err();
    assert!(matches!(err, SceneSpawnError::Texture { .. }), "{err}");
    // a bad file spawns no entity and leaves no mesh, object or texture
    // behind (the texture registered before the failing one goes as its
    // image's handle drops)
    h.frame();
    h.frame();
    assert_eq!(before, state(&h));
}

/// What wgpu counted at one moment: after the plugin's `update()` in the
/// main world, or after Bevy's render world submitted its frame.
#[derive(Debug, Clone, Copy)]
struct Reading {
    moment: &'static str,
    /// Main-world frames since the last cut (`None`: no cut yet).
    since_cut: Option<u32>,
    /// The device's texture memory (Bevy's own included).
    device: u64,
    budget: u64,
}

/// The readings, and what the main world last set.
#[derive(Default)]
struct Log {
    readings: Vec<Reading>,
    /// The budget in force (0: not reading yet).
    budget: u64,
    /// The frame of the last cut.
    cut: Option<u32>,
    frame: u32,
}

#[derive(Resource, Clone, Default)]
struct Readings(std::sync::Arc<Mutex<Log>>);

fn texture_memory(device: &wgpu::Device) -> u64 {
    mipstream::gpu::memory::counters(device)
        .texture_memory
        .max(0) as u64
}

impl Readings {
    fn read(&self, moment: &'static str, device: &wgpu::Device) {
        let mut log = self.0.lock().unwrap();
        if log.budget > 0 {
            let reading = Reading {
                moment,
                since_cut: log.cut.map(|c| log.frame - c),
                device: texture_memory(device),
                budget: log.budget,
            };
            log.readings.push(reading);
        }
    }
}

/// Item 2 of the memory guarantee in Bevy's own render world, on lavapipe:
/// wgpu's count of mipstream's textures, read right after the plugin's
/// `update()` (main world) and right after Bevy's render world submits its
/// frame, is within the budget outside a cut and within the new one 4
/// frames after a cut. The plugin's retiring books hold a replaced texture
/// until Bevy's 3 frames in flight have passed, so no bind group of a frame
/// still recording holds memory the books let go. Mipstream's share is the
/// device's texture memory less Bevy's own, read at the end once every
/// streamed texture is gone (Bevy's buffers move by about 390 KiB from
/// frame to frame, so buffers are not compared; this scene streams no
/// meshes and mipstream's only buffers are its upload staging).
#[test]
fn wgpus_count_in_bevys_render_world_stays_in_the_budget() {
    use bevy::render::renderer::RenderDevice;
    use bevy::render::{Render, RenderApp, RenderSystems};
    use mipstream_bevy::MipstreamSystems;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let readings = Readings::default();
    let (main, render) = (readings.clone(), readings.clone());
    let textures = builtin_textures();
    let mut h = common::harness_with(&textures[13..17], 64 << 20, SIZE, move |app| {
        app.add_systems(
            PostUpdate,
            (move |device: Res<RenderDevice>| main.read("after update()", device.wgpu_device()))
                .after(MipstreamSystems::Update),
        );
        app.sub_app_mut(RenderApp)
            .insert_resource(common::NoCapture)
            .add_systems(
                Render,
                (move |device: Res<RenderDevice>| {
                    render.read("after the submit", device.wgpu_device())
                })
                .in_set(RenderSystems::Cleanup),
            );
    });
    h.settle(600);
    let held = h.mipstream().streamer().gpu_bytes();
    let tails = h.mipstream().report().tail_bytes;
    // the budgets: binding at what is held (a cut from the harness's 64
    // MiB), a cut to near the tails, back, a cut to half, back
    let cut = tails + (held - tails) / 10;
    let schedule = |f: u32| match f {
        0..30 => held,
        30..50 => cut,
        50..90 => held,
        90..110 => held / 2,
        _ => held,
    };
    let mut in_force = 64 << 20;
    let mut last_cut = None;
    for f in 0..130u32 {
        let b = schedule(f);
        if b < in_force {
            last_cut = Some(f);
        }
        in_force = b;
        {
            let mut log = readings.0.lock().unwrap();
            (log.budget, log.cut, log.frame) = (b, last_cut, f);
        }
        h.app.insert_resource(StreamingBudget(b));
        h.frame();
        std::thread::sleep(std::time::Duration::from_millis(4));
    }
    readings.0.lock().unwrap().budget = 0;
    // Bevy's own textures: every quad despawned, mipstream's textures gone
    // and given back, the device idle
    let quads: Vec<Entity> = h
        .app
        .world_mut()
        .query_filtered::<Entity, With<Quad>>()
        .iter(h.app.world())
        .collect();
    for e in quads {
        h.app.world_mut().despawn(e);
    }
    // (a byte of budget: the recycle pool goes too)
    h.app.insert_resource(StreamingBudget(1));
    let device = h
        .app
        .world()
        .resource::<RenderDevice>()
        .wgpu_device()
        .clone();
    for _ in 0..12 {
        // (not `h.frame()`: the tails leave a frame after their quads, a
        // byte of budget holds none of them meanwhile)
        h.app.update();
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    }
    let s = h.mipstream().streamer();
    assert_eq!((s.gpu_bytes(), h.mipstream().streamed_images()), (0, 0));
    let bevy_own = texture_memory(&device);
    let r = readings.0.lock().unwrap().readings.clone();
    let counted = |x: &Reading| x.device.saturating_sub(bevy_own);
    assert!(r.len() >= 250, "both moments every frame: {}", r.len());
    assert!(
        r.iter().any(|x| x.moment == "after the submit")
            && r.iter().any(|x| x.since_cut == Some(2)),
        "readings from the render world and after the cuts"
    );
    let bad: Vec<(Reading, u64)> = r
        .iter()
        .filter(|x| counted(x) > x.budget && x.since_cut.is_none_or(|n| n > 4))
        .map(|x| (*x, counted(x)))
        .collect();
    assert!(
        bad.is_empty(),
        "wgpu's count of mipstream's textures over the budget outside a cut's 4 frames (Bevy's own {bevy_own}): {bad:#?}"
    );
    // the cut to a tenth bound: memory was given back after it
    let peak_in_cut = r
        .iter()
        .filter(|x| x.budget == cut)
        .map(counted)
        .max()
        .unwrap();
    let end_of_cut = r
        .iter()
        .filter(|x| x.budget == cut)
        .map(counted)
        .next_back()
        .unwrap();
    assert!(
        peak_in_cut > cut && end_of_cut <= cut,
        "the cut should bind and be met: {peak_in_cut} then {end_of_cut}, budget {cut}"
    );
}
