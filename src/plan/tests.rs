use super::fit::{exact_fit, Candidate, Fitter};
use super::*;
use glam::{UVec2, Vec3};
use proptest::prelude::*;

/// A square texture of `size` texels, BC7-like (1 byte per texel) with a BC1
/// compact tier when `compact`, tail from 64x64.
pub(super) fn texture(size: u32, compact: bool) -> PlanTexture {
    let levels = 32 - size.leading_zeros();
    let level_bytes = |l: u32, bpt: f64| {
        let s = (size >> l).max(1).div_ceil(4) as u64 * 4;
        (s as f64 * s as f64 * bpt) as u64
    };
    let cumulative = |bpt: f64| -> Vec<u64> {
        let mut v = vec![0u64; levels as usize];
        let mut acc = 0;
        for l in (0..levels).rev() {
            acc += level_bytes(l, bpt);
            v[l as usize] = acc;
        }
        v
    };
    let tail = (0..levels)
        .find(|&l| (size >> l) <= 64)
        .unwrap_or(levels - 1);
    PlanTexture {
        size,
        level_count: levels,
        tail_level: tail,
        finest_allowed: 0,
        resident_bytes: [
            cumulative(1.0),
            if compact { cumulative(0.5) } else { Vec::new() },
        ],
        boost: 1.0,
        loss: None,
        tie_key: 0,
    }
}

pub(super) fn camera(z: f32) -> View {
    View::look_at(
        Vec3::new(0.0, 0.0, z),
        Vec3::new(0.0, 0.0, z - 1.0),
        Vec3::Y,
        1.0,
        UVec2::new(1280, 720),
        0.1,
        1e4,
    )
}

/// An object of a generated scene: centre `(x, y, z)`, half size, the
/// texture it shows and the world units one UV unit spans.
pub(super) type SceneObject = (f32, f32, f32, f32, usize, f32);

/// Registers `textures` and `objects` with `p`; the textures' bytes at full
/// residency.
pub(super) fn load_scene(
    p: &mut Planner,
    textures: &[PlanTexture],
    objects: &[SceneObject],
) -> u64 {
    for (i, t) in textures.iter().enumerate() {
        p.set_texture(i, t.clone());
    }
    for (i, &(x, y, z, r, t, s)) in objects.iter().enumerate() {
        p.set_object(i, Vec3::new(x, y, z), Vec3::splat(r), &[(t, s)]);
    }
    textures.iter().map(|t| t.bytes(0, Tier::Full)).sum()
}

fn total(p: &Plan, textures: &[PlanTexture]) -> u64 {
    textures
        .iter()
        .enumerate()
        .map(|(i, t)| t.bytes(p.textures[i].target, p.textures[i].tier))
        .sum()
}

#[test]
fn an_unlimited_budget_gives_every_texture_what_it_wants() {
    let mut p = Planner::default();
    p.set_texture(0, texture(1024, false));
    p.set_object(0, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(1.0), &[(0, 2.0)]);
    let plan = p.plan(&[camera(0.0)], u64::MAX, &[], 0).clone();
    let t = plan.textures[0];
    assert!(t.lod.is_finite() && t.lod < 4.0, "{t:?}");
    assert_eq!(t.target, t.wanted);
    assert_eq!(t.target, t.lod.floor().max(0.0) as u32);
    assert_eq!(t.limit, None);
}

#[test]
fn a_zero_budget_keeps_the_tails_only() {
    let mut p = Planner::default();
    for i in 0..4 {
        p.set_texture(i, texture(1024, true));
        p.set_object(
            i,
            Vec3::new(i as f32, 0.0, -3.0),
            Vec3::splat(1.0),
            &[(i, 2.0)],
        );
    }
    let plan = p.plan(&[camera(0.0)], 0, &[], 0).clone();
    for t in &plan.textures {
        assert_eq!(t.target, 4, "the 64x64 tail");
        assert_eq!(t.limit, Some(Limit::Budget));
    }
    assert_eq!(plan.bytes, plan.tail_bytes);
}

