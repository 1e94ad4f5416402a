//! Texture containers: KTX2 and `.basis`, opened level by level.
//!
//! [`TextureFile::open`] reads only the metadata of a file (the KTX2 header,
//! level index, DFD, key/value data and supercompression global data, or the
//! `.basis` header and slice table) and validates every offset, length and
//! dimension against the file size and the KTX2 specification *before*
//! allocating anything sized by the file. The result is a [`TextureInfo`] plus,
//! for ETC1S, the decoded codebooks.
//!
//! [`TextureFile::read_level`] then reads exactly the byte range(s) of one mip
//! level and undoes Zstd/zlib supercompression into a buffer whose size was
//! validated at open time, so a decompression bomb stops at the declared size.
//! What comes back is a [`RawLevel`]: the level's payload bytes (still ETC1S or
//! UASTC for Basis files), ready for [`crate::transcode`].
//!
//! Both containers produce the same [`RawLevel`] layout: images in
//! layer-major, face-minor order, and for ETC1S a per-image slice table relative
//! to the level buffer, so the transcoder never needs to know the container.

mod basis_file;
mod dfd;
mod ktx2_file;

use std::fmt;
use std::sync::Arc;

use crate::format::PlainFormat;
use crate::source::{ByteSource, FileSource, ReadError};

pub use dfd::{DfdSummary, SampleSummary};

/// The 12-byte KTX2 file identifier.
pub const KTX2_MAGIC: [u8; 12] = ::ktx2::MAGIC;

/// Largest metadata section (DFD, key/value data, global data) mipstream reads.
///
/// Real files carry a few kilobytes; ETC1S codebooks of very large array
/// textures reach a few megabytes. Anything larger is refused rather than read.
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

/// Which container a texture file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// Khronos KTX 2.0.
    Ktx2,
    /// Binomial's `.basis` container.
    Basis,
}

/// What the level data holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// Basis Universal ETC1S, BasisLZ-coded: must be transcoded.
    Etc1s,
    /// Basis Universal UASTC LDR 4x4: must be transcoded.
    Uastc,
    /// A GPU format stored as is.
    Plain(PlainFormat),
}

impl Payload {
    /// Whether the payload is a Basis Universal intermediate format.
    pub fn is_basis(&self) -> bool {
        matches!(self, Self::Etc1s | Self::Uastc)
    }

    /// A short name for reports (`ETC1S`, `UASTC`, or the VkFormat name).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Etc1s => "ETC1S",
            Self::Uastc => "UASTC",
            Self::Plain(f) => f.name,
        }
    }
}

/// Supercompression applied to each level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supercompression {
    /// Stored as is.
    None,
    /// BasisLZ (ETC1S only); undone by the transcoder.
    BasisLz,
    /// Zstandard, per level.
    Zstd,
    /// zlib (deflate), per level.
    Zlib,
}

impl Supercompression {
    /// The name used by the KTX2 specification.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::BasisLz => "BasisLZ",
            Self::Zstd => "Zstandard",
            Self::Zlib => "zlib",
        }
    }
}

/// Which channels a texture carries meaningful data in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    /// One channel (red or luminance).
    R,
    /// Two channels.
    Rg,
    /// Colour without alpha.
    Rgb,
    /// Colour with alpha.
    Rgba,
}

/// Where one mip level lives in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelInfo {
    /// The mip level (0 is the largest).
    pub level: u32,
    /// Width in texels.
    pub width: u32,
    /// Height in texels (1 for 1D textures).
    pub height: u32,
    /// Byte ranges `(offset, length)` in the file holding this level; one for
    /// KTX2, one per slice for `.basis`.
    pub ranges: Vec<(u64, u64)>,
    /// Bytes of the level once supercompression is undone (0 for BasisLZ, whose
    /// size is only known after transcoding).
    pub uncompressed_len: u64,
}

impl LevelInfo {
    /// Total bytes read from the file for this level.
    pub fn stored_len(&self) -> u64 {
        self.ranges.iter().map(|r| r.1).sum()
    }
}

