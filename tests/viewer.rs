//! The demo viewer driven headless, through the same `Viewer` the window
//! uses: its picture against the scene golden, the budget slider degrading
//! and restoring detail, the split view's full-resolution half, and the panel
//! leaving room for the scene.

mod common;

use glam::UVec2;
use image::RgbaImage;
use mipstream_tools::source::SceneSource;
use mipstream_tools::viewer::egui::RawInput;
use mipstream_tools::viewer::{Mode, Viewer, ViewerOptions};
use std::time::Duration;

const SIZE: UVec2 = UVec2::new(192, 108);

fn viewer(options: ViewerOptions) -> Viewer {
    let g = common::gpu();
    let options = ViewerOptions {
        cache_dir: common::repo().join("target/mipstream-cache"),
        ..options
    };
    Viewer::new(&g.device, &g.queue, g.describe(), &options, |_, _, _| {}).unwrap()
}

fn frame(v: &mut Viewer) -> RgbaImage {
    v.frame(1.0 / 60.0, RawInput::default()).unwrap();
    v.read_frame().unwrap()
}

fn settle(v: &mut Viewer) -> RgbaImage {
    v.settle(Duration::from_secs(120)).unwrap();
    frame(v)
}

fn crop(img: &RgbaImage, x: u32, w: u32) -> RgbaImage {
    image::imageops::crop_imm(img, x, 0, w, img.height()).to_image()
}

/// At the camera of the scene tests' golden, with room for everything, the
/// viewer draws the same picture as the scene renderer alone.
#[test]
fn headless_viewer_matches_the_scene_golden() {
    let mut v = viewer(ViewerOptions {
        size: SIZE,
        ui: false,
        path_start: Some(9.0),
        budget_mb: Some(64.0),
        ..Default::default()
    });
    let img = settle(&mut v);
    assert_eq!(v.scene_rect(), [0, 0, SIZE.x, SIZE.y]);
    common::check_golden(
        "builtin-walk-t9",
        &img,
        common::Tolerance {
            min_psnr: 30.0,
            max_flip: 0.05,
        },
    );
    let s = v.summary();
    assert_eq!(s.over_budget_frames, 0);
    assert!(s.peak_resident_bytes > 0 && s.peak_resident_bytes <= s.budget_bytes);
}

