//! `mipstream cook`: PNG/JPEG to KTX2, many files at once on every core.

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mipstream::cook::{cook_file, Codec, CookOptions};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CodecArg {
    /// UASTC: high quality, 8 bits per texel before Zstandard.
    Uastc,
    /// ETC1S: small files, lower quality.
    Etc1s,
}

#[derive(Debug, Args)]
pub(crate) struct CookArgs {
    /// PNG or JPEG images.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output .ktx2 file (one input) or directory (several inputs).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Basis Universal codec.
    #[arg(long, value_enum, default_value = "uastc")]
    codec: CodecArg,
    /// The images hold linear data, not sRGB colour.
    #[arg(long)]
    linear: bool,
    /// The images are tangent-space normal maps (linear; packed for BC5/EAC RG11).
    #[arg(long)]
    normal_map: bool,
    /// Quality 0-100 (ETC1S quality level, UASTC effort).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    quality: u8,
}

pub(crate) fn run(args: CookArgs) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = plan(&args)?;
    let parallel = cores.min(jobs.len()).max(1);
    let opts = CookOptions {
        codec: match args.codec {
            CodecArg::Uastc => Codec::Uastc,
            CodecArg::Etc1s => Codec::Etc1s,
        },
        linear: args.linear,
        normal_map: args.normal_map,
        quality: args.quality,
        // one file: the encoder uses every core; many: one core per file
        threads: if jobs.len() == 1 { cores as u32 } else { 1 },
        ..Default::default()
    };
    let bar = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("{spinner} cooking [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut failures = Vec::new();
    let cooked: Result<(), std::convert::Infallible> = mipstream::parallel::for_each(
        &jobs,
        parallel,
        |_, (input, output)| {
            bar.set_message(input.display().to_string());
            cook_file(input, output, &opts)
        },
        |k, r| {
            let (input, output) = &jobs[k];
            match r {
                Ok(bytes) => bar.suspend(|| {
                    println!(
                        "{} -> {} ({bytes} bytes)",
                        input.display(),
                        output.display()
                    )
                }),
                Err(e) => failures.push(e.to_string()),
            }
            bar.inc(1);
            Ok(())
        },
    );
    let Ok(()) = cooked;
    bar.finish_and_clear();
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures[0].clone()),
        n => {
            for f in &failures {
                eprintln!("error: {f}");
            }
            Err(format!("{n} of {} inputs failed", jobs.len()))
        }
    }
}

/// Pairs each input with its output path.
fn plan(args: &CookArgs) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let out = &args.output;
    if args.inputs.len() == 1 && !out.is_dir() {
        return Ok(vec![(args.inputs[0].clone(), out.clone())]);
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut seen = std::collections::HashSet::new();
    args.inputs
        .iter()
        .map(|input| {
            let stem = input
                .file_stem()
                .ok_or_else(|| format!("{}: not a file name", input.display()))?;
            let target = Path::new(out).join(stem).with_extension("ktx2");
            if !seen.insert(target.clone()) {
                return Err(format!(
                    "{}: two inputs would both be written to {}",
                    input.display(),
                    target.display()
                ));
            }
            Ok((input.clone(), target))
        })
        .collect()
}
