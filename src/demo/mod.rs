//! The demo (features `scene`, `viewer`, `bench`): everything that shows
//! mipstream at work rather than being it. The built-in scene and its
//! camera path (`scene`), one scene source shared by the viewer, the
//! benchmark and the soak (`source`), the renderers (`render` for the
//! boxes, `render_mesh` for glTF materials), a cooked glTF scene streamed
//! (`gltf_scene`) and the same scene drawn uncooked for render tests
//! (`reference`), the `viewer`, the benchmark (`bench`) and the
//! `soak`, and the proof on a GPU that runs them all (`gpu_check`).
//!
//! The rule of this layer: it uses only mipstream's public API, like an
//! engine embedding it would, and nothing outside it imports it.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "gltf")]
pub mod gltf_scene;
#[cfg(feature = "bench")]
pub mod gpu_check;
mod pipeline;
#[cfg(feature = "gltf")]
pub mod reference;
pub mod render;
#[cfg(feature = "gltf")]
pub mod render_mesh;
pub mod scene;
#[cfg(feature = "bench")]
pub mod soak;
#[cfg(feature = "gltf")]
pub mod source;
#[cfg(feature = "viewer")]
pub mod viewer;
