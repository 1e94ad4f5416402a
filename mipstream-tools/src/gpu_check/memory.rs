//! Memory four ways at budgets that bind (mipstream's books, wgpu's
//! counters, the allocator's allocated and reserved bytes, the driver's
//! heap usage), and [`Budget::Auto`] on the driver's budget while a second
//! allocation takes memory mid-run.

pub use super::CheckError;
use crate::bench::engine::Engine;
use crate::bench::frame::view;
use glam::{UVec2, Vec3};
use mipstream::gpu::memory::{self, DriverBudget, HeapBudget};
use mipstream::gpu::HeadlessGpu;
use mipstream::streamer::{Budget, ObjectDesc, StreamerOptions, TextureDesc};
use mipstream::{container::TextureFile, streamer::Streamer};

/// One moment's four counts, less what the engine held before mipstream.
#[derive(Debug, Clone, Copy, Default)]
struct Moment {
    books: u64,
    wgpu: u64,
    allocated: Option<u64>,
    reserved: Option<u64>,
    driver: Option<u64>,
}

/// The device's counts now.
#[derive(Debug, Clone, Copy)]
struct Counts {
    wgpu: u64,
    allocated: Option<u64>,
    reserved: Option<u64>,
    driver: Option<u64>,
}

fn counts(device: &wgpu::Device) -> Counts {
    let c = memory::counters(device);
    let a = memory::allocator_summary(device);
    Counts {
        wgpu: c.bytes(),
        allocated: a.map(|a| a.allocated),
        reserved: a.map(|a| a.reserved),
        driver: memory::driver_budget(device).and_then(|d| d.device_local_usage()),
    }
}

fn since(now: Counts, base: Counts, books: u64) -> Moment {
    let d = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
    Moment {
        books,
        wgpu: now.wgpu.saturating_sub(base.wgpu),
        allocated: d(now.allocated, base.allocated),
        reserved: d(now.reserved, base.reserved),
        driver: d(now.driver, base.driver),
    }
}

/// The scene: `files` on spheres down the axis, as `bench-frame` lays them.
fn scene(
    g: &HeadlessGpu,
    files: &[TextureFile],
    budget: Budget,
) -> Result<(Streamer, u64), CheckError> {
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget,
            ..Default::default()
        },
    );
    let mut full = 0;
    for (i, file) in files.iter().enumerate() {
        let t = s.register_texture(TextureDesc::new(file.clone()))?;
        full += s
            .full_bytes(t)
            .map_err(mipstream::streamer::StreamerError::from)?;
        let x = (i % 5) as f32 * 3.0 - 6.0;
        let z = -4.0 - (i / 5) as f32 * 6.0;
        s.register_object(ObjectDesc::sphere(Vec3::new(x, 0.0, z), 1.5).with_texture(t, 3.0))?;
    }
    Ok((s, full))
}

