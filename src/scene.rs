//! A cooked scene's files read before any of it registers (feature
//! `scene-file`): the `scene.json` that `mipstream cook-gltf` writes
//! ([`SceneFile`]), each mesh's coarsest LOD ([`PreparedMesh`]) and each
//! texture's tail ([`PreparedTexture`]), on every core
//! ([`crate::parallel`]), so that registering a scene on the render thread
//! only creates. The demo's glTF renderer and the Bevy plugin both read
//! scenes through [`read`]; what they register and draw is theirs.
//!
//! ```no_run
//! use mipstream::scene::{self, MaterialSlot};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let g = mipstream::gpu::headless(None)?;
//! let mut streamer = mipstream::Streamer::new(&g.device, &g.queue);
//! let path = std::path::Path::new("cooked/helmet/scene.json");
//! let file = scene::SceneFile::load(path)?;
//! let dir = path.parent().unwrap();
//! let textures = scene::textures(&file, &MaterialSlot::ALL);
//! let read = scene::read(&file, dir, &textures, &streamer.preparer(), scene::SceneTexture::desc);
//! for mesh in read.meshes {
//!     let mesh = mesh?;
//!     let _units_per_uv = mesh.units_per_uv; // for the objects' texture bindings
//!     streamer.register_prepared_mesh(mesh.prepared)?;
//! }
//! for (_texture, prepared) in read.textures {
//!     streamer.register_prepared(prepared?)?;
//! }
//! # Ok(())
//! # }
//! ```

use crate::container::{OpenError, TextureFile};
use crate::kinds::TextureClass;
pub use crate::mesh::scene_file::{SceneFile, SceneFileError, SceneMaterial, SceneMesh};
use crate::mesh::{MeshError, MeshFile};
use crate::streamer::{
    MeshDesc, MeshRegisterError, PreparedMesh, PreparedTexture, StreamerError, TextureDesc,
    TexturePreparer,
};
use std::path::{Path, PathBuf};

/// A material's texture slots, as glTF's metallic-roughness model has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MaterialSlot {
    /// Base colour (sRGB).
    BaseColor,
    /// Tangent-space normal map.
    Normal,
    /// Metallic (blue) and roughness (green).
    MetallicRoughness,
    /// Ambient occlusion (red).
    Occlusion,
    /// Emissive colour (sRGB).
    Emissive,
}

impl MaterialSlot {
    /// Every slot, in the order [`textures`] visits them in a material.
    pub const ALL: [MaterialSlot; 5] = [
        MaterialSlot::BaseColor,
        MaterialSlot::Normal,
        MaterialSlot::MetallicRoughness,
        MaterialSlot::Occlusion,
        MaterialSlot::Emissive,
    ];

    /// The texture class its images stream as.
    pub fn class(self) -> TextureClass {
        match self {
            MaterialSlot::BaseColor | MaterialSlot::Emissive => TextureClass::Color,
            MaterialSlot::Normal => TextureClass::Normal,
            MaterialSlot::MetallicRoughness | MaterialSlot::Occlusion => TextureClass::Data,
        }
    }

    /// The file a material has in this slot (relative to the scene's folder).
    pub fn file(self, m: &SceneMaterial) -> Option<&PathBuf> {
        match self {
            MaterialSlot::BaseColor => m.base_color.as_ref(),
            MaterialSlot::Normal => m.normal.as_ref(),
            MaterialSlot::MetallicRoughness => m.metallic_roughness.as_ref(),
            MaterialSlot::Occlusion => m.occlusion.as_ref(),
            MaterialSlot::Emissive => m.emissive.as_ref(),
        }
    }
}

/// One texture of a scene: a file (relative to the scene's folder) in a
/// class. Materials sharing a file in the same class share it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SceneTexture {
    /// The file, relative to the folder of `scene.json`.
    pub file: PathBuf,
    /// How it streams.
    pub class: TextureClass,
}

impl SceneTexture {
    /// The plain descriptor of it: `file` in its class, nothing else (pass
    /// your own function to [`read`] for labels, priorities or a normal
    /// map's channel layout).
    pub fn desc(file: TextureFile, texture: &SceneTexture) -> TextureDesc {
        TextureDesc::new(file).with_class(texture.class)
    }
}

