//! Transcoding throughput (`mipstream bench-transcode`): what mipstream ships
//! against Basis Universal 1.16's C++ transcoder (the `basis-universal` crate),
//! per source/target pair, on one core.
//!
//! One image is encoded twice with the reference encoder, to ETC1S and to
//! UASTC `.basis` files (one level each), so both transcoders read the same
//! bytes. Per pair it times, on the calling thread:
//!
//! - `shipped`: [`transcode_level`] with the default [`TranscodeOptions`]
//!   (the output allocated and placed, as the loaders run it);
//! - `reference`: the C++ `basisu_transcoder::transcode_image_level` on the
//!   `.basis` file (its output allocated too);
//! - `rust`: the pure-Rust `basisu` crate's own path where `shipped` is not
//!   it: UASTC with the C++ transcoder shipped (the same call as `shipped`
//!   with [`UastcTranscoder::Rust`]), and ETC1S to BC7, RGBA8 and ASTC 4x4,
//!   which ship mipstream's one-pass loop (`basisu::Transcoder::transcode_into`
//!   on the same `.basis` bytes, default decode flags);
//! - `same_output`: ETC1S to BC7 without Basis 2's chroma filter, the work
//!   the reference does.
//!
//! Candidates run in alternating rounds (each a batch of about 20 ms), so a
//! drift of the machine's speed reaches every candidate alike; each reports
//! the median round. Throughput counts output bytes, MiB/s.

use basis_universal::{
    BasisTextureFormat, Compressor, CompressorParams, TranscodeParameters, Transcoder,
    TranscoderTextureFormat as Tf,
};
use mipstream::container::Payload;
use mipstream::transcode::{transcode_level, Output, TranscodeOptions, UastcTranscoder};
use mipstream::{container::TextureFile, format::TargetFormat, source::MemorySource};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The pairs timed: the targets mipstream picks for colour textures.
pub const TARGETS: [TargetFormat; 5] = [
    TargetFormat::Bc7,
    TargetFormat::Bc1,
    TargetFormat::Astc4x4,
    TargetFormat::Etc2Rgba,
    TargetFormat::Rgba8,
];

/// One source/target pair.
#[derive(Debug, Clone)]
pub struct PairResult {
    /// `ETC1S` or `UASTC`.
    pub source: &'static str,
    /// The target.
    pub target: TargetFormat,
    /// What the shipped path transcodes this source with.
    pub shipped_transcoder: &'static str,
    /// Output bytes per transcode.
    pub output_bytes: u64,
    /// mipstream as shipped, MiB/s.
    pub shipped_mib_s: f64,
    /// The C++ reference, MiB/s.
    pub reference_mib_s: f64,
    /// The pure-Rust `basisu` crate's own path where it is not what ships
    /// (UASTC; ETC1S to BC7, RGBA8, ASTC 4x4), MiB/s.
    pub rust_mib_s: Option<f64>,
    /// ETC1S to BC7 without the chroma filter (the reference's output), MiB/s.
    pub same_output_mib_s: Option<f64>,
}

impl PairResult {
    /// `shipped / reference`.
    pub fn ratio(&self) -> f64 {
        self.shipped_mib_s / self.reference_mib_s
    }