/// Everything known about a texture file after its metadata was validated.
#[derive(Debug, Clone)]
pub struct TextureInfo {
    /// The file's name (its path, or a label).
    pub name: String,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// KTX2 or `.basis`.
    pub container: ContainerKind,
    /// What the levels hold.
    pub payload: Payload,
    /// Per-level supercompression.
    pub supercompression: Supercompression,
    /// Width of level 0 in texels.
    pub width: u32,
    /// Height of level 0 in texels (1 for 1D textures).
    pub height: u32,
    /// Array layers (1 for a non-array texture).
    pub layers: u32,
    /// Whether the file declares an array texture (even of one layer).
    pub is_array: bool,
    /// 6 for cubemaps, 1 otherwise.
    pub faces: u32,
    /// The mip levels, level 0 first.
    pub levels: Vec<LevelInfo>,
    /// Whether colour is sRGB-encoded.
    pub srgb: bool,
    /// Whether alpha is premultiplied (DFD flag).
    pub premultiplied: bool,
    /// Which channels carry data.
    pub channels: Channels,
    /// The basic DFD block, summarised (empty for `.basis`).
    pub dfd: Option<DfdSummary>,
    /// Key/value metadata (`KTXwriter`, `KTXswizzle`, ...).
    pub key_values: Vec<(String, Vec<u8>)>,
    /// Deviations from the specification that do not affect loading.
    pub warnings: Vec<String>,
}

impl TextureInfo {
    /// Number of 2D images per level (`layers * faces`).
    pub fn images_per_level(&self) -> u32 {
        self.layers * self.faces
    }

    /// Whether the file has an alpha channel.
    pub fn has_alpha(&self) -> bool {
        self.channels == Channels::Rgba
    }
}

/// Why a texture file could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file is neither KTX2 nor `.basis`.
    #[error("{name}: not a KTX2 or .basis file (starts with {magic})")]
    NotATexture {
        /// The file's name.
        name: String,
        /// The first bytes, in hex.
        magic: String,
    },
    /// The file ends before a structure it declares.
    #[error("{name}: truncated: {what} needs bytes {offset}..{end} but the file has {size} bytes")]
    Truncated {
        /// The file's name.
        name: String,
        /// The structure that does not fit.
        what: String,
        /// Where it starts.
        offset: u64,
        /// Where it ends.
        end: u64,
        /// The file's size.
        size: u64,
    },
    /// The file breaks the specification in a way that makes it unloadable.
    #[error("{name}: invalid {container}: {reason}")]
    Invalid {
        /// The file's name.
        name: String,
        /// `KTX2` or `.basis`.
        container: &'static str,
        /// What is wrong, with the offending values.
        reason: String,
    },
    /// The file is valid but uses a feature mipstream does not load.
    #[error("{name}: unsupported: {what}")]
    Unsupported {
        /// The file's name.
        name: String,
        /// The feature found, with its value.
        what: String,
    },
}

/// Why a level could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LevelError {
    /// The level does not exist.
    #[error("{name}: level {level} requested but the file has {count} level(s)")]
    NoSuchLevel {
        /// The file's name.
        name: String,
        /// The level asked for.
        level: u32,
        /// The number of levels.
        count: u32,
    },
    /// The bytes could not be read (I/O failure, file truncated since opening).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The supercompressed level does not inflate to its declared size.
    #[error("{name}: level {level}: {scheme} data is corrupt: {reason}")]
    Corrupt {
        /// The file's name.
        name: String,
        /// The level.
        level: u32,
        /// The supercompression scheme.
        scheme: &'static str,
        /// What went wrong (including sizes).
        reason: String,
    },
}

/// One mip level's payload, read from the file and with Zstd/zlib undone.
#[derive(Clone)]
pub struct RawLevel {
    /// The mip level.
    pub level: u32,
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// The level's bytes: images in layer-major, face-minor order.
    pub data: Vec<u8>,
    /// For ETC1S: each image's slices within `data`.
    pub etc1s_slices: Vec<Etc1sSlices>,
}

impl fmt::Debug for RawLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawLevel")
            .field("level", &self.level)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bytes", &self.data.len())
            .field("images", &self.etc1s_slices.len())
            .finish()
    }
}

/// Where one ETC1S image's colour and alpha slices lie in a level buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Etc1sSlices {
    /// Offset of the colour slice in the level buffer.
    pub rgb_offset: u32,
    /// Length of the colour slice.
    pub rgb_len: u32,
    /// Offset of the alpha slice (meaningless when `alpha_len` is 0).
    pub alpha_offset: u32,
    /// Length of the alpha slice; 0 when the texture has no alpha.
    pub alpha_len: u32,
}

