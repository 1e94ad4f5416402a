//! GPU feedback through the plugin, in Bevy's own render world on lavapipe:
//! what Bevy's frames sample reaches the streamer, hidden surfaces report
//! nothing, and the plan follows it.

mod common;

use bevy::prelude::*;
use common::Quad;
use mipstream::TextureId;
use mipstream_bevy::{FeedbackDrawOf, MipstreamPlugin};
use std::sync::{Mutex, MutexGuard};

/// One Bevy app at a time (each holds a lavapipe device and its threads).
static SERIAL: Mutex<()> = Mutex::new(());

const SIZE: UVec2 = UVec2::new(512, 288);
const EYE: f32 = common::WALL_EYE;

/// The plugin's test wall (four quads, 2 x 1.125 units each, filling the
/// view from `EYE` units away, quads 0 to 3) and the same four quads a
/// third of a unit behind it (quads 4 to 7): in the view's frustum, their
/// boxes nine tenths the size of the wall's on screen, and hidden by it.
/// With `layered`, a ninth quad (8) exactly where wall quad 0 is, on a
/// render layer the camera does not draw. Each quad has a texture of its
/// own.
fn wall_and_hidden(
    feedback: bool,
    budget: u64,
    layered: bool,
) -> (MutexGuard<'static, ()>, common::Harness) {
    wall_and_hidden_compiling(feedback, budget, layered, true)
}

/// [`wall_and_hidden`], with Bevy compiling pipelines in the background
/// unless `synchronous`.
fn wall_and_hidden_compiling(
    feedback: bool,
    budget: u64,
    layered: bool,
    synchronous: bool,
) -> (MutexGuard<'static, ()>, common::Harness) {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let textures = common::builtin_textures();
    let dir = textures[0].parent().unwrap().to_path_buf();
    let count = if layered { 9 } else { 8 };
    let names = common::file_names(&textures[..count]);
    let plugin = MipstreamPlugin {
        budget,
        workers: 1,
        feedback,
        ..default()
    };
    let (mut app, target) = common::app_compiling(&dir, plugin, SIZE, synchronous);
    app.add_systems(
        Startup,
        move |mut commands: Commands,
              assets: Res<AssetServer>,
              mut meshes: ResMut<Assets<Mesh>>,
              mut materials: ResMut<Assets<StandardMaterial>>| {
            commands.spawn(common::camera(&target, Vec3::new(0.0, 0.0, EYE)));
            let quad = meshes.add(Rectangle::new(2.0, 1.125));
            for (i, name) in names.iter().enumerate() {
                let material = materials.add(common::unlit(&assets, name));
                let (x, y) = common::wall_quad(i % 4);
                let z = if i < 4 || i == 8 { 0.0 } else { -0.3 };
                let mut e = commands.spawn((
                    Mesh3d(quad.clone()),
                    MeshMaterial3d(material),
                    Transform::from_xyz(x, y, z),
                    Quad(i),
                ));
                if i == 8 {
                    // on a layer the camera does not draw, exactly where
                    // wall quad 0 is
                    e.insert(bevy::camera::visibility::RenderLayers::layer(1));
                }
            }
        },
    );
    (guard, common::finish(app, SIZE))
}

/// The streamed texture of each quad, by quad.
fn quad_textures(h: &mut common::Harness) -> Vec<TextureId> {
    let world = h.app.world_mut();
    let mut q = world.query::<(&Quad, &MeshMaterial3d<StandardMaterial>)>();
    let mut quads: Vec<(usize, AssetId<StandardMaterial>)> =
        q.iter(world).map(|(quad, m)| (quad.0, m.id())).collect();
    quads.sort_by_key(|q| q.0);
    let materials = world.resource::<Assets<StandardMaterial>>();
    let ms = world.resource::<mipstream_bevy::Mipstream>();
    quads
        .iter()
        .map(|(_, m)| {
            let image = materials
                .get(*m)
                .unwrap()
                .base_color_texture
                .clone()
                .unwrap();
            ms.texture_id(&image).expect("registered")
        })
        .collect()
}

