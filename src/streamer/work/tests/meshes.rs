//! The mesh decisions: detail dropped, LODs swapped in, the pool given way.

use super::*;

fn mesh(slot: u32, detail: Option<(u32, u64)>, target: u32, wanted: u32) -> MeshFacts {
    MeshFacts {
        id: crate::ids::test_id(slot),
        plan: MeshPlan {
            target,
            wanted,
            priority: 1.0,
            ..Default::default()
        },
        coarsest: 3,
        detail,
        fading: 0,
        pending: None,
    }
}

#[test]
fn meshes_drop_detail_when_planned_coarsest_and_at_once_over_budget() {
    let mut c = ctx(
        Books {
            meshes: 1000,
            ..books(0)
        },
        10_000,
    );
    // planned at the coarsest: the detail goes (fading if fades are on)
    let steps = shrink_meshes(&[mesh(0, Some((1, 600)), 3, 3)], &mut c);
    assert!(matches!(
        steps[0].op,
        Some(Op::DropMeshDetail { at_once: false, .. })
    ));
    assert_eq!(c.books.meshes, 400);
    // planned coarser but not the coarsest: kept until the planned LOD arrives...
    let mut c = ctx(
        Books {
            meshes: 1000,
            ..books(0)
        },
        10_000,
    );
    assert!(shrink_meshes(&[mesh(0, Some((1, 600)), 2, 2)], &mut c).is_empty());
    // ...unless the budget is exceeded
    let mut c = ctx(
        Books {
            meshes: 1000,
            ..books(0)
        },
        900,
    );
    let steps = shrink_meshes(&[mesh(0, Some((1, 600)), 2, 2)], &mut c);
    assert!(matches!(
        steps[0].op,
        Some(Op::DropMeshDetail { at_once: true, .. })
    ));
}

/// Phase 2b's last resort (a plan from before a budget cut): detail the
/// plan keeps goes at once, the largest first, only while over the budget.
#[test]
fn meshes_drop_detail_the_plan_keeps_largest_first_while_over_budget() {
    let meshes = [
        mesh(0, Some((1, 300)), 1, 1),
        mesh(1, Some((0, 700)), 0, 0),
        mesh(2, None, 3, 3),
        mesh(3, Some((2, 200)), 2, 2),
    ];
    let books_with = || Books {
        meshes: 1200,
        ..books(0)
    };
    // 400 over: the 700-byte detail alone brings the books within it
    let mut c = ctx(books_with(), 800);
    let steps = drop_meshes_further(&meshes, &mut c);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].asset, Asset::Mesh(meshes[1].id));
    assert!(matches!(
        steps[0].op,
        Some(Op::DropMeshDetail { at_once: true, .. })
    ));
    assert_eq!(c.books.meshes, 500);
    // 1,100 over: every detail goes, and nothing of a mesh without one
    let mut c = ctx(books_with(), 100);
    let dropped: Vec<_> = drop_meshes_further(&meshes, &mut c)
        .iter()
        .map(|s| s.asset)
        .collect();
    let ids = [1, 0, 3].map(|i| Asset::Mesh(meshes[i].id));
    assert_eq!(dropped, ids);
    // within the budget: nothing
    let mut c = ctx(books_with(), 1200);
    assert!(drop_meshes_further(&meshes, &mut c).is_empty());
}

#[test]
fn an_arrived_mesh_lod_swaps_in_when_it_fits_beside_everything() {
    let arrived = PendingLod {
        lod: 1,
        bytes: 500,
        upload: 480,
    };
    let m = MeshFacts {
        pending: Some(arrived),
        ..mesh(0, Some((2, 200)), 1, 1)
    };
    // held 1000 (200 of it the old detail, released first): 800 + 500 + 480
    let mut c = ctx(
        Books {
            meshes: 1000,
            ..books(0)
        },
        1780,
    );
    let steps = grow(&[], &[m], &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(matches!(steps[0].op, Some(Op::SwapMeshLod { .. })));
    assert_eq!(c.books.accounted(), 800 + 500 + 480);
    // a cross-fade keeps the old detail: no longer fits
    let mut c = ctx(
        Books {
            meshes: 1000,
            ..books(0)
        },
        1780,
    );
    c.cross_fade = true;
    let steps = grow(&[], &[m], &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert_eq!(steps[0].hold, Some(BelowReason::Budget));
    assert_eq!(
        steps[0].headroom, None,
        "held bytes above the plan explain it"
    );
}

#[test]
fn a_mesh_lod_that_fits_only_without_the_pool_drops_the_pool_first() {
    let arrived = PendingLod {
        lod: 1,
        bytes: 500,
        upload: 480,
    };
    let m = MeshFacts {
        pending: Some(arrived),
        ..mesh(0, Some((2, 200)), 1, 1)
    };
    let pooled_books = || {
        let mut b = Books {
            meshes: 1000,
            ..books(1 << 20)
        };
        b.pool.put(geometry(5).shape(0, Tier::Full), ());
        b
    };
    let pooled = pooled_books().pool.bytes();
    assert!(pooled > 0);
    // 800 held once the old detail goes, 500 + 480 for the new LOD: fits
    // only once the pool is dropped
    let mut c = ctx(pooled_books(), 1780 + pooled - 1);
    let steps = grow(&[], &[m], &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(matches!(
        steps[0].op,
        Some(Op::SwapMeshLod {
            trim_pool: true,
            ..
        })
    ));
    assert_eq!(c.books.pool.bytes(), 0);
    assert_eq!(c.books.accounted(), 800 + 500 + 480);
    // a pool the swap fits beside is kept
    let mut c = ctx(pooled_books(), 1780 + pooled);
    let steps = grow(&[], &[m], &mut c, &mut UploadRoom::new(1 << 30, 32));
    assert!(matches!(
        steps[0].op,
        Some(Op::SwapMeshLod {
            trim_pool: false,
            ..
        })
    ));
    assert_eq!(c.books.pool.bytes(), pooled);
}