/// Dragging the budget down gives up detail within a few frames without
/// going over, and blurs the picture visibly at the slider's low end (the
/// textures' tails); dragging it back up restores the full-budget picture.
#[test]
fn the_budget_slider_degrades_and_restores_detail() {
    let mut v = viewer(ViewerOptions {
        size: UVec2::new(480, 270),
        ui: false,
        budget_mb: Some(64.0),
        ..Default::default()
    });
    let sharp = settle(&mut v);
    let mib = (1 << 20) as f64;
    // a quarter of what this view needs at exactly its levels: the budget
    // binds, whatever the planner makes of it
    let wanted = v.wanted_bytes() as f64 / mib;
    let tails = v.streamer().report().tail_bytes as f64 / mib;
    let cut_to = |v: &mut Viewer, mb: f64| {
        v.set_budget_mb(mb);
        let (mut frames_to_fit, mut paced) = (None, 0);
        for f in 0..16 {
            frame(v);
            let r = v.streamer().report();
            paced += u32::from(r.frame.cut_paced && frames_to_fit.is_none());
            if frames_to_fit.is_none() && r.totals.accounted() <= r.budget {
                frames_to_fit = Some(f + 1);
            }
        }
        let frames_to_fit = frames_to_fit.expect("the held bytes fit the lowered budget");
        // the cut's shrinks (more updates where GL uploads kept levels
        // again at the cut's pace), then what they released retires
        assert!(
            frames_to_fit <= 2 + paced,
            "took {frames_to_fit} frames to fit {mb} MiB ({paced} updates paced)"
        );
        let img = settle(v);
        assert!(
            common::black_fraction(&img) < 0.01,
            "a low budget blurs, it never blanks"
        );
        (common::psnr(&sharp, &img), img)
    };
    let (quarter_psnr, low) = cut_to(&mut v, wanted * 0.25);
    let r = v.streamer().report();
    let held_back = r
        .textures
        .iter()
        .filter(|t| t.below == Some(mipstream::streamer::BelowReason::Budget))
        .count();
    assert!(
        held_back > 0,
        "a quarter of the working set holds nothing back"
    );
    assert!(r.frame.fit_error > 0.0);
    // the planner spends a quarter where it shows least: how much of the
    // picture that keeps is the planner's quality, not asserted here
    let (tail_psnr, at_tails) = cut_to(&mut v, tails);
    eprintln!(
        "a quarter of the view's working set: {quarter_psnr:.2} dB, the tails alone \
         ({tails:.3} MiB): {tail_psnr:.2} dB against the full-budget picture"
    );
    assert!(
        tail_psnr < 42.0,
        "the slider's low end must visibly blur ({tail_psnr:.1} dB)"
    );
    assert!(
        tail_psnr < quarter_psnr && quarter_psnr.is_finite(),
        "a quarter of the working set keeps more than the tails and less than \
         everything ({quarter_psnr:.1} dB, tails {tail_psnr:.1} dB)"
    );
    // raising it again streams detail back no faster than the upload cap
    v.set_budget_mb(64.0);
    let cap = v.streamer().options().upload_bytes_per_frame;
    let mut uploaded = 0;
    for _ in 0..20 {
        frame(&mut v);
        let f = v.streamer().report().frame;
        assert!(
            f.upload_bytes <= cap,
            "{} bytes in one frame, cap {cap}",
            f.upload_bytes
        );
        uploaded += f.upload_bytes;
    }
    assert!(uploaded > 0, "raising the budget streams detail back in");
    let restored = settle(&mut v);
    let back = common::psnr(&sharp, &restored);
    if back <= 45.0 {
        let out = common::output_dir();
        sharp.save(out.join("viewer-slider-sharp.png")).unwrap();
        low.save(out.join("viewer-slider-low.png")).unwrap();
        at_tails.save(out.join("viewer-slider-tails.png")).unwrap();
        restored
            .save(out.join("viewer-slider-restored.png"))
            .unwrap();
    }
    assert!(back > 45.0, "restored picture {back:.1} dB from the first");
    assert!(v.summary().over_budget_frames <= 1, "{}", v.summary());
}

/// The split view's right half is the full-resolution picture while the left
/// half is budgeted.
#[test]
fn split_view_shows_full_resolution_beside_the_budgeted_picture() {
    let size = UVec2::new(320, 180);
    let reference = {
        let mut v = viewer(ViewerOptions {
            size,
            ui: false,
            path_start: Some(9.0),
            budget_mb: Some(64.0),
            ..Default::default()
        });
        settle(&mut v)
    };
    let mut v = viewer(ViewerOptions {
        size,
        ui: false,
        path_start: Some(9.0),
        budget_mb: Some(0.5),
        mode: Mode::SplitFull,
        ..Default::default()
    });
    frame(&mut v); // creates and settles the reference streamer
    let img = settle(&mut v);
    let half = size.x / 2;
    let right = common::psnr(&crop(&reference, half, half), &crop(&img, half, half));
    let left = common::psnr(&crop(&reference, 0, half), &crop(&img, 0, half));
    assert!(right > 45.0, "the full-resolution half: {right:.1} dB");
    assert!(
        left < right - 5.0,
        "the budgeted half: {left:.1} dB vs {right:.1} dB"
    );
}

