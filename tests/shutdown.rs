//! Shutdown: dropping a streamer while loads are in flight (reads stalled for
//! 300 ms each) joins its loader threads, frees every texture it made, and
//! leaves the device fit for the next streamer. Its own binary, so the loader
//! threads counted are this test's alone.

mod common;

use glam::{UVec2, Vec3};
use mipstream::fault::{FaultRates, Faults, FaultySource};
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{ByteSource, FileSource, Streamer, TextureFile, View};
use std::sync::Arc;
use std::time::Duration;

/// Threads of this process whose name starts with `prefix` (Linux truncates
/// names to 15 bytes: "mipstream-loade").
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|t| t.ok())
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|n| n.trim_end().starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

fn live_textures(instance: &wgpu::Instance) -> usize {
    instance
        .generate_report()
        .map_or(0, |r| r.hub_report().textures.num_kept_from_user)
}

#[test]
fn dropping_a_streamer_with_loads_in_flight_joins_and_frees_everything() {
    let g = common::gpu();
    let view = View::look_at(
        Vec3::ZERO,
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        1.0,
        UVec2::new(1280, 720),
        0.1,
        1e4,
    );
    let threads_before = threads_named("mipstream-load");
    let textures_before = live_textures(&g.instance);
    let faults = Faults::new(4);
    let delay = Duration::from_millis(300);
    {
        let mut s = Streamer::with_options(
            &g.device,
            &g.queue,
            StreamerOptions {
                budget: Budget::Bytes(256 << 20),
                workers: 3,
                ..Default::default()
            },
        );
        // a thread names itself once it runs
        let t = std::time::Instant::now();
        while threads_named("mipstream-load") < threads_before + 3 && t.elapsed().as_secs() < 5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(threads_named("mipstream-load"), threads_before + 3);
        let dir = common::shared_data().join("sponza-textures");
        for (i, name) in ["lion.ktx2", "background.ktx2", "sponza_arch_diff.ktx2"]
            .iter()
            .enumerate()
        {
            let source: Arc<dyn ByteSource> = Arc::new(FileSource::open(dir.join(name)).unwrap());
            let file =
                TextureFile::open(Arc::new(FaultySource::new(source, faults.clone()))).unwrap();
            let t = s.register_texture(TextureDesc::new(file)).unwrap();
            s.register_object(
                ObjectDesc::sphere(Vec3::new(i as f32 * 3.0 - 3.0, 0.0, -4.0), 1.5)
                    .with_texture(t, 4.0),
            )
            .unwrap();
        }
        faults.set_rates(FaultRates {
            slow_read: 1.0,
            slow_delay: delay,
            ..FaultRates::default()
        });
        for _ in 0..3 {
            s.update(&[view]);
        }
        let loading = s
            .report()
            .textures
            .iter()
            .filter(|t| t.resident > t.planned)
            .count();
        assert!(loading > 0, "nothing in flight to drop:\n{}", s.report());
        assert!(live_textures(&g.instance) > textures_before);
        // give the workers time to be inside a stalled read
        std::thread::sleep(Duration::from_millis(50));
        let rolled = faults.counts().slow_reads;
        assert!(rolled > 0, "no read in flight");
        drop(s);
        // each worker finished the read it was in and took no other request
        assert_eq!(
            faults.counts().slow_reads,
            rolled,
            "queued loads ran after the drop"
        );
    }
    // joined threads have finished, but the kernel may list one in
    // /proc/self/task for a moment after the join returns
    let t = std::time::Instant::now();
    while threads_named("mipstream-load") > threads_before && t.elapsed().as_secs() < 5 {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        threads_named("mipstream-load"),
        threads_before,
        "loader threads left running"
    );
    let _ = g.device.poll(wgpu::PollType::Wait {
        submission_index: None,
        timeout: None,
    });
    assert_eq!(
        live_textures(&g.instance),
        textures_before,
        "textures left alive after the streamer was dropped"
    );
    // the device is fine: a new streamer registers and streams
    faults.stop();
    let mut s = Streamer::with_options(&g.device, &g.queue, StreamerOptions::default());
    let t = s
        .register_texture_path(
            common::repo().join("assets/checker-uastc.ktx2"),
            mipstream::TextureClass::Color,
        )
        .unwrap();
    s.register_object(ObjectDesc::sphere(Vec3::new(0.0, 0.0, -3.0), 1.0).with_texture(t, 2.0))
        .unwrap();
    s.settle(&[view], Duration::from_secs(30)).unwrap();
    s.check_invariants().unwrap();
}
