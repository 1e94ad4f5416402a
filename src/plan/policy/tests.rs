use super::*;

#[test]
fn a_budgeted_rule_keeps_room_for_the_largest_growth_it_chooses() {
    // two textures at their tails, both wanting level 0; the budget
    // holds both at level 1, but a growth needs its new copy beside
    // everything held
    let c = chain(4);
    let assets = [tex(&c, 0, true, 4), tex(&c, 0, true, 4)];
    let budget = 2 * c[1] + 30;
    let plain = unreal_pool(&assets, budget);
    let (kept, room) = with_growth_room(&assets, budget, false, |b| unreal_pool(&assets, b));
    // the plain rule leaves no room for its own growth
    assert_eq!(plain.target, [1, 1]);
    assert!(plain.bytes + largest_growth(&assets, &plain, false) > budget);
    // without GPU copies a growth stages its kept levels (here the tail) too
    assert_eq!(
        largest_growth(&assets, &plain, true),
        largest_growth(&assets, &plain, false) + c[4]
    );
    // with room: its plan and its largest growth fit together
    assert!(room > 0);
    assert!(
        kept.bytes + largest_growth(&assets, &kept, false) <= budget,
        "{kept:?} room {room}"
    );
    assert!(
        kept.target.iter().all(|&t| t < 4),
        "still grows: {:?}",
        kept.target
    );
    // and with room for everything, nothing changes
    let roomy = 4 * c[0];
    let (out, room) = with_growth_room(&assets, roomy, false, |b| unreal_pool(&assets, b));
    assert_eq!(
        (out.target.clone(), room),
        (unreal_pool(&assets, roomy).target, 0)
    );
}

/// Bytes of a square texture of `2^top` texels with levels `l..=top`
/// resident, 1 byte per texel (level `l` is `2^(top - l)` across).
fn chain(top: u32) -> Vec<u64> {
    (0..=top)
        .map(|l| (l..=top).map(|k| 1u64 << (2 * (top - k))).sum())
        .collect()
}

fn tex(bytes: &[u64], wanted: u32, visible: bool, resident: u32) -> RuleAsset<'_> {
    RuleAsset {
        bytes,
        finest: 0,
        coarsest: bytes.len() as u32 - 1,
        wanted,
        visible,
        secs_since_seen: if visible { 0.0 } else { 10.0 },
        resident,
        mesh: false,
        lod: wanted as f32,
    }
}

#[test]
fn unity_drops_one_mip_from_every_texture_until_it_fits() {
    let c = chain(6); // 64 px: bytes[0] = 5461, [1] = 1365, [2] = 341
    let a = [tex(&c, 0, true, 6), tex(&c, 1, true, 6)];
    // room for everything wanted: exactly the wanted levels
    let r = unity_budget(&a, 5461 + 1365, 2);
    assert_eq!(r.target, [0, 1]);
    assert!(!r.over_budget);
    // not quite: both textures lose one mip (not only the larger one)
    let r = unity_budget(&a, 5461 + 1365 - 1, 2);
    assert_eq!(r.target, [1, 2]);
    assert_eq!(r.bytes, 1365 + 341);
    // the floor (2 mips below the finest) stops the cut even over budget
    let r = unity_budget(&a, 100, 2);
    assert_eq!(r.target, [2, 2]);
    assert!(r.over_budget, "floors are held over the budget and said so");
    assert_eq!(r.bytes, 2 * 341);
}

#[test]
fn unity_keeps_cached_mips_while_they_fit_and_floors_unseen_textures() {
    let c = chain(6);
    // texture 0 wants 2 but holds 0; texture 1 is seen by no camera
    let a = [tex(&c, 2, true, 0), tex(&c, 0, false, 6)];
    let r = unity_budget(&a, 1 << 20, 2);
    assert_eq!(r.target, [0, 2], "cache kept; unseen at its floor");
    // a budget that cannot keep the cache drops it
    let r = unity_budget(&a, 341 * 2, 2);
    assert_eq!(r.target, [2, 2]);
    // cheapest cached first: with room for one, the cheaper one stays
    let b = [tex(&c, 2, true, 1), tex(&c, 2, true, 0)];
    let r = unity_budget(&b, 1365 + 341 + 100, 2);
    assert_eq!(r.target, [1, 2]);
}

