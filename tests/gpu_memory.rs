//! The memory guarantee, checked where an engine reads it: wgpu's own
//! counters read right after every `update()` and right after every frame
//! the engine submits, never at idle.
//!
//! With [`StreamerOptions::count_retiring`] on (the default). The engine
//! here is docs/embedding.md's ([`Engine`]): its own device (one per test, so the
//! counters see only this test's resources), a bind group per texture
//! rebuilt from `take_changed` before its next submit, and a frame that
//! samples every texture. What mipstream created is the device's count less
//! the engine's own, measured before anything was registered.
//!
//! On Vulkan (lavapipe) wgpu counts texture and buffer memory: the books
//! (held and retiring) are never below that count, it never exceeds the
//! budget before a cut, and after one it falls, is never above what it was
//! when the cut's update returned, and is within the new budget a few
//! updates later. GL counts no memory, but wgpu-hal counts live textures
//! and buffers: there the books' live, pooled and retiring objects are
//! matched against them frame by frame.

mod common;

use mipstream::gpu::{self, memory};
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::Streamer;
use mipstream_tools::bench::engine::Engine;
use std::time::Duration;

fn open(backends: wgpu::Backends, what: &str) -> gpu::HeadlessGpu {
    gpu::headless(Some(backends))
        .unwrap_or_else(|e| panic!("this test needs {what}: {e} ({})", gpu::INSTALL_HINT))
}

fn scene(g: &gpu::HeadlessGpu, budget: u64) -> Streamer {
    common::spheres::scene(
        g,
        budget,
        StreamerOptions {
            count_retiring: true,
            ..Default::default()
        },
    )
}

use common::spheres::view;

/// wgpu's count of texture and buffer memory on the device.
fn device_bytes(device: &wgpu::Device) -> u64 {
    memory::counters(device).bytes()
}

/// What happens in a frame of the test's run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    /// The camera at this z.
    At(f32),
    /// The budget set (a cut when lower than before), camera at z.
    Budget(u64, f32),
    /// The next `n` allocations refused, camera at z.
    Oom(u32, f32),
}

/// A run: fly in, away and back, cut the budget to a tenth and back, an
/// injected out-of-memory event, a burst of growth after a jump.
fn events(budget: u64) -> Vec<Event> {
    let mut e = Vec::new();
    // fly in: textures grow level by level
    e.extend((0..70).map(|f| Event::At(16.0 - f as f32 * 0.2)));
    // fly away at once and back (a burst of shrinks, then of growth)
    e.extend((0..15).map(|_| Event::At(60.0)));
    // the way back: the device refuses two allocations of the burst, the
    // budget in force falls
    e.push(Event::Oom(2, 2.0));
    e.extend((0..25).map(|_| Event::At(2.0)));
    // a cut to a tenth, held, and back
    e.push(Event::Budget(budget / 10, 2.0));
    e.extend((0..20).map(|_| Event::At(2.0)));
    e.push(Event::Budget(budget, 2.0));
    e.extend((0..40).map(|f| Event::At(2.0 + f as f32 * 0.3)));
    e
}

/// What the run saw.
#[derive(Debug, Default)]
struct Seen {
    checks: u32,
    /// Largest count over the budget outside a cut's recovery.
    over_outside_cut: u64,
    /// Largest books below wgpu's count (should stay 0).
    books_short: u64,
    /// Updates each cut took until wgpu's count was within the new budget.
    recoveries: Vec<u32>,
    peak: u64,
}

