//! Byte sources: where a texture file's bytes come from.
//!
//! Every reader in mipstream works on byte *ranges*, never on a whole file: the
//! container parser asks for the header, the level index and the metadata blocks,
//! and the streamer later asks for exactly the byte range of the mip levels it
//! wants. A [`ByteSource`] answers those requests; [`FileSource`] reads them from
//! disk with positioned reads (so a request for mip 3 of a 4096² texture never
//! touches mip 0), [`MemorySource`] serves them from a shared buffer.
//!
//! Sources are `Send + Sync` and are shared as `Arc<dyn ByteSource>` between the
//! render thread (which parses headers once) and the loader threads (which read
//! levels). A source counts the bytes it has served, so tests and reports can
//! check that only the requested ranges were read.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A failed read from a [`ByteSource`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The requested range does not lie inside the source.
    #[error("{name}: requested bytes {offset}..{end} but the source has only {size} bytes")]
    OutOfRange {
        /// The source's name (a path, or a label for memory sources).
        name: String,
        /// First byte requested.
        offset: u64,
        /// One past the last byte requested.
        end: u64,
        /// Size of the source in bytes.
        size: u64,
    },
    /// The operating system reported an error (missing file, permissions, a disk
    /// failure, a file truncated while it was being read...).
    #[error("{name}: {source}")]
    Io {
        /// The source's name.
        name: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Random access to the bytes of one file-like object.
pub trait ByteSource: Send + Sync + fmt::Debug {
    /// A human-readable name for errors and reports (usually the path).
    fn name(&self) -> &str;

    /// Total size in bytes, as known when the source was opened.
    fn size(&self) -> u64;

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// Fails with [`ReadError::OutOfRange`] when the range is not inside the
    /// source, and never reads outside it.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError>;

    /// Total number of bytes this source has served so far.
    fn bytes_read(&self) -> u64;

    /// Reads `len` bytes at `offset` into a new vector.
    ///
    /// The range is checked against [`size`](Self::size) *before* anything is
    /// allocated, so a corrupt length never causes a large allocation.
    fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, ReadError> {
        check_range(self.name(), self.size(), offset, len)?;
        let mut buf = vec![0u8; len as usize];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
}

/// Checks that `offset..offset + len` lies inside a source of `size` bytes.
pub(crate) fn check_range(name: &str, size: u64, offset: u64, len: u64) -> Result<(), ReadError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        end => Err(ReadError::OutOfRange {
            name: name.to_owned(),
            offset,
            end: end.unwrap_or(u64::MAX),
            size,
        }),
    }
}

/// A bounded set of open file handles shared by [`FileSource`]s, least
/// recently used closed first, so the number of open descriptors stays under
/// [`capacity`](Self::capacity) (plus one per read in flight) whatever the
/// number of registered textures and meshes.
///
/// Every `FileSource` uses [`FileHandles::global`] unless opened with
/// [`FileSource::open_with`]. Default capacity: 64.
pub struct FileHandles {
    state: std::sync::Mutex<HandleState>,
}

struct HandleState {
    capacity: usize,
    /// Open handles, least recently used first: (source key, handle).
    open: std::collections::VecDeque<(u64, Arc<File>)>,
    next_key: u64,
    opened: u64,
}

impl fmt::Debug for FileHandles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("FileHandles")
            .field("capacity", &s.capacity)
            .field("open", &s.open.len())
            .field("opened", &s.opened)
            .finish()
    }
}

