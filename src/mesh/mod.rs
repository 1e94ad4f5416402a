//! Meshes: the streamable LOD container ([`container`]), LOD chains built
//! with meshoptimizer (`lod`, feature `gltf`) and their measured image error
//! (`image_error`, feature `gltf`), and cooked glTF scenes
//! (`scene_file`, feature `scene-file`, which `gltf` includes: an engine
//! reads the scenes `mipstream cook-gltf` writes without the cooker).

pub mod container;
#[cfg(feature = "gltf")]
pub mod image_error;
#[cfg(feature = "gltf")]
pub mod lod;
#[cfg(feature = "scene-file")]
pub mod scene_file;

pub use container::{
    units_per_uv, write_mesh, LodData, LodInfo, MeshError, MeshFile, MeshInfo, MeshLod, Vertex,
    VERTEX_STRIDE,
};
