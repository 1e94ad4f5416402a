//! The books of what mipstream holds on the GPU, with no GPU in them: bytes
//! by kind and the recycle pool's order. [`super::GpuStore`] keeps the real
//! ones beside its resources; the streamer's decisions (`streamer/work.rs`)
//! run on a [`Books`] copy, applying exactly the arithmetic the store will,
//! so a decision taken on the copy holds when the store carries it out.

use crate::transcode::{gpu_level_alloc_bytes, gpu_level_bytes};

/// Everything that makes two textures interchangeable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Texel format.
    pub format: wgpu::TextureFormat,
    /// Width of mip 0.
    pub width: u32,
    /// Height of mip 0.
    pub height: u32,
    /// Mip levels.
    pub mips: u32,
    /// Array layers (faces of cubes included).
    pub layers: u32,
}

impl Shape {
    /// Bytes of texel data a texture of this shape holds.
    pub fn bytes(&self) -> u64 {
        (0..self.mips)
            .map(|m| {
                gpu_level_bytes(
                    self.format,
                    (self.width >> m).max(1),
                    (self.height >> m).max(1),
                )
            })
            .sum::<u64>()
            * self.layers as u64
    }

    /// Bytes the books count for a texture of this shape when they count
    /// what the GPU holds ([`crate::streamer::StreamerOptions::count_retiring`]):
    /// each level's rows of blocks padded to 64 bytes and at least 256
    /// bytes a level ([`gpu_level_alloc_bytes`]), an upper bound of what
    /// lavapipe allocates beyond the texels for row and level alignment (up
    /// to 940 bytes a texture, which wgpu's memory counter counts), checked
    /// shape by shape in `tests/memory_counters.rs`.
    pub fn alloc_bytes(&self) -> u64 {
        (0..self.mips)
            .map(|m| {
                gpu_level_alloc_bytes(
                    self.format,
                    (self.width >> m).max(1),
                    (self.height >> m).max(1),
                )
            })
            .sum::<u64>()
            * self.layers as u64
    }
}

/// A released texture (or any released resource) with the updates begun
/// since its release.
#[derive(Debug, Clone)]
pub(crate) struct Pooled<T> {
    /// Its shape.
    pub shape: Shape,
    /// The resource.
    pub item: T,
    /// Updates begun since it was released: at [`Pool::reuse_after`] (the
    /// engine's frames in flight) or more, no copy recorded in the update
    /// that released it reads it and no frame the renderer may still
    /// record binds it.
    pub age: u32,
}

/// The recycle pool: released textures kept, oldest first, up to a capacity,
/// for a texture of the same shape to reuse. One released in an update is
/// reused only from a later update on: that update's encoder may still copy
/// from it, and `write_texture` into it would run before those copies. A
/// renderer that records a frame while the next update runs (Bevy's
/// pipelined rendering) still binds last frame's textures for longer:
/// [`Pool::set_reuse_after`] waits that many updates. What the pool lets go
/// of (trimmed, or a texture that does not fit) comes back to the caller
/// with its age, to be counted as retiring until the GPU is done with it.
#[derive(Debug, Clone)]
pub(crate) struct Pool<T> {
    entries: Vec<Pooled<T>>,
    bytes: u64,
    capacity: u64,
    reuse_after: u32,
    /// Entries counted at [`Shape::alloc_bytes`] rather than their texels.
    padded: bool,
}

impl<T> Pool<T> {
    /// An empty pool of `capacity` bytes whose entries are reused after one submit.
    pub(crate) fn new(capacity: u64) -> Self {
        Self {
            entries: Vec::new(),
            bytes: 0,
            capacity,
            reuse_after: 1,
            padded: false,
        }
    }

    /// Counts entries at [`Shape::alloc_bytes`] (set while empty).
    pub(crate) fn set_padded(&mut self, padded: bool) {
        debug_assert!(self.entries.is_empty());
        self.padded = padded;
    }

    /// Bytes an entry of `shape` counts.
    pub(crate) fn size(&self, shape: Shape) -> u64 {
        if self.padded {
            shape.alloc_bytes()
        } else {
            shape.bytes()
        }
    }

    /// Entries become reusable `updates` updates after their release (at least 1).
    pub(crate) fn set_reuse_after(&mut self, updates: u32) {
        self.reuse_after = updates.max(1);
    }