#[test]
fn the_budget_goes_where_it_removes_most_error_per_byte() {
    let mut p = Planner::default();
    let tex = [texture(1024, false), texture(1024, false)];
    p.set_texture(0, tex[0].clone());
    p.set_texture(1, tex[1].clone());
    p.set_object(0, Vec3::new(-1.0, 0.0, -2.0), Vec3::splat(1.0), &[(0, 2.0)]); // close
    p.set_object(
        1,
        Vec3::new(30.0, 0.0, -60.0),
        Vec3::splat(1.0),
        &[(1, 2.0)],
    ); // far
       // and room for growing texture 0 (its old copy and staging beside it)
    let budget = 2 * tex[0].bytes(1, Tier::Full) + tex[1].bytes(4, Tier::Full);
    let plan = p.plan(&[camera(0.0)], budget, &[], 0).clone();
    assert!(
        plan.textures[0].target < plan.textures[1].target,
        "{:?}",
        plan.textures
    );
    assert!(total(&plan, &tex) <= budget);
}

#[test]
fn max_resolution_is_reported() {
    let mut p = Planner::default();
    let mut t = texture(1024, false);
    t.finest_allowed = 3;
    p.set_texture(0, t);
    p.set_object(0, Vec3::new(0.0, 0.0, -1.0), Vec3::splat(1.0), &[(0, 1.0)]);
    let plan = p.plan(&[camera(0.0)], u64::MAX, &[], 0).clone();
    assert_eq!(plan.textures[0].target, 3);
    assert_eq!(plan.textures[0].limit, Some(Limit::MaxResolution));
}

#[test]
fn jitter_around_a_mip_boundary_does_not_flip_the_wanted_level() {
    let mut p = Planner::default();
    p.set_texture(0, texture(1024, false));
    p.set_object(0, Vec3::ZERO, Vec3::ZERO, &[(0, 1.0)]);
    // find a distance where the lod is exactly 2.0: lod = log2(1024 d / k)
    let k = camera(0.0).pixels_per_unit_at_1();
    let d = 4.0 * k / 1024.0;
    let mut seen = std::collections::HashSet::new();
    for i in 0..50 {
        let jitter = if i % 2 == 0 { 1.05 } else { 0.95 }; // +-0.07 mips
        let plan = p.plan(&[camera(d * jitter)], u64::MAX, &[], i).clone();
        if i > 0 {
            seen.insert(plan.textures[0].wanted);
        }
    }
    assert_eq!(seen.len(), 1, "wanted level flipped: {seen:?}");
}

#[test]
fn recent_residency_is_kept_while_wanted_but_a_smaller_budget_wins() {
    // the fit alone: with an unlimited budget the spare floor would hold everything
    let mut p = Planner::new(PlannerOptions {
        spare_floor: false,
        ..Default::default()
    });
    let t = texture(1024, false);
    // two textures side by side at the same distance; the second matters
    // four times as much per pixel
    p.set_texture(0, t.clone());
    p.set_texture(
        1,
        PlanTexture {
            boost: 4.0,
            ..t.clone()
        },
    );
    p.set_object(0, Vec3::new(-1.0, 0.0, -4.0), Vec3::splat(0.5), &[(0, 2.0)]);
    p.set_object(1, Vec3::new(1.0, 0.0, -4.0), Vec3::splat(0.5), &[(1, 2.0)]);
    let free = p.plan(&[camera(0.0)], u64::MAX, &[], 0).clone();
    let want = free.textures[0].wanted;
    assert_eq!(want, free.textures[1].wanted);
    // the first holds its wanted level (since frame 10), the second one
    // coarser; room for one of them at the wanted level, the other a level
    // coarser, and the growth (the new copy beside the old)
    let budget = 2 * t.bytes(want, Tier::Full) + t.bytes(want + 1, Tier::Full);
    let resident = [
        ResidentState {
            level: want,
            tier: Tier::Full,
            since_frame: 10,
        },
        ResidentState {
            level: want + 1,
            tier: Tier::Full,
            since_frame: 0,
        },
    ];
    // two frames after texture 0 arrived: it keeps its level, though the
    // second would remove more error with the bytes
    let locked = p.plan(&[camera(0.0)], budget, &resident, 12).clone();
    assert_eq!(
        locked.textures[0].target, want,
        "a state resident for 2 frames was dropped"
    );
    assert!(locked.textures[1].target > want);
    // once the lock ends, the bytes go where they remove more error
    let later = p.plan(&[camera(0.0)], budget, &resident, 100).clone();
    assert!(
        later.textures[1].target < locked.textures[1].target,
        "locked {:?}, later {:?}",
        locked.textures[1],
        later.textures[1]
    );
    // the camera leaves: detail no view wants is not held, lock or not
    let far = p.plan(&[camera(500.0)], u64::MAX, &resident, 12).textures[0];
    assert!(far.target > want, "{far:?}");
    // and a smaller budget always wins, even while locked and wanted
    let tight = p
        .plan(&[camera(0.0)], t.bytes(6, Tier::Full), &resident, 12)
        .textures[0];
    assert!(tight.target > want);
}

