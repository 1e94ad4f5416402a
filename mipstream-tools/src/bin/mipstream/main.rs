//! `mipstream`: inspect, decode and cook streamable textures; benchmark
//! streaming strategies.
//!
//! Every failure prints one line starting with `error:` on stderr and exits
//! with status 1; success exits 0.

mod info;

mod annotate;

mod cook;

#[cfg(feature = "gltf")]
mod cook_gltf;

#[cfg(feature = "bench")]
mod bench;

#[cfg(feature = "bench")]
mod certify;
#[cfg(feature = "bench")]
mod frame;

#[cfg(feature = "bench")]
mod gpu_check;

#[cfg(feature = "bench")]
mod soak;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Streamable GPU textures: inspect, decode and cook KTX2 / .basis files.
#[derive(Debug, Parser)]
#[command(name = "mipstream", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a texture's format, size, levels with byte ranges, and DFD (or
    /// a cooked mesh's LOD table).
    Info {
        /// A .ktx2, .basis or .msmesh file.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Decode one level (layer 0, face 0 unless given) to an RGBA8 PNG.
    Decode {
        /// A .ktx2 or .basis file.
        file: PathBuf,
        /// The mip level (0 is the largest).
        #[arg(long, default_value_t = 0)]
        level: u32,
        /// The array layer.
        #[arg(long, default_value_t = 0)]
        layer: u32,
        /// The cubemap face (0-5).
        #[arg(long, default_value_t = 0)]
        face: u32,
        /// Where to write the PNG.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Encode PNG/JPEG images to KTX2 (Basis Universal) with a full mip chain.
    Cook(cook::CookArgs),
    /// Measure the loss per mip level and tier of KTX2 files mipstream did
    /// not cook and store it in them, so the planner spends budget by
    /// measured error (files cooked by mipstream carry it already).
    Annotate(annotate::AnnotateArgs),
    /// Cook a glTF 2.0 scene: a LOD chain per mesh primitive (meshoptimizer),
    /// KTX2 material textures, and a scene file.
    #[cfg(feature = "gltf")]
    CookGltf(cook_gltf::CookGltfArgs),
    /// Stream a scene along its camera path with mipstream and the strategies
    /// engines use (full, uniform bias, distance only): memory, uploads,
    /// update time and picture quality side by side.
    #[cfg(feature = "bench")]
    Bench(Box<bench::BenchArgs>),
    /// Time the planner alone (no GPU) on a synthetic scene.
    #[cfg(feature = "bench")]
    BenchPlanner(bench::BenchPlannerArgs),
    /// Time the whole `Streamer::update` at scale on a headless adapter
    /// (10k textures, 100k objects by default), the plan's share apart, at
    /// several upload caps.
    #[cfg(feature = "bench")]
    BenchUpdate(bench::BenchUpdateArgs),
    /// Time what uploads cost `update` on the render thread: camera jumps
    /// that each load a burst, at several upload caps, with the texels
    /// staged by `update` and by the loader threads.
    #[cfg(feature = "bench")]
    BenchUploads(bench::BenchUploadsArgs),
    /// Time what streaming and budget cuts cost an engine's render loop:
    /// `update()` beside the engine's own GPU frame, streaming on against
    /// frozen, and wgpu's count of the memory at every moment.
    #[cfg(feature = "bench")]
    BenchFrame(frame::BenchFrameArgs),
    /// Solve the plans `mipstream bench --dump-plans DIR` wrote, exactly:
    /// per frame the plan's error, the certificate's LP value, the integer
    /// optimum, and how far the plan and the reported gap are from them.
    #[cfg(feature = "bench")]
    Certify(certify::CertifyArgs),
    /// The proof on a GPU: adapter and formats, the soak, memory four ways
    /// (books, wgpu, allocator, driver), Budget::Auto under a second
    /// allocation, the render loop's frame time and the benchmark, as JSON
    /// and markdown (`.ci/gpu-check` runs it from a bundle).
    #[cfg(feature = "bench")]
    GpuCheck(gpu_check::GpuCheckArgs),
    /// Time transcoding per source/target pair on one core: what mipstream
    /// ships against Basis Universal 1.16's C++ transcoder, and their ratio.
    #[cfg(feature = "bench")]
    BenchTranscode(bench::BenchTranscodeArgs),
    /// Abuse a streamer for many frames (random cameras, budgets, objects and
    /// injected faults), checking its invariants every frame; exits 0 only
    /// when nothing broke, went over budget, panicked or leaked.
    #[cfg(feature = "bench")]
    Soak(soak::SoakArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { file, json } => info::run(&file, json),
        Command::Decode {
            file,
            level,
            layer,
            face,
            output,
        } => decode(&file, level, layer, face, &output),
        Command::Cook(args) => cook::run(args),
        Command::Annotate(args) => annotate::run(args),
        #[cfg(feature = "gltf")]
        Command::CookGltf(args) => cook_gltf::run(args),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::run(*args),
        #[cfg(feature = "bench")]
        Command::BenchPlanner(args) => bench::run_planner(args),
        #[cfg(feature = "bench")]
        Command::BenchUpdate(args) => bench::run_update(args),
        #[cfg(feature = "bench")]
        Command::BenchUploads(args) => bench::run_uploads(args),
        #[cfg(feature = "bench")]
        Command::BenchFrame(args) => frame::run(args),
        #[cfg(feature = "bench")]
        Command::Certify(args) => certify::run(args),
        #[cfg(feature = "bench")]
        Command::GpuCheck(args) => gpu_check::run(args),
        #[cfg(feature = "bench")]
        Command::BenchTranscode(args) => bench::run_transcode(args),
        #[cfg(feature = "bench")]
        Command::Soak(args) => soak::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // one line: newlines inside messages would break scripts that grep `error:`
            eprintln!("error: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

/// `mipstream decode`.
fn decode(
    file: &PathBuf,
    level: u32,
    layer: u32,
    face: u32,
    output: &PathBuf,
) -> Result<(), String> {
    let tex = mipstream::TextureFile::open_path(file).map_err(|e| e.to_string())?;
    let info = tex.info();
    if layer >= info.layers || face >= info.faces {
        return Err(format!(
            "{}: layer {layer} face {face} requested but the texture has {} layer(s) and {} face(s)",
            info.name, info.layers, info.faces
        ));
    }
    let raw = tex.read_level(level).map_err(|e| e.to_string())?;
    let image = layer * info.faces + face;
    let rgba = mipstream::decode::decode_rgba8(&tex, &raw, image).map_err(|e| e.to_string())?;
    image::save_buffer(
        output,
        &rgba.pixels,
        rgba.width,
        rgba.height,
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| format!("{}: {e}", output.display()))?;
    println!(
        "{}: level {level} ({}x{}) -> {}",
        info.name,
        rgba.width,
        rgba.height,
        output.display()
    );
    Ok(())
}
