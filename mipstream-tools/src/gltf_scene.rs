//! A cooked glTF scene, streamed: [`StreamedScene::load`] registers every
//! mesh (`.msmesh`) and material texture (KTX2) of a `scene.json` with a
//! [`Streamer`], and one object per instance (world bounds, the mesh with the
//! instance's scale, the material's textures with their world units per UV
//! unit), so textures and meshes share the one budget. [`StreamedScene::draws`]
//! hands the [`MeshRenderer`] what to draw this frame: each instance with the
//! LOD the streamer holds now.

use crate::render_mesh::{
    FeedbackTexture, MaterialBinding, MaterialFactors, MeshDraw, MeshRenderer,
};
use glam::{Mat4, Vec3};
use mipstream::mesh::scene_file::{SceneFile, SceneFileError};
use mipstream::scene::{self, MaterialSlot, SceneReadError, SceneTexture};
use mipstream::streamer::{MeshId, ObjectDesc, ObjectId, Streamer, StreamerError};
use mipstream::TextureId;
use std::path::{Path, PathBuf};

/// Why a cooked scene cannot be streamed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SceneLoadError {
    /// The scene file is missing or invalid.
    #[error(transparent)]
    Scene(#[from] SceneFileError),
    /// A mesh or texture file is missing or invalid.
    #[error(transparent)]
    Read(#[from] SceneReadError),
    /// Registering with the streamer failed.
    #[error("{what}: {source}")]
    Streamer {
        /// The mesh or texture.
        what: String,
        /// The error.
        #[source]
        source: Box<StreamerError>,
    },
}

/// A material's streamed textures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamedMaterial {
    /// Base colour.
    pub base_color: Option<TextureId>,
    /// Normal map.
    pub normal: Option<TextureId>,
    /// Factors.
    pub factors: MaterialFactors,
}

/// One instance: a mesh placed in the world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamedInstance {
    /// Index into [`StreamedScene::meshes`].
    pub mesh: usize,
    /// Mesh to world.
    pub model: Mat4,
    /// The streamer object standing for it.
    pub object: ObjectId,
    /// World-space bounds.
    pub bounds: (Vec3, Vec3),
}

/// A cooked scene registered with a streamer.
#[derive(Debug)]
pub struct StreamedScene {
    /// The scene file as loaded.
    pub file: SceneFile,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// One id per scene mesh.
    pub meshes: Vec<MeshId>,
    /// Per scene mesh: its material index.
    pub mesh_materials: Vec<usize>,
    /// One entry per scene material.
    pub materials: Vec<StreamedMaterial>,
    /// One entry per scene instance.
    pub instances: Vec<StreamedInstance>,
    /// World bounds of every instance.
    pub bounds: (Vec3, Vec3),
    bindings: Vec<Option<MaterialBinding>>,
}

/// Bumped when `cook-gltf` writes more into `scene.json` (2: the cameras),
/// so a cache cooked before is cooked again.
const SCENE_REVISION: u32 = 2;

/// The `scene.json` to stream for `path`: a `.json` is taken as cooked; a
/// `.gltf`/`.glb` is cooked into `cache_dir/gltf-<name>/` unless a cooked
/// copy newer than the source is there (`progress` sees the cook's stages).
pub fn cooked_scene(
    path: &Path,
    cache_dir: &Path,
    progress: impl FnMut(mipstream::cook::gltf::GltfProgress),
) -> Result<PathBuf, mipstream::cook::gltf::GltfCookError> {
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if is_json {
        return Ok(path.to_owned());
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "scene".into(), |s| s.to_string_lossy().into_owned());
    let out = cache_dir.join(format!(
        "gltf-{stem}-c{}-s{SCENE_REVISION}",
        mipstream::cook::COOK_VERSION
    ));
    let json = out.join("scene.json");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = matches!((modified(&json), modified(path)), (Some(c), Some(s)) if c >= s);
    if !fresh {
        let opts = mipstream::cook::gltf::GltfCookOptions::default();
        mipstream::cook::gltf::cook_gltf(path, &out, &opts, progress)?;
    }
    Ok(json)
}

