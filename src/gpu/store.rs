//! The GPU store: the one place the streamer's resources are made, filled,
//! copied and given back ([`GpuStore`]), and their bytes counted.
//!
//! A texture's resident levels `[k..n)` live in one `wgpu::Texture` whose mip 0
//! is level `k`. Changing `k` means a new texture: the mips both keep are copied
//! GPU-side (`copy_texture_to_texture`), new levels are written with
//! `Queue::write_texture` (wgpu's staging belt) or copied from the staging
//! buffer a loader thread filled ([`super::staging`]), then the new texture
//! replaces the old.
//! The old one is released into a small recycle pool when it fits (the pool
//! counts against the budget) so that shapes that come and go reuse memory
//! instead of churning the allocator.
//!
//! wgpu frees a dropped texture or buffer only when the GPU has finished
//! every submission that used it, and an engine's bind groups keep it alive
//! until the engine rebuilds them. So whatever the store lets go of (a
//! texture the pool does not keep, a pool trim, mesh buffers) stays in the
//! books as *retiring*: its handle is kept for the engine's frames in flight
//! ([`GpuStore::set_frames_in_flight`], counted in updates), then dropped,
//! and its bytes leave the books in a `Queue::on_submitted_work_done`
//! callback registered at that moment, which wgpu runs after the
//! submissions that could still use it have finished (at a later
//! non-blocking poll, or any submit, the engine's included). Nothing waits.
//!
//! Every allocation runs inside an out-of-memory error scope and is reported
//! as [`AllocError`] instead of panicking. A test hook can make the next
//! allocations fail as if the GPU were out of memory.

