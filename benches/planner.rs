//! The planner alone (no GPU): a full re-plan (densities over every object,
//! budget fit over every texture) for 1k to 1M objects sharing 10k textures,
//! with the camera moving a little each iteration.
//!
//! `cargo bench --bench planner`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use glam::{UVec2, Vec3};
use mipstream::plan::{PlanTexture, Planner, View};
use mipstream::Tier;
use std::time::Duration;

const TEXTURES: usize = 10_000;

fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

fn unit(x: u32) -> f32 {
    (hash(x) & 0xffff) as f32 / 65535.0
}

/// A BC7-like texture of `size` texels with a BC1-like compact tier, tail 64.
fn texture(size: u32) -> PlanTexture {
    let levels = 32 - size.leading_zeros();
    let cumulative = |bpt: f64| -> Vec<u64> {
        let mut v = vec![0u64; levels as usize];
        let mut acc = 0u64;
        for l in (0..levels).rev() {
            let s = (size >> l).max(1).div_ceil(4) as u64 * 4;
            acc += (s as f64 * s as f64 * bpt) as u64;
            v[l as usize] = acc;
        }
        v
    };
    PlanTexture {
        size,
        level_count: levels,
        tail_level: levels.saturating_sub(7),
        finest_allowed: 0,
        resident_bytes: [cumulative(1.0), cumulative(0.5)],
        boost: 1.0,
    }
}

fn planner(objects: usize) -> (Planner, u64) {
    let mut p = Planner::default();
    let mut full = 0;
    for t in 0..TEXTURES {
        let tex = texture(256 << (hash(t as u32) % 4));
        full += tex.bytes(0, Tier::Full);
        p.set_texture(t, tex);
    }
    let side = (objects as f32).sqrt() * 4.0;
    for o in 0..objects {
        let i = o as u32;
        let center = Vec3::new(
            (unit(i * 3) - 0.5) * side,
            unit(i * 3 + 1) * 4.0,
            (unit(i * 3 + 2) - 0.5) * side,
        );
        let tex = (hash(i) as usize) % TEXTURES;
        p.set_object(o, center, Vec3::splat(1.0 + unit(i) * 2.0), &[(tex, 2.0)]);
    }
    (p, full)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("planner re-plan (10k textures)");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for objects in [1_000usize, 10_000, 100_000, 1_000_000] {
        let (mut p, full) = planner(objects);
        let budget = full / 4;
        group.throughput(Throughput::Elements(objects as u64));
        let mut frame = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(objects), &objects, |b, _| {
            b.iter(|| {
                frame += 1;
                let eye = Vec3::new((frame % 100) as f32 * 0.5, 2.0, 0.0);
                let view = View::look_at(
                    eye,
                    eye + Vec3::new(0.3, -0.1, 1.0),
                    Vec3::Y,
                    1.0,
                    UVec2::new(1920, 1080),
                    0.1,
                    1e4,
                )
                .with_velocity(Vec3::new(5.0, 0.0, 0.0));
                p.plan(&[view], budget, &[], frame).bytes
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
