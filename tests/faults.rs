//! Faults while streaming: reads that fail, come back short or stall, files
//! truncated or deleted under the streamer, transcodes that fail, GPU
//! allocations refused. Under each the render thread does not wait, the
//! affected textures keep their tails and report the error, retries back off,
//! the others keep streaming, the budget holds, and once the fault stops the
//! scene comes to what a streamer that never saw a fault settles to.

mod common;

use glam::{UVec2, Vec3};
use mipstream::fault::{FaultRates, Faults, FaultySource};
use mipstream::streamer::{
    Budget, ObjectDesc, PlanThread, ResidencyState, StreamerOptions, TextureDesc,
};
use mipstream::{ByteSource, FileSource, Streamer, TextureFile, TextureId, View};
use mipstream_tools::soak::{self, FaultSet, SoakOptions, SoakReport};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAMES: [&str; 4] = [
    "sponza_arch_diff.ktx2",
    "lion.ktx2",
    "background.ktx2",
    "sponza_column_a_diff.ktx2",
];

fn sponza(name: &str) -> PathBuf {
    common::shared_data().join("sponza-textures").join(name)
}

fn view() -> View {
    View::look_at(
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        1.0,
        UVec2::new(1280, 720),
        0.1,
        1e4,
    )
}

fn options(budget: u64) -> StreamerOptions {
    StreamerOptions {
        budget: Budget::Bytes(budget),
        retry_backoff_frames: 2,
        oom_backoff_frames: 8,
        ..Default::default()
    }
}

/// Opens `path`, through the fault layer when `faults` is given.
fn open(path: &Path, faults: Option<&Arc<Faults>>) -> TextureFile {
    let source: Arc<dyn ByteSource> = Arc::new(FileSource::open(path).unwrap());
    match faults {
        Some(f) => TextureFile::open(Arc::new(FaultySource::new(source, f.clone()))).unwrap(),
        None => TextureFile::open(source).unwrap(),
    }
}

/// A streamer showing `files` on four spheres in front of the camera.
fn scene(budget: u64, files: Vec<TextureFile>) -> (Streamer, Vec<TextureId>) {
    let g = common::gpu();
    let mut s = Streamer::with_options(&g.device, &g.queue, options(budget));
    let mut ids = Vec::new();
    for (i, file) in files.into_iter().enumerate() {
        let t = s.register_texture(TextureDesc::new(file)).unwrap();
        s.register_object(
            ObjectDesc::sphere(Vec3::new(i as f32 * 3.0 - 4.5, 0.0, -4.0), 1.5)
                .with_texture(t, 4.0),
        )
        .unwrap();
        ids.push(t);
    }
    (s, ids)
}

/// The same textures, never faulted, settled.
fn reference(budget: u64, paths: &[PathBuf]) -> (Streamer, Vec<TextureId>) {
    let (mut s, ids) = scene(budget, paths.iter().map(|p| open(p, None)).collect());
    s.settle(&[view()], Duration::from_secs(120)).unwrap();
    (s, ids)
}

/// One frame, with the checks that hold under every fault.
fn frame(s: &mut Streamer, budget: u64) {
    s.update(&[view()]);
    s.check_invariants().unwrap();
    assert!(
        s.held_bytes() <= budget,
        "held {} over the budget {budget}",
        s.held_bytes()
    );
}

