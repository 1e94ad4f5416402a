//! Cooked scenes (`scene.json` from `mipstream cook-gltf`) as Bevy
//! entities whose meshes stream LOD by LOD and whose textures stream mip by
//! mip, under the one budget.
//!
//! mipstream plans, reads and counts every mesh LOD; Bevy holds them: each
//! LOD mipstream hands over ([`mipstream::streamer::MeshEvent`]) becomes a
//! render-world-only `Mesh` asset (so its bytes live once, in Bevy's mesh
//! allocator), and the entity's `Mesh3d` follows the LOD mipstream says to
//! draw, in the frame it changes.

use crate::loader::{placeholder, ImageClass, StreamedImageSettings};
use crate::Mipstream;
use bevy::asset::RenderAssetUsages;
use bevy::camera::primitives::Aabb;
use bevy::camera::visibility::NoAutoAabb;
use bevy::ecs::system::SystemState;
use bevy::image::{ImageAddressMode, ImageSampler, ImageSamplerDescriptor};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use mipstream::mesh::scene_file::{SceneFile, SceneFileError, SceneMaterial};
use mipstream::mesh::{MeshError, MeshLod};
use mipstream::scene::{self, MaterialSlot, ReadMesh, SceneReadError, SceneTexture};
use mipstream::streamer::{MeshEvent, PreparedTexture, StreamerError, TextureRegisterError};
use mipstream::transcode::NormalLayout;
use mipstream::{MeshId, OpenError, TextureClass, TextureDesc, TextureFile};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// An entity drawn with a mesh whose LODs mipstream streams: the plugin
/// sets its `Mesh3d` to the LOD to draw every frame.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct StreamedMesh {
    /// mipstream's mesh.
    pub mesh: MeshId,
    /// Mesh units per UV unit (from the coarsest LOD's triangles), for the
    /// texel density of the textures drawn on it.
    pub units_per_uv: Option<f32>,
}

/// Why a scene did not spawn.
#[derive(Debug, thiserror::Error)]
pub enum SceneSpawnError {
    /// The scene file is missing or malformed.
    #[error(transparent)]
    Scene(#[from] SceneFileError),
    /// A mesh file is missing or malformed.
    #[error("{path}: {source}")]
    Mesh {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: MeshError,
    },
    /// A texture file is missing or malformed.
    #[error("{path}: {source}")]
    Texture {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: OpenError,
    },
    /// mipstream refused a registration (out of memory, a bad file).
    #[error("{what}: {source}")]
    Streamer {
        /// The mesh or texture.
        what: String,
        /// Why.
        source: Box<StreamerError>,
    },
    /// [`crate::MipstreamPlugin`] is not in the app (or not finished yet:
    /// spawn scenes from `Startup` or later).
    #[error("no Mipstream resource: add MipstreamPlugin and spawn scenes from Startup or later")]
    NoPlugin,
}

impl From<SceneReadError> for SceneSpawnError {
    fn from(e: SceneReadError) -> Self {
        match e {
            SceneReadError::Scene(e) => Self::Scene(e),
            SceneReadError::Mesh { path, source } => Self::Mesh { path, source },
            SceneReadError::Texture { path, source } => Self::Texture { path, source },
            SceneReadError::Streamer { what, source } => Self::Streamer { what, source },
        }
    }
}

/// The image class a texture class streams as.
fn image_class(class: TextureClass) -> ImageClass {
    match class {
        TextureClass::Color => ImageClass::Color,
        TextureClass::Normal => ImageClass::Normal,
        TextureClass::Data => ImageClass::Data,
    }
}

/// How a scene's texture is shown: glTF's default sampler repeats (Bevy's
/// clamps).
fn image_settings(class: ImageClass) -> StreamedImageSettings {
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

/// A scene texture as the plugin streams it: Bevy's normal maps keep red
/// and green, labelled by file, at its image class's priority.
fn texture_desc(file: TextureFile, t: &SceneTexture) -> TextureDesc {
    TextureDesc::new(file)
        .with_class(t.class)
        .with_normal_layout(NormalLayout::RedGreen)
        .with_label(t.file.display().to_string())
        .with_priority(image_settings(image_class(t.class)).priority)
}

/// Spawns a cooked scene, as a command: `commands.queue(SpawnStreamedScene::new("scene.json"))`.
/// A failure is logged; call [`spawn_streamed_scene`] to handle it.
#[derive(Debug, Clone)]
pub struct SpawnStreamedScene {
    /// The `scene.json` (a file-system path; the meshes and textures it
    /// names are read from beside it, by range, on mipstream's loader threads).
    pub path: PathBuf,
    /// The scene root's transform.
    pub transform: Transform,
}

impl SpawnStreamedScene {
    /// The scene at `path`, at the origin.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            transform: Transform::IDENTITY,
        }
    }
}

