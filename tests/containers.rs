//! Container behaviour: level-range reads, `.basis` files, arrays and cubemaps,
//! and adversarial headers generated here.

mod common;

use mipstream::container::{OpenError, Payload, Supercompression};
use mipstream::source::{ByteSource, ReadError};
use mipstream::transcode::{choose_targets, transcode_level, TextureClass, TranscodeOptions};
use mipstream::{MemorySource, TextureFile};
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

/// A source that records every range it serves.
#[derive(Debug)]
struct Recording {
    inner: MemorySource,
    ranges: Mutex<Vec<(u64, u64)>>,
}

impl Recording {
    fn new(bytes: Vec<u8>) -> Arc<Self> {
        Arc::new(Self {
            inner: MemorySource::new("recorded", bytes),
            ranges: Mutex::new(Vec::new()),
        })
    }
    fn take(&self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.ranges.lock().unwrap())
    }
}

impl ByteSource for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.ranges.lock().unwrap().push((offset, buf.len() as u64));
        self.inner.read_exact_at(offset, buf)
    }
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// Asking for mip 3 of a 1024x1024 texture reads its metadata and mip 3, and
/// not a byte of any other level.
#[test]
fn a_level_read_touches_only_that_level() {
    let path = common::shared_data().join("sponza-textures/sponza_arch_diff.ktx2");
    let src = Recording::new(std::fs::read(&path).unwrap());
    let file = TextureFile::open(src.clone()).unwrap();
    let info = file.info().clone();
    assert_eq!((info.width, info.levels.len()), (1024, 11));
    let first_level_byte = info.levels.iter().map(|l| l.ranges[0].0).min().unwrap();
    for (o, n) in src.take() {
        assert!(
            o + n <= first_level_byte,
            "opening read level data at {o}+{n}"
        );
    }
    let raw = file.read_level(3).unwrap();
    assert_eq!((raw.width, raw.height), (128, 128));
    let reads = src.take();
    assert_eq!(reads, info.levels[3].ranges, "mip 3 read exactly its range");
    for (l, level) in info.levels.iter().enumerate().filter(|(l, _)| *l != 3) {
        for r in &reads {
            assert!(
                !overlaps(*r, level.ranges[0]),
                "reading mip 3 touched mip {l}"
            );
        }
    }
    assert!(src.bytes_read() < info.file_size / 10);
}

/// Builds a KTX2 header (and level index) by hand.
fn ktx2_header(
    vk: u32,
    w: u32,
    h: u32,
    layers: u32,
    faces: u32,
    levels: u32,
    scheme: u32,
) -> Vec<u8> {
    let mut b = mipstream::container::KTX2_MAGIC.to_vec();
    for v in [vk, 1, w, h, 0, layers, faces, levels, scheme] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.resize(80, 0);
    b
}

fn open_bytes(bytes: Vec<u8>) -> Result<TextureFile, OpenError> {
    TextureFile::open(Arc::new(MemorySource::new("generated", bytes)))
}

/// A 12-byte file and an 80-byte header that claim 2^31 x 2^31 texels are
/// refused after reading at most the header and index.
#[test]
fn huge_claims_cost_nothing() {
    let twelve = mipstream::container::KTX2_MAGIC.to_vec();
    assert!(matches!(
        open_bytes(twelve),
        Err(OpenError::Truncated { .. })
    ));
    let src = Recording::new(ktx2_header(37, 1 << 31, 1 << 31, 0, 1, 32, 0));
    let e = TextureFile::open(src.clone()).unwrap_err();
    assert!(matches!(e, OpenError::Truncated { .. }), "{e}");
    // the 12-byte identifier sniff plus the 80-byte header, nothing sized by the claim
    assert!(
        src.bytes_read() <= 12 + 80,
        "read {} bytes",
        src.bytes_read()
    );
}