impl FileHandles {
    /// A set that keeps at most `capacity` files open (at least 1).
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            state: std::sync::Mutex::new(HandleState {
                capacity: capacity.max(1),
                open: std::collections::VecDeque::new(),
                next_key: 0,
                opened: 0,
            }),
        })
    }

    /// The process-wide set every [`FileSource::open`] uses (capacity 64).
    pub fn global() -> &'static Arc<FileHandles> {
        static GLOBAL: std::sync::OnceLock<Arc<FileHandles>> = std::sync::OnceLock::new();
        GLOBAL.get_or_init(|| FileHandles::new(64))
    }

    /// Handles kept open at most.
    pub fn capacity(&self) -> usize {
        self.lock().capacity
    }

    /// Changes the capacity (at least 1), closing the least recently used
    /// handles beyond it.
    pub fn set_capacity(&self, capacity: usize) {
        let mut s = self.lock();
        s.capacity = capacity.max(1);
        s.trim();
    }

    /// Handles open now.
    pub fn open_count(&self) -> usize {
        self.lock().open.len()
    }

    /// Files opened so far (each reopen after an eviction counts).
    pub fn opens(&self) -> u64 {
        self.lock().opened
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HandleState> {
        // a panic while holding the lock leaves a consistent list
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn new_key(&self) -> u64 {
        let mut s = self.lock();
        s.next_key += 1;
        s.next_key
    }

    /// Keeps `file` as `key`'s handle (most recently used).
    fn keep(&self, key: u64, file: Arc<File>) {
        let mut s = self.lock();
        s.open.retain(|(k, _)| *k != key);
        s.open.push_back((key, file));
        s.opened += 1;
        s.trim();
    }

    /// `key`'s handle if it is open (marked most recently used).
    fn get(&self, key: u64) -> Option<Arc<File>> {
        let mut s = self.lock();
        let i = s.open.iter().position(|(k, _)| *k == key)?;
        let entry = s.open.remove(i)?;
        let file = entry.1.clone();
        s.open.push_back(entry);
        Some(file)
    }

    fn forget(&self, key: u64) {
        self.lock().open.retain(|(k, _)| *k != key);
    }
}

impl HandleState {
    fn trim(&mut self) {
        while self.open.len() > self.capacity {
            self.open.pop_front();
        }
    }
}

/// A file on disk, read with positioned reads (`pread`), so concurrent readers
/// never share a file cursor. The handle is borrowed from a [`FileHandles`]
/// set and reopened by path when it was closed to make room; a file whose
/// size changed since it was opened is an error, not a misread.
pub struct FileSource {
    path: PathBuf,
    name: String,
    handles: Arc<FileHandles>,
    key: u64,
    size: u64,
    served: AtomicU64,
}

impl fmt::Debug for FileSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSource")
            .field("path", &self.path)
            .field("size", &self.size)
            .field("bytes_read", &self.bytes_read())
            .finish()
    }
}

impl Drop for FileSource {
    fn drop(&mut self) {
        self.handles.forget(self.key);
    }
}

impl FileSource {
    /// Opens `path` for reading with the [global](FileHandles::global)
    /// handle set. Only the file's metadata is read here.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        Self::open_with(path, FileHandles::global().clone())
    }

    /// Opens `path` for reading with handles from `handles`.
    pub fn open_with(path: impl AsRef<Path>, handles: Arc<FileHandles>) -> Result<Self, ReadError> {
        let path = path.as_ref().to_path_buf();
        let name = path.display().to_string();
        let (file, size) = open_file(&path, &name)?;
        let key = handles.new_key();
        handles.keep(key, Arc::new(file));
        Ok(Self {
            path,
            name,
            handles,
            key,
            size,
            served: AtomicU64::new(0),
        })
    }

    /// The path this source reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open handle, reopened if it was closed to make room.
    fn file(&self) -> Result<Arc<File>, ReadError> {
        if let Some(f) = self.handles.get(self.key) {
            return Ok(f);
        }
        let (file, size) = open_file(&self.path, &self.name)?;
        if size != self.size {
            return Err(ReadError::Io {
                name: self.name.clone(),
                source: std::io::Error::other(format!(
                    "the file changed size since it was opened ({} bytes, now {size})",
                    self.size
                )),
            });
        }
        let file = Arc::new(file);
        self.handles.keep(self.key, file.clone());
        Ok(file)
    }
}

