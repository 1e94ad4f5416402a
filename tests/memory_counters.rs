//! Memory claims checked by something other than mipstream's own ledger,
//! at idle (`tests/gpu_memory.rs` reads the counters at the moments an
//! engine does): wgpu-hal's texture-memory counter and the allocator
//! report, on a device
//! of this binary's own (no other test binary shares it, and each test here
//! opens its own device, so the counters see only this test's resources).
//!
//! The Vulkan test always runs on Vulkan (lavapipe here), whatever
//! `WGPU_BACKEND` says: the counter exists only there. The GL test checks
//! that wgpu's GL backend has no such counter, which is why the benchmark
//! reports `null` for it on GL.

mod common;

use mipstream::gpu::{self, memory};
use mipstream::streamer::{Budget, StreamerOptions};
use mipstream::Streamer;
use std::time::Duration;

fn open(backends: wgpu::Backends, what: &str) -> gpu::HeadlessGpu {
    gpu::headless(Some(backends))
        .unwrap_or_else(|e| panic!("this test needs {what}: {e} ({})", gpu::INSTALL_HINT))
}

fn scene(g: &gpu::HeadlessGpu, budget: u64) -> Streamer {
    common::spheres::scene(g, budget, StreamerOptions::default())
}

use common::spheres::view;

/// Textures the ledger says the GPU holds: resident ones, the recycle
/// pool, and released ones not yet given back (the scene has no meshes).
fn ledger_textures(s: &Streamer) -> u64 {
    let t = s.report().totals;
    t.color + t.normal + t.data + t.pool + t.retiring
}

fn counted(g: &gpu::HeadlessGpu) -> u64 {
    memory::counters(&g.device).texture_memory.max(0) as u64
}

fn wait(g: &gpu::HeadlessGpu) {
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
}

#[test]
fn wgpus_texture_counter_agrees_with_the_ledger_on_vulkan() {
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    assert!(!memory::is_gl(&g.device));
    wait(&g);
    let base = counted(&g);
    let base_allocated = memory::allocator_summary(&g.device)
        .expect("Vulkan has an allocator report")
        .allocated;
    let mut s = scene(&g, 48 << 20);
    // fly in, so textures grow level by level, with a budget cut half way
    let (mut worst_slack, mut most) = (0u64, 0u64);
    for frame in 0..160 {
        if frame == 120 {
            s.set_budget(Budget::Bytes(12 << 20));
        }
        s.update(&[view(16.0 - frame as f32 * 0.1)]);
        // time for the loader threads, as a frame would leave them
        std::thread::sleep(Duration::from_millis(10));
        s.check_invariants().unwrap();
        // textures released this frame are freed once the GPU is done
        wait(&g);
        let ledger = ledger_textures(&s);
        let wgpu = counted(&g) - base;
        // the ledger pads each level's rows to 256 bytes, more than the
        // allocator's alignment: it may count a little more, never less
        // (a 64x64 BC7 tail: 8448 bytes against lavapipe's 5632), at most
        // 4 KiB a texture alive (resident, pooled and retiring)
        let live = s.gpu_textures();
        assert!(
            ledger >= wgpu && ledger - wgpu <= live * 4096,
            "frame {frame}: wgpu counts {wgpu} bytes of textures, the ledger {ledger} ({live} textures)"
        );
        worst_slack = worst_slack.max(ledger - wgpu);
        most = most.max(ledger);
        let allocated = memory::allocator_summary(&g.device).unwrap().allocated - base_allocated;
        assert!(
            allocated <= ledger,
            "frame {frame}: the allocator has {allocated} bytes allocated, the ledger holds {ledger} in textures"
        );
    }
    eprintln!("largest gap between the ledger and wgpu's counter: {worst_slack} bytes");
    assert!(
        most > 8 << 20,
        "the fly-in should grow textures: at most {most} bytes held"
    );
}

#[test]
fn a_budget_cut_frees_what_the_ledger_says_on_vulkan() {
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    let mut s = scene(&g, 64 << 20);
    s.settle(&[view(2.0)], Duration::from_secs(120)).unwrap();
    wait(&g);
    let (ledger_before, wgpu_before) = (s.held_bytes(), counted(&g));
    assert!(
        ledger_before > 16 << 20,
        "the near view holds {ledger_before}"
    );
    s.set_budget(Budget::Bytes(6 << 20));
    s.update(&[view(2.0)]);
    s.check_invariants().unwrap();
    wait(&g);
    // what the cut released is kept for the engine's frame in flight, then
    // dropped at the next update and given back once the GPU is done
    assert!(s.retiring_bytes() > 0, "the cut released textures");
    s.update(&[view(2.0)]);
    wait(&g);
    s.update(&[view(2.0)]);
    assert_eq!(s.retiring_bytes(), 0, "given back at idle");
    let (ledger_after, wgpu_after) = (s.held_bytes(), counted(&g));
    assert!(ledger_after <= 6 << 20);
    let freed = ledger_before - ledger_after;
    let dropped = wgpu_before.saturating_sub(wgpu_after);
    eprintln!("the ledger freed {freed} bytes, wgpu's counter fell by {dropped}");
    assert!(
        dropped as f64 >= 0.9 * freed as f64,
        "the ledger freed {freed} bytes but wgpu's counter fell by only {dropped}"
    );
}