impl Command for SpawnStreamedScene {
    type Out = ();

    fn apply(self, world: &mut World) {
        if let Err(e) = spawn_streamed_scene(world, &self.path, self.transform) {
            error!("mipstream: scene {}: {e}", self.path.display());
        }
    }
}

/// Spawns the scene in `path` (a `scene.json` written by `mipstream
/// cook-gltf`) under a root entity with `transform`, and returns the root.
///
/// Each mesh registers with the streamer (its coarsest LOD is read now, so
/// every entity has a mesh from its first frame); each texture registers
/// with its tail resident and gets a `Handle<Image>`; each material becomes
/// a `StandardMaterial` with the glTF factors; each instance an entity with
/// `Mesh3d`, `MeshMaterial3d`, `Transform`, an `Aabb` of its finest LOD
/// ([`NoAutoAabb`]: the box does not shrink with the LOD) and a
/// [`StreamedMesh`]. Files are read directly (not through Bevy's asset
/// sources): mipstream reads only the byte ranges of the levels and LODs it
/// loads.
pub fn spawn_streamed_scene(
    world: &mut World,
    path: &Path,
    transform: Transform,
) -> Result<Entity, SceneSpawnError> {
    let file = SceneFile::load(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    if !world.contains_resource::<Mipstream>() {
        return Err(SceneSpawnError::NoPlugin);
    }
    let mut state: SystemState<Registries> = SystemState::new(world);
    let (mut ms, mut images, mut meshes, mut materials) = state
        .get_mut(world)
        .map_err(|_| SceneSpawnError::NoPlugin)?;
    // every file read (on every core) before anything registers
    let textures = scene::textures(&file, &MaterialSlot::ALL);
    let read = scene::read(&file, dir, &textures, &ms.streamer.preparer(), texture_desc);
    let mut assets = SceneAssets {
        ms: &mut ms,
        images: &mut images,
        meshes: &mut meshes,
        materials: &mut materials,
        textures: HashMap::new(),
        prepared: read.textures.into_iter().collect(),
    };
    let mut registered = Vec::new();
    let parts = assets.register(&file, dir, read.meshes, &mut registered);
    if parts.is_err() {
        // nothing stays registered (the textures go as their images'
        // handles drop)
        for id in registered {
            let _ = assets.ms.streamer.remove_mesh(id);
        }
        assets.ms.apply_mesh_events(assets.meshes);
    }
    let parts = parts?;
    Ok(spawn_entities(world, &file, parts, transform))
}

/// What registering a scene writes to.
type Registries<'w> = (
    ResMut<'w, Mipstream>,
    ResMut<'w, Assets<Image>>,
    ResMut<'w, Assets<Mesh>>,
    ResMut<'w, Assets<StandardMaterial>>,
);

/// What the scene registered, by the scene file's indices.
struct Parts {
    meshes: Vec<(MeshId, Handle<Mesh>, Option<f32>, Aabb)>,
    materials: Vec<Handle<StandardMaterial>>,
}

struct SceneAssets<'a> {
    ms: &'a mut Mipstream,
    images: &'a mut Assets<Image>,
    meshes: &'a mut Assets<Mesh>,
    materials: &'a mut Assets<StandardMaterial>,
    /// Images by file and class: materials sharing a file share one texture.
    textures: HashMap<(PathBuf, TextureClass), Handle<Image>>,
    /// The textures read before registration, taken as they register.
    prepared: HashMap<SceneTexture, Result<PreparedTexture, SceneReadError>>,
}