/// With the panel on, the scene is drawn in the room the panels leave, the
/// panels are drawn over the frame, and the heat-map mode runs.
#[test]
fn the_panel_leaves_room_for_the_scene() {
    let size = UVec2::new(1280, 720);
    let mut v = viewer(ViewerOptions {
        size,
        mode: Mode::Heatmap,
        ..Default::default()
    });
    frame(&mut v);
    let img = frame(&mut v);
    let [x, y, w, h] = v.scene_rect();
    assert!(
        x >= 200 && w >= 200 && w < size.x - 400,
        "{:?}",
        v.scene_rect()
    );
    assert!(
        y == 0 && h > size.y - 60 && h < size.y,
        "{:?}",
        v.scene_rect()
    );
    // the left panel is egui's dark panel with text; the scene is not dark
    let dark = |p: &image::Rgba<u8>| p.0[..3].iter().all(|&c| c < 60);
    let panel_dark = (0..x).filter(|&px| dark(img.get_pixel(px, 300))).count();
    assert!(panel_dark as u32 > x * 3 / 4, "{panel_dark} of {x}");
    let centre = img.get_pixel(x + w / 2, y + h / 2);
    assert!(!dark(centre), "scene centre {centre:?}");
    assert_eq!(v.summary().frames, 2);
}

fn magenta(img: &RgbaImage) -> usize {
    img.pixels()
        .filter(|p| {
            let [r, g, b, _] = p.0.map(i32::from);
            r > g + 60 && b > g + 60
        })
        .count()
}

/// Clicking a texture's row highlights the boxes that use it.
#[test]
fn selecting_a_texture_highlights_its_boxes() {
    let mut v = viewer(ViewerOptions {
        size: SIZE,
        ui: false,
        ..Default::default()
    });
    let before = frame(&mut v);
    let ground = v
        .streamer()
        .report()
        .textures
        .iter()
        .find(|t| t.label.contains("ground"))
        .expect("the built-in scene has a ground texture")
        .id;
    v.select_texture(Some(ground));
    let selected = frame(&mut v);
    let n = (SIZE.x * SIZE.y) as usize;
    assert!(
        magenta(&before) < n / 100,
        "{} magenta before",
        magenta(&before)
    );
    assert!(
        magenta(&selected) > n / 4,
        "{} magenta with the ground selected",
        magenta(&selected)
    );
    v.select_texture(None);
    assert!(magenta(&frame(&mut v)) < n / 100);
}

/// An out-of-memory event shows in the status line with the PyTorch-style
/// message, and the viewer keeps running within its budget.
#[test]
fn an_out_of_memory_event_shows_in_the_status_line() {
    let mut v = viewer(ViewerOptions {
        size: SIZE,
        ui: false,
        budget_mb: Some(0.5),
        ..Default::default()
    });
    frame(&mut v);
    assert!(
        v.status_line().starts_with("holding"),
        "{}",
        v.status_line()
    );
    v.set_budget_mb(64.0);
    v.streamer_mut().inject_out_of_memory(3);
    for _ in 0..20 {
        frame(&mut v);
    }
    let line = v.status_line();
    assert!(line.starts_with("out of GPU memory"), "{line}");
    assert!(line.contains("tried to allocate"), "{line}");
    assert_eq!(v.summary().over_budget_frames, 0);
}