#[test]
fn wgpus_gl_backend_counts_no_texture_memory() {
    let g = open(wgpu::Backends::GL, "a GL adapter (llvmpipe)");
    assert!(memory::is_gl(&g.device));
    let mut s = scene(&g, 48 << 20);
    s.settle(&[view(10.0)], Duration::from_secs(120)).unwrap();
    assert!(s.held_bytes() > 1 << 20);
    assert_eq!(
        memory::counters(&g.device).texture_memory,
        0,
        "GL now counts texture memory: report it in the benchmark instead of null"
    );
    assert!(memory::allocator_summary(&g.device).is_none());
}

#[test]
fn the_books_allocation_bound_covers_what_the_driver_allocates_on_vulkan() {
    use mipstream::gpu::Shape;
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    let formats = [
        wgpu::TextureFormat::Bc7RgbaUnorm,
        wgpu::TextureFormat::Bc1RgbaUnorm,
        wgpu::TextureFormat::Bc5RgUnorm,
        wgpu::TextureFormat::Rgba8Unorm,
    ];
    let (mut over, mut worst) = (0u64, 0.0f64);
    let mut keep = Vec::new();
    for format in formats {
        let (bw, _) = format.block_dimensions();
        for log in 0..12 {
            let w = (1u32 << log).max(bw);
            for (h, full_chain) in [(w, true), (w, false), ((w / 2).max(bw), false)] {
                let mips = if full_chain { w.min(h).ilog2() + 1 } else { 1 };
                let shape = Shape {
                    format,
                    width: w,
                    height: h,
                    mips,
                    layers: 1,
                };
                let before = counted(&g);
                keep.push(g.device.create_texture(&wgpu::TextureDescriptor {
                    label: None,
                    size: wgpu::Extent3d {
                        width: w,
                        height: h,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: mips,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING
                        | wgpu::TextureUsages::COPY_DST
                        | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                }));
                let allocated = counted(&g) - before;
                assert!(
                    shape.alloc_bytes() >= allocated,
                    "{shape:?}: the driver allocated {allocated}, the books count {}",
                    shape.alloc_bytes()
                );
                over += shape.alloc_bytes() - allocated;
                worst = worst.max(shape.alloc_bytes() as f64 / allocated as f64);
            }
        }
    }
    eprintln!(
        "the bound is {over} bytes over {} textures' allocations, at most {worst:.2}x",
        keep.len()
    );
}

/// At a lockstep point (`finish_loads`) nothing is left for the next update
/// to flush: a release the next update drops is given back within it, even
/// when the engine wrote a large buffer between frames. (Before,
/// `finish_loads` waited only for what was submitted; the engine's pending
/// write was flushed by the callback the next update registered, and
/// whether the GPU had copied it by that update's polls decided whether
/// the release still counted: lockstep runs did not repeat.)
#[test]
fn a_lockstep_point_leaves_no_pending_write_for_the_next_update() {
    let g = open(wgpu::Backends::VULKAN, "a Vulkan adapter (lavapipe)");
    let mut s = scene(&g, 64 << 20);
    s.settle(&[view(2.0)], Duration::from_secs(120)).unwrap();
    s.set_budget(Budget::Bytes(6 << 20));
    s.update(&[view(2.0)]);
    s.finish_loads(Duration::from_secs(60)).unwrap();
    assert!(s.retiring_bytes() > 0, "the cut released textures");
    // the engine's frame: a large buffer write, not yet submitted
    let big = 64usize << 20;
    let buffer = g.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("an engine's upload"),
        size: big as u64,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    g.queue.write_buffer(&buffer, 0, &vec![7u8; big]);
    s.finish_loads(Duration::from_secs(60)).unwrap();
    // the release is dropped now (its frame in flight has passed) and the
    // GPU has nothing left to do: it leaves the books in this update
    let stats = s.update(&[view(2.0)]);
    assert_eq!(stats.retiring_bytes, 0, "{stats:?}");
    assert_eq!(s.retiring_bytes(), 0);
}