/// Why part of a scene could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SceneReadError {
    /// `scene.json` is missing or malformed.
    #[error(transparent)]
    Scene(#[from] SceneFileError),
    /// A mesh file is missing or malformed.
    #[error("{path}: {source}")]
    Mesh {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: MeshError,
    },
    /// A texture file is missing or malformed.
    #[error("{path}: {source}")]
    Texture {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: OpenError,
    },
    /// The streamer refused to prepare it (a tail that does not transcode,
    /// out of memory).
    #[error("{what}: {source}")]
    Streamer {
        /// The mesh or texture.
        what: String,
        /// The error.
        #[source]
        source: Box<StreamerError>,
    },
}

/// A scene mesh, read: its coarsest LOD, and the mesh units one UV unit
/// spans on it (`None` without UV area), which a texture binding of an
/// object showing it asks for (times the instance's scale).
#[derive(Debug)]
pub struct ReadMesh {
    /// The coarsest LOD, ready for [`crate::streamer::Streamer::register_prepared_mesh`].
    pub prepared: PreparedMesh,
    /// Mesh units per UV unit over the coarsest LOD.
    pub units_per_uv: Option<f32>,
}

/// What [`read`] read: every mesh in the scene's order, every texture in
/// the order it was asked for. Each part is its own result, so a caller
/// decides whether one broken file stops the scene.
#[derive(Debug)]
pub struct SceneRead {
    /// One per [`SceneFile::meshes`].
    pub meshes: Vec<Result<ReadMesh, SceneReadError>>,
    /// One per texture asked for.
    pub textures: Vec<(SceneTexture, Result<PreparedTexture, SceneReadError>)>,
}