/// The decoded ETC1S codebooks (nothing without the `basis` feature, whose
/// absence is reported when a level is transcoded).
#[cfg(feature = "basis")]
pub(crate) type Etc1sDecoder = Arc<basisu::basislz::etc1s::Etc1sTranscoder>;
#[cfg(not(feature = "basis"))]
pub(crate) type Etc1sDecoder = ();

/// The raw ETC1S codebook sections of a file, before decoding.
#[cfg_attr(not(feature = "basis"), allow(dead_code))]
pub(crate) struct Etc1sTables<'a> {
    pub(crate) num_endpoints: u16,
    pub(crate) endpoints: &'a [u8],
    pub(crate) num_selectors: u16,
    pub(crate) selectors: &'a [u8],
    pub(crate) tables: &'a [u8],
}

impl Etc1sTables<'_> {
    /// Decodes the codebooks once, so every level read later shares them.
    #[cfg(feature = "basis")]
    pub(crate) fn decode(&self) -> Result<Etc1sDecoder, String> {
        let mut t = basisu::basislz::etc1s::Etc1sTranscoder::new();
        if !t.decode_palettes(
            self.num_endpoints as u32,
            self.endpoints,
            self.num_selectors as u32,
            self.selectors,
        ) {
            return Err(format!(
                "the ETC1S codebooks ({} endpoints, {} selectors) do not decode",
                self.num_endpoints, self.num_selectors
            ));
        }
        if !t.decode_tables(self.tables) {
            return Err("the ETC1S Huffman tables do not decode".into());
        }
        Ok(Arc::new(t))
    }

    /// Without the `basis` feature the codebooks are not decoded.
    #[cfg(not(feature = "basis"))]
    pub(crate) fn decode(&self) -> Result<Etc1sDecoder, String> {
        Ok(())
    }
}

/// Decoded ETC1S codebooks and Huffman tables, shared by every level of a file.
#[derive(Clone)]
pub struct Etc1sCodebook {
    #[cfg_attr(not(feature = "basis"), allow(dead_code))]
    pub(crate) decoder: Etc1sDecoder,
    /// Per level, per image: where the slices are, relative to the level buffer.
    pub(crate) slices: Arc<Vec<Vec<Etc1sSlices>>>,
}

impl fmt::Debug for Etc1sCodebook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Etc1sCodebook")
            .field("levels", &self.slices.len())
            .finish_non_exhaustive()
    }
}

/// An opened texture file: validated metadata plus the source its levels are
/// read from. Cheap to clone and share between threads.
#[derive(Debug, Clone)]
pub struct TextureFile {
    info: Arc<TextureInfo>,
    source: Arc<dyn ByteSource>,
    etc1s: Option<Etc1sCodebook>,
}

impl TextureFile {
    /// Opens and validates a texture file on disk.
    pub fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self, OpenError> {
        Self::open(Arc::new(FileSource::open(path)?))
    }

    /// Opens and validates a texture from any byte source. Reads only metadata.
    pub fn open(source: Arc<dyn ByteSource>) -> Result<Self, OpenError> {
        let size = source.size();
        let mut magic = [0u8; 12];
        let n = size.min(12) as usize;
        source.read_exact_at(0, &mut magic[..n])?;
        let parsed = if magic == ktx2_file::MAGIC {
            ktx2_file::parse(source.as_ref())?
        } else if n >= 2 && magic[..2] == basis_file::MAGIC {
            basis_file::parse(source.as_ref())?
        } else {
            return Err(OpenError::NotATexture {
                name: source.name().to_owned(),
                magic: magic[..n].iter().map(|b| format!("{b:02x}")).collect(),
            });
        };
        Ok(Self {
            info: Arc::new(parsed.info),
            source,
            etc1s: parsed.etc1s,
        })
    }

    /// The validated metadata.
    pub fn info(&self) -> &TextureInfo {
        &self.info
    }

    /// The source the levels are read from.
    pub fn source(&self) -> &Arc<dyn ByteSource> {
        &self.source
    }

    /// The decoded ETC1S codebooks, for ETC1S payloads.
    pub fn etc1s(&self) -> Option<&Etc1sCodebook> {
        self.etc1s.as_ref()
    }

