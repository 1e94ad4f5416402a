//! Meshes in the streamer, on generated LOD chains (quick, no cooking): the
//! coarsest LOD resident from registration, LODs growing under the upload
//! cap as the camera comes near and dropping as it leaves, mesh bytes in the
//! accounting and the report, failed reads and refused allocations as states,
//! stale ids and broken files as typed errors.

mod common;

use glam::{UVec2, Vec3};
use mipstream::fault::{FaultRates, Faults, FaultySource};
use mipstream::mesh::{write_mesh, LodData, MeshFile, Vertex};
use mipstream::streamer::{
    BelowReason, MeshEvent, MeshRegisterError, MeshStorage, PreparedMesh, ResidencyState, StaleId,
};
use mipstream::{
    Budget, ByteSource, MemorySource, MeshDesc, ObjectDesc, Streamer, StreamerOptions, View,
};
use std::sync::Arc;
use std::time::Duration;

/// A bumpy unit grid with LODs of 64, 32, 16, 8 and 4 quads across: errors
/// grow as the grid coarsens (the bump's deviation from a coarser sampling).
fn grid_lods() -> Vec<u8> {
    let lod = |n: u32, error: f32| {
        let mut vertices = Vec::new();
        for y in 0..=n {
            for x in 0..=n {
                let (u, v) = (x as f32 / n as f32, y as f32 / n as f32);
                let z = 0.05 * (u * 12.0).sin() * (v * 12.0).sin();
                vertices.push(Vertex {
                    position: [u - 0.5, v - 0.5, z],
                    normal: [0.0, 0.0, 1.0],
                    uv: [u, v],
                    tangent: [1.0, 0.0, 0.0, 1.0],
                });
            }
        }
        let mut indices = Vec::new();
        for y in 0..n {
            for x in 0..n {
                let i = y * (n + 1) + x;
                indices.extend([i, i + 1, i + n + 1, i + 1, i + n + 2, i + n + 1]);
            }
        }
        LodData {
            vertices,
            indices,
            error,
            image_error: None,
        }
    };
    let lods: Vec<LodData> = [(64, 0.0), (32, 0.002), (16, 0.008), (8, 0.03), (4, 0.06)]
        .into_iter()
        .map(|(n, e)| lod(n, e))
        .collect();
    write_mesh(&lods, 1 | 2 | 4 | 8)
}

fn grid_file() -> MeshFile {
    MeshFile::open(Arc::new(MemorySource::new("grid.msmesh", grid_lods()))).unwrap()
}

/// A streamer without the spare-budget floor (which would hold every mesh
/// at LOD 0 when there is room), so LODs follow what the views need.
fn streamer(budget: u64) -> Streamer {
    let g = common::gpu();
    let mut options = StreamerOptions {
        budget: Budget::Bytes(budget),
        workers: 1,
        ..Default::default()
    };
    options.planner.spare_floor = false;
    Streamer::with_options(&g.device, &g.queue, options)
}

/// A camera on the +z axis at `z` looking at the origin.
fn camera(z: f32) -> View {
    View::look_at(
        Vec3::new(0.0, 0.0, z),
        Vec3::ZERO,
        Vec3::Y,
        1.0,
        UVec2::new(320, 240),
        0.01,
        1e4,
    )
}

fn settle(s: &mut Streamer, v: &View) {
    s.settle(std::slice::from_ref(v), Duration::from_secs(30))
        .unwrap();
    s.check_invariants().unwrap();
}

#[test]
fn spare_budget_holds_meshes_finer_than_they_need() {
    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(64 << 20),
            workers: 1,
            ..Default::default()
        },
    );
    let id = s.register_mesh(MeshDesc::new(grid_file())).unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    settle(&mut s, &camera(40.0));
    let st = s.mesh_status(id).unwrap();
    assert!(st.wanted > 0, "{st:?}");
    assert_eq!((st.planned, st.resident), (0, 0), "{st:?}");
    assert_eq!(s.report().meshes[0].below, None);
}