/// Appends a minimal RGBA8 DFD and a level index describing `levels`.
fn rgba8_file(w: u32, h: u32, levels: &[(u64, u64, u64)], extra: usize) -> Vec<u8> {
    let mut b = ktx2_header(37, w, h, 0, 1, levels.len() as u32, 0);
    let index_end = 80 + 24 * levels.len();
    let dfd_len = 4 + 24 + 16 * 4;
    b[48..52].copy_from_slice(&(index_end as u32).to_le_bytes());
    b[52..56].copy_from_slice(&(dfd_len as u32).to_le_bytes());
    for (o, n, u) in levels {
        b.extend_from_slice(&o.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
        b.extend_from_slice(&u.to_le_bytes());
    }
    let mut dfd = (dfd_len as u32).to_le_bytes().to_vec();
    dfd.extend_from_slice(&0u32.to_le_bytes());
    dfd.extend_from_slice(&2u16.to_le_bytes());
    dfd.extend_from_slice(&((24 + 64) as u16).to_le_bytes());
    dfd.extend_from_slice(&[1, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]);
    for (i, ch) in [0u8, 1, 2, 15].iter().enumerate() {
        dfd.extend_from_slice(&((i * 8) as u16).to_le_bytes());
        dfd.extend_from_slice(&[7, *ch, 0, 0, 0, 0]);
        dfd.extend_from_slice(&0u32.to_le_bytes());
        dfd.extend_from_slice(&255u32.to_le_bytes());
    }
    b.extend_from_slice(&dfd);
    b.resize(b.len() + extra, 0x55);
    b
}

#[test]
fn generated_adversarial_files_get_clear_errors() {
    // a valid 4x4 RGBA8 file: the baseline every case below breaks
    let data_at = 80 + 24 + 92;
    let ok = rgba8_file(4, 4, &[(data_at as u64, 64, 64)], 64);
    assert!(open_bytes(ok.clone()).is_ok());

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "level past the end",
            rgba8_file(4, 4, &[(data_at as u64, 64, 64)], 10),
            "truncated: level 0",
        ),
        (
            "level length overflow",
            rgba8_file(4, 4, &[(u64::MAX - 8, 64, 64)], 64),
            "truncated: level 0",
        ),
        (
            "levels overlapping",
            rgba8_file(
                4,
                2,
                &[(data_at as u64, 32, 32), (data_at as u64 + 16, 8, 8)],
                64,
            ),
            "overlaps",
        ),
        (
            "level overlapping the DFD",
            rgba8_file(4, 4, &[(data_at as u64 - 8, 64, 64)], 64),
            "overlaps",
        ),
        (
            "wrong level size",
            rgba8_file(4, 4, &[(data_at as u64, 60, 60)], 64),
            "needs 64",
        ),
        (
            "too many levels",
            rgba8_file(4, 4, &[(0, 0, 0); 4], 64),
            "at most 3 levels",
        ),
        (
            "2^32-1 levels",
            {
                let mut b = ok.clone();
                b[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
                b
            },
            "levels",
        ),
        (
            "zero width",
            {
                let mut b = ok.clone();
                b[20..24].copy_from_slice(&0u32.to_le_bytes());
                b
            },
            "width",
        ),
        (
            "absurd DFD sample count",
            {
                let mut b = ok.clone();
                // block size field claims 24 + 16 * 4000 bytes
                b[data_at - 92 + 10..data_at - 92 + 12]
                    .copy_from_slice(&(24u16 + 16 * 4000).to_le_bytes());
                b
            },
            "DFD block",
        ),
        (
            "three faces",
            {
                let mut b = ok.clone();
                b[36..40].copy_from_slice(&3u32.to_le_bytes());
                b
            },
            "faceCount is 3",
        ),
        (
            "vendor supercompression",
            {
                let mut b = ok.clone();
                b[44..48].copy_from_slice(&0x10001u32.to_le_bytes());
                b
            },
            "vendor supercompression",
        ),
    ];
    for (what, bytes, expect) in cases {
        let e = open_bytes(bytes).expect_err(what).to_string();
        assert!(e.contains(expect), "{what}: {e}");
    }
}

/// A Zstandard level that inflates past its declared size stops at the size
/// and reports it, without allocating what the stream would produce.
#[test]
fn zstd_bomb_is_stopped_at_the_declared_size() {
    let bomb = zstd::bulk::compress(&vec![0u8; 64 << 20], 19).unwrap();
    assert!(bomb.len() < 8 << 10);
    let data_at = (80 + 24 + 92) as u64;
    let mut b = rgba8_file(4, 4, &[(data_at, bomb.len() as u64, 64)], 0);
    b[44..48].copy_from_slice(&2u32.to_le_bytes()); // Zstandard
    b.extend_from_slice(&bomb);
    let file = open_bytes(b).unwrap();
    assert_eq!(file.info().supercompression, Supercompression::Zstd);
    let e = file.read_level(0).unwrap_err().to_string();
    assert!(e.contains("more than the 64 bytes"), "{e}");
}

/// Each thread reuses one Zstandard context: a level read after a stream
/// that stopped mid-frame (the bomb above, a truncated frame) still inflates
/// to its own bytes, not to the remains of the one before.
#[test]
fn a_zstd_level_after_a_broken_one_inflates_cleanly() {
    let zstd_file = |stream: &[u8]| {
        let data_at = (80 + 24 + 92) as u64;
        let mut b = rgba8_file(4, 4, &[(data_at, stream.len() as u64, 64)], 0);
        b[44..48].copy_from_slice(&2u32.to_le_bytes()); // Zstandard
        b.extend_from_slice(stream);
        open_bytes(b).unwrap()
    };
    let texels: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
    let good = zstd::bulk::compress(&texels, 3).unwrap();
    let bomb = zstd::bulk::compress(&vec![7u8; 1 << 20], 19).unwrap();
    let truncated = &good[..good.len() - 3];
    for broken in [&bomb[..], truncated] {
        assert!(zstd_file(broken).read_level(0).is_err());
        assert_eq!(zstd_file(&good).read_level(0).unwrap().data, texels);
    }
}