    /// `same_output / reference` where the shipped output differs from the
    /// reference's on purpose, else [`Self::ratio`].
    pub fn ratio_same_output(&self) -> f64 {
        self.same_output_mib_s
            .map_or(self.ratio(), |s| s / self.reference_mib_s)
    }
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct TranscodeBench {
    /// The source image's name.
    pub image: String,
    /// Its size.
    pub width: u32,
    /// Its size.
    pub height: u32,
    /// Time per candidate and pair.
    pub seconds: f64,
    /// Every pair, ETC1S first.
    pub pairs: Vec<PairResult>,
}

impl TranscodeBench {
    /// The run as JSON (`mipstream bench-transcode --json`).
    pub fn to_json(&self) -> serde_json::Value {
        let pairs: Vec<_> = self
            .pairs
            .iter()
            .map(|p| {
                serde_json::json!({
                    "source": p.source,
                    "target": p.target.name(),
                    "shipped_transcoder": p.shipped_transcoder,
                    "output_bytes": p.output_bytes,
                    "shipped_mib_s": p.shipped_mib_s,
                    "reference_mib_s": p.reference_mib_s,
                    "ratio": p.ratio(),
                    "rust_mib_s": p.rust_mib_s,
                    "same_output_mib_s": p.same_output_mib_s,
                    "ratio_same_output": p.ratio_same_output(),
                })
            })
            .collect();
        serde_json::json!({
            "image": self.image,
            "width": self.width,
            "height": self.height,
            "seconds_per_candidate": self.seconds,
            "reference": "basis-universal 0.3.1 (Basis Universal 1.16 C++ transcoder)",
            "pairs": pairs,
        })
    }
}

/// The reference's format for a target.
fn reference_format(t: TargetFormat) -> Tf {
    match t {
        TargetFormat::Bc7 => Tf::BC7_RGBA,
        TargetFormat::Bc1 => Tf::BC1_RGB,
        TargetFormat::Astc4x4 => Tf::ASTC_4x4_RGBA,
        TargetFormat::Etc2Rgba => Tf::ETC2_RGBA,
        _ => Tf::RGBA32,
    }
}

/// Encodes `rgba` as a one-level `.basis` file with the reference encoder.
#[allow(unsafe_code)] // the encoder's `unsafe` setup, with in-range parameters
fn encode(rgba: &image::RgbaImage, format: BasisTextureFormat) -> Result<Vec<u8>, String> {
    let mut params = CompressorParams::new();
    params.set_basis_format(format);
    params.set_generate_mipmaps(false);
    params
        .source_image_mut(0)
        .init(rgba.as_raw(), rgba.width(), rgba.height(), 4);
    let mut c = Compressor::new(2);
    // SAFETY: the parameters above are all in range (one source image, the
    // format's defaults).
    unsafe {
        if !c.init(&params) {
            return Err("the reference encoder refused its parameters".into());
        }
        c.process()
            .map_err(|e| format!("the reference encoder failed: {e:?}"))?;
    }
    Ok(c.basis_file().to_vec())
}

/// A candidate: a name and one transcode.
type Candidate<'a> = Box<dyn FnMut() -> Result<(), String> + 'a>;

/// Median seconds per call of each candidate, alternating rounds of about
/// 20 ms until each has run `seconds`.
fn time_alternating(candidates: &mut [Candidate<'_>], seconds: f64) -> Result<Vec<f64>, String> {
    // one warm-up call each, and the batch size from it
    let mut batch = Vec::with_capacity(candidates.len());
    for c in candidates.iter_mut() {
        let t = Instant::now();
        c()?;
        let once = t.elapsed().as_secs_f64().max(1e-6);
        batch.push(((0.02 / once).ceil() as usize).clamp(1, 10_000));
    }
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); candidates.len()];
    let mut spent = vec![0.0f64; candidates.len()];
    while spent.iter().any(|&s| s < seconds) {
        for (i, c) in candidates.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..batch[i] {
                c()?;
            }
            let d = t.elapsed().as_secs_f64();
            spent[i] += d;
            rounds[i].push(d / batch[i] as f64);
        }
    }
    Ok(rounds
        .into_iter()
        .map(|mut r| {
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        })
        .collect())
}

/// The `basisu` target of an ETC1S target that mipstream transcodes with its
/// own one-pass loop (`transcode::etc1s`).
fn etc1s_one_pass(target: TargetFormat) -> Option<basisu::TargetFormat> {
    match target {
        TargetFormat::Bc7 => Some(basisu::TargetFormat::Bc7Rgba),
        TargetFormat::Rgba8 => Some(basisu::TargetFormat::Rgba32),
        TargetFormat::Astc4x4 => Some(basisu::TargetFormat::Astc4x4Rgba),
        _ => None,
    }
}

/// `basisu`'s own ETC1S path to `target` on `basis`, default decode flags
/// (chroma filter on, as shipped), its output allocated as `shipped`'s is.
fn basisu_etc1s(basis: &[u8], target: TargetFormat) -> Result<Candidate<'_>, String> {
    let t = basisu::Transcoder::new(basis).map_err(|e| format!("basisu: {e:?}"))?;
    let format = etc1s_one_pass(target).ok_or("not a one-pass target")?;
    Ok(Box::new(move || {
        let mut out = vec![0u8; t.output_size(0, format).map_err(|e| format!("{e:?}"))?];
        t.transcode_into(0, format, basisu::DecodeFlags::NONE, &mut out)
            .map_err(|e| format!("basisu transcode failed: {e:?}"))
    }))
}

