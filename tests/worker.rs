//! Loader threads: priority order, cancellation, failures, shutdown.

mod common;

use mipstream::transcode::{Output, TranscodeOptions};
use mipstream::worker::{LoadError, LoadKey, LoadRequest, Loader};
use mipstream::{TargetFormat, TextureFile};
use std::time::{Duration, Instant};

fn sponza() -> TextureFile {
    TextureFile::open_path(common::shared_data().join("sponza-textures/sponza_arch_diff.ktx2"))
        .unwrap()
}

fn request(file: &TextureFile, key: u64, level: u32, priority: f32) -> LoadRequest {
    LoadRequest {
        key: LoadKey::Other(key),
        file: file.clone(),
        level,
        options: TranscodeOptions::new(Output::Transcode(TargetFormat::Bc7), true)
            .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
        priority,
        stage: false,
    }
}

fn wait_all(loader: &mut Loader) -> Vec<mipstream::worker::LoadResult> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    while loader.outstanding() > 0 && Instant::now() < deadline {
        out.extend(loader.wait(Duration::from_millis(500)));
    }
    assert_eq!(loader.outstanding(), 0, "loads did not finish in 60 s");
    out
}

#[test]
fn results_come_back_highest_priority_first_with_staging_rows() {
    let file = sponza();
    let mut loader = Loader::new(1);
    // occupy the single worker so the queue orders the rest
    loader.submit(request(&file, 100, 0, 0.0));
    for (key, prio) in [(1u64, 1.0f32), (2, 5.0), (3, 3.0), (4, 9.0)] {
        loader.submit(request(&file, key, 4, prio));
    }
    let done = wait_all(&mut loader);
    let order: Vec<LoadKey> = done
        .iter()
        .map(|r| r.key)
        .filter(|k| *k != LoadKey::Other(100))
        .collect();
    assert_eq!(order, [4, 2, 3, 1].map(LoadKey::Other));
    for r in &done {
        let img = r.result.as_ref().unwrap();
        assert_eq!(img.bytes_per_row % wgpu::COPY_BYTES_PER_ROW_ALIGNMENT, 0);
        assert_eq!(img.level, r.level);
    }
}

#[test]
fn a_result_collected_while_draining_meshes_still_comes_back_from_wait() {
    // `drain_meshes` takes every finished result off the channel, texture
    // results included (they wait in the loader); `wait` must hand those
    // over, or a caller waiting until nothing is outstanding waits forever
    // (this hung `settle_canonical` and `--lockstep` now and then)
    let file = sponza();
    let mut loader = Loader::new(1);
    loader.submit(request(&file, 7, 6, 1.0));
    // a 32x32 level: finished well within the second, and taken off the
    // channel by the mesh drains
    for _ in 0..50 {
        assert!(loader.drain_meshes().is_empty());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(loader.outstanding(), 1);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.is_empty() && Instant::now() < deadline {
        got = loader.wait(Duration::from_millis(200));
        assert!(
            !got.is_empty() || loader.outstanding() == 1,
            "the load vanished"
        );
    }
    assert_eq!(got.len(), 1, "the load never came back");
    assert_eq!(got[0].key, LoadKey::Other(7));
    assert!(got[0].result.is_ok());
    assert_eq!(loader.outstanding(), 0);
}

#[test]
fn cancelled_requests_are_not_delivered() {
    let file = sponza();
    let mut loader = Loader::new(1);
    loader.submit(request(&file, 1, 0, 10.0));
    for level in 1..8 {
        loader.submit(request(&file, 2, level, 1.0));
    }
    for level in 1..8 {
        loader.cancel(LoadKey::Other(2), level);
    }
    let done = wait_all(&mut loader);
    assert!(
        done.iter().all(|r| r.key == LoadKey::Other(1)),
        "a cancelled request was delivered"
    );
    assert_eq!(done.len(), 1);
}

#[test]
fn a_file_truncated_after_opening_reports_an_error_and_the_rest_streams_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ktx2");
    std::fs::copy(
        common::shared_data().join("sponza-textures/sponza_arch_diff.ktx2"),
        &path,
    )
    .unwrap();
    let broken = TextureFile::open_path(&path).unwrap();
    let keep = broken.info().levels[5].ranges[0].0;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(keep)
        .unwrap();
    let good = sponza();
    let mut loader = Loader::new(2);
    loader.submit(request(&broken, 1, 0, 1.0));
    loader.submit(request(&good, 2, 0, 1.0));
    loader.submit(request(&broken, 3, 10, 1.0)); // smallest level: still in the file
    let done = wait_all(&mut loader);
    let by_key = |k| done.iter().find(|r| r.key == LoadKey::Other(k)).unwrap();
    match &by_key(1).result {
        Err(LoadError::Level(e)) => assert!(e.to_string().contains("t.ktx2"), "{e}"),
        other => panic!("expected a read error, got {other:?}"),
    }
    assert!(by_key(2).result.is_ok());
    assert!(by_key(3).result.is_ok());
}

#[test]
fn dropping_the_loader_with_work_in_flight_joins_quickly() {
    let file = sponza();
    let mut loader = Loader::new(2);
    for key in 0..64 {
        loader.submit(request(&file, key, 0, 1.0));
    }
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    drop(loader);
    // queued work is dropped; at most the two in-flight levels finish
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "drop took {:?}",
        start.elapsed()
    );
}