impl StreamedScene {
    /// Registers the scene at `path` (a `scene.json` written by
    /// `mipstream cook-gltf`) with `streamer`. The meshes' coarsest LODs and
    /// the drawn textures' tails are read on every core first
    /// ([`scene::read`]), then registered in the file's order, so a broken
    /// mesh file leaves no mesh registered.
    pub fn load(streamer: &mut Streamer, path: &Path) -> Result<Self, SceneLoadError> {
        let file = SceneFile::load(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        fn reg<E: Into<StreamerError>>(what: &str) -> impl FnOnce(E) -> SceneLoadError + use<E> {
            let what = what.to_owned();
            move |source| SceneLoadError::Streamer {
                what,
                source: Box::new(source.into()),
            }
        }
        // the renderer draws base colour and normal maps
        let drawn = scene::textures(&file, &[MaterialSlot::BaseColor, MaterialSlot::Normal]);
        let read = scene::read(&file, dir, &drawn, &streamer.preparer(), SceneTexture::desc);
        let read_meshes = read.meshes.into_iter().collect::<Result<Vec<_>, _>>()?;
        let mut prepared_textures: std::collections::HashMap<_, _> =
            read.textures.into_iter().collect();
        let mut meshes = Vec::new();
        let mut densities = Vec::new();
        let mut mesh_bounds = Vec::new();
        for (m, read) in file.meshes.iter().zip(read_meshes) {
            let prepared = read.prepared;
            densities.push(read.units_per_uv.unwrap_or(1.0));
            mesh_bounds.push(prepared.bounds());
            meshes.push(
                streamer
                    .register_prepared_mesh(prepared)
                    .map_err(reg(&m.name))?,
            );
        }
        let mut materials = Vec::new();
        // materials sharing an image share one streamed texture
        let mut registered: std::collections::HashMap<SceneTexture, TextureId> = Default::default();
        for m in &file.materials {
            let mut texture = |slot: MaterialSlot| -> Result<_, SceneLoadError> {
                let Some(p) = slot.file(m) else {
                    return Ok(None);
                };
                let key = SceneTexture {
                    file: p.clone(),
                    class: slot.class(),
                };
                if let Some(&id) = registered.get(&key) {
                    return Ok(Some(id));
                }
                let prepared = prepared_textures
                    .remove(&key)
                    .expect("every drawn texture read")?;
                let id = streamer
                    .register_prepared(prepared)
                    .map_err(reg(&p.display().to_string()))?;
                registered.insert(key, id);
                Ok(Some(id))
            };
            materials.push(StreamedMaterial {
                base_color: texture(MaterialSlot::BaseColor)?,
                normal: texture(MaterialSlot::Normal)?,
                factors: MaterialFactors {
                    base_color: m.base_color_factor,
                    normal_scale: m.normal_scale,
                    alpha_cutoff: if m.alpha_mode == "MASK" {
                        m.alpha_cutoff
                    } else {
                        0.0
                    },
                },
            });
        }
        let mut instances = Vec::new();
        let mut all = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for inst in &file.instances {
            let model = Mat4::from_cols_array(&inst.transform);
            let (lo, hi) = mesh_bounds[inst.mesh];
            let (mut min, mut max) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
            for i in 0..8 {
                let c = Vec3::new(
                    if i & 1 == 0 { lo.x } else { hi.x },
                    if i & 2 == 0 { lo.y } else { hi.y },
                    if i & 4 == 0 { lo.z } else { hi.z },
                );
                let w = model.transform_point3(c);
                min = min.min(w);
                max = max.max(w);
            }
            all = (all.0.min(min), all.1.max(max));
            let scale = model
                .x_axis
                .truncate()
                .length()
                .max(model.y_axis.truncate().length())
                .max(model.z_axis.truncate().length());
            let mut desc = ObjectDesc::aabb(min, max).with_mesh(meshes[inst.mesh], scale);
            let material = file.meshes[inst.mesh].material;
            if let Some(m) = materials.get(material) {
                let world_per_uv = densities[inst.mesh] * scale;
                let mut textures: Vec<TextureId> =
                    [m.base_color, m.normal].into_iter().flatten().collect();
                textures.dedup();
                for t in textures {
                    desc = desc.with_texture(t, world_per_uv);
                }
            }
            let object = streamer.register_object(desc).map_err(reg(&inst.node))?;
            instances.push(StreamedInstance {
                mesh: inst.mesh,
                model,
                object,
                bounds: (min, max),
            });
        }
        if instances.is_empty() {
            all = (Vec3::ZERO, Vec3::ZERO);
        }
        Ok(Self {
            mesh_materials: file.meshes.iter().map(|m| m.material).collect(),
            bindings: Vec::new(),
            path: path.to_owned(),
            file,
            meshes,
            materials,
            instances,
            bounds: all,
        })
    }

    /// Rebuilds the material bind groups whose textures' views changed
    /// (`changed`: from [`Streamer::take_changed`]); builds missing ones.
    pub fn sync(
        &mut self,
        device: &wgpu::Device,
        renderer: &MeshRenderer,
        streamer: &Streamer,
        changed: &[TextureId],
    ) {
        self.bindings.resize_with(self.materials.len(), || None);
        for (m, slot) in self.materials.iter().zip(&mut self.bindings) {
            let stale = [m.base_color, m.normal]
                .into_iter()
                .flatten()
                .any(|t| changed.contains(&t));
            if slot.is_some() && !stale {
                continue;
            }
            let base = m.base_color.and_then(|t| streamer.texture_view(t).ok());
            let normal = m.normal.and_then(|t| {
                Some((
                    streamer.texture_view(t).ok()?,
                    streamer.channel_layout(t).ok()?,
                ))
            });
            // GPU feedback where the renderer has a buffer set
            let streamed =
                [m.base_color, m.normal].map(|t| t.and_then(|t| FeedbackTexture::of(streamer, t)));
            *slot = Some(renderer.material_reporting(device, base, normal, &m.factors, streamed));
        }
    }

    /// What to draw this frame: every instance with the LOD its mesh has
    /// resident (call [`sync`](Self::sync) first).
    /// During a LOD cross-fade (`StreamerOptions::mesh_cross_fade_frames`)
    /// an instance is drawn twice, new and old LOD on complementary dither
    /// masks.
    pub fn draws<'a>(&'a self, streamer: &'a Streamer) -> Vec<MeshDraw<'a>> {
        let mut out = Vec::with_capacity(self.instances.len());
        for inst in &self.instances {
            let id = self.meshes[inst.mesh];
            let Ok(buffers) = streamer.mesh_buffers(id) else {
                continue;
            };
            let material = self.mesh_materials[inst.mesh];
            let Some(binding) = self.bindings.get(material).and_then(Option::as_ref) else {
                continue;
            };
            // this scene's streamer holds its own buffers (`MeshStorage::Buffers`)
            let draw = |b: &'a mipstream::gpu::GpuMesh, fade: f32| {
                b.buffers.as_ref().map(|buffers| MeshDraw {
                    vertex: &buffers.vertex,
                    index: &buffers.index,
                    index_count: b.index_count,
                    model: inst.model,
                    material: binding,
                    fade,
                })
            };
            match streamer.mesh_fade(id).ok().flatten() {
                Some((old, t)) if t < 1.0 => {
                    out.extend(draw(buffers, t));
                    out.extend(draw(old, -t));
                }
                _ => out.extend(draw(buffers, 0.0)),
            }
        }
        out
    }

    /// A camera position `distance` scene radii from the centre of the
    /// bounds, looking at it from the front and a little above.
    pub fn orbit_eye(&self, distance: f32) -> (Vec3, Vec3) {
        let center = (self.bounds.0 + self.bounds.1) * 0.5;
        let radius = ((self.bounds.1 - self.bounds.0).length() * 0.5).max(1e-3);
        let dir = Vec3::new(0.35, 0.25, 1.0).normalize();
        (center + dir * radius * distance, center)
    }
}