pub(crate) use super::books::Shape;
use super::books::{Books, Pool, Pooled};
use super::feedback::FeedbackRing;
use super::scope::{catching, Catch, Caught};
use super::staging::StagingReserve;
use super::upload::GpuTexture;
use crate::fault::{FaultKind, Faults};
use crate::mesh::MeshLod;
use crate::transcode::{LevelImage, StagedBuffer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One mesh LOD on the GPU: its vertex and index buffers, or (with
/// [`crate::streamer::MeshStorage::Engine`]) the engine's copy of it, known
/// by its serial.
#[derive(Debug)]
pub struct GpuMesh {
    /// mipstream's buffers; `None` when the engine holds the LOD.
    pub buffers: Option<MeshBuffers>,
    /// The LOD held.
    pub lod: u32,
    /// Indices to draw.
    pub index_count: u32,
    /// Bytes of both buffers (48 per vertex, 4 per index).
    pub bytes: u64,
    /// Unique among the store's meshes: the key of an engine-held LOD in
    /// [`crate::streamer::MeshEvent`]s.
    pub serial: u64,
}

/// The buffers of a mesh LOD mipstream holds.
#[derive(Debug)]
pub struct MeshBuffers {
    /// Vertices ([`crate::mesh::Vertex`], 48 bytes each).
    pub vertex: wgpu::Buffer,
    /// `u32` indices, three per triangle.
    pub index: wgpu::Buffer,
}

/// Bytes the vertex and index buffers of a mesh LOD with `vertices` and
/// `indices` take (48 and 4 bytes each; wgpu wants non-empty buffers): what
/// the books count for it, with either [`MeshStorage`](crate::streamer::MeshStorage).
/// (Not yet rounded up to the driver's alignment, as textures are with
/// [`crate::streamer::StreamerOptions::count_retiring`].)
pub(crate) fn mesh_buffer_sizes(vertices: u64, indices: u64) -> [u64; 2] {
    [
        (vertices * std::mem::size_of::<crate::mesh::Vertex>() as u64).max(4),
        (indices * 4).max(4),
    ]
}

fn mesh_sizes(data: &MeshLod) -> [u64; 2] {
    mesh_buffer_sizes(data.vertices.len() as u64, data.indices.len() as u64)
}

/// A failed GPU allocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The GPU reported out of memory (or a test injected it).
    #[error("out of GPU memory allocating {bytes} bytes for {label}")]
    OutOfMemory {
        /// What was being allocated.
        label: String,
        /// Its size.
        bytes: u64,
    },
    /// wgpu rejected the descriptor.
    #[error("wgpu rejected {label}: {message}")]
    Validation {
        /// What was being allocated.
        label: String,
        /// wgpu's message.
        message: String,
    },
}

/// Creates, recycles, fills and copies the textures holding resident mips
/// and the buffers holding mesh LODs; counts their bytes. The only core code
/// that calls the `wgpu::Device` and `wgpu::Queue`.
///
/// Copies go into one encoder per frame, kept here and submitted by
/// [`submit`](Self::submit); uploads go through `Queue::write_texture`, or
/// are copies from loader-filled staging in that encoder.
#[derive(Debug)]
pub(crate) struct GpuStore {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Released textures, reused by shape after the next submit.
    pool: Pool<wgpu::Texture>,
    /// The frame's copies, recorded by `copy_mips`, submitted by `submit`.
    encoder: Option<wgpu::CommandEncoder>,
    /// Filled by `stage` and `create_mesh`, emptied by the queue's
    /// finished-work callbacks.
    staging_in_flight: Arc<AtomicU64>,
    /// Staging bytes recorded since the last submit.
    unsubmitted_staging: u64,
    /// Loader-filled staging set aside out of the budget.
    reserve: Arc<StagingReserve>,
    /// Loader-staged levels copied from since the last submit: kept until
    /// the GPU has finished that submission.
    unsubmitted_staged: Vec<Arc<dyn StagedBuffer>>,
    inject_oom: u32,
    faults: Option<Arc<Faults>>,
    live_textures: u64,
    live_meshes: u64,
    /// The last mesh serial handed out.
    mesh_serial: u64,
    /// Released resources kept until the engine's frames in flight have
    /// passed, with their bytes and the updates begun since their release.
    retiring: Vec<Retiring>,
    /// Bytes in `retiring`.
    retiring_held: u64,
    /// Bytes of retired resources dropped whose submissions the GPU has
    /// not finished: emptied by finished-work callbacks.
    retiring_in_flight: Arc<AtomicU64>,
    /// Textures among those dropped and not yet given back.
    retiring_textures_in_flight: Arc<AtomicU64>,
    /// Updates an engine may still bind a texture after the update that
    /// replaced it.
    frames_in_flight: u32,
    /// Whether what is released retires in the books (and textures count
    /// at their allocation bound): [`crate::streamer::StreamerOptions::count_retiring`].
    count_retiring: bool,
    /// Blocking waits for the GPU so far ([`GpuStore::wait_idle`]).
    waits: u64,
    /// GPU feedback's buffers, once the engine asked for them.
    feedback: Option<FeedbackRing>,
}

/// A released resource the GPU may still use, kept until the engine's
/// frames in flight have passed.
#[derive(Debug)]
struct Retiring {
    bytes: u64,
    /// Updates begun since its release.
    age: u32,
    /// Held only so that dropping it is ours to time.
    _item: Retired,
}

#[derive(Debug)]
enum Retired {
    Texture(#[allow(dead_code)] wgpu::Texture),
    Mesh(#[allow(dead_code)] Option<MeshBuffers>),
}

impl GpuStore {
    /// A store on `device`, with a recycle pool of at most `pool_capacity` bytes.
    pub(crate) fn new(device: wgpu::Device, queue: wgpu::Queue, pool_capacity: u64) -> Self {
        Self {
            device,
            queue,
            pool: Pool::new(pool_capacity),
            encoder: None,
            staging_in_flight: Arc::new(AtomicU64::new(0)),
            unsubmitted_staging: 0,
            reserve: Arc::new(StagingReserve::new(0)),
            unsubmitted_staged: Vec::new(),
            inject_oom: 0,
            faults: None,
            live_textures: 0,
            live_meshes: 0,
            mesh_serial: 0,
            retiring: Vec::new(),
            retiring_held: 0,
            retiring_in_flight: Arc::new(AtomicU64::new(0)),
            retiring_textures_in_flight: Arc::new(AtomicU64::new(0)),
            frames_in_flight: 1,
            count_retiring: false,
            waits: 0,
            feedback: None,
        }
    }

    /// Blocking waits for the GPU made so far: [`wait_idle`](Self::wait_idle)
    /// is the store's only one (error scopes resolve at once in wgpu 30).
    pub(crate) fn waits(&self) -> u64 {
        self.waits
    }

    /// Released resources retire in the books until the GPU gives them
    /// back, and textures and staging count at their allocation bound
    /// ([`crate::streamer::StreamerOptions::count_retiring`]); set before anything is
    /// created or pooled.
    pub(crate) fn set_count_retiring(&mut self, on: bool) {
        debug_assert!(self.live_textures == 0 && self.pool.is_empty());
        self.count_retiring = on;
        self.pool.set_padded(on);
    }

    /// Bytes the books count for a texture of `shape`.
    fn size(&self, shape: Shape) -> u64 {
        self.pool.size(shape)
    }

    /// The device.
    pub(crate) fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The device's features (which compressed formats it samples).
    pub(crate) fn features(&self) -> wgpu::Features {
        self.device.features()
    }

    /// Bytes held by textures handed out and not yet released.
    pub(crate) fn texture_bytes(&self) -> u64 {
        self.live_textures
    }

    /// Bytes held in the recycle pool.
    pub(crate) fn pool_bytes(&self) -> u64 {
        self.pool.bytes()
    }

    /// Staging bytes submitted whose copies the GPU has not finished.
    pub(crate) fn staging_bytes(&self) -> u64 {
        self.staging_in_flight.load(Ordering::Acquire)
    }

    /// Bytes held by mesh buffers handed out and not yet released.
    pub(crate) fn mesh_bytes(&self) -> u64 {
        self.live_meshes
    }

    /// The staging reserve the loader threads fill
    /// ([`super::staging::LoaderStaging`]); 0 bytes unless set.
    pub(crate) fn staging_reserve(&self) -> &Arc<StagingReserve> {
        &self.reserve
    }

    /// Every byte of GPU memory mipstream's resources take: what it holds
    /// and what it released that the GPU has not given back yet.
    pub(crate) fn accounted_bytes(&self) -> u64 {
        self.held_bytes() + self.retiring_bytes()
    }

    /// What mipstream holds through this store: resident textures, mesh
    /// buffers, the pool, staging, the loaders' reserve and GPU feedback's
    /// buffers.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.live_textures
            + self.live_meshes
            + self.pool.bytes()
            + self.staging_bytes()
            + self.fixed_bytes()
    }

    /// Released textures and buffers the GPU may still hold: kept for the
    /// engine's frames in flight, or dropped and waiting for the GPU to
    /// finish the submissions that used them.
    pub(crate) fn retiring_bytes(&self) -> u64 {
        self.retiring_held + self.retiring_in_flight.load(Ordering::Acquire)
    }

    /// Textures in the pool and retiring (kept for the engine's frames in
    /// flight, or dropped and not yet given back): with the resident ones,
    /// the wgpu textures mipstream answers for.
    pub(crate) fn released_textures(&self) -> u64 {
        let kept = self
            .retiring
            .iter()
            .filter(|r| matches!(r._item, Retired::Texture(_)))
            .count();
        (self.pool.len() + kept) as u64 + self.retiring_textures_in_flight.load(Ordering::Acquire)
    }

    /// GPU feedback's buffers (`gpu/feedback.rs`), once enabled.
    pub(crate) fn feedback(&mut self) -> &mut Option<FeedbackRing> {
        &mut self.feedback
    }

    /// See [`Self::feedback`].
    pub(crate) fn feedback_ring(&self) -> Option<&FeedbackRing> {
        self.feedback.as_ref()
    }

    /// Bytes set aside whole: the loaders' staging reserve and feedback's.
    pub(crate) fn fixed_bytes(&self) -> u64 {
        self.reserve.accounted() + self.feedback.as_ref().map_or(0, FeedbackRing::bytes)
    }

    /// A copy of the books, to simulate decisions on.
    pub(crate) fn books(&self) -> Books {
        Books {
            textures: self.live_textures,
            meshes: self.live_meshes,
            staging: self.staging_bytes(),
            reserve: self.fixed_bytes(),
            pool: self.pool.books(),
            retiring: self.retiring_bytes(),
            count_retiring: self.count_retiring,
        }
    }

    /// Changes the pool capacity, letting go of pooled textures beyond it.
    pub(crate) fn set_pool_capacity(&mut self, bytes: u64) {
        let out = self.pool.set_capacity(bytes);
        self.retire_pooled(out);
    }

    /// Released textures are reused, and released resources dropped, only
    /// `updates` updates after their release (at least 1): the engine's
    /// frames that may still bind them.
    pub(crate) fn set_frames_in_flight(&mut self, updates: u32) {
        self.pool.set_reuse_after(updates);
        self.frames_in_flight = updates.max(1);
    }

    /// Lets go of pooled textures until the pool holds at most `bytes`
    /// (they retire).
    pub(crate) fn trim_pool(&mut self, bytes: u64) {
        let out = self.pool.trim(bytes);
        self.retire_pooled(out);
    }

    fn retire_pooled(&mut self, out: Vec<Pooled<wgpu::Texture>>) {
        if !self.count_retiring {
            return; // dropped: wgpu frees them when the GPU is done
        }
        for p in out {
            let bytes = self.size(p.shape);
            self.retiring_held += bytes;
            self.retiring.push(Retiring {
                bytes,
                age: p.age,
                _item: Retired::Texture(p.item),
            });
        }
    }

    /// An update begins: released resources one update older; those the
    /// engine's frames no longer bind are dropped, and their bytes leave
    /// the books once the GPU has finished every submission so far (a
    /// finished-work callback: never waited on).
    pub(crate) fn begin_update(&mut self) {
        if self.count_retiring {
            self.pool.age();
        }
        for r in &mut self.retiring {
            r.age = r.age.saturating_add(1);
        }
        let after = self.frames_in_flight;
        self.drop_retired(|r| r.age >= after);
    }

    /// Drops every retiring resource now (their bytes still wait for the
    /// GPU): for a caller that has just made sure the engine binds none.
    pub(crate) fn drop_all_retiring(&mut self) {
        self.drop_retired(|_| true);
    }

    fn drop_retired(&mut self, ready: impl Fn(&Retiring) -> bool) {
        let (mut bytes, mut textures) = (0, 0);
        self.retiring.retain(|r| {
            let go = ready(r);
            if go {
                bytes += r.bytes;
                textures += matches!(r._item, Retired::Texture(_)) as u64;
            }
            !go
        });
        if bytes > 0 || textures > 0 {
            self.retiring_held -= bytes;
            self.retiring_in_flight.fetch_add(bytes, Ordering::AcqRel);
            self.retiring_textures_in_flight
                .fetch_add(textures, Ordering::AcqRel);
            let counter = self.retiring_in_flight.clone();
            let count = self.retiring_textures_in_flight.clone();
            self.queue.on_submitted_work_done(move || {
                counter.fetch_sub(bytes, Ordering::AcqRel);
                count.fetch_sub(textures, Ordering::AcqRel);
            });
        }
    }

    /// Makes the next `count` allocations fail as out-of-memory (a test hook
    /// for fault tolerance).
    pub(crate) fn inject_out_of_memory(&mut self, count: u32) {
        self.inject_oom += count;
    }

    /// Makes allocations fail as out-of-memory at the rate of `faults`.
    pub(crate) fn set_faults(&mut self, faults: Option<Arc<Faults>>) {
        self.faults = faults;
    }

    /// Whether the next allocation is to fail (a counted or a random fault).
    fn injected_oom(&mut self) -> bool {
        if self.inject_oom > 0 {
            self.inject_oom -= 1;
            return true;
        }
        self.faults
            .as_ref()
            .is_some_and(|f| f.roll(FaultKind::OutOfMemory))
    }

    /// A texture holding file levels `first..` in `shape`, with a view of
    /// `dimension` over every mip: from the pool when one matches, else new.
    pub(crate) fn create_texture(
        &mut self,
        label: &str,
        shape: Shape,
        first: u32,
        dimension: wgpu::TextureViewDimension,
    ) -> Result<GpuTexture, AllocError> {
        let texture = self.create(label, shape)?;
        let view = texture.create_view(&wgpu::TextureViewDescriptor {
            label: Some(label),
            dimension: Some(dimension),
            ..Default::default()
        });
        Ok(GpuTexture {
            texture,
            view,
            view_dimension: dimension,
            first_level: first,
            level_count: shape.mips,
            format: shape.format,
            bytes: self.size(shape),
        })
    }

    /// A texture of `shape`: from the pool when one matches, else new.
    fn create(&mut self, label: &str, shape: Shape) -> Result<wgpu::Texture, AllocError> {
        let bytes = self.size(shape);
        if self.injected_oom() {
            return Err(AllocError::OutOfMemory {
                label: label.to_owned(),
                bytes,
            });
        }
        if let Some(texture) = self.pool.take(shape) {
            self.live_textures += bytes;
            return Ok(texture);
        }
        let (texture, caught) = catching(&self.device, Catch::Both, || {
            self.device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d {
                    width: shape.width,
                    height: shape.height,
                    depth_or_array_layers: shape.layers,
                },
                mip_level_count: shape.mips,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: shape.format,
                usage: wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_DST
                    | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            })
        });
        caught.into_result(label, bytes)?;
        self.live_textures += bytes;
        Ok(texture)
    }

    /// Vertex and index buffers for one mesh LOD, filled with its data
    /// (`write_buffer`: the bytes count as staging until the next
    /// [`submit`](Self::submit)'s work is done). Both buffers are created in
    /// out-of-memory and validation error scopes; a failure creates nothing.
    pub(crate) fn create_mesh(
        &mut self,
        label: &str,
        data: &MeshLod,
    ) -> Result<GpuMesh, AllocError> {
        let vertex_bytes: &[u8] = bytemuck::cast_slice(&data.vertices);
        let index_bytes: &[u8] = bytemuck::cast_slice(&data.indices);
        // wgpu wants sizes in multiples of 4 (both are) and non-zero buffers
        let sizes = mesh_sizes(data);
        let bytes = sizes[0] + sizes[1];
        if self.injected_oom() {
            return Err(AllocError::OutOfMemory {
                label: label.to_owned(),
                bytes,
            });
        }
        let make = |suffix: &str, size: u64, usage: wgpu::BufferUsages| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{label} {suffix}")),
                size,
                usage: usage | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let ((vertex, index), caught) = catching(&self.device, Catch::Both, || {
            (
                make("vertices", sizes[0], wgpu::BufferUsages::VERTEX),
                make("indices", sizes[1], wgpu::BufferUsages::INDEX),
            )
        });
        caught.into_result(label, bytes)?;
        let ((), caught) = catching(&self.device, Catch::OutOfMemory, || {
            self.queue.write_buffer(&vertex, 0, vertex_bytes);
            self.queue.write_buffer(&index, 0, index_bytes);
        });
        if caught.out_of_memory {
            return Err(AllocError::OutOfMemory {
                label: format!("{label} (staging)"),
                bytes,
            });
        }
        let staged = (vertex_bytes.len() + index_bytes.len()) as u64;
        self.staging_in_flight.fetch_add(staged, Ordering::AcqRel);
        self.unsubmitted_staging += staged;
        self.live_meshes += bytes;
        self.mesh_serial += 1;
        Ok(GpuMesh {
            buffers: Some(MeshBuffers { vertex, index }),
            lod: data.lod,
            index_count: data.indices.len() as u32,
            bytes,
            serial: self.mesh_serial,
        })
    }

    /// Counts a mesh LOD the engine uploads and holds itself (its buffers
    /// in the engine's layout of the same 48-byte vertices and `u32`
    /// indices): the same bytes [`create_mesh`](Self::create_mesh) would
    /// allocate, no buffers and no staging here. Injected out-of-memory
    /// faults refuse it as they refuse buffers.
    pub(crate) fn count_engine_mesh(
        &mut self,
        label: &str,
        data: &MeshLod,
    ) -> Result<GpuMesh, AllocError> {
        let bytes = mesh_sizes(data).iter().sum();
        if self.injected_oom() {
            return Err(AllocError::OutOfMemory {
                label: label.to_owned(),
                bytes,
            });
        }
        self.live_meshes += bytes;
        self.mesh_serial += 1;
        Ok(GpuMesh {
            buffers: None,
            lod: data.lod,
            index_count: data.indices.len() as u32,
            bytes,
            serial: self.mesh_serial,
        })
    }

    /// Gives mesh buffers back: retiring until the engine's frames in
    /// flight have passed and the GPU is done (an engine-held LOD too: the
    /// engine frees its copy on the same frames).
    pub(crate) fn release_mesh(&mut self, mesh: GpuMesh) {
        self.live_meshes = self.live_meshes.saturating_sub(mesh.bytes);
        if !self.count_retiring {
            return; // dropped: wgpu frees them when the GPU is done
        }
        self.retiring_held += mesh.bytes;
        self.retiring.push(Retiring {
            bytes: mesh.bytes,
            age: 0,
            _item: Retired::Mesh(mesh.buffers),
        });
    }

    /// Whether recorded copies or uploads wait for a [`submit`](Self::submit).
    pub(crate) fn has_unsubmitted(&self) -> bool {
        self.unsubmitted_staging > 0
            || self.encoder.is_some()
            || !self.unsubmitted_staged.is_empty()
    }

    /// Gives a texture back: into the pool if it fits, else retiring (and
    /// what the pool lets go of for room too).
    pub(crate) fn release(&mut self, texture: GpuTexture) {
        let t = texture.texture;
        let shape = Shape {
            format: t.format(),
            width: t.width(),
            height: t.height(),
            mips: t.mip_level_count(),
            layers: t.depth_or_array_layers(),
        };
        self.live_textures = self.live_textures.saturating_sub(self.size(shape));
        let out = self.pool.put(shape, t);
        self.retire_pooled(out);
    }

    /// Records copies of `count` mips of `from` (starting at its mip
    /// `from_mip`) into `to` (starting at its mip `to_mip`), in the frame's
    /// encoder.
    pub(crate) fn copy_mips(
        &mut self,
        from: &GpuTexture,
        from_mip: u32,
        to: &wgpu::Texture,
        to_mip: u32,
        count: u32,
    ) {
        let (bw, bh) = from.format.block_dimensions();
        let device = &self.device;
        let encoder = self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("mipstream copies"),
            })
        });
        for m in 0..count {
            let w = (from.texture.width() >> (from_mip + m)).max(1);
            let h = (from.texture.height() >> (from_mip + m)).max(1);
            encoder.copy_texture_to_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: &from.texture,
                    mip_level: from_mip + m,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyTextureInfo {
                    texture: to,
                    mip_level: to_mip + m,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::Extent3d {
                    width: w.div_ceil(bw) * bw,
                    height: h.div_ceil(bh) * bh,
                    depth_or_array_layers: from.texture.depth_or_array_layers(),
                },
            );
        }
    }

    /// Uploads `uploads` (each a level image with the texture and mip to write
    /// it to). Texels in CPU memory go through `Queue::write_texture`, whose
    /// staging wgpu manages: the writes run at the start of the next
    /// [`submit`](Self::submit), before its copies (they touch other mips);
    /// their bytes count as staging until the GPU has finished that
    /// submission. Texels a loader thread staged ([`LevelImage::staged`]) are
    /// copied from their buffer in the frame's encoder: no texel byte is
    /// touched here, and their bytes are already in the reserve. Returns the
    /// bytes written with `write_texture`.
    ///
    /// (`write_texture` takes tight or padded rows on every backend; wgpu's
    /// GL backend mishandles padded rows of compressed formats in
    /// `copy_buffer_to_texture`, so loaders stage those only tight there.)
    pub(crate) fn stage(
        &mut self,
        uploads: &[(&wgpu::Texture, u32, &LevelImage)],
        label: &str,
    ) -> Result<u64, AllocError> {
        let size: u64 = uploads
            .iter()
            .map(|(_, _, l)| {
                if self.count_retiring {
                    l.staging_alloc_bytes()
                } else {
                    l.unstaged_bytes()
                }
            })
            .sum();
        if uploads.is_empty() {
            return Ok(0);
        }
        if self.injected_oom() {
            return Err(AllocError::OutOfMemory {
                label: format!("{label} (staging)"),
                bytes: size,
            });
        }
        let ((), caught) = catching(&self.device.clone(), Catch::OutOfMemory, || {
            for (texture, mip, l) in uploads {
                let device = &self.device;
                super::upload::put_level(&self.queue, texture, *mip, l, &mut self.encoder, || {
                    device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("mipstream copies"),
                    })
                });
                if let Some(staged) = &l.staged {
                    self.unsubmitted_staged.push(staged.clone());
                }
            }
        });
        if caught.out_of_memory {
            return Err(AllocError::OutOfMemory {
                label: format!("{label} (staging)"),
                bytes: size,
            });
        }
        self.staging_in_flight.fetch_add(size, Ordering::AcqRel);
        self.unsubmitted_staging += size;
        Ok(size)
    }

    /// Submits the frame's copies and uploads; staging they used is released
    /// once the GPU has finished them.
    pub(crate) fn submit(&mut self) {
        let encoder = self.encoder.take().unwrap_or_else(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("mipstream uploads"),
                })
        });
        self.queue.submit([encoder.finish()]);
        if !self.count_retiring {
            // pooled textures ripen by mipstream's submits
            self.pool.age();
        }
        let size = std::mem::take(&mut self.unsubmitted_staging);
        if size > 0 {
            let counter = self.staging_in_flight.clone();
            self.queue.on_submitted_work_done(move || {
                counter.fetch_sub(size, Ordering::AcqRel);
            });
        }
        let staged = std::mem::take(&mut self.unsubmitted_staged);
        if !staged.is_empty() {
            // the reserve bytes come back once the GPU has copied them
            self.queue.on_submitted_work_done(move || drop(staged));
        }
    }

    /// Runs finished-work callbacks without blocking (returns staging bytes).
    pub(crate) fn poll(&self) {
        let _ = self.device.poll(wgpu::PollType::Poll);
    }

    /// Blocks until the GPU has finished everything submitted, the queue's
    /// pending writes included: they are submitted first (an empty submit
    /// flushes them). Left pending, the engine's buffer writes would be
    /// flushed by the next `on_submitted_work_done`, and whether the GPU had
    /// finished them by the next non-blocking poll would decide what the
    /// books count: lockstep runs would not repeat.
    pub(crate) fn wait_idle(&mut self) {
        self.waits += 1;
        self.queue.submit(std::iter::empty());
        let _ = self.device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        });
    }
}

impl Caught {
    /// What an allocation of `bytes` for `label` caught, as its error.
    fn into_result(self, label: &str, bytes: u64) -> Result<(), AllocError> {
        if self.out_of_memory {
            return Err(AllocError::OutOfMemory {
                label: label.to_owned(),
                bytes,
            });
        }
        match self.validation {
            Some(message) => Err(AllocError::Validation {
                label: label.to_owned(),
                message,
            }),
            None => Ok(()),
        }
    }
}
