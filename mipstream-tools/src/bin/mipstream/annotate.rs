//! `mipstream annotate`: measure the loss per level and tier of KTX2 files
//! mipstream did not cook and store it in their key/value data.
//!
//! The measurement goes into the file itself (a rewritten KTX2 file with one
//! more key/value entry) rather than a sidecar: it then travels with the
//! file through copies, archives and an engine's own `ByteSource`s (pak
//! files, memory), where a sidecar would be lost or never looked for. Every
//! other byte of the file is kept (levels, DFD, global data); the rewritten
//! file is reopened and each level compared with the original's before it
//! replaces anything, and it is written to a temporary file renamed over the
//! target, so an interrupted run leaves the original.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mipstream::cook::measure;
use mipstream::loss::TextureLoss;
use mipstream::{MemorySource, TextureFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Args)]
pub(crate) struct AnnotateArgs {
    /// KTX2 files, or folders searched for them (recursively).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Write annotated copies into this folder (folders given as inputs keep
    /// their layout under it).
    #[arg(short = 'o', long = "output", conflicts_with = "in_place")]
    output: Option<PathBuf>,
    /// Rewrite the files where they are.
    #[arg(long)]
    in_place: bool,
    /// Measure again files that already carry a measured loss.
    #[arg(long)]
    force: bool,
}

/// One file to annotate: where it is read and where it is written.
struct Job {
    input: PathBuf,
    output: PathBuf,
}

enum Outcome {
    Annotated {
        loss: TextureLoss,
        seconds: f64,
        size: (u32, u32),
    },
    Kept(&'static str),
}

pub(crate) fn run(args: AnnotateArgs) -> Result<(), String> {
    if args.output.is_none() && !args.in_place {
        return Err(
            "say where the annotated files go: -o FOLDER for copies, or --in-place to rewrite them"
                .into(),
        );
    }
    let jobs = jobs(&args)?;
    if jobs.is_empty() {
        return Err("no .ktx2 files found in the inputs".into());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bar = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("{spinner} measuring [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut failures = Vec::new();
    let (mut annotated, mut kept) = (0, 0);
    let done: Result<(), std::convert::Infallible> = mipstream::parallel::for_each(
        &jobs,
        cores,
        |_, job| {
            bar.set_message(job.input.display().to_string());
            annotate(job, args.force)
        },
        |k, r| {
            let job = &jobs[k];
            match r {
                Ok(Outcome::Annotated {
                    loss,
                    seconds,
                    size,
                }) => {
                    annotated += 1;
                    let psnr = |e: f32| 10.0 * (255.0f64 * 255.0 / e.max(1e-6) as f64).log10();
                    let l1 = loss.level_error.get(1).copied().unwrap_or(0.0);
                    bar.suspend(|| {
                        println!(
                            "{} -> {}: {}x{}, {} levels, level 1 at {:.1} dB ({} space){}, {seconds:.2} s",
                            job.input.display(),
                            job.output.display(),
                            size.0,
                            size.1,
                            loss.level_error.len(),
                            psnr(l1),
                            loss.space.key(),
                            loss.compact
                                .first()
                                .map(|c| format!(
                                    ", {} level 0 at {:.1} dB, like {:.2} levels coarser by FLIP",
                                    c.format.key(),
                                    psnr(c.level_error[0]),
                                    c.blur_levels.unwrap_or(0.0)
                                ))
                                .unwrap_or_default(),
                        )
                    })
                }
                Ok(Outcome::Kept(why)) => {
                    kept += 1;
                    bar.suspend(|| println!("{}: {why}", job.input.display()));
                }
                Err(e) => failures.push(e),
            }
            bar.inc(1);
            Ok(())
        },
    );
    let Ok(()) = done;
    bar.finish_and_clear();
    println!(
        "{annotated} annotated, {kept} kept as they were, {} failed",
        failures.len()
    );
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures[0].clone()),
        n => {
            for f in &failures {
                eprintln!("error: {f}");
            }
            Err(format!("{n} of {} files failed", jobs.len()))
        }
    }
}

/// The files to annotate and where each goes.
fn jobs(args: &AnnotateArgs) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    for input in &args.inputs {
        let meta = std::fs::metadata(input).map_err(|e| format!("{}: {e}", input.display()))?;
        let found: Vec<(PathBuf, PathBuf)> = if meta.is_dir() {
            let mut files = Vec::new();
            find_ktx2(input, &mut files)?;
            files
                .into_iter()
                .map(|f| {
                    let rel = f.strip_prefix(input).unwrap_or(&f).to_path_buf();
                    (f, rel)
                })
                .collect()
        } else {
            let name = input
                .file_name()
                .ok_or_else(|| format!("{}: not a file name", input.display()))?;
            vec![(input.clone(), PathBuf::from(name))]
        };
        for (file, rel) in found {
            let output = match &args.output {
                Some(out) => out.join(rel),
                None => file.clone(),
            };
            jobs.push(Job {
                input: file,
                output,
            });
        }
    }
    let mut seen = std::collections::HashSet::new();
    for j in &jobs {
        if !seen.insert(j.output.clone()) {
            return Err(format!(
                "two inputs would both be written to {}",
                j.output.display()
            ));
        }
    }
    Ok(jobs)
}