    /// Reads one level's byte range(s) and undoes Zstd/zlib supercompression.
    pub fn read_level(&self, level: u32) -> Result<RawLevel, LevelError> {
        let info = &self.info;
        let li = info
            .levels
            .get(level as usize)
            .ok_or_else(|| LevelError::NoSuchLevel {
                name: info.name.clone(),
                level,
                count: info.levels.len() as u32,
            })?;
        let stored = self.read_ranges(li)?;
        let data = match info.supercompression {
            Supercompression::None | Supercompression::BasisLz => Ok(stored),
            Supercompression::Zstd => inflate_zstd(&stored, li.uncompressed_len),
            Supercompression::Zlib => inflate_zlib(&stored, li.uncompressed_len),
        }
        .map_err(|reason| LevelError::Corrupt {
            name: info.name.clone(),
            level,
            scheme: info.supercompression.name(),
            reason,
        })?;
        let etc1s_slices = self
            .etc1s
            .as_ref()
            .and_then(|c| c.slices.get(level as usize).cloned())
            .unwrap_or_default();
        Ok(RawLevel {
            level,
            width: li.width,
            height: li.height,
            data,
            etc1s_slices,
        })
    }

    fn read_ranges(&self, li: &LevelInfo) -> Result<Vec<u8>, ReadError> {
        if let [(offset, len)] = li.ranges[..] {
            return self.source.read_range(offset, len);
        }
        let mut out = vec![0u8; li.stored_len() as usize];
        let mut at = 0usize;
        for &(offset, len) in &li.ranges {
            let len = len as usize;
            self.source.read_exact_at(offset, &mut out[at..at + len])?;
            at += len;
        }
        Ok(out)
    }
}

/// Error helpers bound to one file being parsed.
pub(crate) struct Ctx<'a> {
    pub(crate) src: &'a dyn ByteSource,
    container: &'static str,
}

impl<'a> Ctx<'a> {
    fn new(src: &'a dyn ByteSource, container: &'static str) -> Self {
        Self { src, container }
    }

    fn invalid(&self, reason: impl Into<String>) -> OpenError {
        OpenError::Invalid {
            name: self.src.name().to_owned(),
            container: self.container,
            reason: reason.into(),
        }
    }

    fn unsupported(&self, what: impl Into<String>) -> OpenError {
        OpenError::Unsupported {
            name: self.src.name().to_owned(),
            what: what.into(),
        }
    }

    fn truncated(&self, what: impl Into<String>, offset: u64, end: u64) -> OpenError {
        OpenError::Truncated {
            name: self.src.name().to_owned(),
            what: what.into(),
            offset,
            end,
            size: self.src.size(),
        }
    }

    /// Reads a metadata section after checking it fits in the file and the cap.
    fn section(&self, what: &str, offset: u64, len: u64) -> Result<Vec<u8>, OpenError> {
        let end = offset.saturating_add(len);
        if end > self.src.size() {
            return Err(self.truncated(what, offset, end));
        }
        if len > MAX_METADATA_BYTES {
            return Err(self.unsupported(format!(
                "{what} of {len} bytes (mipstream reads at most {MAX_METADATA_BYTES})"
            )));
        }
        Ok(self.src.read_range(offset, len)?)
    }
}

/// What a container parser hands back.
struct Parsed {
    info: TextureInfo,
    etc1s: Option<Etc1sCodebook>,
}

/// The largest Zstandard context a thread keeps between levels.
const KEPT_ZSTD_CONTEXT_BYTES: usize = 16 << 20;

thread_local! {
    /// This thread's Zstandard context, reused from level to level.
    static ZSTD_CONTEXT: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Inflates a Zstd frame into exactly `expected` bytes; more or fewer is an error.
///
/// Each thread keeps one decompression context and reuses it: creating one
/// per level (as `zstd::stream::read::Decoder::new` does) allocated and
/// freed its window on every level a loader read, a few percent of a
/// loader's time on the built-in scene's UASTC+Zstd files.
fn inflate_zstd(data: &[u8], expected: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    ZSTD_CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                zstd::zstd_safe::DCtx::try_create()
                    .ok_or("zstd could not allocate a decompression context")?,
            );
        }
        let context = slot.as_mut().expect("just created");
        // a previous stream may have stopped mid-frame (a corrupt file);
        // zstd 0.13.5's `with_context` resets the session too, this does
        // not rely on it
        context
            .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
            .map_err(|code| zstd::zstd_safe::get_error_name(code).to_string())?;
        let mut decoder = zstd::stream::read::Decoder::with_context(data, context);
        let out = read_bounded(&mut decoder as &mut dyn Read, expected);
        drop(decoder);
        // a frame's window (up to 128 MiB, which a hostile header can ask
        // for) stays with the context: keep only a small one
        if slot
            .as_ref()
            .is_some_and(|c| c.sizeof() > KEPT_ZSTD_CONTEXT_BYTES)
        {
            *slot = None;
        }
        out
    })
}

