//! Basis transcodes against the Khronos conformance goldens, which the
//! reference transcoder (libktx's Basis Universal) produced.
//!
//! mipstream transcodes ETC1S with the pure-Rust `basisu` crate, which tracks
//! Basis Universal v2.1, and UASTC with either `basisu` or (feature
//! `basis-cpp`, on in the tools and tests) Basis Universal 1.16's C++
//! transcoder; the goldens come from libktx's copy of the transcoder. Every (input, target) pair must be
//! bit-exact through every UASTC transcoder built in, or be listed in
//! [`KNOWN_DIFFERENCES`] with the reason and a PSNR floor its decoded pixels
//! must still meet.

mod common;

use mipstream::container::Payload;
use mipstream::decode::decode_level_image;
use mipstream::transcode::{
    transcode_level, LevelImage, Output, TranscodeOptions, UastcTranscoder,
};
use mipstream::{TargetFormat, TextureFile};
use std::path::Path;

/// The eight source layouts the goldens cover.
const SUBCASES: [&str; 8] = [
    "R8_UNORM",
    "R8_SRGB",
    "R8G8_UNORM",
    "R8G8_SRGB",
    "R8G8B8_UNORM",
    "R8G8B8_SRGB",
    "R8G8B8A8_UNORM",
    "R8G8B8A8_SRGB",
];

/// `ktx transcode --target` ids and the mipstream target each maps to; the
/// r8/rg8/rgb8 targets are channel subsets of the RGBA8 transcode.
const TARGETS: [(&str, TargetFormat); 14] = [
    ("etc-rgb", TargetFormat::Etc2Rgb),
    ("etc-rgba", TargetFormat::Etc2Rgba),
    ("eac-r11", TargetFormat::EacR11),
    ("eac-rg11", TargetFormat::EacRg11),
    ("bc1", TargetFormat::Bc1),
    ("bc3", TargetFormat::Bc3),
    ("bc4", TargetFormat::Bc4),
    ("bc5", TargetFormat::Bc5),
    ("bc7", TargetFormat::Bc7),
    ("astc", TargetFormat::Astc4x4),
    ("r8", TargetFormat::Rgba8),
    ("rg8", TargetFormat::Rgba8),
    ("rgb8", TargetFormat::Rgba8),
    ("rgba8", TargetFormat::Rgba8),
];

/// (codec, target, subcase prefix, minimum PSNR of the decoded pixels, why).
/// Empty: every pair is bit-exact (uncompressed targets after the channel remap
/// described at [`libktx_remap`]).
const KNOWN_DIFFERENCES: &[(&str, &str, &str, f64, &str)] = &[];

/// libktx rearranges *uncompressed* transcodes of one- and two-channel sources
/// into the source format's channel order: Basis stores R as (r, r, r) and RG as
/// (r, r, r, g), libktx writes (r, 0, 0, 255) and (r, g, 0, 255). mipstream
/// keeps Basis' layout on every target (so a texture samples alike on every
/// adapter) and reports it as a [`mipstream::transcode::ChannelLayout`]; the
/// comparison applies libktx's remap to mipstream's output first.
fn libktx_remap(sub: &str, rgba: &[u8]) -> Vec<u8> {
    rgba.chunks_exact(4)
        .flat_map(|p| {
            if sub.starts_with("R8G8B8") {
                [p[0], p[1], p[2], p[3]]
            } else if sub.starts_with("R8G8") {
                [p[0], p[3], 0, 255]
            } else {
                [p[0], 0, 0, 255]
            }
        })
        .collect()
}

