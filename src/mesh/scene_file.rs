//! The scene file `mipstream cook-gltf` writes (`scene.json`): meshes (one
//! `.msmesh` per glTF primitive, with its LOD triangle counts and errors),
//! materials (KTX2 textures per slot and the glTF factors) and instances
//! (a mesh and its world transform), and the cameras of the glTF's default
//! scene (their world poses, sampled along the animation that moves them).
//! Paths are relative to the file.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The identifier in `format`.
pub const FORMAT: &str = "mipstream-scene";
/// The version this reader reads.
pub const VERSION: u32 = 1;

/// A cooked scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The glTF it was cooked from.
    pub source: String,
    /// One per glTF mesh primitive.
    pub meshes: Vec<SceneMesh>,
    /// The glTF materials (plus a default one at the end when a primitive
    /// has none).
    pub materials: Vec<SceneMaterial>,
    /// Mesh instances in the default scene.
    pub instances: Vec<SceneInstance>,
    /// Bounds of every instance, world units: min, max.
    pub bounds: [[f32; 3]; 2],
    /// The default scene's perspective cameras (none in files from before
    /// cameras were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cameras: Vec<SceneCamera>,
}

/// A glTF camera node of the default scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneCamera {
    /// The node's name (`#index` without one).
    pub name: String,
    /// Vertical field of view, radians.
    pub yfov: f32,
    /// Near plane, world units.
    pub znear: f32,
    /// Far plane, world units (none: infinite).
    pub zfar: Option<f32>,
    /// The animation that moves it (its name, or `#index`), if one does.
    pub animation: Option<String>,
    /// Its world pose: one key for a still camera; for an animated one,
    /// keys at even steps over the animation (seconds from its first key,
    /// ascending).
    pub keys: Vec<CameraKey>,
}

/// A camera's world pose at a time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CameraKey {
    /// Seconds from the animation's start (0 for a still camera).
    pub time: f32,
    /// The eye.
    pub eye: [f32; 3],
    /// Where it looks (unit length; the node's -Z).
    pub forward: [f32; 3],
    /// Its up (unit length; the node's +Y).
    pub up: [f32; 3],
}

/// A mesh primitive's LOD chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneMesh {
    /// glTF mesh name and primitive index.
    pub name: String,
    /// The `.msmesh` file.
    pub file: PathBuf,
    /// Index into `materials`.
    pub material: usize,
    /// Triangles per LOD, finest first.
    pub triangles: Vec<u32>,
    /// Geometric error per LOD, mesh units.
    pub errors: Vec<f32>,
    /// Vertices the cooker's weld merged before simplifying (copies of one
    /// point with the same attributes; 0 in files from before the weld).
    #[serde(default)]
    pub welded_vertices: usize,
}

/// A material: textures (KTX2 files) and factors as glTF defines them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneMaterial {
    /// The glTF name.
    pub name: String,
    /// Base colour texture (sRGB).
    pub base_color: Option<PathBuf>,
    /// Base colour factor, linear RGBA.
    pub base_color_factor: [f32; 4],
    /// Tangent-space normal map.
    pub normal: Option<PathBuf>,
    /// Normal scale.
    pub normal_scale: f32,
    /// Metallic (B) and roughness (G), linear.
    pub metallic_roughness: Option<PathBuf>,
    /// Metallic factor.
    pub metallic_factor: f32,
    /// Roughness factor.
    pub roughness_factor: f32,
    /// Ambient occlusion (R), linear.
    pub occlusion: Option<PathBuf>,
    /// Emissive colour texture (sRGB).
    pub emissive: Option<PathBuf>,
    /// Emissive factor, linear RGB.
    pub emissive_factor: [f32; 3],
    /// `OPAQUE`, `MASK` or `BLEND`.
    pub alpha_mode: String,
    /// Alpha cutoff for `MASK`.
    pub alpha_cutoff: f32,
    /// Whether back faces are drawn.
    pub double_sided: bool,
}

/// A mesh placed in the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneInstance {
    /// Index into `meshes`.
    pub mesh: usize,
    /// The glTF node's name.
    pub node: String,
    /// World transform, column-major 4x4.
    pub transform: [f32; 16],
}

/// Why a scene file cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SceneFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Not valid JSON for a scene file.
    #[error("{path}: not a mipstream scene file: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl SceneFile {
    /// Reads and checks a scene file: format, version, and every index
    /// (instance to mesh, mesh to material) in range.
    pub fn load(path: &Path) -> Result<Self, SceneFileError> {
        let name = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| SceneFileError::Io {
            path: name.clone(),
            source,
        })?;
        let invalid = |reason: String| SceneFileError::Invalid {
            path: name.clone(),
            reason,
        };
        let scene: SceneFile = serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
        if scene.format != FORMAT || scene.version != VERSION {
            return Err(invalid(format!(
                "format {} version {}; expected {FORMAT} version {VERSION}",
                scene.format, scene.version
            )));
        }
        if let Some(m) = scene
            .meshes
            .iter()
            .find(|m| m.material >= scene.materials.len())
        {
            return Err(invalid(format!(
                "mesh {} has material {}",
                m.name, m.material
            )));
        }
        if let Some(i) = scene
            .instances
            .iter()
            .find(|i| i.mesh >= scene.meshes.len())
        {
            return Err(invalid(format!("instance {} has mesh {}", i.node, i.mesh)));
        }
        for c in &scene.cameras {
            let finite = |v: &[f32; 3]| v.iter().all(|x| x.is_finite());
            let unit = |v: &[f32; 3]| {
                finite(v) && (v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-3
            };
            let ordered = c.keys.windows(2).all(|w| w[0].time < w[1].time);
            let fov = c.yfov.is_finite() && c.yfov > 0.0 && c.yfov < std::f32::consts::PI;
            let planes = c.znear.is_finite()
                && c.znear > 0.0
                && c.zfar.is_none_or(|f| f.is_finite() && f > c.znear);
            let keys = !c.keys.is_empty()
                && ordered
                && c.keys.iter().all(|k| {
                    k.time.is_finite() && finite(&k.eye) && unit(&k.forward) && unit(&k.up)
                });
            if !(fov && planes && keys) {
                return Err(invalid(format!(
                    "camera {}: its field of view, planes or keys are out of range",
                    c.name
                )));
            }
        }
        Ok(scene)
    }

    /// Writes the file as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), SceneFileError> {
        let text = serde_json::to_vec_pretty(self).expect("plain data serialises");
        std::fs::write(path, text).map_err(|source| SceneFileError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}
