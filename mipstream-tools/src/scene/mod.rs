//! The built-in scene (feature `scene`): generated textures, hundreds of
//! boxes over a large field, and a scripted camera path, needing no files.
//!
//! Textures are generated procedurally with detail at every scale (bricks,
//! mid-scale noise, texel-scale grain), so a missing mip shows as blur the way
//! it does in real art, then cooked through mipstream's own pipeline (UASTC
//! KTX2) into a cache directory on first use and reused afterwards.
//!
//! The camera path has the three moves streamers find hard: a fast fly over
//! the field, a slow walk among the boxes, and a hard cut to the far corner.

mod grid;
mod path;
mod textures;

pub use grid::grid_mesh;
pub use path::{CameraPath, CameraTrack, PathPoint, Segment, TrackKey};

use glam::Vec3;
use mipstream::streamer::{ObjectDesc, StreamerError, TextureDesc};
use mipstream::{container::TextureFile, kinds::TextureClass, streamer::Streamer, TextureId};
use std::path::{Path, PathBuf};

/// Version of the generated content; bump it when generation changes so
/// stale caches are not reused.
pub const VERSION: u32 = 1;

/// Half the side of the square field, in metres.
pub const FIELD_HALF: f32 = 120.0;

/// One box of the scene.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneObject {
    /// Centre of the box.
    pub center: Vec3,
    /// Full size along each axis.
    pub size: Vec3,
    /// Index into [`BuiltinScene::textures`].
    pub texture: usize,
    /// World units one texture repeat spans on the box faces.
    pub tile: f32,
}

impl SceneObject {
    /// The radius of the box's bounding sphere.
    pub fn radius(&self) -> f32 {
        self.size.length() * 0.5
    }
}

/// The generated scene: texture files, boxes and the camera path.
#[derive(Debug, Clone)]
pub struct BuiltinScene {
    /// Cooked texture files, in the order objects refer to them.
    pub textures: Vec<PathBuf>,
    /// What each texture is for (colour for the generated ones).
    pub classes: Vec<TextureClass>,
    /// The boxes (the first is the ground).
    pub objects: Vec<SceneObject>,
    /// The scripted camera path.
    pub path: CameraPath,
}

/// Why the scene could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SceneError {
    /// The cache directory could not be written.
    #[error("scene cache {path}: {source}")]
    Cache {
        /// The directory or file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Cooking a generated texture failed.
    #[error(transparent)]
    Cook(#[from] mipstream::cook::CookError),
    /// A texture folder could not be listed.
    #[error("texture folder {path}: {source}")]
    Folder {
        /// The folder.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A texture folder holds no `.ktx2` or `.basis` file.
    #[error("{dir}: no .ktx2 or .basis textures in this folder")]
    NoTextures {
        /// The folder.
        dir: String,
    },
}

impl BuiltinScene {
    /// The default cache directory: `$MIPSTREAM_CACHE` or `target/mipstream-cache`
    /// under the current directory.
    pub fn default_cache_dir() -> PathBuf {
        std::env::var_os("MIPSTREAM_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target/mipstream-cache"))
    }

    /// Generates the scene, cooking textures into `cache` unless they are
    /// there already. `progress` is called with (done, total) as textures cook.
    pub fn load_or_cook(
        cache: &Path,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Self, SceneError> {
        let dir = cache.join(format!(
            "builtin-v{VERSION}-c{}",
            mipstream::cook::COOK_VERSION
        ));
        std::fs::create_dir_all(&dir).map_err(|source| SceneError::Cache {
            path: dir.display().to_string(),
            source,
        })?;
        let specs = textures::specs();
        let total = specs.len();
        let mut missing = Vec::new();
        let paths: Vec<PathBuf> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let p = dir.join(format!("{:02}-{}.ktx2", i, s.name));
                if !p.is_file() {
                    missing.push((i, p.clone()));
                }
                p
            })
            .collect();
        let mut done = total - missing.len();
        progress(done, total);
        mipstream::parallel::for_each(
            &missing,
            0,
            |_, (index, path)| cook_one(&specs[*index], path),
            |_, r| {
                r?;
                done += 1;
                progress(done, total);
                Ok::<(), SceneError>(())
            },
        )?;
        Ok(Self {
            classes: vec![TextureClass::Color; paths.len()],
            textures: paths,
            objects: layout(specs.len()),
            path: CameraPath::builtin(),
        })
    }

    /// The built-in scene's boxes and camera path wearing the textures of a
    /// folder (`.ktx2` / `.basis`, sorted by name; the first covers the
    /// ground). Each texture's class is guessed from its name: `normal`,
    /// `_nrm`, `_ddn` are normal maps; `bump`, `spec`, `mask`, `gloss`,
    /// `rough`, `metal`, `height`, `_ao` are linear data; the rest colour.
    pub fn from_texture_dir(dir: &Path) -> Result<Self, SceneError> {
        let io = |source| SceneError::Folder {
            path: dir.display().to_string(),
            source,
        };
        let mut textures: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && p.extension().is_some_and(|x| {
                        x.eq_ignore_ascii_case("ktx2") || x.eq_ignore_ascii_case("basis")
                    })
            })
            .collect();
        textures.sort();
        if textures.is_empty() {
            return Err(SceneError::NoTextures {
                dir: dir.display().to_string(),
            });
        }
        Ok(Self {
            classes: textures.iter().map(|p| guess_class(p)).collect(),
            objects: layout(textures.len()),
            textures,
            path: CameraPath::builtin(),
        })
    }

    /// Registers every texture and box with a streamer; returns the texture ids
    /// in scene order.
    pub fn register(&self, streamer: &mut Streamer) -> Result<Vec<TextureId>, StreamerError> {
        let mut ids = Vec::with_capacity(self.textures.len());
        for (i, p) in self.textures.iter().enumerate() {
            let file = TextureFile::open_path(p)?;
            let label = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let class = self.classes.get(i).copied().unwrap_or_default();
            let mut desc = TextureDesc::new(file).with_class(class);
            desc.label = label;
            ids.push(streamer.register_texture(desc)?);
        }
        for o in &self.objects {
            let desc = ObjectDesc::aabb(o.center - o.size * 0.5, o.center + o.size * 0.5);
            streamer.register_object(desc.with_texture(ids[o.texture], o.tile))?;
        }
        Ok(ids)
    }

    /// Bytes every texture takes with all its levels resident in its full tier
    /// on `streamer`'s adapter.
    pub fn full_residency_bytes(streamer: &Streamer, ids: &[TextureId]) -> u64 {
        ids.iter()
            .filter_map(|id| streamer.full_bytes(*id).ok())
            .sum()
    }
}