fn open(path: &Path) -> TextureFile {
    TextureFile::open_path(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The UASTC transcoders this build has.
fn uastc_transcoders() -> Vec<UastcTranscoder> {
    let mut all = vec![UastcTranscoder::Rust];
    if cfg!(feature = "basis-cpp") {
        all.push(UastcTranscoder::Cpp);
    }
    all
}

/// Our transcode of every level of `input` to `target`, tight rows.
fn ours(input: &TextureFile, target: TargetFormat, uastc: UastcTranscoder) -> Vec<LevelImage> {
    (0..input.info().levels.len() as u32)
        .map(|l| {
            let raw = input.read_level(l).unwrap();
            let mut opts = TranscodeOptions::new(Output::Transcode(target), input.info().srgb);
            opts.uastc = uastc;
            transcode_level(input, &raw, &opts).unwrap()
        })
        .collect()
}

/// Keeps the first `n` bytes of every 4-byte RGBA texel.
fn channels(rgba: &[u8], n: usize) -> Vec<u8> {
    rgba.chunks_exact(4).flat_map(|p| p[..n].to_vec()).collect()
}

fn rgba_image(l: &LevelImage) -> image::RgbaImage {
    let d = decode_level_image(l, 0).unwrap();
    image::RgbaImage::from_raw(d.width, d.height, d.pixels).unwrap()
}

/// Compares one transcode with its golden: `None` when bit-exact, else the PSNR
/// of the decoded pixels.
fn compare(id: &str, sub: &str, mine: &[LevelImage], golden: &TextureFile) -> Option<f64> {
    let mut worst: Option<f64> = None;
    for (l, m) in mine.iter().enumerate() {
        let g = golden.read_level(l as u32).unwrap();
        let (a, b) = match id {
            "r8" => (channels(&libktx_remap(sub, &m.data), 1), g.data.clone()),
            "rg8" => (channels(&libktx_remap(sub, &m.data), 2), g.data.clone()),
            "rgb8" => (channels(&libktx_remap(sub, &m.data), 3), g.data.clone()),
            "rgba8" => (libktx_remap(sub, &m.data), g.data.clone()),
            _ => (m.data.clone(), g.data.clone()),
        };
        if a == b {
            continue;
        }
        let Payload::Plain(_) = golden.info().payload else {
            panic!("golden is not a plain format")
        };
        // decode the golden's blocks as the same GPU format as ours
        let mut gl = m.clone();
        gl.data = b.clone();
        let p = if a.len() == b.len() && !matches!(id, "r8" | "rg8" | "rgb8" | "rgba8") {
            common::psnr(&rgba_image(m), &rgba_image(&gl))
        } else {
            let n = a.len().min(b.len());
            let se: f64 = a[..n]
                .iter()
                .zip(&b[..n])
                .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
                .sum();
            10.0 * (255.0f64.powi(2) / (se / n as f64).max(1e-12)).log10()
        };
        worst = Some(worst.map_or(p, |w: f64| w.min(p)));
    }
    worst
}

#[test]
fn basis_transcodes_match_the_reference_goldens() {
    let data = common::shared_data().join("ktx2-conformance");
    let mut exact = 0;
    let mut failures = Vec::new();
    let mut differing = Vec::new();
    let mut runs = Vec::new();
    for t in uastc_transcoders() {
        runs.push(("UASTC", "transcode_uastc", t));
    }
    runs.push(("BLZE", "transcode_blze", UastcTranscoder::Rust));
    for &(codec, dir, uastc) in &runs {
        for sub in SUBCASES {
            let input = open(&data.join(format!("input/ktx2/valid_{sub}_2D_{codec}.ktx2")));
            for (id, target) in TARGETS {
                let golden_path = data.join(format!(
                    "golden/transcode/{dir}/output_{sub}_2D_{codec}_to_{id}.ktx2"
                ));
                let golden = open(&golden_path);
                let mine = ours(&input, target, uastc);
                match compare(id, sub, &mine, &golden) {
                    None => exact += 1,
                    Some(p) => {
                        let known = KNOWN_DIFFERENCES
                            .iter()
                            .find(|k| k.0 == codec && k.1 == id && sub.starts_with(k.2));
                        let line = format!("{codec} ({uastc:?}) {sub} -> {id}: PSNR {p:.2} dB");
                        match known {
                            Some(k) if p >= k.3 => {
                                differing.push(format!("{line} (known: {})", k.4))
                            }
                            Some(k) => failures.push(format!("{line}, below the {} dB floor", k.3)),
                            None => failures
                                .push(format!("{line}, not bit-exact and not a known difference")),
                        }
                    }
                }
            }
        }
    }
    eprintln!("{exact} transcodes bit-exact with the goldens");
    for d in &differing {
        eprintln!("{d}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        exact,
        runs.len() * SUBCASES.len() * TARGETS.len(),
        "every pair must be bit-exact"
    );
}

/// `ktx transcode --zstd 11 / --zlib` goldens: large ETC1S and UASTC inputs
/// transcoded to BC7 and stored supercompressed. Reading the golden exercises
/// mipstream's Zstandard and zlib inflation; the texels must be bit-exact.
#[test]
fn supercompressed_bc7_goldens_match() {
    let data = common::shared_data().join("ktx2-conformance");
    for codec in ["BLZE", "UASTC"] {
        let input = open(&data.join(format!("input/transcode/large_{codec}.ktx2")));
        for uastc in uastc_transcoders() {
            let mine = ours(&input, TargetFormat::Bc7, uastc);
            for scheme in ["ZSTD", "ZLIB"] {
                let golden = open(&data.join(format!(
                    "golden/transcode/transcode_{}/output_{codec}_{scheme}.ktx2",
                    scheme.to_lowercase()
                )));
                assert_ne!(
                    golden.info().supercompression,
                    mipstream::container::Supercompression::None
                );
                assert_eq!(golden.info().levels.len(), mine.len());
                assert_eq!(
                    compare("bc7", "R8G8B8A8", &mine, &golden),
                    None,
                    "{codec} {scheme} ({uastc:?})"
                );
            }
        }
    }
}

/// The conformance set stores each supercompressed input four times (Zstandard
/// and zlib, at levels 1 and 9): all four must inflate to the same bytes, or
/// all be refused alike.
#[test]
fn zstd_and_zlib_variants_inflate_to_the_same_texels() {
    let dir = common::shared_data().join("ktx2-conformance/input/ktx2");
    let mut groups = std::collections::BTreeMap::<String, Vec<std::path::PathBuf>>::new();
    for path in common::files_with(&dir, &[".ktx2"]) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(base) = ["_ZSTD_1", "_ZSTD_9", "_ZLIB_1", "_ZLIB_9"]
            .iter()
            .find_map(|s| name.strip_suffix(&format!("{s}.ktx2")))
        {
            groups.entry(base.to_owned()).or_default().push(path);
        }
    }
    let mut compared = 0;
    for (base, paths) in &groups {
        assert_eq!(paths.len(), 4, "{base}");
        let opened: Vec<_> = paths.iter().map(TextureFile::open_path).collect();
        if opened.iter().all(Result::is_err) {
            continue;
        }
        let files: Vec<TextureFile> = opened
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{base}: only some variants open: {e}")))
            .collect();
        let levels = files[0].info().levels.len() as u32;
        for l in 0..levels {
            let first = files[0].read_level(l).unwrap().data;
            for f in &files[1..] {
                assert!(
                    f.read_level(l).unwrap().data == first,
                    "{} level {l} differs",
                    f.info().name
                );
            }
        }
        compared += 1;
    }
    assert!(compared >= 15, "only {compared} groups compared");
}

/// Rows padded to wgpu's copy alignment (the loader-staging layout) hold the
/// tight transcode row by row, zeros between, through every UASTC transcoder
/// and at every level down to 1x1 (the C++ transcoder writes straight into
/// tight rows and through a tight image when they are padded).
#[test]
fn padded_rows_hold_the_tight_transcode_through_every_uastc_transcoder() {
    let data = common::shared_data().join("ktx2-conformance/input");
    let mut checked = 0;
    for path in [
        data.join("ktx2/valid_R8G8B8A8_SRGB_2D_UASTC.ktx2"),
        data.join("ktx2/valid_R8G8_UNORM_2D_UASTC.ktx2"),
        data.join("transcode/large_UASTC.ktx2"),
    ] {
        let input = open(&path);
        for (_, target) in TARGETS {
            for uastc in uastc_transcoders() {
                let tight = ours(&input, target, uastc);
                for (l, t) in tight.iter().enumerate() {
                    let raw = input.read_level(l as u32).unwrap();
                    let mut opts =
                        TranscodeOptions::new(Output::Transcode(target), input.info().srgb)
                            .with_row_alignment(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
                    opts.uastc = uastc;
                    let padded = transcode_level(&input, &raw, &opts).unwrap();
                    let (tp, pp) = (t.bytes_per_row as usize, padded.bytes_per_row as usize);
                    assert_eq!(pp % 256, 0);
                    for (row, chunk) in t.data.chunks(tp).enumerate() {
                        let at = &padded.data[row * pp..(row + 1) * pp];
                        assert_eq!(&at[..tp], chunk, "{path:?} {target:?} {uastc:?} level {l}");
                        assert!(at[tp..].iter().all(|&b| b == 0));
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(
        checked >= 3 * TARGETS.len() * uastc_transcoders().len(),
        "{checked}"
    );
}