/// Drives the run on `g`, checking after every `update()` and every
/// engine submit with `check(moment, streamer, counted_by_wgpu)`.
fn run(g: &gpu::HeadlessGpu, budget: u64, events: &[Event]) -> Seen {
    let mut engine = Engine::new(&g.device, &g.queue, 64, 64);
    engine.frame();
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let base = device_bytes(&g.device);
    let base_textures = memory::counters(&g.device).textures.max(0) as u64;
    let gl = memory::is_gl(&g.device);
    let mut s = scene(g, budget);
    let mut seen = Seen::default();
    // the cut being recovered from: updates since, the count when its
    // update returned, the budget now
    let mut recovering: Option<(u32, u64)> = None;
    let mut in_force = budget;
    for (frame, &event) in events.iter().enumerate() {
        let z = match event {
            Event::At(z) => z,
            Event::Budget(b, z) => {
                if b < in_force {
                    recovering = Some((0, 0));
                }
                in_force = b;
                s.set_budget(Budget::Bytes(b));
                z
            }
            Event::Oom(n, z) => {
                s.inject_out_of_memory(n);
                z
            }
        };
        let stats = s.update(&[view(z)]);
        assert_eq!(
            stats.gpu_waits, 0,
            "frame {frame}: update() waited for the GPU"
        );
        s.check_invariants()
            .unwrap_or_else(|e| panic!("frame {frame}: {e} {stats:?}\n{}", s.report()));
        // an out-of-memory event lowers the budget in force: a cut too
        let effective = s.effective_budget();
        if effective < in_force && recovering.is_none() {
            recovering = Some((0, 0));
        }
        in_force = effective;
        for moment in ["update", "submit"] {
            if moment == "submit" {
                engine.rebind(&mut s);
                engine.frame();
            }
            seen.checks += 1;
            // wgpu's live textures: the resident, pooled and retiring ones
            // at most (fewer when wgpu freed one before its callback ran)
            let textures =
                (memory::counters(&g.device).textures.max(0) as u64).saturating_sub(base_textures);
            assert!(
                textures <= s.gpu_textures(),
                "frame {frame}, after the {moment}: wgpu has {textures} of mipstream's textures alive, its books {}",
                s.gpu_textures()
            );
            if gl {
                // GL counts no memory: the objects above are what it shows
                assert!(!stats.giving_back || stats.grown == 0);
                continue;
            }
            let counted = device_bytes(&g.device).saturating_sub(base);
            let books = s.gpu_bytes();
            seen.peak = seen.peak.max(counted);
            seen.books_short = seen.books_short.max(counted.saturating_sub(books));
            assert!(
                counted <= books,
                "frame {frame}, after the {moment}: wgpu counts {counted} bytes of mipstream's, its books {books} (held {}, retiring {})",
                s.held_bytes(),
                s.retiring_bytes()
            );
            match &mut recovering {
                None => {
                    seen.over_outside_cut =
                        seen.over_outside_cut.max(counted.saturating_sub(in_force));
                    assert!(
                        counted <= in_force,
                        "frame {frame}, after the {moment}: wgpu counts {counted} bytes of mipstream's over a budget of {in_force} with no cut (held {}, retiring {})",
                        s.held_bytes(),
                        s.retiring_bytes()
                    );
                }
                Some((updates, at_cut)) => {
                    if *at_cut == 0 {
                        *at_cut = counted;
                    }
                    assert!(
                        counted <= *at_cut,
                        "frame {frame}, {updates} updates after a cut: wgpu counts {counted}, more than the {at_cut} when the cut's update returned"
                    );
                    assert!(
                        *updates == 0 || !stats.giving_back || stats.grown == 0,
                        "frame {frame}: grew while giving memory back"
                    );
                    if counted <= in_force {
                        seen.recoveries.push(*updates);
                        recovering = None;
                    }
                }
            }
        }
        if let Some((updates, _)) = &mut recovering {
            *updates += 1;
        }
        // what the frame asked for arrives before the next one, however
        // loaded the machine (the GPU is not waited for)
        s.wait_for_loads(Duration::from_secs(60)).unwrap();
    }
    assert!(gl || recovering.is_none(), "the last cut never recovered");
    // at idle, once the finished-work callbacks ran, the books and wgpu
    // agree object for object
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    s.update(&[view(30.0)]);
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    s.update(&[view(30.0)]);
    if gl {
        // (wgpu-hal's Vulkan backend counts texture memory, not textures)
        let textures =
            (memory::counters(&g.device).textures.max(0) as u64).saturating_sub(base_textures);
        assert_eq!(
            textures,
            s.gpu_textures(),
            "wgpu's live textures against the books' at idle"
        );
    }
    // (the refusal waits for an allocation: on the short GL run the way
    // back may have settled before one)
    assert!(
        gl || !s.oom_events().is_empty(),
        "the injected out-of-memory event did not happen"
    );
    seen
}