#[test]
fn a_mesh_is_drawable_from_registration_and_follows_the_camera() {
    let mut s = streamer(64 << 20);
    let file = grid_file();
    let lods = file.info().lods.clone();
    let id = s
        .register_mesh(MeshDesc::new(file).with_label("grid"))
        .unwrap();
    // the coarsest LOD, before any update
    let b = s.mesh_buffers(id).unwrap();
    assert_eq!(b.lod, 4);
    assert_eq!(b.index_count, lods[4].index_count);
    let base_bytes = b.bytes;
    assert_eq!(s.report().totals.mesh, base_bytes);
    s.check_invariants().unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    // close: the full grid
    settle(&mut s, &camera(1.0));
    let st = s.mesh_status(id).unwrap();
    assert_eq!((st.resident, st.planned, st.wanted), (0, 0, 0), "{st:?}");
    assert_eq!(s.mesh_buffers(id).unwrap().index_count, lods[0].index_count);
    let r = s.report();
    let m = &r.meshes[0];
    assert_eq!(m.label, "grid");
    assert_eq!(m.triangles, lods[0].triangles());
    assert_eq!(m.bytes, base_bytes + s.mesh_buffers(id).unwrap().bytes);
    assert_eq!(r.totals.mesh, m.bytes, "mesh bytes are in the accounting");
    assert_eq!(m.state, ResidencyState::Resident);
    assert!(m.screen_error_px <= 1.0, "{m:?}");
    // a little further: a coarser LOD whose error is still under a pixel
    let mut seen = Vec::new();
    for z in [3.0, 10.0, 40.0, 400.0] {
        // past the minimum residency of the finer LOD it holds, then settled
        for _ in 0..40 {
            s.update(&[camera(z)]);
        }
        settle(&mut s, &camera(z));
        let m = &s.report().meshes[0];
        assert!(m.screen_error_px <= 1.0, "at {z}: {m:?}");
        assert_eq!(m.resident, m.wanted, "at {z}: {m:?}");
        seen.push(m.resident);
    }
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(*seen.last().unwrap(), 4, "far away: the coarsest; {seen:?}");
    assert_eq!(
        s.report().totals.mesh,
        base_bytes,
        "the detail buffers are gone"
    );
    // removal: bytes back to zero, the id stale everywhere
    s.remove_mesh(id).unwrap();
    assert_eq!(s.report().totals.mesh, 0);
    s.check_invariants().unwrap();
    assert_eq!(s.mesh_buffers(id).err(), Some(StaleId::Mesh(id)));
    assert_eq!(s.remove_mesh(id), Err(StaleId::Mesh(id)));
    let stale = ObjectDesc::sphere(Vec3::ZERO, 1.0).with_mesh(id, 1.0);
    assert!(matches!(
        s.register_object(stale),
        Err(StaleId::Mesh(m)) if m == id
    ));
}