/// A folder of real KTX2 textures (Sponza's) on the built-in boxes.
#[test]
fn a_folder_of_ktx2_textures_is_a_scene() {
    let dir = common::shared_data().join("sponza-textures");
    let mut v = viewer(ViewerOptions {
        size: UVec2::new(640, 360),
        ui: false,
        budget_mb: Some(0.5),
        scene: SceneSource::Textures(dir),
        ..Default::default()
    });
    assert_eq!(v.streamer().texture_ids().len(), 51);
    let img = settle(&mut v);
    let s = v.summary();
    assert_eq!(s.over_budget_frames, 0, "{s}");
    assert!(s.peak_resident_bytes <= s.budget_bytes, "{s}");
    // Sponza's textures have black in them; the budgeted picture has no more
    // black than the full-resolution one (no texture is ever blank)
    v.set_budget_mb(512.0);
    let full = settle(&mut v);
    let (budgeted, reference) = (common::black_fraction(&img), common::black_fraction(&full));
    assert!(
        budgeted <= reference + 0.01,
        "black: {budgeted:.3} budgeted vs {reference:.3} at full resolution"
    );
    let psnr = common::psnr(&img, &full);
    eprintln!("{s}; {psnr:.1} dB from full resolution");
    assert!(
        psnr > 15.0 && psnr < 60.0,
        "{psnr:.1} dB: 0.5 MiB of 65 blurs, but shows the same picture"
    );
    // a scene that is not there is a typed error naming it
    let g = common::gpu();
    let err = Viewer::new(
        &g.device,
        &g.queue,
        g.describe(),
        &ViewerOptions {
            scene: SceneSource::Gltf("no-such-scene.gltf".into()),
            ..Default::default()
        },
        |_, _, _| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, mipstream_tools::viewer::ViewerError::Source(_)),
        "{err}"
    );
    assert!(err.to_string().contains("no-such-scene.gltf"), "{err}");
}

/// Plays the built-in path in lockstep at a quarter of its working set with
/// a split, and returns both halves' mean scores (PSNR of the mean squared
/// error, mean FLIP) over the scored frames and the most either held.
/// Both halves' (PSNR, FLIP), the most each held, and the budget.
struct Played {
    ours: (f64, f64),
    theirs: (f64, f64),
    held: (u64, u64),
    budget: u64,
}

fn play_split(mode: Mode, frames: u64) -> Played {
    let size = UVec2::new(320, 180);
    let mut v = viewer(ViewerOptions {
        size,
        ui: false,
        path: true,
        path_start: Some(0.0),
        budget_mb: Some(64.0),
        lockstep: true,
        mode,
        ..Default::default()
    });
    let budget = v.path_working_set(40) / 4;
    v.set_budget_mb(budget as f64 / (1 << 20) as f64);
    let (mut mse, mut flip, mut held, mut n) = ([0.0f64; 2], [0.0f64; 2], [0u64; 2], 0);
    let mut last = None;
    for _ in 0..frames {
        v.frame(20.0 / frames as f32, Default::default()).unwrap();
        let s = v.split_scores().cloned();
        if let Some(s) = s.filter(|s| Some(s.frame) != last) {
            last = Some(s.frame);
            for (i, h) in [&s.left, &s.right].into_iter().enumerate() {
                mse[i] += 255.0f64.powi(2) / 10f64.powf(h.psnr_db / 10.0);
                flip[i] += h.flip as f64;
                held[i] = held[i].max(h.held);
            }
            n += 1;
        }
    }
    assert!(n >= 4, "{n} scores");
    let psnr = |m: f64| 10.0 * (255.0f64.powi(2) / (m / n as f64)).log10();
    Played {
        ours: (psnr(mse[0]), flip[0] / n as f64),
        theirs: (psnr(mse[1]), flip[1] / n as f64),
        held: (held[0], held[1]),
        budget: v.streamer().budget_bytes(),
    }
}

/// Each split against an engine's rule renders two halves, each its own
/// streamer within the budget, and along the built-in path at a binding
/// budget the rule's half scores no better than mipstream's (as the
/// benchmark measures on lavapipe). On GL, where a growth stages its kept
/// levels again and every plan leaves room for that, mipstream measured
/// 43.37 dB against Unreal's pool's 43.87 here until the locks the budget
/// cannot hold were made void (f98ef03); it measures 54.16 since, so GL is
/// held to the same bar.
#[test]
fn the_splits_against_engine_rules_score_both_halves_within_the_budget() {
    let slack = 0.05;
    for mode in [Mode::SplitUnreal, Mode::SplitUnity] {
        let Played {
            ours,
            theirs,
            held,
            budget,
        } = play_split(mode, 240);
        eprintln!(
            "{}: mipstream {:.2} dB / FLIP {:.4}, the rule {:.2} dB / FLIP {:.4}; held {} and {} of {budget}",
            mode.key(),
            ours.0,
            ours.1,
            theirs.0,
            theirs.1,
            held.0,
            held.1
        );
        assert!(held.0 <= budget, "mipstream held {} of {budget}", held.0);
        assert!(
            held.1 <= budget,
            "{} held {} of {budget}",
            mode.key(),
            held.1
        );
        assert!(
            theirs.0 <= ours.0 + slack,
            "{}: the rule {:.2} dB against mipstream's {:.2} dB",
            mode.key(),
            theirs.0,
            ours.0
        );
    }
}

