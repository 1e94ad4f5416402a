//! What each call of the [`Streamer`](super::Streamer) can fail with: one
//! narrow type per operation (a lookup, a texture's registration, a mesh's,
//! a settle), and [`StreamerError`], any of them, for an engine that wants
//! one error type and `?`.

use super::{MeshId, ObjectId, TextureId};
use crate::container::OpenError;
use crate::gpu::store::AllocError;
use crate::transcode::TranscodeError;
use crate::worker::LoadError;
use std::time::Duration;

/// An id that names nothing in this streamer: removed, or issued by
/// another one. The only way a lookup (`texture_view`, `mesh_buffers`,
/// `set_object`, `register_object`, ...) fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StaleId {
    /// A texture id.
    #[error("texture {0} is not registered (removed, or from another streamer)")]
    Texture(TextureId),
    /// An object id.
    #[error("object {0} is not registered (removed, or from another streamer)")]
    Object(ObjectId),
    /// A mesh id.
    #[error("mesh {0} is not registered (removed, or from another streamer)")]
    Mesh(MeshId),
}

/// Why a texture could not be registered or prepared
/// ([`register_texture`](super::Streamer::register_texture),
/// [`register_texture_path`](super::Streamer::register_texture_path),
/// [`register_prepared`](super::Streamer::register_prepared),
/// [`TexturePreparer::prepare`](super::TexturePreparer::prepare)).
/// Nothing was registered; the streamer is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TextureRegisterError {
    /// Opening the file failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The texture's format cannot be used on this adapter.
    #[error(transparent)]
    Format(#[from] TranscodeError),
    /// Loading the always-resident tail failed.
    #[error("loading the tail of {label}: {source}")]
    Tail {
        /// The texture.
        label: String,
        /// The error (boxed: it is the largest, and rare).
        #[source]
        source: Box<LoadError>,
    },
    /// The GPU refused the tail's allocation.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// A [`PreparedTexture`](super::PreparedTexture) from a preparer of a
    /// device with other features.
    #[error("{label} was prepared for a device with other features")]
    ForeignPrepared {
        /// The texture.
        label: String,
    },
}

/// Why a mesh could not be registered or prepared
/// ([`register_mesh`](super::Streamer::register_mesh),
/// [`register_mesh_path`](super::Streamer::register_mesh_path),
/// [`PreparedMesh::prepare`](super::PreparedMesh::prepare)). Nothing was
/// registered; the streamer is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshRegisterError {
    /// Opening the mesh file failed.
    #[error(transparent)]
    Open(crate::mesh::MeshError),
    /// Reading the coarsest LOD failed.
    #[error("loading the coarsest LOD of {label}: {source}")]
    Base {
        /// The mesh.
        label: String,
        /// The error.
        #[source]
        source: crate::mesh::MeshError,
    },
    /// The GPU refused the coarsest LOD's buffers.
    #[error(transparent)]
    Alloc(#[from] AllocError),
}

/// Why a settle ([`settle`](super::Streamer::settle),
/// [`settle_canonical`](super::Streamer::settle_canonical),
/// [`finish_loads`](super::Streamer::finish_loads)) did not finish. The
/// streamer stays usable: the next `update` goes on from where it stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettleError {
    /// It did not converge (or the loads did not arrive) in time.
    #[error("residency did not settle within {0:?}")]
    Timeout(Duration),
    /// `settle_canonical` reads every tail again; reading one failed (the
    /// texture keeps what it held).
    #[error(transparent)]
    Tail(#[from] TextureRegisterError),
}

/// Any of the streamer's errors: what a call's narrow error converts into
/// with `?`, for an engine that keeps one error type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamerError {
    /// An id names nothing in this streamer.
    #[error(transparent)]
    Stale(#[from] StaleId),
    /// A texture could not be registered.
    #[error(transparent)]
    Texture(#[from] TextureRegisterError),
    /// A mesh could not be registered.
    #[error(transparent)]
    Mesh(#[from] MeshRegisterError),
    /// A settle did not finish.
    #[error(transparent)]
    Settle(#[from] SettleError),
}

impl From<OpenError> for StreamerError {
    fn from(e: OpenError) -> Self {
        Self::Texture(e.into())
    }
}