#[test]
fn mesh_uploads_respect_the_per_frame_cap() {
    let mut s = streamer(64 << 20);
    let ids: Vec<_> = (0..4)
        .map(|_| s.register_mesh(MeshDesc::new(grid_file())).unwrap())
        .collect();
    for (i, &id) in ids.iter().enumerate() {
        let x = i as f32 * 1.2 - 1.8;
        s.register_object(
            ObjectDesc::aabb(Vec3::new(x - 0.5, -0.5, -0.5), Vec3::new(x + 0.5, 0.5, 0.5))
                .with_mesh(id, 1.0),
        )
        .unwrap();
    }
    // LOD 0 is ~300 KB and LOD 1 ~77 KB: a cap of 50 KB lets one through
    // per frame, alone
    s.set_upload_cap(50_000, 32);
    let v = camera(1.5);
    let (mut frames, mut upload_frames, mut largest) = (0, 0, 0);
    loop {
        let stats = s.update(std::slice::from_ref(&v));
        s.check_invariants().unwrap();
        // within the cap, or one LOD larger than the cap alone in its frame
        assert!(
            stats.upload_bytes <= 50_000 || stats.uploads == 1,
            "frame {frames}: {stats:?}"
        );
        upload_frames += (stats.uploads > 0) as u32;
        largest = largest.max(stats.upload_bytes);
        frames += 1;
        if s.converged() {
            break;
        }
        assert!(frames < 3000, "did not converge");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut grown = 0;
    for &id in &ids {
        let st = s.mesh_status(id).unwrap();
        assert_eq!(st.resident, st.wanted, "{st:?}");
        grown += (st.resident < st.coarsest) as u32;
    }
    assert!(grown >= 2, "{}", s.report());
    assert!(largest > 50_000, "some LOD larger than the cap went alone");
    assert!(
        upload_frames >= grown,
        "{upload_frames} frames for {grown} meshes"
    );
}

#[test]
fn a_lower_budget_drops_mesh_detail_at_once_and_a_higher_one_brings_it_back() {
    let mut s = streamer(64 << 20);
    let id = s.register_mesh(MeshDesc::new(grid_file())).unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    let v = camera(1.0);
    settle(&mut s, &v);
    assert_eq!(s.mesh_status(id).unwrap().resident, 0);
    let base = s.report().meshes[0].bytes - s.mesh_buffers(id).unwrap().bytes;
    // room for the coarsest LOD only
    s.set_budget(Budget::Bytes(base + 1024));
    s.update(std::slice::from_ref(&v));
    s.check_invariants().unwrap();
    let r = s.report();
    assert_eq!(r.meshes[0].resident, 4, "{}", r);
    assert_eq!(r.meshes[0].below, Some(BelowReason::Budget));
    assert_eq!(r.totals.mesh, base);
    s.set_budget(Budget::Bytes(64 << 20));
    settle(&mut s, &v);
    assert_eq!(s.mesh_status(id).unwrap().resident, 0);
}

#[test]
fn failed_reads_and_refused_allocations_are_states_not_crashes() {
    let mut s = streamer(64 << 20);
    let faults = Faults::new(11);
    let source: Arc<dyn ByteSource> = Arc::new(MemorySource::new("grid.msmesh", grid_lods()));
    let faulty: Arc<dyn ByteSource> = Arc::new(FaultySource::new(source, faults.clone()));
    let id = s
        .register_mesh(MeshDesc::new(MeshFile::open(faulty).unwrap()))
        .unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    faults.set_rates(FaultRates {
        io_error: 1.0,
        ..FaultRates::default()
    }); // every read fails from now on
    let v = camera(1.0);
    let mut failed = false;
    for _ in 0..200 {
        let stats = s.update(std::slice::from_ref(&v));
        s.check_invariants().unwrap();
        failed |= stats.failed_loads > 0;
        if matches!(s.report().meshes[0].state, ResidencyState::Failed { .. }) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(failed);
    let r = s.report();
    assert!(
        matches!(&r.meshes[0].state, ResidencyState::Failed { error, .. } if error.contains("grid.msmesh")),
        "{:?}",
        r.meshes[0]
    );
    assert!(matches!(r.meshes[0].below, Some(BelowReason::Error(_))));
    assert_eq!(s.mesh_buffers(id).unwrap().lod, 4, "still drawable");
    // the disk recovers; the GPU refuses the next allocation once
    faults.stop();
    s.inject_out_of_memory(1);
    let start = std::time::Instant::now();
    while s.mesh_status(id).unwrap().resident != 0 {
        s.update(std::slice::from_ref(&v));
        s.check_invariants().unwrap();
        assert!(start.elapsed() < Duration::from_secs(60), "{}", s.report());
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(s.oom_event_count(), 1, "{:?}", s.oom_events());
}

#[test]
fn broken_mesh_files_are_typed_errors_and_register_nothing() {
    let mut s = streamer(64 << 20);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.msmesh");
    std::fs::write(&path, b"MSMESH01 but nothing after").unwrap();
    let e = s.register_mesh_path(&path).unwrap_err();
    assert!(matches!(e, MeshRegisterError::Open(_)), "{e}");
    assert!(e.to_string().contains("broken.msmesh"), "{e}");
    // a valid header whose coarsest LOD's indices point outside its vertices
    let mut bytes = grid_lods();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    let file = MeshFile::open(Arc::new(MemorySource::new("bad-index.msmesh", bytes))).unwrap();
    let e = s.register_mesh(MeshDesc::new(file)).unwrap_err();
    assert!(matches!(e, MeshRegisterError::Base { .. }), "{e}");
    assert!(e.to_string().contains("index"), "{e}");
    assert_eq!(s.report().totals.mesh, 0);
    assert!(s.mesh_ids().is_empty());
    s.check_invariants().unwrap();
}

#[test]
fn meshes_prepared_on_other_threads_register_without_reading_and_stream_like_the_rest() {
    // four meshes prepared on four threads while the render thread updates
    let mut s = streamer(64 << 20);
    let sources: Vec<Arc<MemorySource>> = (0..4)
        .map(|i| Arc::new(MemorySource::new(format!("grid{i}.msmesh"), grid_lods())))
        .collect();
    let threads: Vec<_> = sources
        .iter()
        .enumerate()
        .map(|(i, src)| {
            let src: Arc<dyn ByteSource> = src.clone();
            std::thread::spawn(move || {
                let file = MeshFile::open(src).unwrap();
                let desc = MeshDesc::new(file);
                PreparedMesh::prepare(if i == 2 {
                    desc.with_label("third")
                } else {
                    desc
                })
            })
        })
        .collect();
    s.update(&[camera(40.0)]);
    let mut ids = Vec::new();
    for (i, t) in threads.into_iter().enumerate() {
        let prepared = t.join().unwrap().unwrap();
        let label = if i == 2 {
            "third".to_string()
        } else {
            format!("grid{i}.msmesh")
        };
        assert_eq!(prepared.label(), label);
        // what was read: the coarsest LOD, whole
        assert_eq!(prepared.coarsest().lod, 4);
        assert_eq!(prepared.coarsest().indices.len(), 4 * 4 * 6);
        let (lo, hi) = prepared.bounds();
        assert!(lo.x <= -0.5 && hi.x >= 0.5, "{lo} {hi}");
        // registering reads nothing: the coarsest LOD came with it
        let read = sources[i].bytes_read();
        let id = s.register_prepared_mesh(prepared).unwrap();
        assert_eq!(sources[i].bytes_read(), read, "mesh {i} was read again");
        let b = s.mesh_buffers(id).unwrap();
        assert_eq!(b.lod, 4, "drawable at its coarsest LOD at once");
        let x = i as f32 * 1.2 - 1.8;
        s.register_object(
            ObjectDesc::aabb(Vec3::new(x - 0.5, -0.5, -0.5), Vec3::new(x + 0.5, 0.5, 0.5))
                .with_mesh(id, 1.0),
        )
        .unwrap();
        ids.push(id);
    }
    assert_eq!(s.mesh_ids(), ids, "registered in call order");
    s.check_invariants().unwrap();
    // the same scene registered the plain way settles to the same LODs
    let mut plain = streamer(64 << 20);
    for i in 0..4 {
        let id = plain.register_mesh(MeshDesc::new(grid_file())).unwrap();
        let x = i as f32 * 1.2 - 1.8;
        plain
            .register_object(
                ObjectDesc::aabb(Vec3::new(x - 0.5, -0.5, -0.5), Vec3::new(x + 0.5, 0.5, 0.5))
                    .with_mesh(id, 1.0),
            )
            .unwrap();
    }
    let near = camera(3.0);
    settle(&mut s, &near);
    settle(&mut plain, &near);
    let lods = |s: &Streamer| {
        let r = s.report();
        (
            r.meshes.iter().map(|m| m.resident).collect::<Vec<_>>(),
            r.totals.mesh,
        )
    };
    let (resident, bytes) = lods(&s);
    assert!(
        resident.iter().any(|&l| l < 4),
        "{resident:?}: nothing grew"
    );
    assert_eq!((resident, bytes), lods(&plain));
    // a broken coarsest LOD fails on the preparing thread, with
    // register_mesh's error, and the streamer never hears of it
    let mut bytes = grid_lods();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    let file = MeshFile::open(Arc::new(MemorySource::new("bad-index.msmesh", bytes))).unwrap();
    let e = std::thread::spawn(move || PreparedMesh::prepare(MeshDesc::new(file)))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, MeshRegisterError::Base { .. }), "{e}");
    assert!(e.to_string().contains("bad-index.msmesh"), "{e}");
    assert_eq!(s.mesh_ids(), ids);
}

#[test]
fn a_cross_fade_keeps_the_old_lod_for_its_frames_and_counts_its_bytes() {
    let g = common::gpu();
    let mut options = StreamerOptions {
        budget: Budget::Bytes(64 << 20),
        workers: 1,
        mesh_cross_fade_frames: 4,
        ..Default::default()
    };
    options.planner.spare_floor = false;
    let mut s = Streamer::with_options(&g.device, &g.queue, options);
    let id = s.register_mesh(MeshDesc::new(grid_file())).unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    let base = s.report().totals.mesh;
    assert!(s.mesh_fade(id).unwrap().is_none());
    // growing from the coarsest: the fade draws the coarsest LOD as the old one
    let near = camera(1.0);
    let start = std::time::Instant::now();
    while s.mesh_status(id).unwrap().resident == 4 {
        s.update(std::slice::from_ref(&near));
        s.check_invariants().unwrap();
        assert!(start.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(2));
    }
    let (old, t0) = s.mesh_fade(id).unwrap().expect("a fade after the swap");
    assert_eq!(old.lod, 4);
    assert!(t0 > 0.0 && t0 < 1.0, "{t0}");
    let mut ts = vec![t0];
    loop {
        s.update(std::slice::from_ref(&near));
        s.check_invariants().unwrap();
        let Some((_, t)) = s.mesh_fade(id).unwrap() else {
            break;
        };
        ts.push(t);
        assert!(ts.len() < 20, "{ts:?}");
    }
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
    assert!(ts.len() >= 3, "{ts:?}");
    settle(&mut s, &near);
    let detail = s.mesh_buffers(id).unwrap().bytes;
    let lod = s.mesh_status(id).unwrap().resident;
    assert!(lod < 4);
    // dropping to the coarsest: the old detail stays for the fade, counted
    for _ in 0..40 {
        s.update(&[camera(1000.0)]);
        s.check_invariants().unwrap();
        if s.mesh_status(id).unwrap().resident == 4 {
            break;
        }
    }
    let (old, _) = s.mesh_fade(id).unwrap().expect("fading out the detail");
    assert_eq!(old.lod, lod);
    assert_eq!(
        s.report().totals.mesh,
        base + detail,
        "the fading LOD is counted"
    );
    for _ in 0..5 {
        s.update(&[camera(1000.0)]);
        s.check_invariants().unwrap();
    }
    assert!(s.mesh_fade(id).unwrap().is_none());
    assert_eq!(s.report().totals.mesh, base);
}

#[test]
fn a_mesh_grows_where_its_old_and_new_lod_do_not_fit_together() {
    let mut s = streamer(64 << 20);
    let id = s.register_mesh(MeshDesc::new(grid_file())).unwrap();
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    // a distance where the mesh wants LOD 1
    let mid = [1.5f32, 2.0, 3.0, 4.0, 6.0, 8.0]
        .into_iter()
        .map(camera)
        .find(|v| {
            s.update(std::slice::from_ref(v));
            s.mesh_status(id).unwrap().wanted == 1
        })
        .expect("some distance wants LOD 1");
    settle(&mut s, &mid);
    assert_eq!(s.mesh_status(id).unwrap().resident, 1);
    let base = s.mesh_bytes_at(id, 4).unwrap();
    let lod = |l: u32| s.mesh_bytes_at(id, l).unwrap() - base;
    let (lod0, lod1) = (lod(0), lod(1));
    // room for LOD 0, its staging and the planner's room for that growth,
    // but not for LOD 1 beside them: the old detail must go first
    let budget = base + 2 * lod0 + lod1 / 2;
    s.set_budget(Budget::Bytes(budget));
    let near = camera(1.0);
    let start = std::time::Instant::now();
    while s.mesh_status(id).unwrap().resident != 0 {
        s.update(std::slice::from_ref(&near));
        s.check_invariants().unwrap();
        assert!(s.held_bytes() <= budget, "{}", s.report());
        assert!(start.elapsed() < Duration::from_secs(30), "{}", s.report());
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(s.mesh_buffers(id).unwrap().lod, 0);
    assert_eq!(s.report().totals.mesh, base + lod0);
}

/// What an engine holding the LODs itself keeps: each copy by serial.
#[derive(Default)]
struct EngineMeshes {
    held: std::collections::HashMap<u64, (mipstream::MeshId, mipstream::mesh::MeshLod)>,
    uploads: usize,
}

impl EngineMeshes {
    /// Applies the streamer's events in order; an upload of a serial already
    /// held, or a release of one not held (or of another mesh), fails.
    fn apply(&mut self, s: &mut Streamer) {
        for e in s.take_mesh_events() {
            match e {
                MeshEvent::Upload { mesh, serial, data } => {
                    self.uploads += 1;
                    assert!(self.held.insert(serial, (mesh, data)).is_none(), "{serial}");
                }
                MeshEvent::Release { mesh, serial } => {
                    let (m, _) = self.held.remove(&serial).expect("released what is held");
                    assert_eq!(m, mesh);
                }
            }
        }
    }

    /// Bytes the engine's copies take at 48 per vertex and 4 per index.
    fn bytes(&self) -> u64 {
        self.held
            .values()
            .map(|(_, d)| (d.vertices.len() * 48 + d.indices.len() * 4) as u64)
            .sum()
    }
}

#[test]
fn an_engine_holding_mesh_lods_uploads_and_frees_what_mipstream_counts() {
    let g = common::gpu();
    let mut options = StreamerOptions {
        budget: Budget::Bytes(64 << 20),
        workers: 1,
        mesh_storage: MeshStorage::Engine,
        ..Default::default()
    };
    options.planner.spare_floor = false;
    let mut s = Streamer::with_options(&g.device, &g.queue, options);
    let file = grid_file();
    let lods = file.info().lods.clone();
    let id = s.register_mesh(MeshDesc::new(file)).unwrap();
    let mut engine = EngineMeshes::default();
    engine.apply(&mut s);
    // registration hands over the coarsest LOD; mipstream holds no buffers
    let b = s.mesh_buffers(id).unwrap();
    assert!(b.buffers.is_none());
    let (_, data) = &engine.held[&b.serial];
    assert_eq!(
        (data.lod, data.indices.len()),
        (4, lods[4].index_count as usize)
    );
    assert_eq!(engine.bytes(), s.report().totals.mesh);
    s.register_object(ObjectDesc::aabb(Vec3::splat(-0.5), Vec3::splat(0.5)).with_mesh(id, 1.0))
        .unwrap();
    // in, then out again: after every update the drawn copy is one the engine
    // holds, of the LOD mipstream says, and the engine holds what is counted
    let mut finest = 4;
    for z in [40.0, 8.0, 3.0, 1.0, 3.0, 8.0, 40.0] {
        let v = camera(z);
        let start = std::time::Instant::now();
        loop {
            s.update(std::slice::from_ref(&v));
            engine.apply(&mut s);
            s.check_invariants().unwrap();
            let b = s.mesh_buffers(id).unwrap();
            let (_, drawn) = engine.held.get(&b.serial).expect("the drawn copy is held");
            assert_eq!(drawn.lod, b.lod);
            assert_eq!(drawn.indices.len() as u32, b.index_count);
            assert_eq!(engine.bytes(), s.report().totals.mesh, "z {z}");
            assert_eq!(engine.bytes(), s.mesh_bytes(), "z {z}");
            finest = finest.min(b.lod);
            let st = s.mesh_status(id).unwrap();
            if s.converged() && st.resident == st.planned {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{}", s.report());
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(finest, 0, "the close camera drew LOD 0");
    assert_eq!(
        s.mesh_status(id).unwrap().resident,
        4,
        "far again: the coarsest"
    );
    assert_eq!(engine.held.len(), 1, "only the coarsest is held");
    assert!(engine.uploads >= 4, "{} uploads", engine.uploads);
    s.remove_mesh(id).unwrap();
    engine.apply(&mut s);
    assert!(engine.held.is_empty());
    assert_eq!(s.report().totals.mesh, 0);
}

#[test]
fn a_refused_engine_mesh_is_a_typed_error_and_nothing_is_handed_over() {
    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            mesh_storage: MeshStorage::Engine,
            workers: 1,
            ..Default::default()
        },
    );
    s.inject_out_of_memory(1);
    let err = s.register_mesh(MeshDesc::new(grid_file())).unwrap_err();
    assert!(err.to_string().contains("out of GPU memory"), "{err}");
    assert!(s.take_mesh_events().is_empty());
    assert_eq!(s.report().totals.mesh, 0);
}
