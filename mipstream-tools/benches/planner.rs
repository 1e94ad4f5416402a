//! The planner alone (no GPU): a full re-plan (densities over every object,
//! budget fit over every texture) for 1k to 1M objects sharing 10k textures,
//! with the camera moving a little each iteration.
//!
//! `cargo bench --bench planner`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mipstream_tools::bench::planner::{synthetic_planner, synthetic_view};
use std::time::Duration;

const TEXTURES: usize = 10_000;

fn planner(objects: usize) -> (mipstream::plan::Planner, u64) {
    synthetic_planner(objects, TEXTURES)
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
                let view = synthetic_view(frame);
                p.plan(&[view], budget, &[], frame).bytes
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
