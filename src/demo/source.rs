//! One scene source for the viewer, the benchmark and the soak: the built-in
//! scene, a folder of textures on the built-in boxes, or a glTF scene cooked
//! into the cache on first use (or a `scene.json` already cooked), with the
//! camera path each comes with.

use super::gltf_scene::{cooked_scene, SceneLoadError};
use super::scene::{BuiltinScene, CameraPath, SceneError};
use crate::cook::gltf::{GltfCookError, GltfProgress};
use crate::mesh::scene_file::SceneFile;
use glam::Vec3;
use std::path::{Path, PathBuf};

/// Where a demo's scene comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SceneSource {
    /// The built-in generated scene (no files needed).
    Builtin,
    /// The built-in boxes and path wearing a folder of `.ktx2` / `.basis`
    /// textures.
    Textures(PathBuf),
    /// A glTF scene (`.gltf` / `.glb`, cooked into the cache on first use) or
    /// a `scene.json` written by `mipstream cook-gltf`; its meshes stream too.
    Gltf(PathBuf),
}

/// Why a scene could not be found, cooked or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The word names no scene.
    #[error("{word}: {reason}")]
    Unknown {
        /// What was given.
        word: String,
        /// Why it names nothing.
        reason: String,
    },
    /// The built-in scene or a texture folder failed.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// Cooking the glTF scene failed.
    #[error(transparent)]
    Cook(#[from] GltfCookError),
    /// Reading the cooked scene failed.
    #[error(transparent)]
    Load(#[from] SceneLoadError),
}

/// A scene ready to register: boxes, or a cooked glTF scene.
#[derive(Debug, Clone)]
pub enum PreparedScene {
    /// Boxes wearing textures, with the built-in path.
    Boxes(BuiltinScene),
    /// A cooked scene's `scene.json` and the path around its bounds.
    Meshes {
        /// The cooked scene file.
        json: PathBuf,
        /// Its camera path.
        path: CameraPath,
    },
}

impl PreparedScene {
    /// The camera path that comes with it.
    pub fn path(&self) -> CameraPath {
        match self {
            PreparedScene::Boxes(s) => s.path,
            PreparedScene::Meshes { path, .. } => *path,
        }
    }
}

impl SceneSource {
    /// From a command line's word: `default`, `sponza` (the Sponza textures
    /// in `shared_data`), a folder of textures, or a `.gltf` / `.glb` /
    /// `scene.json` file.
    pub fn parse(word: &str, shared_data: &Path) -> Result<Self, SourceError> {
        let unknown = |reason: &str| SourceError::Unknown {
            word: word.to_owned(),
            reason: reason.to_owned(),
        };
        match word {
            "default" => Ok(SceneSource::Builtin),
            "sponza" => {
                let dir = shared_data.join("sponza-textures");
                if dir.is_dir() {
                    Ok(SceneSource::Textures(dir))
                } else {
                    Err(unknown(&format!(
                        "{} not found (set MIPSTREAM_SHARED_DATA to the shared data folder)",
                        dir.display()
                    )))
                }
            }
            path => {
                let p = PathBuf::from(path);
                let gltf = [".gltf", ".glb", ".json"]
                    .iter()
                    .any(|x| path.to_ascii_lowercase().ends_with(x));
                if p.is_dir() {
                    Ok(SceneSource::Textures(p))
                } else if gltf && p.is_file() {
                    Ok(SceneSource::Gltf(p))
                } else if gltf {
                    Err(unknown("no such file"))
                } else {
                    Err(unknown(
                        "expected default, sponza, a folder of KTX2 textures, a .gltf/.glb scene \
                         or a scene.json from `mipstream cook-gltf`",
                    ))
                }
            }
        }
    }

    /// A short name for reports: `default`, the folder's name (`sponza` for
    /// `sponza-textures`), the glTF file's stem or a cooked scene's folder.
    pub fn name(&self) -> String {
        match self {
            SceneSource::Builtin => "default".into(),
            SceneSource::Textures(dir) => dir
                .file_name()
                .map(|n| n.to_string_lossy().replace("-textures", ""))
                .unwrap_or_else(|| dir.display().to_string()),
            SceneSource::Gltf(p) => {
                let json = p
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json"));
                let named = if json {
                    p.parent().and_then(|d| d.file_name())
                } else {
                    p.file_stem()
                };
                named.map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
            }
        }
    }

    /// Prepares the scene: the built-in one's textures cooked into `cache` on
    /// first use (`progress("textures", done, total)`), a glTF scene cooked
    /// into `cache` on first use (`progress(stage, done, total)`), the cooked
    /// scene's bounds read for its camera path.
    pub fn prepare(
        &self,
        cache: &Path,
        mut progress: impl FnMut(&str, usize, usize),
    ) -> Result<PreparedScene, SourceError> {
        Ok(match self {
            SceneSource::Builtin => {
                PreparedScene::Boxes(BuiltinScene::load_or_cook(cache, |d, t| {
                    progress("textures", d, t)
                })?)
            }
            SceneSource::Textures(dir) => {
                PreparedScene::Boxes(BuiltinScene::from_texture_dir(dir)?)
            }
            SceneSource::Gltf(p) => {
                let json = cooked_scene(p, cache, |c: GltfProgress| {
                    progress(c.stage, c.done, c.total)
                })?;
                let file = SceneFile::load(&json).map_err(SceneLoadError::from)?;
                let [lo, hi] = file.bounds.map(Vec3::from);
                PreparedScene::Meshes {
                    json,
                    path: CameraPath::around((lo + hi) * 0.5, (hi - lo).length() * 0.5),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_scenes_or_say_why_not() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            SceneSource::parse("default", here).unwrap(),
            SceneSource::Builtin
        );
        assert_eq!(
            SceneSource::parse("assets", here).unwrap(),
            SceneSource::Textures(PathBuf::from("assets"))
        );
        let missing = SceneSource::parse("nope.gltf", here).unwrap_err();
        assert!(missing.to_string().contains("no such file"), "{missing}");
        let sponza = SceneSource::parse("sponza", &here.join("no-data")).unwrap_err();
        assert!(
            sponza.to_string().contains("MIPSTREAM_SHARED_DATA"),
            "{sponza}"
        );
        let odd = SceneSource::parse("x.txt", here).unwrap_err();
        assert!(odd.to_string().contains("expected default"), "{odd}");
        assert_eq!(
            SceneSource::Textures(PathBuf::from("a/sponza-textures")).name(),
            "sponza"
        );
        assert_eq!(
            SceneSource::Gltf(PathBuf::from("x/Helmet.glb")).name(),
            "Helmet"
        );
        assert_eq!(
            SceneSource::Gltf(PathBuf::from("cooked/lamp/scene.json")).name(),
            "lamp"
        );
    }
}