#[test]
fn the_compact_tier_is_used_under_pressure_only() {
    let mut p = Planner::default();
    let t = texture(1024, true);
    p.set_texture(0, t.clone());
    // scale the texture on the object so its lod is 0.2: level 0 is just what
    // the pixels need, level 1 loses half the detail, more than the compact
    // tier's quality loss
    // a flat quad facing the camera: every pixel is about as far
    let half = Vec3::new(1.0, 1.0, 0.01);
    p.set_object(0, Vec3::new(0.0, 0.0, -1.5), half, &[(0, 1.0)]);
    let lod = p.plan(&[camera(0.0)], u64::MAX, &[], 0).textures[0].lod;
    p.set_object(
        0,
        Vec3::new(0.0, 0.0, -1.5),
        half,
        &[(0, (lod - 0.2).exp2())],
    );
    let full = p.plan(&[camera(0.0)], u64::MAX, &[], 0).textures[0];
    assert!((full.lod - 0.2).abs() < 0.05, "{}", full.lod);
    assert_eq!((full.wanted, full.tier), (0, Tier::Full));
    // room for the wanted level in the compact tier only (and for growing
    // into it: the plan keeps that much free beside it)
    let budget = 2 * t.bytes(full.wanted, Tier::Compact);
    let tight = p.plan(&[camera(0.0)], budget, &[], 1).textures[0];
    assert_eq!((tight.target, tight.tier), (full.wanted, Tier::Compact));
    assert_eq!(tight.limit, Some(Limit::Budget));
    // with the compact tier switched off, the same budget drops a mip instead
    p.set_options(PlannerOptions {
        compact_tier: false,
        ..Default::default()
    });
    let no_compact = p.plan(&[camera(0.0)], budget, &[], 2).textures[0];
    assert_eq!(no_compact.tier, Tier::Full);
    assert!(no_compact.target > full.wanted, "{no_compact:?}");
    assert!(2 * t.bytes(no_compact.target, Tier::Full) <= budget);
}

