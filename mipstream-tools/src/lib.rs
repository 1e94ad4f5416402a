//! mipstream's tools and demo (features `scene`, `gltf`, `viewer`, `bench`,
//! `cli`): everything that shows mipstream at work rather than being it. The built-in scene and its
//! camera path (`scene`), one scene source shared by the viewer, the
//! benchmark and the soak (`source`), the renderers (`render` for the
//! boxes, `render_mesh` for glTF materials), a cooked glTF scene streamed
//! (`gltf_scene`) and the same scene drawn uncooked for render tests
//! (`reference`), the `viewer`, the benchmark (`bench`) and the
//! `soak`, and the proof on a GPU that runs them all (`gpu_check`).
//!
//! The rule of this crate: it uses only mipstream's public API, like an
//! engine embedding it would. It is a crate of its own so that the library's
//! API is the runtime alone (ARCHITECTURE.md, "Crates"); the `mipstream`
//! command-line tool and the viewer example are built from it.

/// `?` on each of the streamer's narrow errors (`StaleId`,
/// `TextureRegisterError`, `MeshRegisterError`, `SettleError`) into an error
/// type that holds a `StreamerError` (`Streamer(#[from] StreamerError)`).
#[allow(unused_macros)] // by the benchmark's and the viewer's errors, when on
macro_rules! from_streamer_errors {
    ($($t:ty),* $(,)?) => {$(
        impl From<mipstream::streamer::StaleId> for $t {
            fn from(e: mipstream::streamer::StaleId) -> Self {
                mipstream::streamer::StreamerError::from(e).into()
            }
        }
        impl From<mipstream::streamer::TextureRegisterError> for $t {
            fn from(e: mipstream::streamer::TextureRegisterError) -> Self {
                mipstream::streamer::StreamerError::from(e).into()
            }
        }
        impl From<mipstream::streamer::MeshRegisterError> for $t {
            fn from(e: mipstream::streamer::MeshRegisterError) -> Self {
                mipstream::streamer::StreamerError::from(e).into()
            }
        }
        impl From<mipstream::streamer::SettleError> for $t {
            fn from(e: mipstream::streamer::SettleError) -> Self {
                mipstream::streamer::StreamerError::from(e).into()
            }
        }
    )*};
}

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
