//! The planner judging textures by their measured loss curves.

use super::*;

#[test]
fn measured_loss_gives_the_bytes_to_the_texture_whose_detail_shows() {
    // two textures alike in size and on screen: one a flat plaster (little
    // lost per level), one brickwork (much lost)
    let t = texture(1024, false);
    let flat = PlanTexture {
        loss: Some(PlanLoss {
            full: curve(t.level_count, 1.0, 1.5),
            ..Default::default()
        }),
        ..t.clone()
    };
    let bricks = PlanTexture {
        loss: Some(PlanLoss {
            full: curve(t.level_count, 60.0, 1.5),
            ..Default::default()
        }),
        ..t.clone()
    };
    let plan = |model: LossModel| {
        let mut p = Planner::new(PlannerOptions {
            spare_floor: false,
            error_model: model,
            ..Default::default()
        });
        p.set_texture(0, flat.clone());
        p.set_texture(1, bricks.clone());
        p.set_object(0, Vec3::new(-1.0, 0.0, -4.0), Vec3::splat(0.5), &[(0, 2.0)]);
        p.set_object(1, Vec3::new(1.0, 0.0, -4.0), Vec3::splat(0.5), &[(1, 2.0)]);
        let want = p.plan(&[camera(0.0)], u64::MAX, &[], 0).textures[0].wanted;
        // room for one of them at its wanted level (and its growth), the
        // other a level coarser
        let budget = 2 * t.bytes(want, Tier::Full) + t.bytes(want + 1, Tier::Full);
        let plan = p.plan(&[camera(0.0)], budget, &[], 1).clone();
        (want, plan, p.uses_measured_loss(1))
    };
    let (want, measured, uses) = plan(LossModel::Measured);
    assert!(uses);
    assert_eq!(measured.textures[1].target, want, "{:?}", measured.textures);
    assert!(measured.textures[0].target > want);
    // the geometric model cannot tell them apart: the tie goes by slot
    let (_, geometric, uses) = plan(LossModel::Geometric);
    assert!(!uses);
    assert!(geometric.textures[1].target >= geometric.textures[0].target);
    assert_eq!(
        geometric.textures[0].target, want,
        "{:?}",
        geometric.textures
    );
    // the certificate: a bound at most the plan's error
    let gap = measured.fit_gap().expect("the fit certifies its plan");
    assert!((0.0..=1.0).contains(&gap), "{gap}");
    assert!(
        measured.fit_bound.unwrap() <= measured.fit_error,
        "{} > {}",
        measured.fit_bound.unwrap(),
        measured.fit_error
    );
}

#[test]
fn a_loss_that_does_not_match_the_levels_falls_back_to_the_geometric_model() {
    let t = texture(1024, true);
    let mut p = Planner::new(PlannerOptions {
        error_model: LossModel::Measured,
        ..Default::default()
    });
    let bad = PlanTexture {
        loss: Some(PlanLoss {
            full: vec![0.0, 1.0],
            ..Default::default()
        }),
        ..t.clone()
    };
    p.set_texture(0, bad);
    assert!(!p.uses_measured_loss(0));
    // a decreasing curve is made monotone, a compact one at least the full one
    let odd = PlanTexture {
        loss: Some(PlanLoss {
            full: (0..t.level_count)
                .map(|l| if l == 3 { 1.0 } else { l as f32 * 10.0 })
                .collect(),
            compact: vec![0.0; t.level_count as usize],
            compact_blur: 0.5,
        }),
        ..t
    };
    p.set_texture(1, odd);
    assert!(p.uses_measured_loss(1));
    let stored = &p.losses[1];
    let n = stored.len() / 2;
    assert!(stored[..n].windows(2).all(|w| w[0] <= w[1]), "{stored:?}");
    assert!((0..n).all(|l| stored[n + l] >= stored[l]));
    assert_eq!(stored[2 * n], 0.5);
}

#[test]
fn the_geometric_unit_follows_the_measured_textures_as_they_come_and_go() {
    // the unit is kept between plans (recomputing it read every texture's
    // curve every plan); it must still follow registrations and options
    let t = texture(1024, false);
    let tail = t.tail_level as usize;
    let with = |first: f32| PlanTexture {
        loss: Some(PlanLoss {
            full: curve(t.level_count, first, 1.5),
            ..Default::default()
        }),
        ..t.clone()
    };
    let at_tail = |first: f32| curve(t.level_count, first, 1.5)[tail] as f64;
    let mut p = Planner::new(PlannerOptions::default());
    p.set_object(0, Vec3::new(0.0, 0.0, -4.0), Vec3::splat(0.5), &[(0, 1.0)]);
    let plan = |p: &mut Planner, frame: u64| {
        p.plan(&[camera(0.0)], u64::MAX, &[], frame);
        p.detail_scale
    };
    p.set_texture(0, t.clone());
    assert_eq!(plan(&mut p, 0), DEFAULT_DETAIL_MSE, "nothing measured");
    p.set_texture(0, with(2.0));
    assert!((plan(&mut p, 1) - at_tail(2.0)).abs() < 1e-3);
    p.set_texture(1, with(10.0));
    let both = (at_tail(2.0) + at_tail(10.0)) / 2.0;
    assert!((plan(&mut p, 2) - both).abs() < 1e-3);
    assert!((plan(&mut p, 3) - both).abs() < 1e-3, "kept between plans");
    p.remove_texture(1);
    assert!((plan(&mut p, 4) - at_tail(2.0)).abs() < 1e-3);
    p.set_options(PlannerOptions {
        error_model: LossModel::Geometric,
        ..Default::default()
    });
    assert_eq!(plan(&mut p, 5), 1.0, "the geometric model's own unit");
}

#[test]
fn the_knapsack_certificate_lies_between_the_lp_bound_and_the_plan() {
    // six textures of different detail at different distances, a budget a
    // third of what they want: both bounds below the plan, the integer
    // problem's at or above the LP's but for its rounding
    let t = texture(1024, true);
    let mut p = Planner::new(PlannerOptions {
        spare_floor: false,
        knapsack_certificate: true,
        ..Default::default()
    });
    let mut wanted_bytes = 0;
    for i in 0..6usize {
        p.set_texture(
            i,
            PlanTexture {
                loss: Some(PlanLoss {
                    full: curve(t.level_count, 5.0 + 20.0 * i as f32, 1.5),
                    ..Default::default()
                }),
                ..t.clone()
            },
        );
        let z = -3.0 - 2.0 * i as f32;
        p.set_object(
            i,
            Vec3::new(i as f32 - 3.0, 0.0, z),
            Vec3::splat(0.5),
            &[(i, 2.0)],
        );
    }
    for w in &p.plan(&[camera(0.0)], u64::MAX, &[], 0).textures {
        wanted_bytes += t.bytes(w.wanted, Tier::Full);
    }
    let plan = p.plan(&[camera(0.0)], wanted_bytes / 3, &[], 1).clone();
    let (lp, knapsack) = (plan.fit_bound.unwrap(), plan.fit_bound_knapsack.unwrap());
    assert!(
        knapsack <= plan.fit_error * (1.0 + 1e-12),
        "{knapsack} > {}",
        plan.fit_error
    );
    assert!(knapsack >= lp * (1.0 - 1e-3), "{knapsack} < {lp}");
    // (the budget binds: the plan gives something up)
    assert!(lp < plan.fit_error);
    assert!(plan.fit_gap_knapsack().unwrap() <= plan.fit_gap().unwrap() + 1e-3);
    // off by default: a renderer does not pay for it
    assert!(!PlannerOptions::default().knapsack_certificate);
}