fn find_ktx2(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            find_ktx2(&p, out)?;
        } else if p
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ktx2"))
        {
            out.push(p);
        }
    }
    Ok(())
}

fn annotate(job: &Job, force: bool) -> Result<Outcome, String> {
    let name = job.input.display().to_string();
    let bytes = std::fs::read(&job.input).map_err(|e| format!("{name}: {e}"))?;
    let original = TextureFile::open(Arc::new(MemorySource::new(&name, bytes.clone())))
        .map_err(|e| e.to_string())?;
    let info = original.info();
    let has_loss = matches!(TextureLoss::from_info(info), Some(Ok(_)));
    if has_loss && !force {
        if job.output != job.input {
            write(&job.output, &bytes)?;
        }
        return Ok(Outcome::Kept(
            "already carries a measured loss (--force measures again)",
        ));
    }
    if !measure::can_measure(&original) {
        return Err(format!(
            "{name}: {} cannot be decoded on the CPU, so its loss cannot be measured",
            info.payload.name()
        ));
    }
    let start = Instant::now();
    let loss = measure::measure_loss(&original).map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    let out = measure::annotate_ktx2(&bytes, &loss).map_err(|e| format!("{name}: {e}"))?;
    verify(&original, &out, &loss).map_err(|e| format!("{name}: the rewritten file {e}"))?;
    write(&job.output, &out)?;
    Ok(Outcome::Annotated {
        loss,
        seconds,
        size: (info.width, info.height),
    })
}

/// The rewritten file opens, carries `loss`, and holds the same levels.
fn verify(original: &TextureFile, out: &[u8], loss: &TextureLoss) -> Result<(), String> {
    let name = original.info().name.clone();
    let file = TextureFile::open(Arc::new(MemorySource::new(&name, out.to_vec())))
        .map_err(|e| format!("does not open: {e}"))?;
    // as stored: four significant digits
    let stored = TextureLoss::parse(&loss.to_value(), loss.level_error.len()).ok();
    match TextureLoss::from_info(file.info()) {
        Some(Ok(l)) if Some(&l) == stored.as_ref() => {}
        other => return Err(format!("does not carry the loss measured: {other:?}")),
    }
    for l in 0..original.info().levels.len() as u32 {
        let a = original.read_level(l).map_err(|e| e.to_string())?;
        let b = file.read_level(l).map_err(|e| format!("level {l}: {e}"))?;
        if a.data != b.data {
            return Err(format!("holds other bytes in level {l}"));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("ktx2.annotating");
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}