    /// Entries pooled.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the pool is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes pooled.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Changes the capacity, letting go of the oldest entries beyond it.
    pub(crate) fn set_capacity(&mut self, bytes: u64) -> Vec<Pooled<T>> {
        self.capacity = bytes;
        self.trim(bytes)
    }

    /// Lets go of the oldest entries until the pool holds at most `bytes`;
    /// returns them.
    pub(crate) fn trim(&mut self, bytes: u64) -> Vec<Pooled<T>> {
        let mut oldest = 0;
        while self.bytes > bytes {
            self.bytes -= self.size(self.entries[oldest].shape);
            oldest += 1;
        }
        self.entries.drain(..oldest).collect()
    }

    /// A ready entry of `shape`, taken out of the pool.
    pub(crate) fn take(&mut self, shape: Shape) -> Option<T> {
        let i = self
            .entries
            .iter()
            .position(|p| p.age >= self.reuse_after && p.shape == shape)?;
        self.bytes -= self.size(shape);
        Some(self.entries.remove(i).item)
    }

    /// Pools a texture released now if it fits the capacity (making room
    /// by letting go of the oldest); returns what the pool let go of (the
    /// texture itself when it does not fit).
    pub(crate) fn put(&mut self, shape: Shape, item: T) -> Vec<Pooled<T>> {
        let bytes = self.size(shape);
        let entry = Pooled {
            shape,
            item,
            age: 0,
        };
        if bytes > self.capacity {
            return vec![entry];
        }
        let out = self.trim(self.capacity - bytes);
        self.entries.push(entry);
        self.bytes += bytes;
        out
    }

    /// An update begins: every entry one update older (those at
    /// `reuse_after` become reusable).
    pub(crate) fn age(&mut self) {
        for p in &mut self.entries {
            p.age = p.age.saturating_add(1);
        }
    }

    /// The same books without the items.
    pub(crate) fn books(&self) -> Pool<()> {
        Pool {
            entries: self
                .entries
                .iter()
                .map(|p| Pooled {
                    shape: p.shape,
                    item: (),
                    age: p.age,
                })
                .collect(),
            bytes: self.bytes,
            capacity: self.capacity,
            reuse_after: self.reuse_after,
            padded: self.padded,
        }
    }
}

/// What mipstream holds, by kind: a copy of the store's books to simulate
/// decisions on. Every method does to the bytes what the store's method of
/// the same name does.
#[derive(Debug, Clone)]
pub(crate) struct Books {
    /// Bytes of resident textures handed out.
    pub textures: u64,
    /// Bytes of mesh buffers handed out.
    pub meshes: u64,
    /// Upload bytes whose copies the GPU has not finished (or that wait for
    /// the next submit).
    pub staging: u64,
    /// Staging set aside for the loader threads to fill
    /// ([`super::staging::StagingReserve::accounted`]): counted whole.
    pub reserve: u64,
    /// The recycle pool.
    pub pool: Pool<()>,
    /// Released textures and buffers the GPU may still hold: counted until
    /// the engine's frames in flight have passed and the GPU has finished
    /// every submission that could use them.
    pub retiring: u64,
    /// Whether released resources retire (and textures count at
    /// [`Shape::alloc_bytes`]): [`crate::streamer::StreamerOptions::count_retiring`].
    /// Off, what is released leaves the books at once.
    pub count_retiring: bool,
}

impl Books {
    /// Every byte mipstream's resources take on the GPU: what it holds and
    /// what it let go of that the GPU has not given back yet. What the
    /// budget limits.
    pub(crate) fn accounted(&self) -> u64 {
        self.held() + self.retiring
    }

    /// What mipstream holds: resident textures, mesh buffers, the pool,
    /// staging and the loaders' reserve (not what is retiring).
    pub(crate) fn held(&self) -> u64 {
        self.textures + self.meshes + self.pool.bytes() + self.staging + self.reserve
    }

    /// A texture of `shape` made (from the pool when one is ready).
    pub(crate) fn create(&mut self, shape: Shape) {
        self.pool.take(shape);
        self.textures += self.pool.size(shape);
    }

    /// A texture of `shape` given back (into the pool when it fits; what
    /// the pool lets go of retires).
    pub(crate) fn release(&mut self, shape: Shape) {
        self.textures = self.textures.saturating_sub(self.pool.size(shape));
        let out = self.pool.put(shape, ());
        self.retire(out);
    }