#[test]
fn spare_budget_raises_a_floor_and_prefetches_the_textures_nearest_to_needing_more() {
    let t = texture(1024, false);
    let planner = |spare_floor| {
        let mut p = Planner::new(PlannerOptions {
            spare_floor,
            ..Default::default()
        });
        for slot in 0..3 {
            p.set_texture(slot, t.clone());
        }
        // texture 0 is seen close up, 1 further away, 2 by nothing
        p.set_object(0, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(1.0), &[(0, 2.0)]);
        p.set_object(1, Vec3::new(0.0, 0.0, -60.0), Vec3::splat(1.0), &[(1, 2.0)]);
        p
    };
    let fit_only = planner(false)
        .plan(&[camera(0.0)], u64::MAX, &[], 0)
        .clone();
    let mut p = planner(true);
    assert_eq!(
        fit_only.textures[2].target, t.tail_level,
        "unseen: tail only"
    );
    // room for what the views want plus a little: the unseen texture and the
    // distant one get finer levels, as prefetch
    let wanted: u64 = (0..3)
        .map(|i| t.bytes(fit_only.textures[i].target, Tier::Full))
        .sum();
    // (and the room the plan keeps for growing texture 0, its largest step)
    let room = t.bytes(fit_only.textures[0].target, Tier::Full);
    let budget = wanted + t.bytes(2, Tier::Full) + room;
    let plan = p.plan(&[camera(0.0)], budget, &[], 1).clone();
    assert_eq!(plan.growth_room, room);
    assert!(plan.bytes + plan.growth_room <= budget);
    assert_eq!(plan.textures[0].target, fit_only.textures[0].target);
    assert!(!plan.textures[0].prefetch);
    assert!(plan.textures[2].target < t.tail_level && plan.textures[2].prefetch);
    assert!(
        plan.textures[2].priority < 1e-20,
        "prefetch loads come last"
    );
    // no room beyond what the views want: no prefetch
    let tight = p.plan(&[camera(0.0)], wanted + room, &[], 2).clone();
    assert!(tight.textures.iter().all(|t| !t.prefetch), "{tight:?}");
}

#[test]
fn removed_textures_and_objects_are_ignored() {
    let mut p = Planner::default();
    p.set_texture(0, texture(256, false));
    p.set_texture(1, texture(256, false));
    p.set_object(0, Vec3::ZERO, Vec3::splat(1.0), &[(0, 1.0), (1, 1.0)]);
    p.remove_texture(1);
    p.remove_object(0);
    p.set_object(1, Vec3::new(0.0, 0.0, -3.0), Vec3::splat(1.0), &[(0, 1.0)]);
    let plan = p.plan(&[camera(0.0)], u64::MAX, &[], 0).clone();
    assert!(plan.textures[0].lod.is_finite());
    assert!(!plan.textures[1].lod.is_finite());
}

/// After thousands of sets, replacements, moves and removals (enough to
/// compact the binding list and the byte-table pool several times), the
/// planner plans what a planner built fresh from the final state plans, and
/// its storage stays bounded.
#[test]
fn a_churned_planner_plans_like_a_fresh_one() {
    fn hash(mut x: u32) -> u32 {
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    }
    type Obj = (Vec3, Vec3, Vec<(usize, f32)>);
    let mut p = Planner::default();
    let mut textures: Vec<Option<PlanTexture>> = vec![None; 40];
    let mut objects: Vec<Option<Obj>> = vec![None; 300];
    let mut rng = 7u32;
    let mut next = |n: u32| {
        rng = hash(rng.wrapping_add(0x9e37_79b9));
        rng % n
    };
    for _ in 0..20_000 {
        match next(10) {
            0..=1 => {
                let t = next(40) as usize;
                let tex = texture(1 << (6 + next(6)), next(2) == 0);
                p.set_texture(t, tex.clone());
                textures[t] = Some(tex);
            }
            2 => {
                let t = next(40) as usize;
                p.remove_texture(t);
                textures[t] = None;
                for (_, _, b) in objects.iter_mut().flatten() {
                    b.retain(|&(bt, _)| bt != t);
                }
            }
            3..=6 => {
                let o = next(300) as usize;
                let center = Vec3::new(next(200) as f32 - 100.0, 0.0, -(next(300) as f32));
                let half = Vec3::splat(0.5 + next(8) as f32);
                let b: Vec<(usize, f32)> = (0..next(4))
                    .map(|_| (next(40) as usize, 0.5 + next(4) as f32))
                    .collect();
                p.set_object(o, center, half, &b);
                let live = b.into_iter().filter(|&(t, _)| textures[t].is_some());
                objects[o] = Some((center, half, live.collect()));
            }
            7..=8 => {
                let o = next(300) as usize;
                let center = Vec3::new(next(200) as f32 - 100.0, 1.0, -(next(300) as f32));
                p.move_object(o, center, Vec3::splat(2.0));
                if let Some(obj) = &mut objects[o] {
                    (obj.0, obj.1) = (center, Vec3::splat(2.0));
                }
            }
            _ => {
                let o = next(300) as usize;
                p.remove_object(o);
                objects[o] = None;
            }
        }
    }
    let mut fresh = Planner::default();
    for (i, t) in textures.iter().enumerate() {
        if let Some(t) = t {
            fresh.set_texture(i, t.clone());
        }
    }
    for (i, o) in objects.iter().enumerate() {
        if let Some((c, h, b)) = o {
            fresh.set_object(i, *c, *h, b);
        }
    }
    let live_bindings: usize = objects.iter().flatten().map(|o| o.2.len()).sum();
    assert!(
        p.bindings.len() <= 3 * live_bindings.max(1024),
        "{} bindings",
        p.bindings.len()
    );
    assert!(
        p.pool.len() <= 3 * fresh.pool.len().max(4096),
        "pool {}",
        p.pool.len()
    );
    let full: u64 = textures
        .iter()
        .flatten()
        .map(|t| t.bytes(0, Tier::Full))
        .sum();
    for budget in [u64::MAX, full / 3] {
        let a = p.plan(&[camera(5.0)], budget, &[], 0).clone();
        let b = fresh.plan(&[camera(5.0)], budget, &[], 0).clone();
        assert_eq!(a.bytes, b.bytes);
        for (i, (x, y)) in a.textures.iter().zip(&b.textures).enumerate() {
            if textures[i].is_none() {
                continue;
            }
            let close = |u: f32, v: f32| u == v || (u - v).abs() <= 1e-4 * u.abs().max(1.0);
            assert!(
                close(x.lod, y.lod),
                "texture {i}: lod {} vs {}",
                x.lod,
                y.lod
            );
            assert!(
                close(x.coverage, y.coverage),
                "texture {i}: {} vs {}",
                x.coverage,
                y.coverage
            );
            assert_eq!((x.target, x.tier), (y.target, y.tier), "texture {i}");
        }
    }
}

