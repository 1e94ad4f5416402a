//! `mipstream cook-gltf`: a glTF 2.0 scene into streamable pieces.
//!
//! Every mesh primitive becomes a `.msmesh` LOD chain ([`crate::mesh::lod`]),
//! every material texture a KTX2 file cooked through the texture pipeline in
//! the colour space its slot needs (base colour and emissive sRGB; normal
//! maps as normal maps; metallic-roughness and occlusion linear; an image
//! used in two kinds of slot is cooked once per kind), and `scene.json`
//! ([`crate::mesh::scene_file`]) ties them together with the node transforms
//! and the default scene's cameras (`cameras.rs`: their world poses along the
//! animation that moves them).
//!
//! Images may be PNG or JPEG (files, buffer views or data URIs), or KTX2
//! through `KHR_texture_basisu` (copied as they are; the `gltf` crate has no
//! typed support, so the extension's JSON is read). Textures and meshes are
//! cooked on every core. Broken or unsupported input is a typed error naming
//! the file and the part; a panic inside the `gltf` crate on malformed input
//! is caught and reported as such.

mod attributes;
mod buffers;
mod cameras;
mod import;
mod scene;

use super::{cook_image, Codec, CookError, CookOptions};
use crate::mesh::container::write_mesh;
use crate::mesh::image_error::image_errors;
use crate::mesh::lod::{build_lod_chain, LodOptions};
use crate::mesh::scene_file::{SceneFile, SceneMesh};
use crate::mesh::LodData;
use crate::parallel;
use import::texture_image;
pub use import::{image_bytes, parse, read_primitives, PrimitiveGeometry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Extensions a file may mark required and still be cooked.
pub const SUPPORTED_REQUIRED: [&str; 5] = [
    "KHR_texture_basisu",
    "KHR_materials_emissive_strength",
    "KHR_mesh_quantization",
    "EXT_meshopt_compression",
    "KHR_texture_transform",
];

/// How to cook a glTF scene.
#[derive(Debug, Clone, PartialEq)]
pub struct GltfCookOptions {
    /// Texture codec. Default: UASTC.
    pub codec: Codec,
    /// Texture quality 0-100 (see [`CookOptions::quality`]). Default: 50.
    pub quality: u8,
    /// The LOD chains.
    pub lods: LodOptions,
    /// Threads (0: every core). Default: 0.
    pub threads: usize,
    /// Weld copies of one point with the same attributes before
    /// simplifying (a mesh written with unshared vertices per triangle
    /// cannot be simplified without). Default: true.
    pub weld: bool,
}

impl Default for GltfCookOptions {
    fn default() -> Self {
        Self {
            codec: Codec::Uastc,
            quality: 50,
            lods: LodOptions::default(),
            threads: 0,
            weld: true,
        }
    }
}

/// Why a glTF scene could not be cooked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GltfCookError {
    /// The file could not be read or parsed.
    #[error("{path}: {reason}")]
    Parse {
        /// The glTF file.
        path: String,
        /// What the reader said.
        reason: String,
    },
    /// The file requires an extension mipstream does not implement.
    #[error("{path}: requires the extension {extension}, which mipstream does not support (supported: {supported})", supported = SUPPORTED_REQUIRED.join(", "))]
    UnsupportedExtension {
        /// The glTF file.
        path: String,
        /// The extension.
        extension: String,
    },
    /// A buffer is missing or short.
    #[error("{path}: buffers: {reason}")]
    Buffers {
        /// The glTF file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A mesh primitive cannot be read.
    #[error("{path}: mesh {mesh} primitive {primitive}: {reason}")]
    Primitive {
        /// The glTF file.
        path: String,
        /// Mesh name or index.
        mesh: String,
        /// Primitive index.
        primitive: usize,
        /// What is wrong.
        reason: String,
    },
    /// An image cannot be read.
    #[error("{path}: image {image}: {reason}")]
    Image {
        /// The glTF file.
        path: String,
        /// Image name or index.
        image: String,
        /// What is wrong.
        reason: String,
    },
    /// Cooking a texture failed.
    #[error(transparent)]
    Cook(#[from] CookError),
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Output {
        /// The file or folder.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What was cooked.
#[derive(Debug, Clone)]
pub struct CookedGltf {
    /// The scene file's path.
    pub scene_path: PathBuf,
    /// Its contents.
    pub scene: SceneFile,
    /// Things skipped or generated (non-triangle primitives, missing normals...).
    pub warnings: Vec<String>,
}

/// Progress of a cook: stage, done, total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GltfProgress {
    /// `"meshes"` or `"textures"`.
    pub stage: &'static str,
    /// Items done.
    pub done: usize,
    /// Items in the stage.
    pub total: usize,
}

/// Colour space and kind a texture slot needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Srgb,
    Linear,
    Normal,
}

impl Kind {
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Kind::Srgb => "srgb",
            Kind::Linear => "linear",
            Kind::Normal => "normal",
        }
    }
}

