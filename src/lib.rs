//! mipstream keeps a wgpu renderer's textures and meshes inside one GPU
//! memory budget by streaming them mip level by mip level and LOD by LOD.
//!
//! This crate is built in layers (see `ARCHITECTURE.md`):
//!
//! - [`source`]: byte ranges from files or memory, never whole files;
//! - [`container`]: KTX2 and `.basis` metadata, validated before anything sized
//!   by the file is allocated, and level reads of exactly one level's bytes;
//! - [`transcode`]: Basis Universal (ETC1S, UASTC) to BC7 / ASTC / ETC2 / RGBA8
//!   for the adapter at hand, with a lower-bit tier for memory pressure;
//! - [`worker`]: loader threads that read and transcode off the render thread;
//! - [`gpu`]: the only code that touches a `wgpu::Device`, uploading any range
//!   of mips `[k..n)` into a texture;
//! - [`decode`]: CPU decoding to RGBA8 for tools and tests;
//! - [`plan`] and [`streamer`]: the budget fit over every texture's mips and
//!   every mesh's LODs, and the [`Streamer`] that carries it out each frame;
//! - [`mesh`]: the `.msmesh` LOD container, and (feature `gltf`) LOD chains,
//!   cooked glTF scenes streamed (`mesh::scene`) and drawn by `render_mesh`;
//! - `cook` (feature `cook`): PNG/JPEG to KTX2 with a full mip chain, and
//!   (feature `gltf`) glTF scenes to LOD chains, textures and a scene file.
//!
//! # Example
//!
//! Open a KTX2 file, read only its smallest levels, and transcode them for an
//! adapter that supports BC compression:
//!
//! ```
//! use mipstream::{transcode, TextureClass, TextureFile};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/checker-uastc.ktx2");
//! let file = TextureFile::open_path(path)?;
//! let info = file.info();
//! println!("{}x{}, {} levels of {}", info.width, info.height, info.levels.len(), info.payload.name());
//!
//! let choice = transcode::choose_targets(info, TextureClass::Color, wgpu::Features::TEXTURE_COMPRESSION_BC)?;
//! let last = info.levels.len() as u32 - 1;
//! let raw = file.read_level(last)?; // reads this level's bytes and nothing else
//! let opts = transcode::TranscodeOptions::new(choice.full, choice.srgb);
//! let level = transcode::transcode_level(&file, &raw, &opts)?;
//! assert_eq!(level.format, wgpu::TextureFormat::Bc7RgbaUnormSrgb);
//! # Ok(())
//! # }
//! ```

mod blocks;
pub mod container;
#[cfg(feature = "cook")]
pub mod cook;
pub mod decode;
pub mod fault;
pub mod format;
pub mod gpu;
mod ids;
pub mod kinds;
pub mod loss;
pub mod mesh;
pub mod parallel;
pub mod plan;
#[cfg(feature = "scene-file")]
pub mod scene;
pub mod source;
pub mod streamer;
pub mod transcode;
pub mod worker;

/// The `glam` mipstream's public types (`View`, `ObjectDesc`) use.
pub use glam;
/// The `wgpu` mipstream is built with: use `mipstream::wgpu` to create the
/// device and queue you give the streamer, so the versions always match.
pub use wgpu;

pub use container::{OpenError, TextureFile, TextureInfo};
pub use format::TargetFormat;
pub use kinds::{TextureClass, Tier};
pub use plan::View;
pub use source::{ByteSource, FileHandles, FileSource, MemorySource};
pub use streamer::{
    Budget, MeshDesc, MeshId, ObjectDesc, ObjectId, Streamer, StreamerOptions, TextureDesc,
    TextureId,
};

/// Every Rust block of README.md and of the guide in `docs/`, compiled (and,
/// unless marked `no_run`, run) by `cargo test` as doctests, so the docs'
/// code cannot rot. `tests/layers.rs` checks that every page of `docs/` is
/// listed here.
#[cfg(doctest)]
mod doc_pages {
    #[doc = include_str!("../README.md")]
    struct Readme;
    #[doc = include_str!("../docs/budget.md")]
    struct Budget;
    #[doc = include_str!("../docs/cli.md")]
    struct Cli;
    #[doc = include_str!("../docs/embedding.md")]
    struct Embedding;
    #[doc = include_str!("../docs/error-model.md")]
    struct ErrorModel;
    #[doc = include_str!("../docs/feedback.md")]
    struct Feedback;
    #[doc = include_str!("../docs/gpu-check.md")]
    struct GpuCheck;
    #[doc = include_str!("../docs/limitations.md")]
    struct Limitations;
    #[doc = include_str!("../docs/meshes.md")]
    struct Meshes;
    #[doc = include_str!("../docs/performance.md")]
    struct Performance;
    #[doc = include_str!("../docs/reliability.md")]
    struct Reliability;
    #[doc = include_str!("../docs/results.md")]
    struct Results;
    #[doc = include_str!("../docs/viewer.md")]
    struct Viewer;
    #[doc = include_str!("../CONTRIBUTING.md")]
    struct Contributing;
}
