//! GPU feedback from the glTF material renderer (`shaders/mesh.wgsl`):
//! FlightHelmet's base colours and normal maps report where the fragment
//! shader samples them, and an opaque draw's hidden fragments do not.

mod common;
#[path = "common/scene_render.rs"]
mod scene_render;

use glam::{Mat4, UVec2, Vec3};
use mipstream::cook::gltf::{cook_gltf, GltfCookOptions};
use mipstream::gpu::feedback::FeedbackFrame;
use mipstream::{Budget, Streamer, StreamerOptions, View};
use mipstream_tools::gltf_scene::StreamedScene;
use mipstream_tools::render_mesh::{
    FeedbackTexture, MaterialBinding, MaterialFactors, MeshDraw, MeshRenderer,
};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

const SIZE: UVec2 = UVec2::new(256, 256);

/// FlightHelmet cooked once for this binary.
fn cooked() -> &'static PathBuf {
    static COOKED: OnceLock<PathBuf> = OnceLock::new();
    COOKED.get_or_init(|| {
        let out = common::output_dir().join("gltf-feedback-helmet");
        let _ = std::fs::remove_dir_all(&out);
        let gltf = common::shared_data().join("scenes/FlightHelmet/FlightHelmet.gltf");
        let opts = GltfCookOptions {
            quality: 0,
            ..GltfCookOptions::default()
        };
        cook_gltf(&gltf, &out, &opts, |_| {}).unwrap();
        out.join("scene.json")
    })
}

/// The helmet streamed with room for everything and feedback on, settled
/// at its orbit camera; the renderer reports into the streamer's buffer.
fn helmet() -> (Streamer, StreamedScene, MeshRenderer, View) {
    let g = common::gpu();
    common::assert_early_depth_test(g);
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(512 << 20),
            ..Default::default()
        },
    );
    let mut scene = StreamedScene::load(&mut s, cooked()).unwrap();
    // one slot more than the textures: the test's own material reports there
    let slots = s.texture_ids().iter().map(|id| id.index() + 2).max();
    s.enable_feedback(slots.unwrap() as u32);
    let (eye, at) = scene.orbit_eye(1.6);
    let view = View::look_at(eye, at, Vec3::Y, 0.8, SIZE, 0.01, 1000.0);
    s.settle(std::slice::from_ref(&view), Duration::from_secs(120))
        .unwrap();
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);
    let changed = s.take_changed();
    scene.sync(&g.device, &renderer, &s, &changed);
    renderer.set_feedback(&g.device, s.feedback_buffer());
    (s, scene, renderer, view)
}