/// Frames until nothing is in flight, nothing failed and every texture holds
/// its plan; returns the frames taken.
fn recover(s: &mut Streamer, budget: u64) -> u32 {
    for n in 1..=4000 {
        frame(s, budget);
        if s.converged() && !s.has_failures() {
            return n;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("did not recover in 4000 frames:\n{}", s.report());
}

fn assert_same_levels(s: &Streamer, ids: &[TextureId], r: &Streamer, rids: &[TextureId]) {
    for (a, b) in ids.iter().zip(rids) {
        let (x, y) = (s.texture_status(*a).unwrap(), r.texture_status(*b).unwrap());
        assert_eq!(
            (x.resident, x.tier),
            (y.resident, y.tier),
            "{a} differs from the fault-free run\n{}",
            s.report()
        );
    }
}

fn paths() -> Vec<PathBuf> {
    NAMES.iter().map(|n| sponza(n)).collect()
}

const ROOMY: u64 = 96 << 20;

/// Every read of one texture fails: it keeps its tail and reports the error,
/// its retries come further and further apart, the other three stream in full;
/// when the disk is good again it streams in too.
#[test]
fn failing_reads_of_one_texture_leave_the_others_streaming() {
    let paths = paths();
    let faults = Faults::new(11);
    let files = paths
        .iter()
        .enumerate()
        .map(|(i, p)| open(p, (i == 1).then_some(&faults)))
        .collect();
    let (mut s, ids) = scene(ROOMY, files);
    faults.set_rates(FaultRates {
        io_error: 1.0,
        ..FaultRates::default()
    });
    let mut retries = Vec::new();
    let mut ok_frames = 0;
    for _ in 0..600 {
        frame(&mut s, ROOMY);
        let r = s.report();
        let bad = r.textures.iter().find(|t| t.id == ids[1]).unwrap();
        if let ResidencyState::Failed {
            error,
            retry_at_frame,
        } = &bad.state
        {
            assert!(error.contains("injected I/O error"), "{error}");
            if retries.last().map(|&(_, at)| at) != Some(*retry_at_frame) {
                // the failure arrived in this frame's update
                retries.push((s.frame(), *retry_at_frame));
            }
        }
        assert_eq!(bad.resident, s.texture_status(ids[1]).unwrap().resident);
        let others_done = r
            .textures
            .iter()
            .filter(|t| t.id != ids[1])
            .all(|t| t.resident == t.planned);
        ok_frames = if others_done { ok_frames + 1 } else { 0 };
        if ok_frames > 5 && retries.len() >= 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        ok_frames > 5,
        "the other textures stopped streaming:\n{}",
        s.report()
    );
    // exponential back-off: the wait set at each failed attempt is the
    // 2-frame base doubled per attempt so far (a late failure of an earlier
    // attempt may count as one more, under load), never shorter than before
    let waits: Vec<u64> = retries.iter().map(|&(frame, at)| at - frame).collect();
    assert!(waits.len() >= 5, "retries seen: {retries:?}");
    assert_eq!(waits[0], 2, "waits {waits:?}");
    assert!(waits.iter().all(|w| w.is_power_of_two()), "waits {waits:?}");
    // (up to the cap of 64 times the base)
    assert!(
        waits.windows(2).all(|w| w[1] > w[0] || w[1] == 2 * 64),
        "waits {waits:?}"
    );
    let status = s.texture_status(ids[1]).unwrap();
    assert!(
        status.resident > status.planned,
        "nothing loaded, yet finer"
    );

    faults.stop();
    recover(&mut s, ROOMY);
    let (r, rids) = reference(ROOMY, &paths);
    assert_same_levels(&s, &ids, &r, &rids);
}

/// Reads that take a second never hold up `update`: frames go on while the
/// loader waits, and the textures arrive when the reads finish.
#[test]
fn slow_reads_never_block_the_render_thread() {
    let paths = paths();
    let faults = Faults::new(5);
    let (mut s, ids) = scene(
        ROOMY,
        paths.iter().map(|p| open(p, Some(&faults))).collect(),
    );
    let delay = Duration::from_secs(1);
    faults.set_rates(FaultRates {
        slow_read: 1.0,
        slow_delay: delay,
        ..FaultRates::default()
    });
    let start = Instant::now();
    let mut frames = 0;
    while start.elapsed() < delay + delay / 2 {
        let t = Instant::now();
        frame(&mut s, ROOMY);
        // a blocking read would take the whole second
        assert!(t.elapsed() < delay / 2, "update took {:?}", t.elapsed());
        frames += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(faults.counts().slow_reads > 0);
    assert!(frames > 20, "only {frames} frames in {:?}", start.elapsed());
    faults.stop();
    recover(&mut s, ROOMY);
    let (r, rids) = reference(ROOMY, &paths);
    assert_same_levels(&s, &ids, &r, &rids);
}

/// Scratch copies of the Sponza files this test may truncate or delete.
fn scratch(test: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = common::output_dir().join(format!("faults-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let copies = paths()
        .iter()
        .map(|p| {
            let to = dir.join(p.file_name().unwrap());
            std::fs::copy(p, &to).unwrap();
            to
        })
        .collect();
    (dir, copies)
}

/// A file truncated while it streams: its fine levels fail with the OS's
/// end-of-file error, it keeps what it has, and when the file is whole again
/// it streams in.
#[test]
fn a_file_truncated_while_streaming_keeps_its_tail_and_recovers() {
    let (_dir, copies) = scratch("truncated");
    let (mut s, ids) = scene(ROOMY, copies.iter().map(|p| open(p, None)).collect());
    // KTX2 stores the smallest level first: half the file loses level 0 (and more)
    let victim = &copies[2];
    let whole = std::fs::read(victim).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap()
        .set_len(whole.len() as u64 / 2)
        .unwrap();
    let mut saw_error = false;
    for _ in 0..400 {
        frame(&mut s, ROOMY);
        let r = s.report();
        let t = r.textures.iter().find(|t| t.id == ids[2]).unwrap();
        if let ResidencyState::Failed { error, .. } = &t.state {
            assert!(error.contains(&victim.display().to_string()), "{error}");
            saw_error = true;
            if r.textures
                .iter()
                .filter(|t| t.id != ids[2])
                .all(|t| t.resident == t.planned)
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(saw_error, "no error reported:\n{}", s.report());
    assert!(s.texture_status(ids[2]).unwrap().resident > 0);
    std::fs::write(victim, &whole).unwrap();
    recover(&mut s, ROOMY);
    let (r, rids) = reference(ROOMY, &paths());
    assert_same_levels(&s, &ids, &r, &rids);
}

/// A file deleted while it streams: the open handle keeps it readable (POSIX
/// semantics), so streaming carries on as if nothing happened.
#[cfg(unix)]
#[test]
fn a_file_deleted_while_streaming_streams_from_its_open_handle() {
    let (_dir, copies) = scratch("deleted");
    let (mut s, ids) = scene(ROOMY, copies.iter().map(|p| open(p, None)).collect());
    for p in &copies {
        std::fs::remove_file(p).unwrap();
    }
    recover(&mut s, ROOMY);
    let (r, rids) = reference(ROOMY, &paths());
    assert_same_levels(&s, &ids, &r, &rids);
}

/// Half the transcodes fail and a third of the GPU allocations are refused,
/// under a budget that holds a third of the scene, while the camera moves:
/// invariants and the budget hold every frame, the failures and
/// out-of-memory events are reported, and afterwards the scene converges.
#[test]
fn failing_transcodes_and_refused_allocations_degrade_and_recover() {
    let paths = paths();
    let full: u64 = {
        let (s, ids) = scene(ROOMY, paths.iter().map(|p| open(p, None)).collect());
        ids.iter().map(|&id| s.full_bytes(id).unwrap()).sum()
    };
    let budget = full / 3;
    let faults = Faults::new(3);
    let (mut s, ids) = scene(budget, paths.iter().map(|p| open(p, None)).collect());
    s.set_faults(Some(faults.clone()));
    faults.set_rates(FaultRates {
        transcode_error: 0.5,
        out_of_memory: 0.3,
        ..FaultRates::default()
    });
    let mut failed_loads = 0;
    for i in 0..300 {
        let z = (i as f32 * 0.05).sin() * 6.0;
        let v = View::look_at(
            Vec3::new(0.0, 0.0, z),
            Vec3::new(0.0, 0.0, z - 1.0),
            Vec3::Y,
            1.0,
            UVec2::new(1280, 720),
            0.1,
            1e4,
        );
        failed_loads += s.update(&[v]).failed_loads;
        s.check_invariants().unwrap();
        assert!(s.held_bytes() <= budget);
        std::thread::sleep(Duration::from_millis(2));
    }
    let counts = faults.counts();
    assert!(
        counts.transcode_errors > 0 && counts.out_of_memory > 0,
        "{counts:?}"
    );
    assert!(failed_loads > 0);
    assert!(s.oom_event_count() > 0);
    assert!(s.report().oom_events.iter().all(|e| e.bytes > 0));
    faults.stop();
    s.set_budget(Budget::Bytes(ROOMY));
    recover(&mut s, ROOMY);
    let (r, rids) = reference(ROOMY, &paths);
    assert_same_levels(&s, &ids, &r, &rids);
}

/// A short soak's options: every fault kind, 3 ms frames, the shared cache.
fn every_fault() -> SoakOptions {
    SoakOptions {
        faults: FaultSet::parse("io,slow,oom,budget").unwrap(),
        frame_time: Duration::from_millis(3),
        cache_dir: common::repo().join("target/mipstream-cache"),
        ..SoakOptions::default()
    }
}

/// Runs a soak, its summary printed.
fn soak_run(options: &SoakOptions) -> SoakReport {
    let r = soak::run(options, |_, _| {}).unwrap();
    eprintln!("{}", r.summary());
    r
}

/// What a short soak under faults must show: the binding-budget comparison
/// within its bound, nothing broken, over budget, panicked or leaked, the
/// scene recovered, and faults injected.
fn assert_came_through(r: &SoakReport) {
    let b = r.binding.as_ref().expect("compared at a binding budget");
    assert!(b.within_bound(), "{b:?}");
    assert_eq!(r.invariant_violations, 0, "{:?}", r.violation_messages);
    assert_eq!(r.frames_over_budget, 0);
    // by wgpu's own count right after every update (GL counts no memory)
    let gl = r.backend == "gl";
    assert_eq!(
        r.frames_over_budget_by_wgpu,
        (!gl).then_some(0),
        "{:?}",
        r.violation_messages
    );
    assert_eq!(r.panics, 0);
    assert_eq!(r.leaked_textures, 0);
    assert_eq!(r.leaked_buffers, 0);
    assert!(r.recovered, "unrecovered: {:?}", r.unrecovered);
    assert!(r.fault_counts.total() > 10, "{:?}", r.fault_counts);
}

/// The CI-sized `mipstream soak`: every fault kind, budgets from a few MiB up,
/// objects and textures coming and going; nothing breaks, goes over budget,
/// panics or leaks, and the scene recovers.
#[test]
fn a_short_soak_with_every_fault_passes() {
    let r = soak_run(&SoakOptions {
        frames: 400,
        seed: 9,
        ..every_fault()
    });
    assert!(
        r.passed(),
        "{}\n{:?}\nunrecovered: {:?}\nunsettled: {:?}\nbinding: {:?}",
        r.summary(),
        r.violation_messages,
        r.unrecovered,
        r.unsettled,
        r.binding
    );
    assert_eq!(r.frames, 400);
    // the recovery was also compared at a budget that binds, within the bound
    let b = r.binding.as_ref().expect("compared at a binding budget");
    assert!(b.within_bound(), "{b:?}");
    assert!(b.budget_bytes > 0 && b.fresh_held_bytes <= b.budget_bytes);
    assert!(r.fault_counts.total() > 20, "{:?}", r.fault_counts);
    assert!(r.budget_changes > 0 && r.objects_removed > 0);
    // meshes are registered through the faults too (how often their LOD
    // changes in 400 frames depends on the flight: a count, not a check)
    assert_eq!(r.leaked_buffers, 0);
    let json = r.to_json();
    for key in [
        "frames",
        "seed",
        "invariant_violations",
        "frames_over_budget",
        "frames_over_budget_by_wgpu",
        "wgpu_peak_ratio",
        "faults_injected",
        "oom_events",
        "panics",
        "leaked_textures",
        "leaked_buffers",
        "mesh_lod_changes",
        "peak_resident_bytes",
        "budget_bytes_max",
    ] {
        assert!(json.get(key).is_some(), "JSON lacks {key}");
    }
}

/// The same soak with the loader threads staging uploads
/// (`loader_staging_bytes`): faults, budget changes and removals while staged
/// levels are in flight break no invariant, never take the streamer over its
/// budget (the reserve counted), panic nothing, leak no texture or staging
/// buffer, and the scene recovers once the faults stop, holding at least
/// 90% of a fresh streamer's bytes at a binding budget.
///
/// One CI run once held 0.43 MiB there against the fresh streamer's 0.94.
/// The likely cause, since fixed: a growth blocked for want of a few bytes
/// asked later plans to leave the whole growth free (its old copy and its
/// staging, often half such a budget) for 600 frames, and it asked only
/// when no upload staging was in flight, which with loader staging (its
/// bytes are the reserve's, not staging) is most frames. A blocked growth
/// now asks for what it lacks.
#[test]
fn a_short_soak_with_loader_staging_passes() {
    let r = soak_run(&SoakOptions {
        frames: 300,
        seed: 10,
        loader_staging_bytes: 2 << 20,
        ..every_fault()
    });
    eprintln!("binding-budget comparison: {:?}", r.binding);
    assert_came_through(&r);
    // on GL the scene's compressed textures keep CPU copies and are never
    // loader-staged; elsewhere most of what streams is
    if r.backend == "gl" {
        assert_eq!(r.loader_staged_bytes, 0);
    } else {
        assert!(r.loader_staged_bytes > 0, "nothing was loader-staged");
    }
}

/// The same soak with `copies_per_frame` set low (8 texture levels an
/// update, so most growths and shrinks wait for later updates): faults,
/// budget changes and removals while work is held back break no invariant,
/// never take the streamer over its budget, panic or leak nothing, and the
/// scene recovers to what a fresh streamer with the same cap holds.
///
/// With 8 levels an update the streamer reads less often than without the
/// cap: at 300 frames one CI run, the test binary's soaks running side by
/// side on 2 cores, drew only 8 faults. It runs 600.
#[test]
fn a_short_soak_with_few_levels_written_per_update_passes() {
    let r = soak_run(&SoakOptions {
        frames: 600,
        seed: 11,
        copies_per_frame: 8,
        ..every_fault()
    });
    assert_came_through(&r);
}

/// The configuration docs/performance.md gives for large scenes, all three options
/// at once: the plan on the planner thread (each update carries out a plan
/// a frame or more old), loader staging and a cap on the levels written.
/// Faults, budget changes and removals break no invariant, never take the
/// streamer over its budget, panic or leak nothing, and the scene recovers
/// to what a fresh streamer with the same options holds.
#[test]
fn a_short_soak_with_the_large_scene_options_passes() {
    let r = soak_run(&SoakOptions {
        frames: 300,
        seed: 12,
        plan_thread: PlanThread::Background,
        loader_staging_bytes: 2 << 20,
        copies_per_frame: 16,
        ..every_fault()
    });
    assert_came_through(&r);
    // the plans were made on the planner thread: some update carried out
    // one made before it
    assert!(r.plan_age_max >= 1, "no plan came from the planner thread");
    if r.backend != "gl" {
        assert!(r.loader_staged_bytes > 0, "nothing was loader-staged");
    }
}

/// A registration whose tail cannot be read fails with a clear error, and
/// loads of other textures that finish while it waits still reach them (a
/// soak run once found them dropped: those textures then waited forever).
#[test]
fn a_failed_registration_loses_no_other_texture_loads() {
    let paths = paths();
    let slow = Faults::new(1);
    let (mut s, ids) = scene(ROOMY, vec![open(&paths[0], Some(&slow))]);
    slow.set_rates(FaultRates {
        slow_read: 1.0,
        slow_delay: Duration::from_millis(300),
        ..FaultRates::default()
    });
    // the first texture's fine levels are now in flight, each read 300 ms
    frame(&mut s, ROOMY);
    let broken = Faults::new(2);
    broken.set_rates(FaultRates {
        io_error: 1.0,
        ..FaultRates::default()
    });
    let e = s
        .register_texture(TextureDesc::new(open_lazily(&paths[1], &broken)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("loading the tail") && e.contains("injected I/O error"),
        "{e}"
    );
    // a good registration right after, while the failed one's levels drain
    let good = s
        .register_texture(TextureDesc::new(open(&paths[2], None)))
        .unwrap();
    s.check_invariants().unwrap();
    slow.stop();
    recover(&mut s, ROOMY);
    let status = s.texture_status(ids[0]).unwrap();
    assert_eq!(status.resident, status.planned, "{}", s.report());
    assert!(s.texture_status(good).is_ok());
}

/// Opens `path` with faults that start only after the header is read.
fn open_lazily(path: &Path, faults: &Arc<Faults>) -> TextureFile {
    let rates = faults.rates();
    faults.stop();
    let file = open(path, Some(faults));
    faults.set_rates(rates);
    file
}
