//! The planner leaves textures that want only their tail out of the fit
//! (`chains.rs`, `Fixed`): held against the fit over every texture's chain.

use super::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Leaving the textures that want only their tail out of the fit (their
    /// bytes and error summed as constants) plans exactly what the fit over
    /// every texture's chain plans: same targets, tiers, limits, priorities,
    /// prefetches, bytes and room, frame after frame with what the plans
    /// made resident fed back, at budgets below the tails, binding, and
    /// spare; the error and its bound equal up to rounding.
    #[test]
    fn single_state_textures_left_out_of_the_fit_plan_the_same(
        objects in prop::collection::vec((-60.0f32..60.0, -60.0f32..60.0, -300.0f32..0.0, 0.0f32..5.0, 0usize..24, 0.1f32..8.0), 1..40),
        sizes in prop::collection::vec((6u32..12, any::<bool>(), 0u32..3, prop::option::of(1.0f32..80.0)), 24),
        budget_frac in 0.0f64..1.3,
        cam in (-10.0f32..60.0, -1.0f32..3.0),
        spare_floor in any::<bool>(),
        compact_tier in any::<bool>(),
    ) {
        let texs: Vec<PlanTexture> = sizes
            .iter()
            .map(|&(s, c, finest, loss)| {
                let t = texture(1 << s, c);
                let levels = t.level_count;
                PlanTexture {
                    finest_allowed: finest,
                    loss: loss.map(|first| PlanLoss {
                        full: curve(levels, first, 1.6),
                        ..Default::default()
                    }),
                    ..t
                }
            })
            .collect();
        let options = PlannerOptions { spare_floor, compact_tier, ..Default::default() };
        let mut planners = [Planner::new(options.clone()), Planner::new(options)];
        planners[1].chain_every_texture = true;
        let full = load_scene(&mut planners[0], &texs, &objects);
        load_scene(&mut planners[1], &texs, &objects);
        let budget = (full as f64 * budget_frac) as u64;
        let mut resident: Vec<ResidentState> = Vec::new();
        for frame in 0..6u64 {
            let view = camera(cam.0 - 8.0 * frame as f32 * cam.1);
            let [a, b] = &mut planners;
            let a = a.plan(&[view], budget, &resident, frame).clone();
            let b = b.plan(&[view], budget, &resident, frame).clone();
            prop_assert_eq!(&a.textures, &b.textures, "frame {}", frame);
            prop_assert_eq!(
                (a.bytes, a.tail_bytes, a.growth_room, a.over_budget),
                (b.bytes, b.tail_bytes, b.growth_room, b.over_budget)
            );
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-6);
            prop_assert!(close(a.fit_error, b.fit_error), "{} {}", a.fit_error, b.fit_error);
            // the bound sums the same terms in another order, and the
            // tie-break errors (1e-12 a level) drown in its rounding beside
            // the budget's bytes times the price: equal to within that
            match (a.fit_bound, b.fit_bound) {
                (Some(x), Some(y)) => {
                    let slack = 1e-8 + 1e-6 * (y.abs() + b.fit_error.abs());
                    prop_assert!((x - y).abs() <= slack, "{} {}", x, y);
                }
                (x, y) => prop_assert_eq!(x.is_some(), y.is_some()),
            }
            // what the plan asks for arrives by the next frame (a part of it)
            resident = a
                .textures
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let old = resident.get(i).copied();
                    let (level, tier) = if (i as u64 + frame).is_multiple_of(3) {
                        old.map_or((texs[i].tail_level, Tier::Full), |r| (r.level, r.tier))
                    } else {
                        (t.target, t.tier)
                    };
                    let since_frame = match old {
                        Some(r) if (r.level, r.tier) == (level, tier) => r.since_frame,
                        _ => frame,
                    };
                    ResidentState { level, tier, since_frame }
                })
                .collect();
        }
    }
}
