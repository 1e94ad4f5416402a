//! A cooked scene's files read before any of it registers, on every core:
//! each mesh's coarsest LOD ([`PreparedMesh`]) and each texture's tail
//! ([`TexturePreparer`]), so spawning a scene does not read and transcode
//! file after file on the thread that runs the world's commands.

use crate::loader::{ImageClass, StreamedImageSettings};
use crate::scene::SceneSpawnError;
use bevy::image::{ImageAddressMode, ImageSampler, ImageSamplerDescriptor};
use mipstream::mesh::scene_file::SceneFile;
use mipstream::mesh::MeshFile;
use mipstream::streamer::{PreparedMesh, PreparedTexture, StreamerError, TexturePreparer};
use mipstream::transcode::NormalLayout;
use mipstream::{MeshDesc, TextureClass, TextureDesc, TextureFile};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A texture of the scene: its file (beside `scene.json`) and class.
pub(crate) type TextureKey = (PathBuf, TextureClass);

/// What [`read`] read, by the scene's mesh index and by texture.
pub(crate) struct Read {
    pub(crate) meshes: Vec<Result<PreparedMesh, SceneSpawnError>>,
    pub(crate) textures: HashMap<TextureKey, Result<PreparedTexture, SceneSpawnError>>,
}

/// The texture class of a material slot's image class.
pub(crate) fn texture_class(class: ImageClass) -> TextureClass {
    match class {
        ImageClass::Color => TextureClass::Color,
        ImageClass::Normal => TextureClass::Normal,
        ImageClass::Data => TextureClass::Data,
    }
}

/// How a scene's texture is shown: glTF's default sampler repeats (Bevy's
/// clamps).
pub(crate) fn image_settings(class: ImageClass) -> StreamedImageSettings {
    StreamedImageSettings {
        class,
        sampler: ImageSampler::Descriptor(ImageSamplerDescriptor {
            address_mode_u: ImageAddressMode::Repeat,
            address_mode_v: ImageAddressMode::Repeat,
            ..ImageSamplerDescriptor::linear()
        }),
        ..Default::default()
    }
}

/// Every (file, class) the scene's materials use, each once, in the order
/// the materials name them.
fn texture_jobs(file: &SceneFile) -> Vec<(PathBuf, ImageClass)> {
    let mut jobs: Vec<(PathBuf, ImageClass)> = Vec::new();
    for m in &file.materials {
        for (slot, class) in [
            (&m.base_color, ImageClass::Color),
            (&m.normal, ImageClass::Normal),
            (&m.metallic_roughness, ImageClass::Data),
            (&m.occlusion, ImageClass::Data),
            (&m.emissive, ImageClass::Color),
        ] {
            if let Some(p) = slot {
                let same = |(q, c): &(PathBuf, ImageClass)| {
                    q == p && texture_class(*c) == texture_class(class)
                };
                if !jobs.iter().any(same) {
                    jobs.push((p.clone(), class));
                }
            }
        }
    }
    jobs
}

pub(crate) fn prepare_texture(
    dir: &Path,
    file: &Path,
    class: ImageClass,
    preparer: &TexturePreparer,
) -> Result<PreparedTexture, SceneSpawnError> {
    let path = dir.join(file);
    let opened = TextureFile::open_path(&path).map_err(|source| SceneSpawnError::Texture {
        path: path.clone(),
        source,
    })?;
    let desc = TextureDesc::new(opened)
        .with_class(texture_class(class))
        .with_normal_layout(NormalLayout::RedGreen)
        .with_label(file.display().to_string())
        .with_priority(image_settings(class).priority);
    preparer
        .prepare(desc)
        .map_err(|source| SceneSpawnError::Streamer {
            what: file.display().to_string(),
            source: Box::new(source),
        })
}

fn prepare_mesh(dir: &Path, file: &SceneFile, k: usize) -> Result<PreparedMesh, SceneSpawnError> {
    let m = &file.meshes[k];
    let path = dir.join(&m.file);
    let f = MeshFile::open_path(&path).map_err(|source| SceneSpawnError::Mesh {
        path: path.clone(),
        source,
    })?;
    PreparedMesh::prepare(MeshDesc::new(f).with_label(m.name.clone())).map_err(|e| match e {
        StreamerError::MeshBase { source, .. } => SceneSpawnError::Mesh { path, source },
        e => SceneSpawnError::Streamer {
            what: m.name.clone(),
            source: Box::new(e),
        },
    })
}

/// Reads every mesh's coarsest LOD and every texture's tail of `file`
/// (files beside it in `dir`), on as many threads as there are cores.
pub(crate) fn read(file: &SceneFile, dir: &Path, preparer: &TexturePreparer) -> Read {
    enum Job {
        Mesh(usize),
        Texture(PathBuf, ImageClass),
    }
    enum Done {
        Mesh(usize, Result<PreparedMesh, SceneSpawnError>),
        Texture(TextureKey, Result<PreparedTexture, SceneSpawnError>),
    }
    let jobs: Vec<Job> = (0..file.meshes.len())
        .map(Job::Mesh)
        .chain(
            texture_jobs(file)
                .into_iter()
                .map(|(p, c)| Job::Texture(p, c)),
        )
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, jobs.len().max(1));
    let done: Vec<Done> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let jobs = &jobs;
                scope.spawn(move || {
                    jobs.iter()
                        .skip(t)
                        .step_by(threads)
                        .map(|job| match job {
                            Job::Mesh(k) => Done::Mesh(*k, prepare_mesh(dir, file, *k)),
                            Job::Texture(p, c) => Done::Texture(
                                (p.clone(), texture_class(*c)),
                                prepare_texture(dir, p, *c, preparer),
                            ),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("reading a scene's files does not panic"))
            .collect()
    });
    let mut meshes: Vec<Option<Result<PreparedMesh, SceneSpawnError>>> =
        (0..file.meshes.len()).map(|_| None).collect();
    let mut textures = HashMap::new();
    for d in done {
        match d {
            Done::Mesh(k, r) => meshes[k] = Some(r),
            Done::Texture(key, r) => {
                textures.insert(key, r);
            }
        }
    }
    Read {
        meshes: meshes
            .into_iter()
            .map(|m| m.expect("every mesh read"))
            .collect(),
        textures,
    }
}