/// The lod the sampler picks on a wall quad: the wall is parallel to the
/// image plane, so the footprint is the same at every pixel: the texture's
/// texels over the quad's pixels, on the axis where they are most.
fn wall_lod(width: u32, height: u32) -> f32 {
    // Bevy's default perspective: 45 degrees vertically
    let pixels_per_unit = SIZE.y as f32 / (2.0 * EYE * (std::f32::consts::FRAC_PI_8).tan());
    let across = width as f32 / (2.0 * pixels_per_unit);
    let up = height as f32 / (1.125 * pixels_per_unit);
    across.max(up).log2()
}

#[test]
fn bevys_frames_report_what_they_sample_and_hidden_surfaces_do_not() {
    common::require_vulkan();
    let (_serial, mut h) = wall_and_hidden(true, 64 << 20, true);
    // 70 textures registered by hand before the scene's images: theirs
    // take slots past the feedback buffer's first 64, which must grow
    {
        let files = common::builtin_textures();
        let mut ms = h
            .app
            .world_mut()
            .resource_mut::<mipstream_bevy::Mipstream>();
        for path in files.iter().cycle().take(70) {
            let file = mipstream::TextureFile::open_path(path).unwrap();
            let desc = mipstream::streamer::TextureDesc::new(file);
            ms.streamer_mut().register_texture(desc).unwrap();
        }
    }
    h.settle(400);
    for _ in 0..4 {
        h.frame();
    }
    let ids = quad_textures(&mut h);
    assert!(ids.iter().all(|id| id.index() >= 70), "{ids:?}");
    let draws = {
        let world = h.app.world_mut();
        world
            .query_filtered::<(), With<FeedbackDrawOf>>()
            .iter(world)
            .count()
    };
    assert_eq!(draws, 9, "one feedback draw per streamed entity");
    let ms = h.mipstream();
    let s = ms.streamer();
    let stats = ms.frame_stats();
    let f = s.latest_feedback().expect("feedback reached the streamer");
    assert!(
        f.frame <= s.frame() && s.frame() - f.frame <= 3,
        "feedback of frame {} at frame {}",
        f.frame,
        s.frame()
    );
    assert!(
        stats.feedback_age.is_some_and(|a| a <= 3),
        "{:?}",
        stats.feedback_age
    );
    // a quarter of the picture each
    let quarter = (SIZE.x * SIZE.y / 4) as f32;
    for (quad, &id) in ids[..4].iter().enumerate() {
        let slot = f.slots.get(id.index()).copied().flatten();
        let slot = slot.unwrap_or_else(|| panic!("quad {quad} ({id}) not reported"));
        let info = s.texture_info(id).unwrap();
        let lod = wall_lod(info.width, info.height);
        assert!(
            (slot.pixels as f32 - quarter).abs() < 0.1 * quarter,
            "quad {quad}: {} pixels, a quarter of the view is {quarter}",
            slot.pixels
        );
        assert!(
            (slot.finest_lod - lod).abs() < 0.25 && (slot.mean_lod - lod).abs() < 0.25,
            "quad {quad} ({}x{}): finest lod {}, mean {}, the sampler's {lod}",
            info.width,
            info.height,
            slot.finest_lod,
            slot.mean_lod
        );
        // the whole texture shows: every region of its 8x8 grid
        assert_eq!(slot.regions, u64::MAX, "quad {quad}: {:#x}", slot.regions);
    }
    assert_eq!(stats.feedback_textures, 4, "{stats:?}");
    for (quad, hidden) in ids.iter().enumerate().skip(4) {
        assert_eq!(
            f.slots.get(hidden.index()).copied().flatten(),
            None,
            "quad {quad}, behind the wall or on a layer the camera does not draw, reported"
        );
    }
}