/// Cooks `input` (`.gltf` or `.glb`) into `out_dir`: `meshes/`, `textures/`
/// and `scene.json`.
pub fn cook_gltf(
    input: &Path,
    out_dir: &Path,
    opts: &GltfCookOptions,
    mut progress: impl FnMut(GltfProgress),
) -> Result<CookedGltf, GltfCookError> {
    let name = input.display().to_string();
    let bytes = std::fs::read(input).map_err(|e| GltfCookError::Parse {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    let base = input.parent().unwrap_or(Path::new("."));
    let (document, buffers) = parse(&name, &bytes, Some(base))?;
    let mut warnings = Vec::new();
    let mut primitives = read_primitives(&name, &document, &buffers, &mut warnings)?;
    if opts.weld {
        for (_, _, p) in &mut primitives {
            p.weld();
        }
    }
    for sub in ["meshes", "textures"] {
        let d = out_dir.join(sub);
        std::fs::create_dir_all(&d).map_err(output(&d))?;
    }
    let textures = Textures::of(&name, &document)?;
    warnings.extend(textures.cook(out_dir, &buffers, base, opts, &mut progress)?);
    let chains = lod_chains(&primitives, opts, &mut progress);
    let mut materials = scene::materials(&document, &textures);
    let default_material = materials.len();
    if primitives.iter().any(|(_, _, p)| p.material.is_none()) {
        materials.push(scene::default_material());
    }
    let mut meshes = Vec::with_capacity(primitives.len());
    for (k, ((_, _, p), lods)) in primitives.iter().zip(chains).enumerate() {
        let file = PathBuf::from("meshes").join(format!("{k:03}-{}.msmesh", sanitize(&p.name)));
        let out = out_dir.join(&file);
        std::fs::write(&out, write_mesh(&lods, p.attributes)).map_err(output(&out))?;
        meshes.push(SceneMesh {
            name: p.name.clone(),
            file,
            material: p.material.unwrap_or(default_material),
            triangles: lods.iter().map(|l| l.indices.len() as u32 / 3).collect(),
            errors: lods.iter().map(|l| l.error).collect(),
            welded_vertices: p.welded,
        });
    }
    let (instances, bounds) = scene::instances(&document, &primitives, &mut warnings);
    let cameras = cameras::cameras(&document, &buffers, &mut warnings);
    let scene = SceneFile {
        format: crate::mesh::scene_file::FORMAT.into(),
        version: crate::mesh::scene_file::VERSION,
        source: input
            .file_name()
            .map_or(name.clone(), |f| f.to_string_lossy().into_owned()),
        meshes,
        materials,
        instances,
        bounds,
        cameras,
    };
    let scene_path = out_dir.join("scene.json");
    scene.save(&scene_path).map_err(|e| GltfCookError::Output {
        path: scene_path.display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(CookedGltf {
        scene_path,
        scene,
        warnings,
    })
}

/// The error of writing `path`.
fn output(path: &Path) -> impl FnOnce(std::io::Error) -> GltfCookError {
    let path = path.display().to_string();
    move |source| GltfCookError::Output { path, source }
}

/// The material textures to cook: each (image, kind) once, with the encoded
/// image bytes and the file each becomes.
pub(super) struct Textures<'a> {
    name: String,
    images: Vec<gltf::Image<'a>>,
    /// (image, kind), sorted.
    jobs: Vec<(usize, Kind)>,
}

impl<'a> Textures<'a> {
    /// The (image, kind) pairs the materials use.
    fn of(name: &str, document: &'a gltf::Document) -> Result<Self, GltfCookError> {
        let mut wanted: BTreeMap<(usize, Kind), ()> = BTreeMap::new();
        let slot = |t: Option<gltf::Texture<'_>>| t.and_then(|t| texture_image(&t));
        for m in document.materials() {
            let pbr = m.pbr_metallic_roughness();
            for (img, kind) in [
                (
                    slot(pbr.base_color_texture().map(|t| t.texture())),
                    Kind::Srgb,
                ),
                (slot(m.emissive_texture().map(|t| t.texture())), Kind::Srgb),
                (slot(m.normal_texture().map(|t| t.texture())), Kind::Normal),
                (
                    slot(pbr.metallic_roughness_texture().map(|t| t.texture())),
                    Kind::Linear,
                ),
                (
                    slot(m.occlusion_texture().map(|t| t.texture())),
                    Kind::Linear,
                ),
            ] {
                if let Some(i) = img {
                    wanted.insert((i, kind), ());
                }
            }
        }
        let images: Vec<gltf::Image<'_>> = document.images().collect();
        let jobs: Vec<(usize, Kind)> = wanted.into_keys().collect();
        if let Some(&(i, _)) = jobs.iter().find(|(i, _)| *i >= images.len()) {
            return Err(GltfCookError::Image {
                path: name.to_owned(),
                image: format!("#{i}"),
                reason: "a texture refers to an image that does not exist".into(),
            });
        }
        Ok(Self {
            name: name.to_owned(),
            images,
            jobs,
        })
    }

    /// The file, relative to the output folder, of image `i` cooked as `kind`.
    pub(super) fn file(&self, i: usize, kind: Kind) -> PathBuf {
        let stem = self.images[i]
            .name()
            .map(sanitize)
            .unwrap_or_else(|| format!("image{i}"));
        PathBuf::from("textures").join(format!("{i:03}-{stem}-{}.ktx2", kind.suffix()))
    }

    /// Cooks every texture into `out_dir` on every core.
    fn cook(
        &self,
        out_dir: &Path,
        buffers: &[gltf::buffer::Data],
        base: &Path,
        opts: &GltfCookOptions,
        progress: &mut impl FnMut(GltfProgress),
    ) -> Result<Vec<String>, GltfCookError> {
        let encoded = self
            .jobs
            .iter()
            .map(|&(i, _)| image_bytes(&self.name, &self.images[i], base, buffers))
            .collect::<Result<Vec<_>, _>>()?;
        let total = self.jobs.len();
        progress(GltfProgress {
            stage: "textures",
            done: 0,
            total,
        });
        let mut done = 0;
        let mut notes = Vec::new();
        parallel::for_each(
            &self.jobs,
            opts.threads,
            |k, &(i, kind)| {
                let out = out_dir.join(self.file(i, kind));
                cook_texture(&self.name, i, kind, &encoded[k], opts).and_then(|(ktx2, note)| {
                    std::fs::write(&out, ktx2).map_err(output(&out))?;
                    Ok(note)
                })
            },
            |_, r| {
                notes.extend(r?);
                done += 1;
                progress(GltfProgress {
                    stage: "textures",
                    done,
                    total,
                });
                Ok::<(), GltfCookError>(())
            },
        )?;
        Ok(notes)
    }
}

/// Every primitive's LOD chain with each LOD's measured image error
/// (`mesh::image_error`), built on every core.
fn lod_chains(
    primitives: &[(usize, usize, PrimitiveGeometry)],
    opts: &GltfCookOptions,
    progress: &mut impl FnMut(GltfProgress),
) -> Vec<Vec<LodData>> {
    let total = primitives.len();
    progress(GltfProgress {
        stage: "meshes",
        done: 0,
        total,
    });
    let mut chains: Vec<Vec<LodData>> = vec![Vec::new(); total];
    let mut done = 0;
    let built: Result<(), std::convert::Infallible> = parallel::for_each(
        primitives,
        opts.threads,
        |_, (_, _, p)| {
            let mut lods = build_lod_chain(&p.vertices, &p.indices, &opts.lods);
            let errors = image_errors(&lods);
            for (l, e) in lods.iter_mut().zip(errors) {
                l.image_error = Some(e);
            }
            lods
        },
        |k, lods| {
            chains[k] = lods;
            done += 1;
            progress(GltfProgress {
                stage: "meshes",
                done,
                total,
            });
            Ok(())
        },
    );
    let Ok(()) = built;
    chains
}

fn sanitize(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if s.is_empty() {
        "unnamed".into()
    } else {
        s
    }
}

/// One texture: PNG/JPEG cooked for its kind; a KTX2 kept as it is (with
/// its measured loss added), unless it cannot stream: a single level, or
/// uncompressed texels, are decoded and cooked again into a mip chain of
/// Basis levels (the note says so).
fn cook_texture(
    name: &str,
    image: usize,
    kind: Kind,
    bytes: &[u8],
    opts: &GltfCookOptions,
) -> Result<(Vec<u8>, Option<String>), GltfCookError> {
    let label = format!("{name} image #{image}");
    let image_err = |reason: String| GltfCookError::Image {
        path: name.to_owned(),
        image: format!("#{image}"),
        reason,
    };
    let cook = CookOptions {
        codec: opts.codec,
        linear: kind != Kind::Srgb,
        normal_map: kind == Kind::Normal,
        quality: opts.quality,
        threads: 1,
        ..CookOptions::default()
    };
    if bytes.starts_with(&crate::container::KTX2_MAGIC) {
        let file = crate::container::TextureFile::open(std::sync::Arc::new(
            crate::source::MemorySource::new(&label, bytes.to_vec()),
        ))
        .map_err(|e| image_err(format!("a KTX2 image that does not open: {e}")))?;
        let info = file.info();
        let uncompressed = match info.payload {
            crate::container::Payload::Plain(f) => f.block_width == 1 && f.block_height == 1,
            _ => false,
        };
        let flat = info.faces == 1 && info.layers == 1;
        if (info.levels.len() == 1 || uncompressed)
            && flat
            && crate::cook::measure::can_measure(&file)
        {
            let level = file.read_level(0).map_err(|e| image_err(e.to_string()))?;
            let rgba = crate::decode::decode_rgba8(&file, &level, 0)
                .map_err(|e| image_err(e.to_string()))?;
            let img = image::RgbaImage::from_raw(rgba.width, rgba.height, rgba.pixels)
                .ok_or_else(|| image_err("decoded to the wrong size".into()))?;
            let ktx2 = cook_image(&label, &img, &cook)?;
            let note = format!(
                "image #{image}: a KTX2 of {} ({} level{}{}): cooked again into a streamable chain of {} levels",
                info.payload.name(),
                info.levels.len(),
                if info.levels.len() == 1 { "" } else { "s" },
                if uncompressed { ", uncompressed" } else { "" },
                32 - rgba.width.max(rgba.height).max(1).leading_zeros(),
            );
            return Ok((ktx2, Some(note)));
        }
        // kept as it is, with its measured loss added where it can be
        // measured (a format with no CPU decoder stays geometric)
        return Ok((
            crate::cook::with_measured_loss(&label, bytes.to_vec())
                .unwrap_or_else(|_| bytes.to_vec()),
            None,
        ));
    }
    let decoded = image::load_from_memory(bytes)
        .map_err(|e| image_err(format!("not a PNG, JPEG or KTX2 image: {e}")))?;
    Ok((cook_image(&label, &decoded.to_rgba8(), &cook)?, None))
}
