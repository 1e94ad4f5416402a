//! The `.msmesh` container: measured image errors round-trip, files
//! without them read as unmeasured, and adversarial and mutated files get
//! clear errors, never a panic.

use mipstream::mesh::container::{LOD_ENTRY_BYTES, MAGIC};
use mipstream::mesh::{write_mesh, LodData, MeshError, MeshFile, Vertex};
use mipstream::MemorySource;
use std::sync::Arc;

/// A valid two-LOD file for the adversarial cases to break.
fn two_lods() -> Vec<u8> {
    write_mesh(&two_lod_data(), 1 | 2)
}

/// The LODs of [`two_lods`].
fn two_lod_data() -> Vec<LodData> {
    let quad = |z: f32| {
        (0..4)
            .map(|i| Vertex {
                position: [(i & 1) as f32, (i >> 1) as f32, z],
                normal: [0.0, 0.0, 1.0],
                ..Vertex::default()
            })
            .collect::<Vec<_>>()
    };
    vec![
        LodData {
            vertices: quad(0.0),
            indices: vec![0, 1, 2, 2, 1, 3],
            error: 0.0,
            image_error: None,
        },
        LodData {
            vertices: quad(0.0)[..3].to_vec(),
            indices: vec![0, 1, 2],
            error: 0.5,
            image_error: None,
        },
    ]
}

#[test]
fn measured_image_errors_round_trip_and_files_without_them_read_as_unmeasured() {
    let plain = open(two_lods()).unwrap();
    assert!(plain.info().lods.iter().all(|l| l.image_error.is_none()));
    let mut lods = two_lod_data();
    for (l, e) in lods.iter_mut().zip([0.0, 12.5]) {
        l.image_error = Some(e);
    }
    let measured = open(write_mesh(&lods, 1 | 2)).unwrap();
    let image: Vec<Option<f32>> = measured.info().lods.iter().map(|l| l.image_error).collect();
    assert_eq!(image, [Some(0.0), Some(12.5)]);
    // one LOD without a measure: the file says none was measured
    lods[1].image_error = None;
    let partial = open(write_mesh(&lods, 1 | 2)).unwrap();
    assert!(partial.info().lods.iter().all(|l| l.image_error.is_none()));
}

fn open(bytes: Vec<u8>) -> Result<MeshFile, MeshError> {
    MeshFile::open(Arc::new(MemorySource::new("generated.msmesh", bytes)))
}

#[test]
fn adversarial_mesh_files_get_clear_errors() {
    let ok = two_lods();
    let f = open(ok.clone()).unwrap();
    assert_eq!(f.read_lod(1).unwrap().indices, vec![0, 1, 2]);
    let entry = |lod: usize, field: usize| 64 + lod * LOD_ENTRY_BYTES as usize + field;
    let with = |at: usize, bytes: &[u8]| {
        let mut b = ok.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "not a mipstream mesh"),
        ("wrong magic", with(0, b"MSMESH02"), "not a mipstream mesh"),
        (
            "header cut",
            ok[..40].to_vec(),
            "shorter than the 64-byte header",
        ),
        ("version 2", with(8, &2u32.to_le_bytes()), "version 2"),
        ("stride", with(12, &32u32.to_le_bytes()), "stride 32"),
        ("zero LODs", with(20, &0u32.to_le_bytes()), "0 LODs"),
        (
            "2^32-1 LODs",
            with(20, &u32::MAX.to_le_bytes()),
            "4294967295 LODs",
        ),
        ("table past the end", ok[..64 + 40].to_vec(), "past the end"),
        ("NaN bounds", with(24, &f32::NAN.to_le_bytes()), "bounds"),
        (
            "vertices past the end",
            with(entry(0, 16), &1_000_000u32.to_le_bytes()),
            "run past the end",
        ),
        (
            "offset overflow",
            with(entry(1, 0), &(u64::MAX - 8).to_le_bytes()),
            "run past the end",
        ),
        (
            "overlapping LODs",
            {
                let v0 = u64::from_le_bytes(ok[entry(0, 0)..entry(0, 8)].try_into().unwrap());
                with(entry(1, 0), &v0.to_le_bytes())
            },
            "overlap",
        ),
        (
            "inside the header",
            with(entry(0, 0), &8u64.to_le_bytes()),
            "inside the header",
        ),
        (
            "half a triangle",
            with(entry(0, 20), &4u32.to_le_bytes()),
            "whole triangles",
        ),
        (
            "NaN error",
            with(entry(1, 24), &f32::NAN.to_le_bytes()),
            "geometric error NaN",
        ),
        (
            "error falls",
            with(entry(1, 24), &(-1.0f32).to_le_bytes()),
            "geometric error -1",
        ),
        (
            "finer after coarser",
            with(entry(0, 24), &1.0f32.to_le_bytes()),
            "must coarsen",
        ),
        ("unknown flag", with(48, &2u32.to_le_bytes()), "flags 0x2"),
        (
            "NaN image error",
            with(48, &1u32.to_le_bytes())
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    if (entry(1, 28)..entry(1, 32)).contains(&i) {
                        f32::NAN.to_le_bytes()[i - entry(1, 28)]
                    } else {
                        b
                    }
                })
                .collect(),
            "image error NaN",
        ),
        (
            "LOD 0 with an image error",
            {
                let mut b = with(48, &1u32.to_le_bytes());
                b[entry(0, 28)..entry(0, 32)].copy_from_slice(&3.0f32.to_le_bytes());
                b
            },
            "image error 3",
        ),
    ];
    for (what, bytes, expect) in cases {
        let e = open(bytes).expect_err(what).to_string();
        assert!(e.contains(expect), "{what}: {e}");
        assert!(
            e.contains("generated.msmesh"),
            "{what}: {e} (names the file)"
        );
    }
    // problems inside a LOD show when it is read
    let i0 = u64::from_le_bytes(ok[entry(1, 8)..entry(1, 16)].try_into().unwrap()) as usize;
    let f = open(with(i0, &9u32.to_le_bytes())).unwrap();
    let e = f.read_lod(1).unwrap_err().to_string();
    assert!(
        e.contains("LOD 1") && e.contains("is 9") && e.contains("3 vertices"),
        "{e}"
    );
    let f = open(ok.clone()).unwrap();
    let v0 = u64::from_le_bytes(ok[entry(0, 0)..entry(0, 8)].try_into().unwrap()) as usize;
    let f2 = open(with(v0, &f32::INFINITY.to_le_bytes())).unwrap();
    assert!(f2
        .read_lod(0)
        .unwrap_err()
        .to_string()
        .contains("non-finite"));
    assert!(f
        .read_lod(7)
        .unwrap_err()
        .to_string()
        .contains("has 2 LODs"));
    assert_eq!(&ok[..8], &MAGIC);
}

/// Random byte changes anywhere in a valid file: an error or a valid read,
/// never a panic, and never an allocation beyond the file's own size.
#[test]
fn mutated_mesh_files_never_panic() {
    let ok = two_lods();
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..5000 {
        let mut b = ok.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % b.len() as u64) as usize;
            b[at] = next() as u8;
        }
        if let Ok(f) = open(b) {
            for l in 0..f.info().lods.len() as u32 {
                let _ = f.read_lod(l);
            }
        }
    }
}