/// The textures `slots` of the scene's materials use, each (file, class)
/// once, in the order the materials name them (slot order within one).
pub fn textures(file: &SceneFile, slots: &[MaterialSlot]) -> Vec<SceneTexture> {
    let mut out: Vec<SceneTexture> = Vec::new();
    for m in &file.materials {
        for &slot in slots {
            if let Some(f) = slot.file(m) {
                let t = SceneTexture {
                    file: f.clone(),
                    class: slot.class(),
                };
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// Reads the coarsest LOD of mesh `k` of `file` (its file in `dir`).
pub fn prepare_mesh(file: &SceneFile, dir: &Path, k: usize) -> Result<ReadMesh, SceneReadError> {
    let m = &file.meshes[k];
    let path = dir.join(&m.file);
    let f = MeshFile::open_path(&path).map_err(|source| SceneReadError::Mesh {
        path: path.clone(),
        source,
    })?;
    let prepared = PreparedMesh::prepare(MeshDesc::new(f).with_label(m.name.clone())).map_err(
        |e| match e {
            MeshRegisterError::Base { source, .. } => SceneReadError::Mesh { path, source },
            e => SceneReadError::Streamer {
                what: m.name.clone(),
                source: Box::new(e.into()),
            },
        },
    )?;
    let units_per_uv = prepared.coarsest().units_per_uv();
    Ok(ReadMesh {
        prepared,
        units_per_uv,
    })
}

/// Opens `texture` (in `dir`) and reads its tail with `preparer`, described
/// by `desc`.
pub fn prepare_texture(
    dir: &Path,
    texture: &SceneTexture,
    preparer: &TexturePreparer,
    desc: impl Fn(TextureFile, &SceneTexture) -> TextureDesc,
) -> Result<PreparedTexture, SceneReadError> {
    let path = dir.join(&texture.file);
    let opened = TextureFile::open_path(&path).map_err(|source| SceneReadError::Texture {
        path: path.clone(),
        source,
    })?;
    preparer
        .prepare(desc(opened, texture))
        .map_err(|source| SceneReadError::Streamer {
            what: texture.file.display().to_string(),
            source: Box::new(source.into()),
        })
}

/// Reads every mesh of `file` and every texture of `textures` (files in
/// `dir`) on every core, each texture described by `desc` (for example
/// [`SceneTexture::desc`]). Nothing registers: hand the results to the
/// streamer in the order you want their ids.
pub fn read(
    file: &SceneFile,
    dir: &Path,
    textures: &[SceneTexture],
    preparer: &TexturePreparer,
    desc: impl Fn(TextureFile, &SceneTexture) -> TextureDesc + Sync,
) -> SceneRead {
    enum Done {
        Mesh(Result<ReadMesh, SceneReadError>),
        Texture(Result<PreparedTexture, SceneReadError>),
    }
    let n = file.meshes.len();
    let jobs: Vec<usize> = (0..n + textures.len()).collect();
    let mut done: Vec<Option<Done>> = jobs.iter().map(|_| None).collect();
    let all: Result<(), std::convert::Infallible> = crate::parallel::for_each(
        &jobs,
        0,
        |_, &k| match k.checked_sub(n) {
            None => Done::Mesh(prepare_mesh(file, dir, k)),
            Some(t) => Done::Texture(prepare_texture(dir, &textures[t], preparer, &desc)),
        },
        |k, r| {
            done[k] = Some(r);
            Ok(())
        },
    );
    let Ok(()) = all;
    let mut done = done.into_iter().map(|d| d.expect("every job ran"));
    let meshes = done
        .by_ref()
        .take(n)
        .map(|d| match d {
            Done::Mesh(r) => r,
            Done::Texture(_) => unreachable!("meshes come first"),
        })
        .collect();
    let textures = textures
        .iter()
        .cloned()
        .zip(done.map(|d| match d {
            Done::Texture(r) => r,
            Done::Mesh(_) => unreachable!("textures come last"),
        }))
        .collect();
    SceneRead { meshes, textures }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{MeshLod, Vertex};

    fn vertex(position: [f32; 3], uv: [f32; 2]) -> Vertex {
        Vertex {
            position,
            normal: [0.0, 1.0, 0.0],
            uv,
            tangent: [1.0, 0.0, 0.0, 1.0],
        }
    }

    #[test]
    fn a_quad_spans_its_size_per_uv_unit_and_no_uvs_give_none() {
        // a 4 x 4 quad mapped onto the unit UV square: 4 units per UV unit
        let lod = MeshLod {
            lod: 0,
            vertices: vec![
                vertex([0.0, 0.0, 0.0], [0.0, 0.0]),
                vertex([4.0, 0.0, 0.0], [1.0, 0.0]),
                vertex([4.0, 0.0, 4.0], [1.0, 1.0]),
                vertex([0.0, 0.0, 4.0], [0.0, 1.0]),
            ],
            indices: vec![0, 1, 2, 0, 2, 3],
        };
        assert!((lod.units_per_uv().unwrap() - 4.0).abs() < 1e-6);
        // the texture tiled twice over the same quad: 2 units per UV unit
        let mut tiled = lod.clone();
        tiled
            .vertices
            .iter_mut()
            .for_each(|v| v.uv = v.uv.map(|c| c * 2.0));
        assert!((tiled.units_per_uv().unwrap() - 2.0).abs() < 1e-6);
        let mut flat = lod.clone();
        flat.vertices.iter_mut().for_each(|v| v.uv = [0.5, 0.5]);
        assert_eq!(flat.units_per_uv(), None);
        // an index past the vertices is skipped, not a panic
        let mut bad = lod;
        bad.indices.extend([0, 1, 9]);
        assert!((bad.units_per_uv().unwrap() - 4.0).abs() < 1e-6);
    }

    #[test]
    fn textures_are_listed_once_per_file_and_class_in_material_order() {
        let material = |base: &str, normal: &str, orm: Option<&str>| SceneMaterial {
            name: base.into(),
            base_color: Some(base.into()),
            base_color_factor: [1.0; 4],
            normal: Some(normal.into()),
            normal_scale: 1.0,
            metallic_roughness: orm.map(PathBuf::from),
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            occlusion: orm.map(PathBuf::from),
            emissive: None,
            emissive_factor: [0.0; 3],
            alpha_mode: "OPAQUE".into(),
            alpha_cutoff: 0.5,
            double_sided: false,
        };
        let file = SceneFile {
            format: crate::mesh::scene_file::FORMAT.into(),
            version: crate::mesh::scene_file::VERSION,
            source: "test".into(),
            meshes: Vec::new(),
            materials: vec![
                material("a.ktx2", "n.ktx2", Some("orm.ktx2")),
                material("b.ktx2", "n.ktx2", None),
            ],
            instances: Vec::new(),
            bounds: [[0.0; 3]; 2],
            cameras: Vec::new(),
        };
        let t = |f: &str, class| SceneTexture {
            file: f.into(),
            class,
        };
        assert_eq!(
            textures(&file, &MaterialSlot::ALL),
            [
                t("a.ktx2", TextureClass::Color),
                t("n.ktx2", TextureClass::Normal),
                t("orm.ktx2", TextureClass::Data),
                t("b.ktx2", TextureClass::Color),
            ]
        );
        let drawn = [MaterialSlot::BaseColor, MaterialSlot::Normal];
        assert_eq!(textures(&file, &drawn).len(), 3);
    }
}