impl SceneAssets<'_> {
    /// Registers the scene's meshes (each also into `registered`, for the
    /// caller to undo on an error), textures and materials.
    fn register(
        &mut self,
        file: &SceneFile,
        dir: &Path,
        read: Vec<Result<ReadMesh, SceneReadError>>,
        registered: &mut Vec<MeshId>,
    ) -> Result<Parts, SceneSpawnError> {
        let mut meshes = Vec::new();
        for (m, prepared) in file.meshes.iter().zip(read) {
            let prepared = prepared?.prepared;
            let (lo, hi) = prepared.bounds();
            let aabb = Aabb::from_min_max(
                Vec3::from_array(lo.to_array()),
                Vec3::from_array(hi.to_array()),
            );
            let id = self
                .ms
                .streamer
                .register_prepared_mesh(prepared)
                .map_err(|source| SceneSpawnError::Streamer {
                    what: m.name.clone(),
                    source: Box::new(source.into()),
                })?;
            registered.push(id);
            // the coarsest LOD was handed over at registration
            self.ms.apply_mesh_events(self.meshes);
            let handle = self
                .ms
                .drawn_mesh(id)
                .expect("registered with its coarsest LOD");
            let density = self.ms.mesh_densities.get(&id).copied().flatten();
            meshes.push((id, handle, density, aabb));
        }
        let mut materials = Vec::new();
        for m in &file.materials {
            let material = self.material(m, dir)?;
            materials.push(self.materials.add(material));
        }
        Ok(Parts { meshes, materials })
    }

    fn texture(
        &mut self,
        dir: &Path,
        file: &Option<PathBuf>,
        class: ImageClass,
    ) -> Result<Option<Handle<Image>>, SceneSpawnError> {
        let Some(file) = file else { return Ok(None) };
        let path = dir.join(file);
        let key = SceneTexture {
            file: file.clone(),
            class: texture_class(class),
        };
        if let Some(h) = self.textures.get(&(path.clone(), key.class)) {
            return Ok(Some(h.clone()));
        }
        let prepared = match self.prepared.remove(&key) {
            Some(r) => r?,
            None => {
                let preparer = self.ms.streamer.preparer();
                scene::prepare_texture(dir, &key, &preparer, texture_desc)?
            }
        };
        let handle = self
            .ms
            .stream_prepared_image(self.images, prepared, &image_settings(class))
            .map_err(|source| SceneSpawnError::Streamer {
                what: file.display().to_string(),
                source: Box::new(source.into()),
            })?;
        self.textures.insert((path, key.class), handle.clone());
        Ok(Some(handle))
    }

    /// A `StandardMaterial` as glTF's metallic-roughness model defines it.
    fn material(
        &mut self,
        m: &SceneMaterial,
        dir: &Path,
    ) -> Result<StandardMaterial, SceneSpawnError> {
        let [r, g, b, a] = m.base_color_factor;
        let [er, eg, eb] = m.emissive_factor;
        Ok(StandardMaterial {
            base_color: Color::linear_rgba(r, g, b, a),
            base_color_texture: self.texture(dir, &m.base_color, ImageClass::Color)?,
            normal_map_texture: self.texture(dir, &m.normal, ImageClass::Normal)?,
            metallic_roughness_texture: self.texture(
                dir,
                &m.metallic_roughness,
                ImageClass::Data,
            )?,
            occlusion_texture: self.texture(dir, &m.occlusion, ImageClass::Data)?,
            emissive_texture: self.texture(dir, &m.emissive, ImageClass::Color)?,
            emissive: LinearRgba::rgb(er, eg, eb),
            metallic: m.metallic_factor,
            perceptual_roughness: m.roughness_factor,
            alpha_mode: match m.alpha_mode.as_str() {
                "MASK" => AlphaMode::Mask(m.alpha_cutoff),
                "BLEND" => AlphaMode::Blend,
                _ => AlphaMode::Opaque,
            },
            double_sided: m.double_sided,
            cull_mode: (!m.double_sided).then_some(bevy::render::render_resource::Face::Back),
            ..default()
        })
    }
}

fn spawn_entities(
    world: &mut World,
    file: &SceneFile,
    parts: Parts,
    transform: Transform,
) -> Entity {
    let name = Path::new(&file.source)
        .file_stem()
        .map_or_else(|| "scene".to_owned(), |s| s.to_string_lossy().into_owned());
    let root = world
        .spawn((Name::new(name), transform, Visibility::default()))
        .id();
    for inst in &file.instances {
        let (mesh, handle, density, aabb) = parts.meshes[inst.mesh].clone();
        let material = parts.materials[file.meshes[inst.mesh].material].clone();
        world.spawn((
            Name::new(inst.node.clone()),
            Mesh3d(handle),
            MeshMaterial3d(material),
            Transform::from_matrix(Mat4::from_cols_array(&inst.transform)),
            aabb,
            NoAutoAabb,
            StreamedMesh {
                mesh,
                units_per_uv: density,
            },
            ChildOf(root),
        ));
    }
    root
}

impl Mipstream {
    /// Streams a texture you opened yourself as a `Handle<Image>` (what
    /// [`crate::StreamedImageLoader`] does for `asset_server.load`, without
    /// Bevy's asset sources: mipstream reads the file by ranges). Its tail
    /// is read now.
    pub fn stream_image(
        &mut self,
        images: &mut Assets<Image>,
        desc: TextureDesc,
        settings: &StreamedImageSettings,
    ) -> Result<Handle<Image>, TextureRegisterError> {
        let texture = self
            .streamer
            .register_texture(desc.with_priority(settings.priority))?;
        Ok(self.image_of(images, texture, settings))
    }