/// The chains the planner would build for `(size, compact, coverage, lod)`
/// textures, each holding `held[i]` in its full tier (`u32::MAX`: its tail),
/// with the growth room each state needs as `build_chains` counts it.
fn chains_held(textures: &[(u32, bool, f32, f32)], held: &[u32]) -> Vec<Vec<Candidate>> {
    let p = Planner::default();
    textures
        .iter()
        .zip(held)
        .map(|(&(size, compact, cov, lod), &held)| {
            let t = texture(size, compact);
            let held = held.min(t.tail_level);
            let need = Need {
                finest: lod,
                typical: lod,
                coverage: cov,
            };
            let grow = |level: u32, tier: Tier| {
                if level >= t.tail_level || (tier == Tier::Full && level >= held) {
                    0
                } else if tier == Tier::Full || held >= t.tail_level {
                    t.bytes(level, tier)
                } else {
                    t.bytes(level, tier) + t.bytes(held, Tier::Full)
                }
            };
            let state = |l: u32, tier: Tier| Candidate {
                bytes: t.bytes(l, tier),
                error: p.error(&t, need, l, tier),
                grow: grow(l, tier),
            };
            let wanted = (lod.floor().max(0.0) as u32).min(t.tail_level);
            let mut c = vec![state(t.tail_level, Tier::Full)];
            for l in (wanted..t.tail_level).rev() {
                if compact {
                    c.push(state(l, Tier::Compact));
                }
                c.push(state(l, Tier::Full));
            }
            c
        })
        .collect()
}

/// The greedy fit's total error, bytes used and growth room.
fn greedy(chains: &[Vec<Candidate>], budget: u64) -> (f64, u64, u64) {
    let mut all = Vec::new();
    let mut off = vec![0u32];
    for c in chains {
        all.extend_from_slice(c);
        off.push(all.len() as u32);
    }
    let mut choice = Vec::new();
    let mut fitter = Fitter::default();
    let used = fitter.fit(&all, &off, &[], budget, &mut choice);
    let err = chains
        .iter()
        .zip(&choice)
        .map(|(c, &i)| c[i as usize].error)
        .sum();
    (err, used, fitter.room())
}

