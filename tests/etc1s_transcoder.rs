//! mipstream's one-pass ETC1S transcoder (BC7 with and without Basis 2's
//! chroma filter, RGBA8, ASTC 4x4) against the `basisu` crate's own loop, byte for byte,
//! on every 2D ETC1S file of the shared data (KTX2 and `.basis`, opaque and
//! with an alpha slice, every level). The Khronos goldens
//! (`transcode_goldens.rs`) check both against the reference; this checks the
//! fast path on many more files, including the filter-off output that the
//! goldens do not cover.

mod common;

use basisu::{DecodeFlags, TargetFormat as BasisTarget, Transcoder};
use mipstream::container::Payload;
use mipstream::transcode::{transcode_level, Output, TranscodeOptions};
use mipstream::{TargetFormat, TextureFile};

/// (mipstream target, `basisu` target, chroma filter) pairs compared.
const CASES: [(TargetFormat, BasisTarget, bool); 4] = [
    (TargetFormat::Bc7, BasisTarget::Bc7Rgba, true),
    (TargetFormat::Bc7, BasisTarget::Bc7Rgba, false),
    (TargetFormat::Rgba8, BasisTarget::Rgba32, true),
    (TargetFormat::Astc4x4, BasisTarget::Astc4x4Rgba, true),
];

/// `basisu`'s decode flags for the chroma filter on or off.
fn basisu_flags(filter: bool) -> DecodeFlags {
    if filter {
        DecodeFlags::NONE
    } else {
        DecodeFlags::NO_ETC1S_CHROMA_FILTERING
    }
}

#[test]
fn the_one_pass_etc1s_transcoder_writes_basisus_bytes() {
    let data = common::shared_data();
    let files = common::files_with(&data.join("ktx2-samples"), &[".ktx2", ".basis"])
        .into_iter()
        .chain(common::files_with(
            &data.join("ktx2-conformance/input/ktx2_sample"),
            &[".ktx2"],
        ));
    let (mut compared, mut with_alpha, mut levels) = (0, 0, 0);
    for path in files {
        let Ok(file) = TextureFile::open_path(&path) else {
            continue;
        };
        let info = file.info();
        if info.payload != Payload::Etc1s || info.images_per_level() != 1 {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(reference) = Transcoder::new(&bytes) else {
            continue;
        };
        if reference.is_video() {
            continue;
        }
        for l in 0..info.levels.len() as u32 {
            let raw = file.read_level(l).unwrap();
            for (ours, theirs, filter) in CASES {
                let mut opts = TranscodeOptions::new(Output::Transcode(ours), info.srgb);
                opts.etc1s_chroma_filter = filter;
                let mine = transcode_level(&file, &raw, &opts)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let flags = basisu_flags(filter);
                let expected = reference.transcode(l, theirs, flags).unwrap();
                assert!(
                    mine.data == expected,
                    "{} level {l} {ours} (chroma filter {filter}) differs from basisu's",
                    path.display()
                );
            }
            levels += 1;
        }
        compared += 1;
        with_alpha += info.has_alpha() as usize;
    }
    println!("{compared} ETC1S files ({with_alpha} with alpha), {levels} levels");
    assert!(
        compared >= 10 && with_alpha >= 2,
        "only {compared} ETC1S files ({with_alpha} with alpha) found in the shared data"
    );
}

/// Corrupt ETC1S slices: wherever a byte of a level is changed, the one-pass
/// transcoder fails where `basisu` fails and writes `basisu`'s bytes where it
/// does not (a wrong guess at a corrupt stream's meaning would show here as a
/// difference, a missing bounds check as a panic).
#[test]
fn corrupt_etc1s_slices_fail_or_decode_as_in_basisu() {
    // 11 levels, colour and alpha slices
    let path = common::shared_data()
        .join("ktx2-samples/ktx-software/tests/resources/ktx2/ktx_document_basis.ktx2");
    let clean = std::fs::read(&path).unwrap();
    let file = TextureFile::open_path(&path).unwrap();
    assert_eq!(file.info().payload, Payload::Etc1s, "{}", path.display());
    assert!(file.info().has_alpha(), "{}", path.display());
    let (mut failed, mut decoded) = (0, 0);
    // a small xorshift, so the sweep is the same on every run
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for level in [0u32, 3, 8] {
        let (start, len) = file.info().levels[level as usize].ranges[0];
        for _ in 0..40 {
            let mut bytes = clean.clone();
            for _ in 0..1 + next() % 4 {
                let at = start + next() % len;
                bytes[at as usize] ^= 1 << (next() % 8);
            }
            let source = mipstream::MemorySource::new("corrupt ktx_document_basis", bytes.clone());
            let ours = TextureFile::open(std::sync::Arc::new(source)).unwrap();
            let raw = ours.read_level(level).unwrap();
            let reference = Transcoder::new(&bytes).unwrap();
            for (target, theirs, filter) in CASES {
                let mut opts = TranscodeOptions::new(Output::Transcode(target), false);
                opts.etc1s_chroma_filter = filter;
                let flags = basisu_flags(filter);
                match (
                    transcode_level(&ours, &raw, &opts),
                    reference.transcode(level, theirs, flags),
                ) {
                    (Ok(mine), Ok(expected)) => {
                        assert!(
                            mine.data == expected,
                            "level {level} {target}: bytes differ"
                        );
                        decoded += 1;
                    }
                    (Err(_), Err(_)) => failed += 1,
                    (mine, theirs) => panic!(
                        "level {level} {target}: mipstream {:?}, basisu {:?}",
                        mine.map(|_| "decoded"),
                        theirs.map(|_| "decoded")
                    ),
                }
            }
        }
    }
    println!("{decoded} corrupt transcodes decoded alike, {failed} failed alike");
    assert!(
        failed > 0 && decoded > 0,
        "{decoded} decoded, {failed} failed"
    );
}
