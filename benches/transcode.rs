//! Transcoding throughput per source/target pair, one core: what mipstream
//! ships (ETC1S through the pure-Rust `basisu` crate, UASTC through the C++
//! low-level transcoder with the `basis-cpp` feature, which `cook` turns
//! on) and `basisu` on UASTC, against the reference C++ transcoder in the
//! `basis-universal` crate (Basis Universal 1.16), on the same texels.
//! `mipstream bench-transcode` prints the same comparison as a table or JSON
//! with the ratios.
//!
//! Sources, from `../shared/data`: ETC1S = KTX-Software's `kodim17.basis`
//! (512x768); UASTC = `kodim23.png` encoded here with the `basis-universal`
//! encoder (768x512). Throughput counts output bytes.
//!
//! `cargo bench --bench transcode`

use basis_universal::{TranscodeParameters, Transcoder, TranscoderTextureFormat as Tf};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mipstream::transcode::{transcode_level, Output, TranscodeOptions, UastcTranscoder};
use mipstream::{MemorySource, TargetFormat, TextureFile};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

/// kodim23 as a UASTC `.basis`, encoded with the reference encoder.
#[allow(unsafe_code)] // the encoder's `unsafe` setup, with in-range parameters
fn uastc_basis() -> Vec<u8> {
    let img = image::open(shared().join("ktx2-samples/basis-universal/kodim23.png"))
        .unwrap()
        .to_rgba8();
    let mut params = basis_universal::CompressorParams::new();
    params.set_basis_format(basis_universal::BasisTextureFormat::UASTC4x4);
    params.set_generate_mipmaps(false);
    params
        .source_image_mut(0)
        .init(img.as_raw(), img.width(), img.height(), 4);
    let mut c = basis_universal::Compressor::new(2);
    // SAFETY: the parameters above are all in range.
    unsafe {
        assert!(c.init(&params));
        c.process().unwrap();
    }
    c.basis_file().to_vec()
}

fn bench(c: &mut Criterion) {
    let etc1s = std::fs::read(
        shared().join("ktx2-samples/ktx-software/tests/resources/basis/kodim17.basis"),
    )
    .unwrap();
    let sources = [("ETC1S", etc1s), ("UASTC", uastc_basis())];
    let targets = [
        (TargetFormat::Bc7, Tf::BC7_RGBA),
        (TargetFormat::Bc1, Tf::BC1_RGB),
        (TargetFormat::Astc4x4, Tf::ASTC_4x4_RGBA),
        (TargetFormat::Etc2Rgba, Tf::ETC2_RGBA),
        (TargetFormat::Rgba8, Tf::RGBA32),
    ];
    for (name, basis) in &sources {
        let file = TextureFile::open(Arc::new(MemorySource::new(*name, basis.clone()))).unwrap();
        let raw = file.read_level(0).unwrap();
        let mut reference = Transcoder::new();
        reference.prepare_transcoding(basis).unwrap();
        let mut group = c.benchmark_group(format!("transcode {name}"));
        group
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_millis(500))
            .sample_size(20);
        for (ours, theirs) in targets {
            let out_bytes = ours.image_bytes(raw.width, raw.height);
            group.throughput(Throughput::Bytes(out_bytes));
            let opts = TranscodeOptions::new(Output::Transcode(ours), true);
            group.bench_function(BenchmarkId::new("mipstream (shipped)", ours.name()), |b| {
                b.iter(|| transcode_level(&file, &raw, &opts).unwrap())
            });
            if *name == "UASTC" && opts.uastc != UastcTranscoder::Rust {
                let mut rust = opts;
                rust.uastc = UastcTranscoder::Rust;
                group.bench_function(BenchmarkId::new("basisu (Rust)", ours.name()), |b| {
                    b.iter(|| transcode_level(&file, &raw, &rust).unwrap())
                });
            }
            if *name == "ETC1S" && ours == TargetFormat::Bc7 {
                // Basis 2's ETC1S chroma filter is extra work 1.16 does not do
                let mut plain = opts;
                plain.etc1s_chroma_filter = false;
                group.bench_function(
                    BenchmarkId::new("basisu (Rust, no chroma filter)", ours.name()),
                    |b| b.iter(|| transcode_level(&file, &raw, &plain).unwrap()),
                );
            }
            group.bench_function(
                BenchmarkId::new("basis-universal (C++ 1.16)", ours.name()),
                |b| {
                    b.iter(|| {
                        reference
                            .transcode_image_level(
                                basis,
                                theirs,
                                TranscodeParameters {
                                    image_index: 0,
                                    level_index: 0,
                                    ..Default::default()
                                },
                            )
                            .unwrap()
                    })
                },
            );
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