/// The greedy fit against the exact optimum (growth room included, exact in
/// bytes) on small random cases: never better than the optimum (that would
/// be a bug in one of them), feasible with its room, and the real gap
/// reported and bounded by the largest single step's error.
#[test]
fn greedy_fit_is_close_to_the_exact_optimum() {
    let mut rng = 12345u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut sum_gap, mut worst_rel, mut cases, mut exact_hits) = (0.0, 0.0f64, 0, 0);
    for case in 0..200 {
        let n = 2 + (next() % 4) as usize;
        let texs: Vec<(u32, bool, f32, f32)> = (0..n)
            .map(|_| {
                (
                    256 << (next() % 2),
                    next() % 2 == 0,
                    100.0 + (next() % 5000) as f32,
                    (next() % 40) as f32 / 10.0,
                )
            })
            .collect();
        // a third of the textures hold a level already (no room to grow into it)
        let held: Vec<u32> = (0..n)
            .map(|_| {
                if next() % 3 == 0 {
                    (next() % 5) as u32
                } else {
                    u32::MAX
                }
            })
            .collect();
        let chains = chains_held(&texs, &held);
        let bases: u64 = chains.iter().map(|c| c[0].bytes).sum();
        let max: u64 = chains.iter().map(|c| c.last().unwrap().bytes).sum();
        let budget = bases + (next() % (2 * (max - bases) + 1));
        let (g, used, room) = greedy(&chains, budget);
        assert!(
            used + room <= budget,
            "case {case}: {used} + {room} > {budget}"
        );
        let (opt, _) = exact_fit(&chains, budget).expect("the bases fit");
        assert!(
            g >= opt - 1e-9 * opt.abs().max(1.0),
            "case {case}: greedy {g} below the optimum {opt}"
        );
        let max_step = chains
            .iter()
            .flat_map(|c| c.windows(2).map(|w| w[0].error - w[1].error))
            .fold(0.0, f64::max);
        assert!(
            g - opt <= max_step + 1e-6,
            "case {case}: gap {} exceeds one step {}",
            g - opt,
            max_step
        );
        let total_err: f64 = chains.iter().map(|c| c[0].error).sum::<f64>().max(1e-9);
        sum_gap += (g - opt) / total_err;
        worst_rel = worst_rel.max((g - opt) / total_err);
        exact_hits += usize::from(g - opt <= 1e-9 * opt.abs().max(1.0));
        cases += 1;
    }
    eprintln!(
        "greedy vs exact over {cases} cases: optimal in {exact_hits}, mean gap {:.3}% and worst {:.3}% of the tails-only error",
        100.0 * sum_gap / cases as f64,
        100.0 * worst_rel
    );
    // integrality: the greedy may leave one large step out that the optimum fits
    assert!(worst_rel < 0.10, "worst gap {:.3}%", 100.0 * worst_rel);
    assert!(
        sum_gap / (cases as f64) < 0.005,
        "mean gap {:.3}%",
        100.0 * sum_gap / cases as f64
    );
}

