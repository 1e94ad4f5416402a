//! The planner alone, no GPU (`mipstream bench-planner`, `cargo bench --bench
//! planner`): a synthetic scene of `objects` boxes sharing `textures`
//! BC7-sized textures (256 to 2048 texels, with a half-size compact tier),
//! re-planned every frame while the camera moves.

use glam::{UVec2, Vec3};
use mipstream::kinds::Tier;
use mipstream::plan::{PlanTexture, Planner, View};
use std::time::Instant;

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
pub fn synthetic_texture(size: u32) -> PlanTexture {
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
        loss: None,
        tie_key: 0,
    }
}

/// A planner holding `textures` textures and `objects` objects spread over a
/// square field (about 4 m apart), each showing one texture; with the bytes
/// all textures take at full resolution.
pub fn synthetic_planner(objects: usize, textures: usize) -> (Planner, u64) {
    let textures = textures.max(1);
    let mut p = Planner::default();
    let mut full = 0;
    for t in 0..textures {
        let tex = synthetic_texture(256 << (hash(t as u32) % 4));
        full += tex.bytes(0, Tier::Full);
        p.set_texture(t, tex);
    }
    let side = (objects as f32).sqrt() * 4.0;
    for o in 0..objects {
        let (center, half, tex) = synthetic_box(o, side, textures);
        p.set_object(o, center, half, &[(tex, 2.0)]);
    }
    (p, full)
}

/// Object `o` of the field `side` metres square: its centre, half extents
/// and which of `textures` it shows (2 world units per UV unit).
pub fn synthetic_box(o: usize, side: f32, textures: usize) -> (Vec3, Vec3, usize) {
    let i = o as u32;
    let center = Vec3::new(
        (unit(i * 3) - 0.5) * side,
        unit(i * 3 + 1) * 4.0,
        (unit(i * 3 + 2) - 0.5) * side,
    );
    let tex = (hash(i) as usize) % textures.max(1);
    (center, Vec3::splat(1.0 + unit(i) * 2.0), tex)
}

/// The camera of frame `frame`: walking along x, looking ahead and down.
pub fn synthetic_view(frame: u64) -> View {
    let eye = Vec3::new((frame % 100) as f32 * 0.5, 2.0, 0.0);
    View::look_at(
        eye,
        eye + Vec3::new(0.3, -0.1, 1.0),
        Vec3::Y,
        1.0,
        UVec2::new(1920, 1080),
        0.1,
        1e4,
    )
    .with_velocity(Vec3::new(5.0, 0.0, 0.0))
}

/// Re-plan times over a moving camera.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerBench {
    /// Objects.
    pub objects: usize,
    /// Textures.
    pub textures: usize,
    /// Re-plans timed.
    pub frames: usize,
    /// Median, ms.
    pub update_ms_p50: f64,
    /// 99th percentile, ms.
    pub update_ms_p99: f64,
    /// Slowest, ms.
    pub update_ms_max: f64,
    /// Whether each plan was certified.
    pub certify: bool,
}

/// Times `frames` full re-plans (after a few untimed ones) at a quarter of
/// full residency; `certify`: with each plan's LP certificate
/// ([`mipstream::plan::PlannerOptions::certify`]).
pub fn bench_planner(
    objects: usize,
    textures: usize,
    frames: usize,
    certify: bool,
) -> PlannerBench {
    let (mut p, full) = synthetic_planner(objects, textures);
    p.set_options(mipstream::plan::PlannerOptions {
        certify,
        ..p.options().clone()
    });
    let budget = full / 4;
    for f in 0..3 {
        p.plan(&[synthetic_view(f)], budget, &[], f);
    }
    let mut times: Vec<f64> = (0..frames.max(1) as u64)
        .map(|f| {
            let view = synthetic_view(f + 3);
            let start = Instant::now();
            std::hint::black_box(p.plan(&[view], budget, &[], f + 3).bytes);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    PlannerBench {
        objects,
        textures,
        frames: times.len(),
        update_ms_p50: super::percentile(&times, 0.5),
        update_ms_p99: super::percentile(&times, 0.99),
        update_ms_max: times.last().copied().unwrap_or(0.0),
        certify,
    }
}

impl PlannerBench {
    /// The JSON `mipstream bench-planner --json` writes.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "objects": self.objects,
            "textures": self.textures,
            "frames": self.frames,
            "update_ms_p50": self.update_ms_p50,
            "update_ms_p99": self.update_ms_p99,
            "update_ms_max": self.update_ms_max,
            "certify": self.certify,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_scene_plans_within_its_budget_and_times_are_ordered() {
        let (mut p, full) = synthetic_planner(2000, 100);
        let plan = p.plan(&[synthetic_view(0)], full / 4, &[], 0);
        assert!(plan.bytes <= full / 4 && plan.bytes > 0);
        let b = bench_planner(500, 50, 20, true);
        assert_eq!((b.objects, b.textures, b.frames), (500, 50, 20));
        assert!(b.update_ms_p50 > 0.0);
        assert!(b.update_ms_p50 <= b.update_ms_p99 && b.update_ms_p99 <= b.update_ms_max);
    }
}