    /// A `Handle<Image>` for a registered texture: its placeholder, recorded
    /// so the render world swaps in the streamed texture.
    fn image_of(
        &mut self,
        images: &mut Assets<Image>,
        texture: mipstream::TextureId,
        settings: &StreamedImageSettings,
    ) -> Handle<Image> {
        let handle = images.add(placeholder(settings));
        self.record_image(handle.id(), texture);
        handle
    }

    /// Streams a texture whose tail was read on another thread
    /// ([`Streamer::preparer`](mipstream::Streamer::preparer)) as a
    /// `Handle<Image>`: registering it reads no file. `settings.priority` is
    /// not applied here: the descriptor it was prepared from carries its
    /// priority.
    pub fn stream_prepared_image(
        &mut self,
        images: &mut Assets<Image>,
        prepared: PreparedTexture,
        settings: &StreamedImageSettings,
    ) -> Result<Handle<Image>, TextureRegisterError> {
        let texture = self.streamer.register_prepared(prepared)?;
        Ok(self.image_of(images, texture, settings))
    }

    /// The `Mesh` handle of the LOD `mesh` draws this frame.
    pub fn drawn_mesh(&self, mesh: MeshId) -> Option<Handle<Mesh>> {
        let serial = self.streamer.mesh_buffers(mesh).ok()?.serial;
        self.mesh_lods.get(&serial).cloned()
    }

    /// Uploads the LODs mipstream handed over as render-world-only `Mesh`
    /// assets and drops the ones it released; returns the meshes concerned
    /// (the only ones whose drawn LOD can have changed).
    pub(crate) fn apply_mesh_events(&mut self, meshes: &mut Assets<Mesh>) -> HashSet<MeshId> {
        let mut touched = HashSet::new();
        for event in self.streamer.take_mesh_events() {
            match &event {
                MeshEvent::Upload { mesh, .. } | MeshEvent::Release { mesh, .. } => {
                    touched.insert(*mesh);
                }
            }
            match event {
                MeshEvent::Upload { mesh, serial, data } => {
                    self.mesh_densities
                        .entry(mesh)
                        .or_insert_with(|| data.units_per_uv());
                    self.mesh_lods.insert(serial, meshes.add(bevy_mesh(&data)));
                    self.mesh_uploads += 1;
                }
                MeshEvent::Release { mesh, serial } => {
                    self.mesh_lods.remove(&serial);
                    if self.streamer.mesh_buffers(mesh).is_err() {
                        self.mesh_densities.remove(&mesh);
                    }
                }
            }
        }
        touched
    }
}

/// A LOD as a Bevy mesh: positions, normals, UVs and tangents (packed by
/// Bevy in that order, 48 bytes a vertex, the layout mipstream counts) and
/// `u32` indices, in the render world only.
fn bevy_mesh(data: &MeshLod) -> Mesh {
    let v = &data.vertices;
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_POSITION,
        v.iter().map(|v| v.position).collect::<Vec<_>>(),
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_NORMAL,
        v.iter().map(|v| v.normal).collect::<Vec<_>>(),
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_UV_0,
        v.iter().map(|v| v.uv).collect::<Vec<_>>(),
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_TANGENT,
        v.iter().map(|v| v.tangent).collect::<Vec<_>>(),
    )
    .with_inserted_indices(Indices::U32(data.indices.clone()))
}

/// Sets every streamed entity's `Mesh3d` to the LOD mipstream draws it
/// with (after `update`, which hands over and releases LODs).
pub(crate) fn draw_lods(
    mut ms: ResMut<Mipstream>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut drawn: Query<(&StreamedMesh, &mut Mesh3d)>,
) {
    let t0 = std::time::Instant::now();
    let touched = ms.apply_mesh_events(&mut meshes);
    // a mesh's drawn LOD changes only with an upload or a release
    if !touched.is_empty() {
        for (streamed, mut mesh3d) in &mut drawn {
            if !touched.contains(&streamed.mesh) {
                continue;
            }
            let Some(h) = ms.drawn_mesh(streamed.mesh) else {
                continue;
            };
            if mesh3d.0 != h {
                mesh3d.0 = h;
            }
        }
    }
    ms.frame_time += t0.elapsed();
}

/// The texture class a material slot's image class streams as.
fn texture_class(class: ImageClass) -> TextureClass {
    match class {
        ImageClass::Color => TextureClass::Color,
        ImageClass::Normal => TextureClass::Normal,
        ImageClass::Data => TextureClass::Data,
    }
}
