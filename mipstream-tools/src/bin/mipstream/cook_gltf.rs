//! `mipstream cook-gltf`: a glTF scene into mesh LOD chains, KTX2 textures
//! and a scene file.

use crate::cook::CodecArg;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mipstream::cook::gltf::{cook_gltf, GltfCookOptions};
use mipstream::cook::Codec;
use mipstream::mesh::lod::LodOptions;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub(crate) struct CookGltfArgs {
    /// A .gltf or .glb file.
    input: PathBuf,
    /// The output folder (meshes/, textures/, scene.json).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Most LODs per mesh, the full mesh included.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=16))]
    lods: u32,
    /// Largest LOD error, as a fraction of each mesh's extent.
    #[arg(long, default_value_t = 0.1)]
    max_error: f32,
    /// Texture codec.
    #[arg(long, value_enum, default_value = "uastc")]
    codec: CodecArg,
    /// Texture quality 0-100.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    quality: u8,
    /// Do not weld copies of one point with the same attributes before
    /// simplifying (a mesh written with unshared vertices then cooks to
    /// one LOD).
    #[arg(long)]
    no_weld: bool,
}

pub(crate) fn run(args: CookGltfArgs) -> Result<(), String> {
    if !(args.max_error.is_finite() && args.max_error > 0.0 && args.max_error <= 1.0) {
        return Err("--max-error must be above 0 and at most 1".into());
    }
    let opts = GltfCookOptions {
        codec: match args.codec {
            CodecArg::Uastc => Codec::Uastc,
            CodecArg::Etc1s => Codec::Etc1s,
        },
        quality: args.quality,
        lods: LodOptions {
            max_lods: args.lods,
            max_error: args.max_error,
            ..LodOptions::default()
        },
        threads: 0,
        weld: !args.no_weld,
    };
    let bar = ProgressBar::new(1).with_style(
        ProgressStyle::with_template("{msg:>9} [{bar:30}] {pos}/{len} {elapsed}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let cooked = cook_gltf(&args.input, &args.output, &opts, |p| {
        if bar.message() != p.stage {
            bar.set_message(p.stage);
            bar.set_length(p.total as u64);
        }
        bar.set_position(p.done as u64);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    for w in &cooked.warnings {
        eprintln!("warning: {w}");
    }
    let s = &cooked.scene;
    println!(
        "{}: {} meshes, {} materials, {} instances -> {}",
        args.input.display(),
        s.meshes.len(),
        s.materials.len(),
        s.instances.len(),
        cooked.scene_path.display()
    );
    println!(
        "{:<40} {:>4} {:>7}  triangles per LOD (error in mesh units)",
        "mesh", "lods", "welded"
    );
    for m in &s.meshes {
        let chain: Vec<String> = m
            .triangles
            .iter()
            .zip(&m.errors)
            .map(|(t, e)| format!("{t} ({e:.2e})"))
            .collect();
        println!(
            "{:<40} {:>4} {:>7}  {}",
            m.name,
            m.triangles.len(),
            m.welded_vertices,
            chain.join(", ")
        );
    }
    for c in &s.cameras {
        let moved = match (&c.animation, c.keys.last()) {
            (Some(a), Some(k)) if c.keys.len() > 1 => {
                format!("moved by animation {a} over {:.2} s", k.time)
            }
            _ => "still".into(),
        };
        println!(
            "camera {}: {moved}, {:.0} degree vertical field of view",
            c.name,
            c.yfov.to_degrees()
        );
    }
    Ok(())
}