/// Inflates a zlib stream into exactly `expected` bytes; more or fewer is an error.
fn inflate_zlib(data: &[u8], expected: u64) -> Result<Vec<u8>, String> {
    let mut decoder = flate2::read::ZlibDecoder::new(data);
    read_bounded(&mut decoder, expected)
}

/// Reads exactly `expected` bytes from a decoder and checks that it ends there.
///
/// The buffer grows with the data actually produced (never beyond `expected`),
/// so a small stream that claims a huge size costs only what it inflates to.
fn read_bounded(decoder: &mut dyn std::io::Read, expected: u64) -> Result<Vec<u8>, String> {
    const CHUNK: usize = 1 << 20;
    let expected = expected as usize;
    let mut out: Vec<u8> = Vec::with_capacity(expected.min(CHUNK));
    while out.len() < expected {
        let start = out.len();
        let want = (expected - start).min(CHUNK.max(start));
        out.resize(start + want, 0);
        let mut filled = start;
        while filled < out.len() {
            match decoder.read(&mut out[filled..]) {
                Ok(0) => {
                    return Err(format!(
                        "inflates to {filled} bytes but the level index declares {expected}"
                    ))
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    let mut extra = [0u8; 1];
    match decoder.read(&mut extra) {
        Ok(0) => Ok(out),
        Ok(_) => Err(format!(
            "inflates to more than the {expected} bytes the level index declares"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Level `level`'s size along one axis, for a base size `base` (KTX2 rule).
pub(crate) fn mip_extent(base: u32, level: u32) -> u32 {
    base.checked_shr(level).unwrap_or(0).max(1)
}

/// Maximum number of mip levels for a base size.
pub(crate) fn max_levels(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_inflate_stops_at_declared_size() {
        let payload = vec![7u8; 1 << 20];
        let z = zstd::bulk::compress(&payload, 3).unwrap();
        assert_eq!(inflate_zstd(&z, 1 << 20).unwrap(), payload);
        let err = inflate_zstd(&z, 1000).unwrap_err();
        assert!(err.contains("more than the 1000 bytes"), "{err}");
        let err = inflate_zstd(&z, 2 << 20).unwrap_err();
        assert!(err.contains("inflates to 1048576 bytes"), "{err}");
        assert!(inflate_zstd(b"not zstd", 10).is_err());

        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &payload).unwrap();
        let zl = enc.finish().unwrap();
        assert_eq!(inflate_zlib(&zl, 1 << 20).unwrap(), payload);
        assert!(inflate_zlib(&zl, 100).is_err());
    }

    /// The thread's context is kept for the next level while small, and
    /// dropped after a frame whose window would keep tens of MiB.
    #[test]
    fn only_a_small_zstd_context_is_kept() {
        let kept = || ZSTD_CONTEXT.with(|c| c.borrow().as_ref().map(|c| c.sizeof()));
        let small = vec![3u8; 64 << 10];
        let z = zstd::bulk::compress(&small, 3).unwrap();
        assert_eq!(inflate_zstd(&z, small.len() as u64).unwrap(), small);
        let size = kept().expect("a context kept after a small level");
        assert!(size < KEPT_ZSTD_CONTEXT_BYTES, "{size}");

        // a 32 MiB frame streamed with a 32 MiB window (no content size in
        // its header, as a streaming encoder writes it)
        let large: Vec<u8> = (0..32u32 << 20).map(|i| (i % 251) as u8).collect();
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        encoder.include_contentsize(false).unwrap();
        encoder.window_log(25).unwrap();
        std::io::Write::write_all(&mut encoder, &large).unwrap();
        let z = encoder.finish().unwrap();
        assert_eq!(inflate_zstd(&z, large.len() as u64).unwrap(), large);
        assert_eq!(kept(), None, "a context with a 32 MiB window was kept");
        assert_eq!(inflate_zstd(&z, large.len() as u64).unwrap(), large);
    }

    #[test]
    fn mip_math() {
        assert_eq!(max_levels(1, 1), 1);
        assert_eq!(max_levels(768, 512), 10);
        assert_eq!(max_levels(4096, 1), 13);
        assert_eq!(mip_extent(768, 9), 1);
        assert_eq!(mip_extent(768, 40), 1);
        assert_eq!(mip_extent(768, 2), 192);
    }
}