/// The error view is black where the budget holds everything, and lights
/// up where it does not.
#[test]
fn the_error_view_is_black_where_the_budget_holds_everything() {
    let size = UVec2::new(320, 180);
    let dark = |img: &RgbaImage| {
        img.pixels()
            .filter(|p| p.0[..3].iter().all(|&c| c <= 8))
            .count() as f64
            / (img.width() * img.height()) as f64
    };
    let mut pictures = Vec::new();
    for budget in [64.0, 0.25] {
        let mut v = viewer(ViewerOptions {
            size,
            ui: false,
            path_start: Some(9.0),
            budget_mb: Some(budget),
            mode: Mode::Error,
            lockstep: true,
            ..Default::default()
        });
        settle(&mut v);
        pictures.push(frame(&mut v));
    }
    let (all, tight) = (dark(&pictures[0]), dark(&pictures[1]));
    eprintln!(
        "black: {:.1}% with room for everything, {:.1}% at 0.25 MiB",
        all * 100.0,
        tight * 100.0
    );
    assert!(
        all > 0.99,
        "with room for everything {:.1}% black",
        all * 100.0
    );
    assert!(
        tight < all - 0.05,
        "a tight budget shows its error: {:.1}% black",
        tight * 100.0
    );
}

/// `--feedback`: the renderer reports what it samples, the panel shows it
/// per texture beside the plan, and the picture is the one drawn without
/// it (reporting does not change what is drawn; the plan stays the CPU's
/// until "plan from it" is switched on).
#[test]
fn feedback_shows_beside_the_plan_without_changing_the_picture() {
    let options = |feedback| ViewerOptions {
        size: SIZE,
        ui: false,
        path_start: Some(9.0),
        budget_mb: Some(64.0),
        lockstep: true,
        feedback,
        ..Default::default()
    };
    let mut plain = viewer(options(false));
    let mut fed = viewer(options(true));
    for _ in 0..4 {
        frame(&mut plain);
        frame(&mut fed);
    }
    assert_eq!(plain.summary().feedback_textures, None);
    let seen = fed.summary().feedback_textures.unwrap();
    assert!(seen > 0, "{}", fed.summary());
    assert!(fed.summary().to_string().contains("GPU feedback"));
    // a frame or two late, never ahead of the streamer
    let f = fed.streamer().latest_feedback().unwrap();
    assert!(f.frame <= fed.streamer().frame(), "{}", f.frame);
    assert!(!fed.streamer().options().planner.fuse_feedback);
    let (a, b) = (settle(&mut plain), settle(&mut fed));
    assert_eq!(a.as_raw(), b.as_raw(), "feedback changed the picture");
    // with the panel: the feedback section draws (and the plan fuses it
    // when asked from the command line)
    let mut panel = viewer(ViewerOptions {
        size: UVec2::new(1280, 720),
        ui: true,
        fuse_feedback: true,
        ..options(false)
    });
    frame(&mut panel);
    frame(&mut panel);
    frame(&mut panel);
    assert!(panel.streamer().options().planner.fuse_feedback);
    assert!(panel.summary().feedback_textures.unwrap() > 0);
}