#[test]
fn wgpus_count_of_mipstreams_memory_stays_in_the_budget_at_every_moment_on_vulkan() {
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    assert!(!memory::is_gl(&g.device));
    let budget = 12 << 20;
    let seen = run(&g, budget, &events(budget));
    eprintln!("{seen:?}");
    assert_eq!(seen.over_outside_cut, 0);
    // the configured cut and the out-of-memory event (whose reduction,
    // given back a quarter at a time, can leave the budget in force below
    // the configured one when that is set again)
    assert!(seen.recoveries.len() >= 2, "{:?}", seen.recoveries);
    assert!(
        seen.recoveries.iter().all(|&u| u <= 4),
        "within the new budget in at most 4 updates: {:?}",
        seen.recoveries
    );
    assert!(
        seen.peak > budget / 2,
        "the run should fill the budget: peak {}",
        seen.peak
    );
}

#[test]
fn wgpus_live_textures_never_outnumber_the_books_on_gl() {
    let g = open(wgpu::Backends::GL, "a GL adapter (llvmpipe)");
    assert!(memory::is_gl(&g.device));
    let all = events(12 << 20);
    let seen = run(&g, 12 << 20, &all);
    assert_eq!(seen.checks, 2 * all.len() as u32);
}

/// `mipstream bench-frame` in a test's size: an engine's render loop
/// (submit, `update`, wait for its frame) through three budget cuts, with
/// an upload room of 1 MiB, on the adapter WGPU_BACKEND picks.
#[test]
fn an_engines_render_loop_through_three_cuts_never_waits_in_update() {
    use mipstream_tools::bench::frame::{bench_frame, FrameBenchOptions};
    let opts = FrameBenchOptions {
        textures_dir: Some(common::shared_data().join("sponza-textures")),
        textures: 12,
        frames: 64,
        runs: 1,
        upload_caps_mib: vec![1],
        size: glam::UVec2::new(64, 36),
        ..Default::default()
    };
    let r =
        bench_frame(&opts, |_, _, _| {}).unwrap_or_else(|e| panic!("{e} ({})", gpu::INSTALL_HINT));
    eprintln!("{}", r.to_markdown());
    let c = &r.caps[0];
    assert_eq!(c.updates, 64);
    assert_eq!(c.gpu_waits, 0, "update() waited for the GPU");
    assert_eq!(c.cut_bytes.len(), 3, "three cuts");
    // (the third may find the books still within it, the second's growth
    // back not done)
    assert!(
        c.cut_bytes[..2].iter().all(|&b| b > 0),
        "the cuts bind: {:?}",
        c.cut_bytes
    );
    assert!(c.forced_shrinks >= 3, "the cuts forced shrinks");
    if r.backend == "Gl" {
        // GL copies no compressed texture on the GPU: a cut's shrinks
        // upload their kept levels again, at the room's pace
        assert!(c.paced_updates > 0, "1 MiB of room should pace a cut");
        assert!(c.moments_over_budget_by_wgpu.is_none());
    } else {
        assert_eq!(c.moments_over_budget_by_wgpu, Some(0));
        let rec = c.cut_recovery_updates.as_ref().unwrap();
        assert_eq!(rec.len(), 3, "every cut recovered: {rec:?}");
        assert!(rec.iter().all(|&u| u <= 4), "{rec:?}");
    }
}

/// `Budget::Auto` on a stand-in driver budget (lavapipe has no
/// `VK_EXT_memory_budget`) whose heap usage is wgpu's count: a second
/// allocation mid-run lowers the budget, and wgpu's count of mipstream's
/// memory follows it (`mipstream gpu-check`'s section).
#[test]
fn auto_budget_falls_when_a_second_allocation_takes_the_heap_on_vulkan() {
    use mipstream_tools::gpu_check::memory;
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    let dir = common::shared_data().join("sponza-textures");
    let files: Vec<_> = common::files_with(&dir, &[".ktx2"])
        .into_iter()
        .take(12)
        .map(|p| mipstream::TextureFile::open_path(&p).unwrap())
        .collect();
    let (passed, md, json) =
        memory::auto_budget(&g, &files, 150, 0, glam::UVec2::new(64, 36)).unwrap();
    eprintln!("{md}");
    assert_eq!(json["source"], "injected");
    let (before, after) = (
        json["budget_before"].as_u64().unwrap(),
        json["budget_after"].as_u64().unwrap(),
    );
    assert!(after < before / 2, "{before} -> {after}");
    assert_eq!(json["moments_over_budget"], 0);
    assert!(passed);
}