/// Times every pair on `image` (PNG or JPEG), `seconds` per candidate and
/// pair; `progress(done, total)` after each pair.
pub fn bench_transcode(
    image: &Path,
    seconds: f64,
    mut progress: impl FnMut(usize, usize),
) -> Result<TranscodeBench, String> {
    let rgba = image::open(image)
        .map_err(|e| format!("{}: {e}", image.display()))?
        .to_rgba8();
    let name = image.file_name().map_or_else(
        || image.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let sources = [
        ("ETC1S", encode(&rgba, BasisTextureFormat::ETC1S)?),
        ("UASTC", encode(&rgba, BasisTextureFormat::UASTC4x4)?),
    ];
    let total = sources.len() * TARGETS.len();
    let mut pairs = Vec::with_capacity(total);
    for (source, basis) in &sources {
        let file = TextureFile::open(Arc::new(MemorySource::new(
            format!("{name} ({source})"),
            basis.clone(),
        )))
        .map_err(|e| e.to_string())?;
        let uastc = file.info().payload == Payload::Uastc;
        let raw = file.read_level(0).map_err(|e| e.to_string())?;
        let mut reference = Transcoder::new();
        reference
            .prepare_transcoding(basis)
            .map_err(|()| "the reference transcoder refused the file".to_string())?;
        for target in TARGETS {
            let shipped = TranscodeOptions::new(Output::Transcode(target), true);
            let run = |opts: TranscodeOptions| {
                let (file, raw) = (&file, &raw);
                Box::new(move || {
                    transcode_level(file, raw, &opts)
                        .map(drop)
                        .map_err(|e| e.to_string())
                }) as Candidate<'_>
            };
            let mut candidates: Vec<Candidate<'_>> = vec![run(shipped)];
            let reference = &reference;
            candidates.push(Box::new(move || {
                reference
                    .transcode_image_level(
                        basis,
                        reference_format(target),
                        TranscodeParameters {
                            image_index: 0,
                            level_index: 0,
                            ..Default::default()
                        },
                    )
                    .map(drop)
                    .map_err(|e| format!("reference transcode failed: {e:?}"))
            }));
            let one_pass = !uastc && etc1s_one_pass(target).is_some();
            let rust = one_pass || (uastc && shipped.uastc != UastcTranscoder::Rust);
            if one_pass {
                candidates.push(basisu_etc1s(basis, target)?);
            } else if rust {
                let mut o = shipped;
                o.uastc = UastcTranscoder::Rust;
                candidates.push(run(o));
            }
            let filtered = !uastc && target == TargetFormat::Bc7 && shipped.etc1s_chroma_filter;
            if filtered {
                let mut o = shipped;
                o.etc1s_chroma_filter = false;
                candidates.push(run(o));
            }
            let times = time_alternating(&mut candidates, seconds)?;
            let bytes = target.image_bytes(raw.width, raw.height);
            let mib_s = |t: f64| bytes as f64 / t / (1024.0 * 1024.0);
            let mut extra = times[2..].iter().map(|&t| mib_s(t));
            pairs.push(PairResult {
                source,
                target,
                shipped_transcoder: match (uastc, shipped.uastc) {
                    (true, UastcTranscoder::Cpp) => "C++ 1.16 low-level (basis-universal)",
                    _ if one_pass => "mipstream one-pass (basisu codebooks)",
                    _ => "basisu (Rust)",
                },
                output_bytes: bytes,
                shipped_mib_s: mib_s(times[0]),
                reference_mib_s: mib_s(times[1]),
                rust_mib_s: if rust { extra.next() } else { None },
                same_output_mib_s: if filtered { extra.next() } else { None },
            });
            progress(pairs.len(), total);
        }
    }
    Ok(TranscodeBench {
        image: name,
        width: rgba.width(),
        height: rgba.height(),
        seconds,
        pairs,
    })
}