fn cook_one(spec: &textures::Spec, path: &Path) -> Result<(), SceneError> {
    let image = textures::generate(spec);
    let opts = mipstream::cook::CookOptions {
        quality: 0,
        threads: 1,
        ..Default::default()
    };
    let bytes = mipstream::cook::cook_image(spec.name, &image, &opts)?;
    write_atomically(path, &bytes).map_err(|source| SceneError::Cache {
        path: path.display().to_string(),
        source,
    })
}

/// Writes `bytes` to a temporary file of its own, then renames it over
/// `path`: an interrupted cook never leaves a half file, and two cooks of the
/// same file at once (two tests, two processes sharing a cache) each rename a
/// whole file of their own, where one shared temporary name let the second
/// rename find the first one had already moved it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("{}-{n}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A texture's class from its file name (see [`BuiltinScene::from_texture_dir`]).
pub fn guess_class(path: &Path) -> TextureClass {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let has = |keys: &[&str]| keys.iter().any(|k| name.contains(k));
    if has(&["normal", "_nrm", "_ddn", "_norm"]) {
        TextureClass::Normal
    } else if has(&[
        "bump",
        "spec",
        "mask",
        "gloss",
        "rough",
        "metal",
        "height",
        "_ao",
        "occlusion",
    ]) {
        TextureClass::Data
    } else {
        TextureClass::Color
    }
}

/// A deterministic small hash for layout randomness.
pub(crate) fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

fn unit(x: u32) -> f32 {
    (hash(x) & 0xffff) as f32 / 65535.0
}

/// The ground and a jittered grid of boxes.
fn layout(texture_count: usize) -> Vec<SceneObject> {
    let mut objects = vec![SceneObject {
        center: Vec3::new(0.0, -0.5, 0.0),
        size: Vec3::new(FIELD_HALF * 2.0, 1.0, FIELD_HALF * 2.0),
        texture: 0,
        tile: 8.0,
    }];
    let n = 20;
    let spacing = FIELD_HALF * 2.0 / n as f32;
    for gx in 0..n {
        for gz in 0..n {
            let i = (gx * n + gz) as u32;
            let w = 1.0 + 5.0 * unit(i * 7 + 1);
            let h = 1.0 + 7.0 * unit(i * 7 + 2);
            let d = 1.0 + 5.0 * unit(i * 7 + 3);
            let x = -FIELD_HALF + spacing * (gx as f32 + 0.2 + 0.6 * unit(i * 7 + 4));
            let z = -FIELD_HALF + spacing * (gz as f32 + 0.2 + 0.6 * unit(i * 7 + 5));
            objects.push(SceneObject {
                center: Vec3::new(x, h * 0.5, z),
                size: Vec3::new(w, h, d),
                texture: if texture_count > 1 {
                    1 + (hash(i * 7 + 6) as usize % (texture_count - 1))
                } else {
                    0
                },
                tile: w.max(h).max(d),
            });
        }
    }
    objects
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_deterministic_and_spread() {
        let a = layout(20);
        assert_eq!(a, layout(20));
        assert_eq!(a.len(), 401);
        let used: std::collections::HashSet<usize> = a.iter().map(|o| o.texture).collect();
        assert_eq!(used.len(), 20, "every texture is used");
        assert!(a
            .iter()
            .all(|o| o.center.x.abs() <= FIELD_HALF && o.center.z.abs() <= FIELD_HALF));
        assert!(layout(1).iter().all(|o| o.texture == 0));
    }

    #[test]
    fn texture_classes_are_guessed_from_names() {
        let c = |n: &str| guess_class(Path::new(n));
        assert_eq!(c("sponza_arch_diff.ktx2"), TextureClass::Color);
        assert_eq!(c("sponza_arch_bump.ktx2"), TextureClass::Data);
        assert_eq!(c("vase_plant_mask.ktx2"), TextureClass::Data);
        assert_eq!(c("Helmet_Normal.ktx2"), TextureClass::Normal);
    }

    #[test]
    fn cooks_of_the_same_file_at_once_each_leave_a_whole_file() {
        let dir = std::env::temp_dir().join(format!("mipstream-race-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("00-race.ktx2");
        let bytes = vec![7u8; 1 << 16];
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        write_atomically(&path, &bytes).unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left behind: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_without_textures_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("mipstream-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = BuiltinScene::from_texture_dir(&dir).unwrap_err();
        assert!(matches!(err, SceneError::NoTextures { .. }), "{err}");
        let missing = BuiltinScene::from_texture_dir(&dir.join("nope")).unwrap_err();
        assert!(matches!(missing, SceneError::Folder { .. }), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
