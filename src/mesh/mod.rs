//! Meshes: the streamable LOD container ([`container`]), LOD chains built
//! with meshoptimizer (`lod`, feature `gltf`), and cooked glTF scenes
//! (`scene_file`, feature `gltf`).

pub mod container;
#[cfg(feature = "gltf")]
pub mod lod;
#[cfg(feature = "gltf")]
pub mod scene_file;

pub use container::{
    write_mesh, LodData, LodInfo, MeshError, MeshFile, MeshInfo, MeshLod, Vertex, VERTEX_STRIDE,
};
