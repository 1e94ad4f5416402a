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

/// A file on disk, read with positioned reads (`pread`), so concurrent readers
/// never share a file cursor.
pub struct FileSource {
    path: PathBuf,
    name: String,
    file: File,
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

impl FileSource {
    /// Opens `path` for reading. Only the file's metadata is read here.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref().to_path_buf();
        let name = path.display().to_string();
        let io = |source| ReadError::Io {
            name: name.clone(),
            source,
        };
        let file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "is a directory, not a file",
            )));
        }
        Ok(Self {
            path,
            name,
            file,
            size: meta.len(),
            served: AtomicU64::new(0),
        })
    }

    /// The path this source reads.
    pub fn path(&self) -> &Path {
        &self.path
    }
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
        read_at(&self.file, offset, buf).map_err(|source| ReadError::Io {
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
}
