//! One scene source for the viewer, the benchmark and the soak: the built-in
//! scene, a folder of textures on the built-in boxes, or a glTF scene cooked
//! into the cache on first use (or a `scene.json` already cooked), with the
//! camera path each comes with.

use super::gltf_scene::{cooked_scene, SceneLoadError};
use super::scene::{BuiltinScene, CameraPath, CameraTrack, SceneError, TrackKey};
use glam::Vec3;
use mipstream::cook::gltf::{GltfCookError, GltfProgress};
use mipstream::mesh::scene_file::{CameraKey, SceneFile};
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
    /// A cooked scene's `scene.json` and its path: along its own camera
    /// when it has one that moves (or several still ones), else around its
    /// bounds ([`scene_path`]).
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
            PreparedScene::Boxes(s) => s.path.clone(),
            PreparedScene::Meshes { path, .. } => path.clone(),
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
                PreparedScene::Meshes {
                    json,
                    path: scene_path(&file),
                }
            }
        })
    }
}

/// Seconds between two still cameras on a tour of them.
const TOUR_STEP_S: f32 = 4.0;

/// A cooked scene's camera path: along its first camera that an animation
/// moves; else, with two or more still cameras, a tour from each to the
/// next (`TOUR_STEP_S`, 4 s, apart, the first camera's field of view); else
/// (none, one still camera, or keys that make no path: see
/// [`CameraPath::along`]) around its bounds. The far plane is the
/// camera's, or far enough for the whole scene from every key.
pub fn scene_path(file: &SceneFile) -> CameraPath {
    let [lo, hi] = file.bounds.map(Vec3::from);
    let (center, radius) = ((lo + hi) * 0.5, ((hi - lo).length() * 0.5).max(1e-3));
    let key = |k: &CameraKey, time: f32| TrackKey {
        time,
        eye: Vec3::from(k.eye),
        forward: Vec3::from(k.forward),
        up: Vec3::from(k.up),
    };
    let (name, first, keys) = if let Some(c) = file.cameras.iter().find(|c| c.keys.len() > 1) {
        let name = format!(
            "camera {} along {}",
            c.name,
            c.animation.as_deref().unwrap_or("its animation")
        );
        (name, c, c.keys.iter().map(|k| key(k, k.time)).collect())
    } else if file.cameras.len() > 1 {
        let names: Vec<&str> = file.cameras.iter().map(|c| c.name.as_str()).collect();
        let keys: Vec<TrackKey> = file
            .cameras
            .iter()
            .enumerate()
            .map(|(i, c)| key(&c.keys[0], i as f32 * TOUR_STEP_S))
            .collect();
        (
            format!("a tour of cameras {}", names.join(", ")),
            &file.cameras[0],
            keys,
        )
    } else {
        return CameraPath::around(center, radius);
    };
    let reach = keys
        .iter()
        .map(|k: &TrackKey| k.eye.distance(center) + radius)
        .fold(0.0f32, f32::max);
    CameraPath::along(CameraTrack {
        name,
        yfov: first.yfov,
        near: first.znear,
        far: first.zfar.unwrap_or(reach * 2.0).max(first.znear * 2.0),
        keys,
    })
    .unwrap_or_else(|| CameraPath::around(center, radius))
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
        // a folder (relative to where the tests run: this crate)
        assert_eq!(
            SceneSource::parse("examples", here).unwrap(),
            SceneSource::Textures(PathBuf::from("examples"))
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

    #[test]
    fn still_cameras_make_a_tour_and_one_alone_leaves_the_orbit() {
        use mipstream::mesh::scene_file::{SceneCamera, FORMAT, VERSION};
        let still = |name: &str, x: f32| SceneCamera {
            name: name.into(),
            yfov: 0.9,
            znear: 0.1,
            zfar: None,
            animation: None,
            keys: vec![CameraKey {
                time: 0.0,
                eye: [x, 1.0, 0.0],
                forward: [0.0, 0.0, -1.0],
                up: [0.0, 1.0, 0.0],
            }],
        };
        let mut file = SceneFile {
            format: FORMAT.into(),
            version: VERSION,
            source: "s.gltf".into(),
            meshes: Vec::new(),
            materials: Vec::new(),
            instances: Vec::new(),
            bounds: [[-10.0; 3], [10.0; 3]],
            cameras: vec![still("A", 0.0), still("B", 8.0), still("C", 8.0)],
        };
        let tour = scene_path(&file);
        assert!(
            tour.describe().contains("a tour of cameras A, B, C"),
            "{}",
            tour.describe()
        );
        assert_eq!(
            (tour.cut_at, tour.duration),
            (2.0 * TOUR_STEP_S, 2.5 * TOUR_STEP_S)
        );
        let half = tour.at(TOUR_STEP_S * 0.5);
        assert_eq!(half.eye, Vec3::new(4.0, 1.0, 0.0));
        assert_eq!(
            tour.at(TOUR_STEP_S * 1.5).velocity,
            Vec3::ZERO,
            "B to C stands still"
        );
        // the far plane reaches the whole scene from every key
        let track = tour.track.as_ref().unwrap();
        assert!(track.far >= 8.0 + 10.0 * 3f32.sqrt(), "{}", track.far);
        file.cameras.truncate(1);
        let orbit = scene_path(&file);
        assert!(orbit.track.is_none());
        let (centre, radius) = orbit.object.unwrap();
        assert_eq!(centre, Vec3::ZERO);
        assert!((radius - 10.0 * 3f32.sqrt()).abs() < 1e-4, "{radius}");
    }
}