/// Opens a regular file and returns it with its size.
fn open_file(path: &Path, name: &str) -> Result<(File, u64), ReadError> {
    let io = |source| ReadError::Io {
        name: name.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory, not a file",
        )));
    }
    Ok((file, meta.len()))
}

impl ByteSource for FileSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, self.size, offset, buf.len() as u64)?;
        let file = self.file()?;
        read_at(&file, offset, buf).map_err(|source| ReadError::Io {
            name: self.name.clone(),
            source,
        })?;
        self.served.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn bytes_read(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

#[cfg(unix)]
fn read_at(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut offset: u64, mut buf: &mut [u8]) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Bytes already in memory (an asset pack, a download, a test fixture).
pub struct MemorySource {
    name: String,
    bytes: Arc<[u8]>,
    served: AtomicU64,
}

impl fmt::Debug for MemorySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySource")
            .field("name", &self.name)
            .field("size", &self.bytes.len())
            .field("bytes_read", &self.bytes_read())
            .finish()
    }
}

impl MemorySource {
    /// Wraps `bytes` under a `name` used in errors.
    pub fn new(name: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.into(),
            served: AtomicU64::new(0),
        }
    }
}

impl ByteSource for MemorySource {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, self.size(), offset, buf.len() as u64)?;
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        self.served.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn bytes_read(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_source_reads_ranges_and_counts_them() {
        let src = MemorySource::new("m", (0u8..100).collect::<Vec<_>>());
        assert_eq!(src.read_range(10, 3).unwrap(), vec![10, 11, 12]);
        assert_eq!(src.bytes_read(), 3);
        assert!(matches!(
            src.read_range(99, 2),
            Err(ReadError::OutOfRange { end: 101, .. })
        ));
        // an overflowing range is refused before any allocation
        assert!(src.read_range(u64::MAX, u64::MAX).is_err());
        assert_eq!(src.bytes_read(), 3);
    }

    #[test]
    fn file_source_reads_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, (0u8..=255).collect::<Vec<_>>()).unwrap();
        let src = FileSource::open(&path).unwrap();
        assert_eq!(src.size(), 256);
        assert_eq!(
            src.read_range(250, 6).unwrap(),
            vec![250, 251, 252, 253, 254, 255]
        );
        assert!(src.read_range(250, 7).is_err());
        assert_eq!(src.bytes_read(), 6);
        assert!(matches!(
            FileSource::open(dir.path().join("missing")),
            Err(ReadError::Io { .. })
        ));
        assert!(FileSource::open(dir.path()).is_err());
    }

    #[test]
    fn file_handles_stay_bounded_and_reopen_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let handles = FileHandles::new(3);
        let sources: Vec<_> = (0..10u8)
            .map(|i| {
                let path = dir.path().join(format!("{i}.bin"));
                std::fs::write(&path, [i; 16]).unwrap();
                FileSource::open_with(&path, handles.clone()).unwrap()
            })
            .collect();
        assert_eq!(handles.open_count(), 3);
        for round in 0..3 {
            for (i, s) in sources.iter().enumerate() {
                assert_eq!(
                    s.read_range(4, 2).unwrap(),
                    vec![i as u8; 2],
                    "round {round}"
                );
                assert!(handles.open_count() <= 3);
            }
        }
        assert_eq!(
            handles.opens(),
            10 + 30,
            "every read after the first reopened"
        );
        // recently used stays open: reading one source again opens nothing
        let before = handles.opens();
        sources[9].read_range(0, 1).unwrap();
        assert_eq!(handles.opens(), before);
        // a file replaced by one of another size is refused, not misread
        std::fs::write(dir.path().join("0.bin"), [7u8; 8]).unwrap();
        assert!(matches!(
            sources[0].read_range(0, 1),
            Err(ReadError::Io { .. })
        ));
        handles.set_capacity(1);
        assert_eq!(handles.open_count(), 1);
        drop(sources);
        assert_eq!(
            handles.open_count(),
            0,
            "dropped sources close their handles"
        );
    }
}