/// The four ways at `shares` of full residency, `frames` each.
pub fn four_ways(
    g: &HeadlessGpu,
    files: &[TextureFile],
    shares: &[f64],
    frames: usize,
    size: UVec2,
) -> Result<(bool, String, serde_json::Value), CheckError> {
    let mut md = String::from(
        "Each count is mipstream's share: the device's now less what it was before mipstream made anything (the engine's own). The books are held and retiring bytes; wgpu's counters are texture and buffer memory; allocated and reserved are wgpu's allocator report; driver usage is `VK_EXT_memory_budget`'s heap usage.\n\n| budget | books peak | wgpu peak | allocated peak | reserved peak | driver usage peak | wgpu - books max | allocated - wgpu max | reserved - allocated max | driver - reserved max | moments wgpu over budget | moments wgpu over books |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut rows = Vec::new();
    let mut passed = true;
    for &share in shares {
        let mut engine = Engine::new(&g.device, &g.queue, size.x, size.y);
        engine.frame();
        let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
        let base = counts(&g.device);
        let (mut s, full) = scene(g, files, Budget::Bytes(u64::MAX / 4))?;
        let budget = (full as f64 * share) as u64;
        s.set_budget(Budget::Bytes(budget));
        let mut moments = Vec::new();
        for f in 0..frames {
            s.update(&[view(f, size)]);
            moments.push(since(counts(&g.device), base, s.gpu_bytes()));
            engine.rebind(&mut s);
            engine.frame();
            moments.push(since(counts(&g.device), base, s.gpu_bytes()));
            let _ = g.device.poll(wgpu::PollType::Poll);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let peak = |f: &dyn Fn(&Moment) -> Option<u64>| moments.iter().filter_map(f).max();
        let gap = |f: &dyn Fn(&Moment) -> Option<i128>| moments.iter().filter_map(f).max();
        let i = |v: u64| v as i128;
        let over_budget = moments.iter().filter(|m| m.wgpu > budget).count();
        let over_books = moments.iter().filter(|m| m.wgpu > m.books).count();
        // GL counts no memory: its zeros prove nothing either way
        let counted = !memory::is_gl(&g.device);
        passed &= !counted || (over_budget == 0 && over_books == 0);
        let row = serde_json::json!({
            "budget_share_of_full": share,
            "budget_bytes": budget,
            "books_peak": peak(&|m| Some(m.books)),
            "wgpu_peak": counted.then(|| peak(&|m| Some(m.wgpu))).flatten(),
            "allocated_peak": peak(&|m| m.allocated),
            "reserved_peak": peak(&|m| m.reserved),
            "driver_usage_peak": peak(&|m| m.driver),
            "wgpu_minus_books_max": counted.then(|| gap(&|m| Some(i(m.wgpu) - i(m.books)))).flatten().map(|v| v as i64),
            "allocated_minus_wgpu_max": gap(&|m| Some(i(m.allocated?) - i(m.wgpu))).map(|v| v as i64),
            "reserved_minus_allocated_max": gap(&|m| Some(i(m.reserved?) - i(m.allocated?))).map(|v| v as i64),
            "driver_minus_reserved_max": gap(&|m| Some(i(m.driver?) - i(m.reserved?))).map(|v| v as i64),
            "moments": moments.len(),
            "moments_wgpu_over_budget": counted.then_some(over_budget),
            "moments_wgpu_over_books": counted.then_some(over_books),
        });
        let cell = |k: &str| match &row[k] {
            serde_json::Value::Null => "not reported".to_string(),
            serde_json::Value::Number(n) if k.starts_with("moments") => n.to_string(),
            serde_json::Value::Number(n) if k.ends_with("_peak") => {
                memory::human_bytes(n.as_u64().unwrap_or(0))
            }
            serde_json::Value::Number(n) => {
                let v = n.as_i64().unwrap_or(0);
                let sign = if v < 0 { "-" } else { "" };
                format!("{sign}{}", memory::human_bytes(v.unsigned_abs()))
            }
            v => v.to_string(),
        };
        md.push_str(&format!(
            "| {:.0}% of full ({}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} of {} | {} |\n",
            share * 100.0,
            memory::human_bytes(budget),
            cell("books_peak"),
            cell("wgpu_peak"),
            cell("allocated_peak"),
            cell("reserved_peak"),
            cell("driver_usage_peak"),
            cell("wgpu_minus_books_max"),
            cell("allocated_minus_wgpu_max"),
            cell("reserved_minus_allocated_max"),
            cell("driver_minus_reserved_max"),
            cell("moments_wgpu_over_budget"),
            moments.len(),
            cell("moments_wgpu_over_books"),
        ));
        rows.push(row);
    }
    Ok((passed, md, serde_json::Value::Array(rows)))
}

/// A stand-in driver for adapters without `VK_EXT_memory_budget`: one
/// device-local heap of `heap` bytes, all of it this process's budget, its
/// usage what wgpu counts on the device.
fn injected(heap: u64) -> impl Fn(&wgpu::Device) -> Option<DriverBudget> + Send + Sync {
    move |device| {
        let c = memory::counters(device);
        Some(DriverBudget {
            heaps: vec![HeapBudget {
                size: heap,
                device_local: true,
                budget: Some(heap),
                usage: Some(c.bytes()),
            }],
        })
    }
}

/// [`Budget::Auto`] at half of what the driver leaves: `frames` updates, a
/// second allocation (buffers of `take` bytes in all; on a stand-in heap
/// sized so the budget binds, `take` is ignored and half the heap is taken)
/// a third of the way in. It passes when the budget in force fell and
/// wgpu's count was within it at every moment, except for the 4 updates
/// after it fell.
pub fn auto_budget(
    g: &HeadlessGpu,
    files: &[TextureFile],
    frames: usize,
    take: u64,
    size: UVec2,
) -> Result<(bool, String, serde_json::Value), CheckError> {
    let auto = Budget::Auto {
        fraction: 0.5,
        fallback: 64 << 20,
    };
    let mut engine = Engine::new(&g.device, &g.queue, size.x, size.y);
    engine.frame();
    let _ = g.device.poll(wgpu::PollType::wait_indefinitely());
    let base = counts(&g.device).wgpu;
    let (mut s, full) = scene(g, files, auto)?;
    let real = memory::driver_budget(&g.device).and_then(|d| d.device_local_budget());
    let take = match real {
        Some(_) => take,
        None => {
            // a heap of twice the textures in full beside the engine's:
            // half of it (the textures in full) is the budget before, a
            // quarter of them after three quarters of the heap are taken
            s.inject_driver_budget(injected(2 * full + base));
            full + full / 2
        }
    };
    let counted = !memory::is_gl(&g.device);
    let mut before = 0;
    let mut taken: Vec<wgpu::Buffer> = Vec::new();
    let mut in_force = s.effective_budget();
    let mut since_fall: Option<usize> = None;
    let (mut over, mut falls) = (0usize, 0usize);
    let mut peak = 0u64;
    for f in 0..frames {
        if f == frames / 3 {
            before = s.effective_budget();
            let chunk = g.device.limits().max_buffer_size.clamp(1, 256 << 20);
            let mut left = take;
            while left > 0 {
                let n = left.min(chunk);
                let b = g.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpu-check: the second allocation"),
                    size: n,
                    usage: wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                taken.push(b);
                left -= n;
            }
        }
        s.update(&[view(f, size)]);
        let budget = s.effective_budget();
        if budget < in_force {
            falls += 1;
            since_fall = Some(0);
        }
        in_force = budget;
        engine.rebind(&mut s);
        engine.frame();
        let mine = counts(&g.device)
            .wgpu
            .saturating_sub(base)
            .saturating_sub(taken.iter().map(|b| b.size()).sum());
        peak = peak.max(mine);
        if counted && mine > budget && since_fall.is_none_or(|n| n > 4) {
            over += 1;
        }
        since_fall = since_fall.map(|n| n + 1);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let after = s.effective_budget();
    let passed = after < before && over == 0;
    let source = if real.is_some() {
        "the driver's budget (VK_EXT_memory_budget)"
    } else {
        "a stand-in heap's budget (the driver reports none; the heap's usage is wgpu's count)"
    };
    let md = format!(
        "Budget::Auto at half of what {source} leaves; {} taken at update {} of {frames}: the budget in force {} before, {} after ({} falls); mipstream's memory by wgpu's count peaked at {}, over the budget at {} moments outside the 4 updates after a fall{}.\n",
        memory::human_bytes(take),
        frames / 3,
        memory::human_bytes(before),
        memory::human_bytes(after),
        falls,
        memory::human_bytes(peak),
        over,
        if counted { "" } else { " (this backend counts no memory)" },
    );
    let json = serde_json::json!({
        "source": if real.is_some() { "driver" } else { "injected" },
        "taken_bytes": take,
        "taken_at_update": frames / 3,
        "budget_before": before,
        "budget_after": after,
        "falls": falls,
        "wgpu_peak": peak,
        "moments_over_budget": counted.then_some(over),
    });
    drop(taken);
    Ok((passed, md, json))
}