#[test]
fn unity_gives_meshes_their_lod_and_textures_the_rest() {
    let c = chain(6);
    let m = [1000u64, 500, 100];
    let mesh = RuleAsset {
        mesh: true,
        ..tex(&m, 1, true, 2)
    };
    let r = unity_budget(&[tex(&c, 0, true, 6), mesh], 5461 + 400, 2);
    // the mesh takes 500; 4961 is left: the texture drops to level 1
    assert_eq!(r.target, [1, 1]);
    assert_eq!(r.bytes, 1365 + 500);
}

#[test]
fn unreal_drops_lowest_priority_first_one_mip_per_pass() {
    let c = chain(6);
    // visible (1024) outranks hidden (recency); hidden spends its missing mip first
    let a = [tex(&c, 0, true, 6), tex(&c, 0, false, 6)];
    let all = 2 * 5461;
    let r = unreal_pool(&a, all);
    assert_eq!(r.target, [0, 0]);
    // 1 byte over: the hidden texture spends its missing-mip credit, then
    // the visible one drops a mip (a pass goes lowest first, one each)
    let r = unreal_pool(&a, all - 1);
    assert_eq!(r.target, [1, 0]);
    // much less: the second pass drops the hidden one first, then the
    // visible one again
    let r = unreal_pool(&a, 1365 + 341);
    assert_eq!(r.target, [2, 1]);
    assert!(!r.over_budget);
    // never below the tail
    let r = unreal_pool(&a, 1);
    assert_eq!(r.target, [6, 6]);
    assert!(r.over_budget);
}

#[test]
fn unreal_ranks_hidden_by_recency_and_keeps_resident_mips() {
    let c = chain(6);
    let mut recent = tex(&c, 0, false, 6);
    recent.secs_since_seen = 1.0;
    let mut old = tex(&c, 0, false, 6);
    old.secs_since_seen = 100.0;
    // the one unseen longest loses first (after both spend their credit)
    let r = unreal_pool(&[recent, old], 5461 + 1365);
    assert_eq!(r.target, [0, 1]);
    // resident finer mips are kept, highest priority first, one per pass
    // while they fit: at 3 both hold 85 bytes; a mip more costs 256
    let a = [tex(&c, 3, true, 0), tex(&c, 3, false, 0)];
    let r = unreal_pool(&a, 170 + 256);
    assert_eq!(r.target, [2, 3], "the visible one keeps its mip first");
    let r = unreal_pool(&a, 170 + 2 * 256 + 2 * 1024);
    assert_eq!(r.target, [1, 1], "one mip per asset per pass");
}

#[test]
fn unreal_drops_meshes_last_and_only_for_a_worthwhile_saving() {
    let c = chain(6);
    let m = [3000u64, 2000, 10];
    let mesh = RuleAsset {
        mesh: true,
        ..tex(&m, 0, true, 2)
    };
    // the texture drops first in every pass, and the mesh is passed over
    // until its LOD saves (1000) at least a texture mip's saving (256 at
    // the third pass)
    let r = unreal_pool(&[tex(&c, 0, true, 6), mesh], 3001);
    assert_eq!(r.target, [3, 1]);
    assert_eq!(r.bytes, 85 + 2000);
    // a mesh whose LOD saves less than any texture mip waits for them
    let small = [60u64, 50, 10];
    let mesh = RuleAsset {
        mesh: true,
        visible: false,
        ..tex(&small, 0, false, 2)
    };
    let r = unreal_pool(&[tex(&c, 0, true, 6), mesh], 5461 + 60 - 5);
    assert_eq!(r.target, [1, 0]);
}

#[test]
fn unreal_loads_visible_and_far_behind_first() {
    let c = chain(6);
    let a = [
        tex(&c, 0, false, 6),
        tex(&c, 5, true, 6),
        tex(&c, 0, true, 6),
    ];
    let r = unreal_pool(&a, 1 << 20);
    assert!(r.priority[2] > r.priority[1], "more than 2 mips missing");
    assert!(r.priority[1] > r.priority[0], "visible before hidden");
}