/// Each quad texture's planned level and the plan's coverage (its pixels)
/// after `frames` frames past settling at `budget`.
fn planned(feedback: bool, budget: u64, frames: u32) -> Vec<(u32, f32)> {
    let (_serial, mut h) = wall_and_hidden(feedback, budget, false);
    h.settle(400);
    for _ in 0..frames {
        h.frame();
    }
    let ids = quad_textures(&mut h);
    let ms = h.mipstream();
    let s = ms.streamer();
    assert_eq!(s.latest_feedback().is_some(), feedback);
    let report = ms.report();
    ids.iter()
        .map(|&id| {
            let t = report.textures.iter().find(|t| t.id == id).unwrap();
            (t.planned, t.coverage)
        })
        .collect()
}

#[test]
fn the_plan_follows_what_bevy_samples_not_what_the_boxes_say() {
    common::require_vulkan();
    // a budget for the wall at the level it wants and the hidden quads at
    // their tails, and room for one growth beside them (its new texture and
    // the upload's staging): the CPU alone, taking the hidden boxes for
    // visible, must leave some of the wall below what it wants
    let budget = {
        let (_serial, mut h) = wall_and_hidden(false, 64 << 20, false);
        h.settle(400);
        let ids = quad_textures(&mut h);
        let s = h.mipstream().streamer();
        let wanted: Vec<u32> = ids
            .iter()
            .map(|&id| s.texture_status(id).unwrap().wanted)
            .collect();
        let at = |i: usize, level: u32| s.bytes_from_level(ids[i], level).unwrap();
        let wall: u64 = (0..4).map(|i| at(i, wanted[i])).sum();
        let hidden: u64 = (4..8).map(|i| at(i, u32::MAX)).sum();
        let growth = (0..8).map(|i| 2 * at(i, wanted[i])).max().unwrap();
        wall + hidden + growth
    };
    let cpu = planned(false, budget, 0);
    // ten half-lives of the remembered share (FUSION_HALF_LIFE): the hidden
    // quads' boxes have faded to a thousandth
    let fused = planned(
        true,
        budget,
        10 * mipstream::plan::feedback::FUSION_HALF_LIFE as u32,
    );
    let quarter = (SIZE.x * SIZE.y / 4) as f32;
    for quad in 0..8 {
        let (c, f) = (cpu[quad].1, fused[quad].1);
        if quad < 4 {
            // the CPU's box and the GPU's pixels agree on the wall
            assert!(
                (c - quarter).abs() < 0.1 * quarter && (f - quarter).abs() < 0.1 * quarter,
                "wall quad {quad}: {c} pixels by its box, {f} fused, {quarter} drawn"
            );
        } else {
            assert!(
                c > 0.5 * quarter && f < 0.01 * c,
                "hidden quad {quad}: {c} pixels by its box, still {f} fused"
            );
        }
    }
    let levels = |p: &[(u32, f32)]| p.iter().map(|q| q.0).sum::<u32>();
    assert!(
        levels(&fused[..4]) < levels(&cpu[..4]),
        "the wall is no sharper with feedback: {fused:?} against {cpu:?}"
    );
    assert!(
        levels(&fused[4..]) > levels(&cpu[4..]),
        "the hidden quads keep their levels with feedback: {fused:?} against {cpu:?}"
    );
}

/// A cooked scene's meshes are Bevy meshes mipstream hands over (render
/// world only), drawn lit with the scene's materials: they report too.
#[test]
fn a_cooked_scenes_meshes_report_what_they_sample() {
    common::require_vulkan();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let textures = common::builtin_textures();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bevy-test/feedback-grid-scene");
    let scene = common::grid_scene(&dir, &textures[2], &[Vec3::ZERO], 1.0);
    let plugin = MipstreamPlugin {
        budget: 64 << 20,
        workers: 1,
        feedback: true,
        ..default()
    };
    let mut h = common::scene_harness_with(scene, plugin, SIZE, Vec3::new(0.0, 0.0, 6.0));
    h.settle(600);
    for _ in 0..4 {
        h.frame();
    }
    let s = h.mipstream().streamer();
    let f = s.latest_feedback().expect("feedback");
    assert_eq!(f.seen(), 1, "{f:?}");
}