    /// The pool trimmed to at most `bytes`; what it lets go of retires.
    pub(crate) fn trim_pool(&mut self, bytes: u64) {
        let out = self.pool.trim(bytes);
        self.retire(out);
    }

    fn retire(&mut self, out: Vec<Pooled<()>>) {
        if self.count_retiring {
            self.retiring += out.iter().map(|p| self.pool.size(p.shape)).sum::<u64>();
        }
    }

    /// `bytes` of uploads recorded.
    pub(crate) fn stage(&mut self, bytes: u64) {
        self.staging += bytes;
    }

    /// Mesh buffers of `bytes` made, with `staged` bytes written into them.
    pub(crate) fn create_mesh(&mut self, bytes: u64, staged: u64) {
        self.meshes += bytes;
        self.staging += staged;
    }

    /// Mesh buffers of `bytes` given back: retiring.
    pub(crate) fn release_mesh(&mut self, bytes: u64) {
        self.meshes = self.meshes.saturating_sub(bytes);
        if self.count_retiring {
            self.retiring += bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(width: u32) -> Shape {
        Shape {
            format: wgpu::TextureFormat::Rgba8Unorm,
            width,
            height: width,
            mips: 1,
            layers: 1,
        }
    }

    #[test]
    fn the_pool_reuses_only_after_a_submit_and_drops_the_oldest_for_room() {
        let mut pool: Pool<u32> = Pool::new(3 * 64);
        let s = shape(4); // 64 bytes
        pool.put(s, 1);
        assert_eq!(pool.take(s), None, "released this frame: not yet");
        pool.age();
        pool.put(s, 2);
        pool.put(s, 3);
        let out = pool.put(s, 4); // the oldest (1) goes for room
        assert_eq!(out.iter().map(|p| p.item).collect::<Vec<_>>(), [1]);
        assert_eq!(pool.bytes(), 3 * 64);
        pool.age();
        assert_eq!(pool.take(s), Some(2));
        let out = pool.put(shape(16), 5); // 1024 bytes: more than the capacity
        assert_eq!(out.iter().map(|p| p.item).collect::<Vec<_>>(), [5]);
        assert_eq!(pool.bytes(), 2 * 64);
        let out = pool.set_capacity(64);
        assert_eq!((out[0].item, out[0].age), (3, 1), "let go of with its age");
        assert_eq!(pool.take(s), Some(4), "the capacity drops the oldest");
        assert_eq!(pool.bytes(), 0);
    }

    #[test]
    fn a_pipelined_renderer_gets_its_released_textures_reused_only_later() {
        let mut pool: Pool<u32> = Pool::new(4 * 64);
        pool.set_reuse_after(3);
        let s = shape(4);
        pool.put(s, 1);
        for submit in 1..3 {
            pool.age();
            assert_eq!(
                pool.take(s),
                None,
                "after {submit} updates: may still be bound"
            );
        }
        pool.age();
        assert_eq!(pool.books().take(s), Some(()), "the books agree");
        assert_eq!(pool.take(s), Some(1), "after 3 updates");
    }

    #[test]
    fn books_follow_the_same_arithmetic() {
        let mut b = Books {
            textures: 0,
            meshes: 0,
            staging: 0,
            reserve: 0,
            pool: Pool::new(1000),
            retiring: 0,
            count_retiring: true,
        };
        let s = shape(4);
        b.create(s);
        b.stage(64);
        assert_eq!(b.accounted(), 128);
        b.release(s);
        assert_eq!((b.textures, b.pool.bytes(), b.accounted()), (0, 64, 128));
        b.pool.age();
        b.create(s); // from the pool: nothing new
        assert_eq!(b.accounted(), 128);
        b.create_mesh(100, 90);
        b.release_mesh(100);
        assert_eq!(b.accounted(), 128 + 90 + 100, "released buffers retire");
        assert_eq!((b.held(), b.retiring), (128 + 90, 100));
        b.release(s);
        b.trim_pool(0);
        assert_eq!(
            (b.pool.bytes(), b.retiring),
            (0, 164),
            "a trimmed pool retires"
        );
        // counted at the allocation bound: rows of blocks padded to 64
        // bytes, at least 256 a level
        assert_eq!(shape(4).alloc_bytes(), 256);
        assert_eq!(shape(8).alloc_bytes(), 8 * 64);
        assert_eq!(shape(64).alloc_bytes(), shape(64).bytes());
    }
}