/// Draws `draws` (the picture is not looked at: the feedback is).
fn draw(r: &mut MeshRenderer, view: &View, draws: &[MeshDraw<'_>]) {
    scene_render::render(r, view, draws, SIZE);
}

/// Records what the draws so far reported, waits for the GPU (a test may;
/// `update` never does) and returns what the next update took.
/// (The map is reported at a poll after the GPU ran the copy; where it
/// comes after the update's own, the next update takes it: taking the
/// frame before's again made a test see one frame's pixels twice.)
fn take(s: &mut Streamer, view: &View) -> FeedbackFrame {
    let g = common::gpu();
    let mut encoder = g.device.create_command_encoder(&Default::default());
    let recorded = s.frame();
    assert!(s.record_feedback(&mut encoder), "a readback buffer is free");
    g.queue.submit([encoder.finish()]);
    for _ in 0..10 {
        g.device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("poll");
        assert_eq!(s.update(std::slice::from_ref(view)).gpu_waits, 0);
        let f = s.latest_feedback().cloned().expect("feedback mapped");
        if f.frame >= recorded {
            return f;
        }
    }
    panic!("the feedback of frame {recorded} was never mapped");
}

/// Every texture the feedback saw is one of the helmet's materials'
/// streamed base colours or normal maps, most of them report, each with a
/// finest lod no coarser than its mean and pixels on screen; and with the
/// renderer's report switched off, nothing reports.
#[test]
fn the_helmets_materials_report_what_they_sample() {
    let (mut s, mut scene, mut r, view) = helmet();
    let draws = scene.draws(&s);
    assert!(!draws.is_empty());
    draw(&mut r, &view, &draws);
    let fb = take(&mut s, &view);
    let seen: BTreeSet<usize> = (0..fb.slots.len())
        .filter(|&i| fb.slots[i].is_some())
        .collect();
    let used: BTreeSet<usize> = scene
        .materials
        .iter()
        .flat_map(|m| [m.base_color, m.normal])
        .flatten()
        .map(|id| id.index())
        .collect();
    eprintln!("seen {seen:?} of the materials' {used:?}");
    assert!(seen.is_subset(&used), "seen {seen:?}, used {used:?}");
    assert!(seen.len() * 2 >= used.len(), "seen {seen:?}, used {used:?}");
    for &i in &seen {
        let f = fb.slots[i].unwrap();
        assert!(f.pixels > 0, "{i}: {f:?}");
        assert!(f.finest_lod <= f.mean_lod + 1.0 / 8.0, "{i}: {f:?}");
        assert!(f.regions != 0, "{i}: {f:?}");
    }
    r.report_feedback = false;
    scene_render::render_streamed(&mut r, &mut s, &mut scene, &view, SIZE);
    let off = take(&mut s, &view);
    assert_eq!(off.seen(), 0, "report_feedback off: {off:?}");
}

/// An opaque draw runs its fragment stage after the depth test: a small
/// copy of the helmet straight behind it, drawn after it with a material
/// of its own (one slot past the textures), reports a small share of the
/// pixels it reports drawn alone.
#[test]
fn an_opaque_draws_hidden_fragments_do_not_report() {
    let g = common::gpu();
    let (mut s, scene, mut r, view) = helmet();
    let slot = s.texture_ids().iter().map(|id| id.index()).max().unwrap() as u32 + 1;
    let base = scene.materials.iter().find_map(|m| m.base_color).unwrap();
    let material = r.material_reporting(
        &g.device,
        Some(s.texture_view(base).unwrap()),
        None,
        &MaterialFactors::default(),
        [
            Some(FeedbackTexture {
                slot,
                size: [1024.0, 1024.0],
            }),
            None,
        ],
    );
    // half the size, about the helmet's centre, a scene radius further away
    let (lo, hi) = scene.bounds;
    let center = (lo + hi) * 0.5;
    let away = (center - view.position).normalize() * (hi - lo).length() * 0.5;
    let back = Mat4::from_translation(center + away)
        * Mat4::from_scale(Vec3::splat(0.5))
        * Mat4::from_translation(-center);
    // the copy: another model, the test's material, no cross-fade
    fn copy<'a>(d: &MeshDraw<'a>, back: Mat4, material: &'a MaterialBinding) -> MeshDraw<'a> {
        MeshDraw {
            model: back * d.model,
            material,
            fade: 0.0,
            ..*d
        }
    }
    {
        let behind: Vec<MeshDraw<'_>> = scene
            .draws(&s)
            .iter()
            .map(|d| copy(d, back, &material))
            .collect();
        draw(&mut r, &view, &behind);
    }
    let alone = take(&mut s, &view).slots[slot as usize]
        .expect("the copy alone reports")
        .pixels;
    {
        let front = scene.draws(&s);
        let behind = front.iter().map(|d| copy(d, back, &material));
        let both: Vec<MeshDraw<'_>> = front.iter().copied().chain(behind).collect();
        draw(&mut r, &view, &both);
    }
    let hidden = take(&mut s, &view).slots[slot as usize].map_or(0, |f| f.pixels);
    eprintln!("the copy behind: {alone} pixels alone, {hidden} behind the helmet");
    assert!(
        hidden * 4 < alone,
        "{hidden} of {alone} pixels reported behind the helmet"
    );
}

/// The id pass `mipstream_oracle` plans from on glTF scenes
/// (`MeshRenderer::render_ids`): each pixel's base colour texture (one
/// pass) and normal map (another) by slot, with the lod of the full chain.
/// It sees the textures the feedback saw, at the finest lods the feedback
/// reported, and no more pixels.
#[test]
fn the_id_pass_sees_what_the_feedback_reports() {
    use mipstream_tools::render::TexturePixel;
    use mipstream_tools::render_mesh::MaterialTexture;
    use std::collections::BTreeMap;
    let g = common::gpu();
    let (mut s, scene, mut r, view) = helmet();
    draw(&mut r, &view, &scene.draws(&s));
    let fb = take(&mut s, &view);
    let draws = scene.draws(&s);
    let target = mipstream::gpu::readback::render_target(
        &g.device,
        "id target",
        (SIZE.x, SIZE.y),
        wgpu::TextureFormat::Rgba8UnormSrgb,
    );
    let tv = target.create_view(&Default::default());
    // slot -> (finest lod, pixels)
    let mut ids: BTreeMap<usize, (f32, u32)> = BTreeMap::new();
    for which in [MaterialTexture::BaseColor, MaterialTexture::Normal] {
        r.render_ids(&g.device, &g.queue, &tv, SIZE, &view, &draws, which);
        let px = mipstream::gpu::read_rgba8(&g.device, &g.queue, &target, 0, 0).unwrap();
        for p in px.chunks_exact(4) {
            if let Some(t) = TexturePixel::decode([p[0], p[1], p[2], p[3]]) {
                let e = ids.entry(t.index).or_insert((f32::INFINITY, 0));
                e.0 = e.0.min(t.lod);
                e.1 += 1;
            }
        }
    }
    // the id pass reports no feedback
    drop(draws);
    let after = take(&mut s, &view);
    assert_eq!(after.seen(), 0, "{after:?}");
    eprintln!("id pass {ids:?}");
    assert!(!ids.is_empty());
    for (i, f) in fb.slots.iter().enumerate() {
        let Some(f) = f else {
            // too small for one pixel in four
            assert!(ids.get(&i).is_none_or(|&(_, n)| n < 16), "{i}: {ids:?}");
            continue;
        };
        let &(finest, pixels) = ids
            .get(&i)
            .unwrap_or_else(|| panic!("{i} not in the id pass"));
        // within half a level: the feedback's pixels are one in four (its
        // finest may be coarser), and its fragments include those a later
        // draw covers (finer, at times)
        assert!(
            (finest - f.finest_lod).abs() <= 0.5,
            "{i}: id pass finest {finest}, feedback {f:?}"
        );
        // the id pass counts the pixels shown; the feedback counts every
        // fragment that passed the depth test when drawn, those a later
        // draw covers included (on the helmet's overlapping parts up to 8
        // times the pixels shown: no depth prepass), so at least as many,
        // within its one-in-four sampling
        assert!(
            f.pixels as f32 >= 0.5 * pixels as f32,
            "{i}: {pixels} pixels, feedback {f:?}"
        );
    }
}