#[test]
fn basis_files_load_and_transcode() {
    let dir = common::shared_data().join("ktx2-samples/ktx-software/tests/resources/basis");
    let files = common::files_with(&dir, &[".basis"]);
    assert_eq!(files.len(), 3);
    for p in files {
        let f = TextureFile::open_path(&p).unwrap_or_else(|e| panic!("{e}"));
        let info = f.info();
        assert!(info.payload.is_basis());
        let choice = choose_targets(
            info,
            TextureClass::Color,
            wgpu::Features::TEXTURE_COMPRESSION_BC,
        )
        .unwrap();
        for l in 0..info.levels.len() as u32 {
            let raw = f.read_level(l).unwrap();
            let img = transcode_level(&f, &raw, &TranscodeOptions::new(choice.full, choice.srgb))
                .unwrap();
            assert_eq!(img.data.len() as u64, img.gpu_bytes());
        }
    }
}

/// The same image as `.basis` and KTX2 (both from KTX-Software's test set)
/// decodes to the same pixels.
#[test]
fn basis_and_ktx2_of_the_same_image_agree() {
    let res = common::shared_data().join("ktx2-samples/ktx-software/tests/resources");
    let a = TextureFile::open_path(res.join("basis/kodim17.basis")).unwrap();
    let b = TextureFile::open_path(res.join("ktx2/kodim17_basis.ktx2")).unwrap();
    let decode =
        |f: &TextureFile| mipstream::decode::decode_rgba8(f, &f.read_level(0).unwrap(), 0).unwrap();
    let (da, db) = (decode(&a), decode(&b));
    assert_eq!((da.width, da.height), (db.width, db.height));
    assert!(
        da.pixels == db.pixels,
        "kodim17 .basis and .ktx2 decode differently"
    );
}

#[test]
fn cubemaps_and_arrays_load_as_such() {
    let s = common::shared_data().join("ktx2-conformance/input/ktx2_sample");
    let cube = TextureFile::open_path(s.join("cubemap_yokohama_basis_rd.ktx2")).unwrap();
    assert_eq!((cube.info().faces, cube.info().layers), (6, 1));
    assert_eq!(cube.info().payload, Payload::Etc1s);
    let raw = cube.read_level(11).unwrap();
    assert_eq!(raw.etc1s_slices.len(), 6, "one slice set per face");
    let array = TextureFile::open_path(s.join("texturearray_bc3_unorm.ktx2")).unwrap();
    assert_eq!((array.info().layers, array.info().is_array), (7, true));
    let raw = array.read_level(0).unwrap();
    assert_eq!(raw.data.len(), 7 * 256 * 256);
}

/// Text for one-line `Display` errors: every refusal names the file.
#[test]
fn errors_name_the_file() {
    let e = TextureFile::open_path("/nonexistent/x.ktx2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/x.ktx2"), "{e}");
    let e = open_bytes(b"PNG and other things".to_vec())
        .unwrap_err()
        .to_string();
    assert!(e.contains("generated") && e.contains("not a KTX2"), "{e}");
}

/// The ETC1S kodim23 file with its bytes flipped at random never panics: it
/// opens or is refused, and every level it opens with reads and transcodes or
/// fails with an error.
fn mutate_and_load(base: &[u8], flips: &[(usize, u8)]) {
    let mut bytes = base.to_vec();
    for (at, v) in flips {
        let i = at % bytes.len();
        bytes[i] ^= v;
    }
    if let Ok(f) = open_bytes(bytes) {
        let info = f.info().clone();
        if let Ok(c) = choose_targets(
            &info,
            TextureClass::Color,
            wgpu::Features::TEXTURE_COMPRESSION_BC,
        ) {
            for l in 0..info.levels.len() as u32 {
                if let Ok(raw) = f.read_level(l) {
                    let _ = transcode_level(&f, &raw, &TranscodeOptions::new(c.full, c.srgb));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn mutated_etc1s_files_never_panic(flips in prop::collection::vec((0usize..4096, 1u8..=255), 1..8)) {
        static BASE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let base = BASE.get_or_init(|| {
            std::fs::read(common::shared_data().join("ktx2-conformance/input/ktx2_sample/rgba-mipmap-reference-basis.ktx2")).unwrap()
        });
        mutate_and_load(base, &flips);
    }

    #[test]
    fn mutated_uastc_headers_never_panic(flips in prop::collection::vec((0usize..512, 1u8..=255), 1..6)) {
        static BASE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let base = BASE.get_or_init(|| {
            std::fs::read(common::shared_data().join("ktx2-conformance/input/ktx2_sample/ktx_document_uastc_rdo4_zstd5.ktx2")).unwrap()
        });
        mutate_and_load(base, &flips);
    }
}