/// The room trap: a texture holding level 4 whose finer state needs room
/// beside itself that the greedy pass never makes (case 41 of the random
/// cases above). The refit for the room of a state the pass ruled out
/// finds the optimum; refitting only for states beaten on bytes and error,
/// as the fit did before, left it 0.24% of the error above.
#[test]
fn the_fit_makes_room_for_a_growth_the_pass_ruled_out() {
    let texs = [
        (512, true, 1809.0, 1.0),
        (256, false, 3066.0, 3.5),
        (512, false, 1679.0, 0.4),
    ];
    let chains = chains_held(&texs, &[4, u32::MAX, 4]);
    let budget = 69_291;
    let (g, used, room) = greedy(&chains, budget);
    let (opt, _) = exact_fit(&chains, budget).expect("the bases fit");
    assert!(used + room <= budget, "{used} + {room} > {budget}");
    assert!(room > 0, "the plan grows into a state needing room");
    assert!((g - opt).abs() <= 1e-9 * opt, "greedy {g}, optimum {opt}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Whatever the scene and budget: the plan fits the budget (or is the tails
    /// alone), every target lies between the wanted level and the tail, and
    /// nothing wanted is refused once the budget holds full residency and the
    /// room to grow into it.
    #[test]
    fn plans_respect_budget_and_bounds(
        objects in prop::collection::vec((-50.0f32..50.0, -50.0f32..50.0, -200.0f32..0.0, 0.0f32..5.0, 0usize..6, 0.1f32..8.0), 1..30),
        sizes in prop::collection::vec((6u32..12, any::<bool>()), 6),
        budget_frac in 0.0f64..1.2,
        cam_z in -10.0f32..50.0,
    ) {
        let mut p = Planner::default();
        let texs: Vec<PlanTexture> = sizes.iter().map(|&(s, c)| texture(1 << s, c)).collect();
        let full = load_scene(&mut p, &texs, &objects);
        let budget = (full as f64 * budget_frac) as u64;
        // with the spare floor (the default): within budget and bounds, and
        // never coarser than the fit alone
        let floored = p.plan(&[camera(cam_z)], budget, &[], 0).clone();
        prop_assert_eq!(total(&floored, &texs), floored.bytes);
        prop_assert!(floored.bytes <= budget.max(floored.tail_bytes));
        p.set_options(PlannerOptions { spare_floor: false, ..Default::default() });
        let plan = p.plan(&[camera(cam_z)], budget, &[], 0).clone();
        for (i, t) in texs.iter().enumerate() {
            let (f, tp) = (floored.textures[i], plan.textures[i]);
            prop_assert!(f.target <= t.tail_level && f.tier == tp.tier);
            prop_assert!(f.target <= tp.target, "the floor never coarsens");
            prop_assert_eq!(f.prefetch, f.target < tp.target);
        }
        let used = total(&plan, &texs);
        prop_assert_eq!(used, plan.bytes);
        prop_assert!(used <= budget.max(plan.tail_bytes));
        // growing into a level needs its new copy and staged levels beside
        // what is held (at most the texture's full bytes more), so "nothing
        // refused" holds from full residency plus the largest texture on
        let largest = texs.iter().map(|t| t.bytes(0, Tier::Full)).max().unwrap_or(0);
        for (i, t) in texs.iter().enumerate() {
            let tp = plan.textures[i];
            prop_assert!(tp.target >= tp.wanted && tp.target <= t.tail_level);
            if budget >= full + largest {
                prop_assert_eq!(tp.target, tp.wanted);
                prop_assert_eq!(tp.tier, Tier::Full);
            }
        }
    }
}

#[test]
fn growth_that_stages_kept_levels_again_leaves_room_for_them() {
    let t = texture(1024, false);
    let mut p = Planner::default();
    p.set_texture(0, t.clone());
    p.set_object(0, Vec3::new(0.0, 0.0, -2.0), Vec3::splat(1.0), &[(0, 1.0)]);
    let held = [ResidentState {
        level: 3,
        tier: Tier::Full,
        since_frame: 0,
    }];
    let budget = 4 * t.bytes(0, Tier::Full);
    let plain = p.plan(&[camera(0.0)], budget, &held, 100).clone();
    assert!(plain.textures[0].target < 3 && plain.growth_room > 0);
    p.set_growth_restages_kept_levels(true);
    let restaged = p.plan(&[camera(0.0)], budget, &held, 100).clone();
    assert_eq!(restaged.textures[0].target, plain.textures[0].target);
    assert_eq!(
        restaged.growth_room,
        plain.growth_room + t.bytes(3, Tier::Full)
    );
}

/// A loss curve whose every level adds `step` times the last level's error.
fn curve(levels: u32, first: f32, ratio: f32) -> Vec<f32> {
    let mut e = 0.0;
    let mut add = first;
    (0..levels)
        .map(|l| {
            if l > 0 {
                e += add;
                add *= ratio;
            }
            e
        })
        .collect()
}

mod measured_loss;
mod single_state;