/// Bevy compiles pipelines in the background by default and skips the
/// draws whose pipeline is not ready: no feedback of such a frame reaches
/// the streamer (it would read the wall as hidden), so every feedback frame
/// taken sees the whole wall.
#[test]
fn frames_drawn_while_pipelines_compile_report_nothing() {
    common::require_vulkan();
    let (_serial, mut h) = wall_and_hidden_compiling(true, 64 << 20, false, false);
    // (the compiling takes a time of its own: up to 600 frames for 40
    // feedback frames)
    let (mut taken, mut frames) = (0, 0);
    while taken < 40 && frames < 600 {
        h.frame();
        frames += 1;
        let ms = h.mipstream();
        if let Some(f) = ms.streamer().latest_feedback() {
            taken += 1;
            assert!(
                f.seen() >= 4,
                "frame {}: feedback of frame {} saw {}",
                ms.streamer().frame(),
                f.frame,
                f.seen()
            );
        }
    }
    assert_eq!(
        taken, 40,
        "feedback reached the streamer in {taken} of {frames} frames"
    );
}

/// The feedback draw writes nothing to the picture: with every texture at
/// the level its view wants, the frame with feedback is the frame without.
#[test]
fn the_feedback_draw_leaves_the_picture_as_it_was() {
    common::require_vulkan();
    let picture = |feedback: bool| {
        let (_serial, mut h) = wall_and_hidden(feedback, 64 << 20, false);
        h.settle(400);
        let ids = quad_textures(&mut h);
        let s = h.mipstream().streamer();
        for &id in &ids[..4] {
            let t = s.texture_status(id).unwrap();
            assert!(t.resident <= t.wanted, "{id}: {t:?}");
        }
        let frame = h.frame_count();
        h.picture(frame)
    };
    let (without, with) = (picture(false), picture(true));
    assert_eq!(
        common::mean_abs_diff(&without, &with),
        0.0,
        "the wall differs with the feedback draw"
    );
}

/// The plugin visits only the entities whose mesh, material or layers
/// changed, unless a material or the registered images changed: the
/// feedback draws still follow an entity whose render layers go (it then
/// reports) and one that stops drawing a `StandardMaterial` (its draw
/// goes).
#[test]
fn feedback_draws_follow_entities_that_change() {
    common::require_vulkan();
    let (_serial, mut h) = wall_and_hidden(true, 64 << 20, true);
    h.settle(400);
    for _ in 0..4 {
        h.frame();
    }
    let layered = quad_textures(&mut h)[8];
    let reported = |h: &common::Harness| {
        let f = h.mipstream().streamer().latest_feedback();
        f.and_then(|f| f.slots.get(layered.index()).copied().flatten())
            .map_or(0, |s| s.pixels)
    };
    assert_eq!(
        reported(&h),
        0,
        "quad 8 is on a layer the camera does not draw"
    );
    let quad = {
        let world = h.app.world_mut();
        let mut q = world.query::<(Entity, &Quad)>();
        q.iter(world).find(|(_, q)| q.0 == 8).unwrap().0
    };
    let draws = |h: &mut common::Harness| {
        let world = h.app.world_mut();
        world
            .query_filtered::<(), With<FeedbackDrawOf>>()
            .iter(world)
            .count()
    };
    assert_eq!(draws(&mut h), 9);
    // on the camera's layer now, where wall quad 0 is: it reports
    h.app
        .world_mut()
        .entity_mut(quad)
        .remove::<bevy::camera::visibility::RenderLayers>();
    // (the next readback that maps: a few frames, more on a loaded machine)
    let quarter = SIZE.x * SIZE.y / 4;
    for _ in 0..60 {
        h.frame();
        if reported(&h) > quarter / 2 {
            break;
        }
    }
    assert!(
        reported(&h) > quarter / 2,
        "quad 8 reported {} pixels once on the camera's layer",
        reported(&h)
    );
    // no StandardMaterial any more: no feedback draw
    h.app
        .world_mut()
        .entity_mut(quad)
        .remove::<MeshMaterial3d<StandardMaterial>>();
    h.frame();
    h.frame();
    assert_eq!(draws(&mut h), 8, "quad 8's feedback draw stayed");
}
