//! Writing KTX2 files from the Basis Universal encoder's `.basis` output.
//!
//! The `basis-universal` crate's encoder produces `.basis` files only. This
//! module repackages one into a KTX2 file as the specification lays it out:
//! header, level index, a basic DFD (ETC1S colour model 163 or UASTC 166), a
//! `KTXwriter` key/value entry, for ETC1S the BasisLZ global data (image
//! descriptors, codebooks, Huffman tables), and the levels from the smallest to
//! the largest, UASTC levels Zstandard-compressed. The `.basis` file is parsed
//! with mipstream's own reader, so its slices are validated on the way.

use crate::container::{Channels, Payload, TextureFile};
use crate::source::MemorySource;
use std::sync::Arc;

/// How the KTX2 file is to be written.
#[derive(Debug, Clone)]
pub(crate) struct WriteOptions {
    /// sRGB transfer function in the DFD.
    pub(crate) srgb: bool,
    /// Zstandard level for UASTC levels (`None`: store uncompressed).
    pub(crate) zstd_level: Option<i32>,
    /// The `KTXwriter` value.
    pub(crate) writer: String,
}

/// Repackages a `.basis` file as KTX2.
pub(crate) fn basis_to_ktx2(basis: &[u8], opts: &WriteOptions) -> Result<Vec<u8>, String> {
    let file = TextureFile::open(Arc::new(MemorySource::new(
        "encoder output",
        basis.to_vec(),
    )))
    .map_err(|e| format!("the encoder produced an unreadable .basis file: {e}"))?;
    let info = file.info();
    let levels: Vec<Vec<u8>> = (0..info.levels.len() as u32)
        .map(|l| file.read_level(l).map(|r| r.data))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let etc1s = info.payload == Payload::Etc1s;
    let alpha = info.channels == Channels::Rgba;
    let stored: Vec<Vec<u8>> = match (etc1s, opts.zstd_level) {
        (false, Some(level)) => levels
            .iter()
            .map(|l| zstd::bulk::compress(l, level).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?,
        _ => levels.clone(),
    };
    let scheme = match (etc1s, opts.zstd_level) {
        (true, _) => 1,
        (false, Some(_)) => 2,
        (false, None) => 0,
    };
    let dfd = dfd(etc1s, alpha, opts.srgb);
    let kvd = kvd(&[("KTXwriter", opts.writer.as_str())]);
    let sgd = if etc1s {
        basislz_global_data(basis, &file)?
    } else {
        Vec::new()
    };

    let n = levels.len();
    let index_end = 80 + 24 * n;
    let dfd_off = index_end;
    let kvd_off = dfd_off + dfd.len();
    let mut at = kvd_off + kvd.len();
    let sgd_off = if sgd.is_empty() {
        0
    } else {
        at = at.next_multiple_of(8);
        let o = at;
        at += sgd.len();
        o
    };
    // levels are stored smallest first; uncompressed UASTC aligns to 16 bytes
    let align = if scheme == 0 { 16 } else { 1 };
    let mut offsets = vec![0usize; n];
    for l in (0..n).rev() {
        at = at.next_multiple_of(align);
        offsets[l] = at;
        at += stored[l].len();
    }

    let mut out = vec![0u8; at];
    let put = |out: &mut Vec<u8>, o: usize, b: &[u8]| out[o..o + b.len()].copy_from_slice(b);
    put(&mut out, 0, &crate::container::KTX2_MAGIC);
    let header: [u32; 9] = [
        0, // vkFormat UNDEFINED
        1, // typeSize
        info.width,
        info.height,
        0,
        if info.is_array { info.layers } else { 0 },
        info.faces,
        n as u32,
        scheme,
    ];
    for (i, v) in header.iter().enumerate() {
        put(&mut out, 12 + 4 * i, &v.to_le_bytes());
    }
    let index: [u32; 4] = [
        dfd_off as u32,
        dfd.len() as u32,
        kvd_off as u32,
        kvd.len() as u32,
    ];
    for (i, v) in index.iter().enumerate() {
        put(&mut out, 48 + 4 * i, &v.to_le_bytes());
    }
    put(&mut out, 64, &(sgd_off as u64).to_le_bytes());
    put(&mut out, 72, &(sgd.len() as u64).to_le_bytes());
    for l in 0..n {
        let uncompressed = if etc1s { 0 } else { levels[l].len() as u64 };
        let e = 80 + 24 * l;
        put(&mut out, e, &(offsets[l] as u64).to_le_bytes());
        put(&mut out, e + 8, &(stored[l].len() as u64).to_le_bytes());
        put(&mut out, e + 16, &uncompressed.to_le_bytes());
        put(&mut out, offsets[l], &stored[l]);
    }
    put(&mut out, dfd_off, &dfd);
    put(&mut out, kvd_off, &kvd);
    if sgd_off != 0 {
        put(&mut out, sgd_off, &sgd);
    }
    Ok(out)
}

/// The DFD: total size, then one basic block with one or two samples.
fn dfd(etc1s: bool, alpha: bool, srgb: bool) -> Vec<u8> {
    // (channel id, bit offset, bit length - 1)
    let samples: Vec<(u8, u16, u8)> = match (etc1s, alpha) {
        (true, false) => vec![(0, 0, 63)],
        (true, true) => vec![(0, 0, 63), (15, 64, 63)],
        (false, false) => vec![(0, 0, 127)],
        (false, true) => vec![(3, 0, 127)],
    };
    let block_len = 24 + 16 * samples.len();
    let mut d = Vec::with_capacity(4 + block_len);
    d.extend_from_slice(&((4 + block_len) as u32).to_le_bytes());
    d.extend_from_slice(&0u32.to_le_bytes()); // vendor 0, type 0
    d.extend_from_slice(&2u16.to_le_bytes()); // version 2
    d.extend_from_slice(&(block_len as u16).to_le_bytes());
    d.push(if etc1s { 163 } else { 166 }); // colour model
    d.push(1); // primaries BT.709
    d.push(if srgb { 2 } else { 1 }); // transfer function
    d.push(0); // flags: straight alpha
    d.extend_from_slice(&[3, 3, 0, 0]); // 4x4 blocks
    let mut planes = [0u8; 8];
    if !etc1s {
        planes[0] = 16; // UASTC: 16 bytes per block
    }
    d.extend_from_slice(&planes);
    for (channel, offset, len) in samples {
        d.extend_from_slice(&offset.to_le_bytes());
        d.push(len);
        d.push(channel);
        d.extend_from_slice(&[0; 4]); // sample positions
        d.extend_from_slice(&0u32.to_le_bytes()); // lower
        d.extend_from_slice(&u32::MAX.to_le_bytes()); // upper
    }
    d
}

/// Key/value data: entries sorted by key, each padded to 4 bytes.
fn kvd(entries: &[(&str, &str)]) -> Vec<u8> {
    let entries: Vec<(String, Vec<u8>)> = entries
        .iter()
        .map(|(k, v)| {
            let mut value = v.as_bytes().to_vec();
            value.push(0);
            (k.to_string(), value)
        })
        .collect();
    kvd_bytes(entries)
}

/// Key/value data from entries whose values are raw bytes (text values
/// carry their own NUL), sorted by key as the specification asks, each
/// padded to 4 bytes.
fn kvd_bytes(mut entries: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = Vec::new();
    for (k, v) in entries {
        let len = k.len() + 1 + v.len();
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(&v);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    out
}

/// `ktx2` with its key/value entry `key` set to `value` (replacing one of
/// the same key), laid out again as the specification lays a file out: the
/// header and level index, the DFD, the key/value data, the supercompression
/// global data (8-byte aligned), then the levels in their original order,
/// each aligned to `lcm(texel block bytes, 4)` (1 when supercompressed).
/// Everything else is copied byte for byte.
pub(crate) fn with_key_value(ktx2: &[u8], key: &str, value: &[u8]) -> Result<Vec<u8>, String> {
    let u32_at = |o: usize| -> Result<u32, String> {
        ktx2.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| "the file ends inside its header".to_string())
    };
    let u64_at =
        |o: usize| -> Result<u64, String> { Ok(u32_at(o)? as u64 | (u32_at(o + 4)? as u64) << 32) };
    if ktx2.len() < 80 || ktx2[..12] != crate::container::KTX2_MAGIC {
        return Err("not a KTX2 file".into());
    }
    let scheme = u32_at(44)?;
    let n = u32_at(40)?.max(1) as usize;
    let section = |off: u64, len: u64, what: &str| -> Result<&[u8], String> {
        usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| ktx2.get(o..o.checked_add(l)?))
            .ok_or_else(|| format!("{what} lies outside the file"))
    };
    let dfd = section(u32_at(48)? as u64, u32_at(52)? as u64, "the DFD")?;
    let old_kvd = section(u32_at(56)? as u64, u32_at(60)? as u64, "the key/value data")?;
    let sgd = section(u64_at(64)?, u64_at(72)?, "the global data")?;
    let index_end = 80 + 24 * n;
    let mut levels = Vec::with_capacity(n);
    for l in 0..n {
        let e = 80 + 24 * l;
        let (off, len, ulen) = (u64_at(e)?, u64_at(e + 8)?, u64_at(e + 16)?);
        levels.push((off, section(off, len, &format!("level {l}"))?, ulen));
    }
    let mut entries: Vec<(String, Vec<u8>)> = ::ktx2::KeyValueDataIterator::new(old_kvd)
        .filter(|(k, _)| *k != key)
        .map(|(k, v)| (k.to_owned(), v.to_vec()))
        .collect();
    entries.push((key.to_owned(), value.to_vec()));
    let kvd = kvd_bytes(entries);

    let dfd_off = index_end;
    let kvd_off = dfd_off + dfd.len();
    let mut at = kvd_off + kvd.len();
    let sgd_off = if sgd.is_empty() {
        0
    } else {
        at = at.next_multiple_of(8);
        let o = at;
        at += sgd.len();
        o
    };
    // bytesPlane0 of the DFD's basic block: the texel block's bytes
    let block = dfd.get(20).copied().unwrap_or(0).max(1) as usize;
    let align = if scheme != 0 { 1 } else { lcm(block, 4) };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&l| levels[l].0);
    let mut offsets = vec![0usize; n];
    for &l in &order {
        at = at.next_multiple_of(align);
        offsets[l] = at;
        at += levels[l].1.len();
    }
    let mut out = vec![0u8; at];
    out[..48].copy_from_slice(&ktx2[..48]);
    let put = |out: &mut Vec<u8>, o: usize, b: &[u8]| out[o..o + b.len()].copy_from_slice(b);
    for (i, v) in [dfd_off, dfd.len(), kvd_off, kvd.len()].iter().enumerate() {
        put(&mut out, 48 + 4 * i, &(*v as u32).to_le_bytes());
    }
    put(&mut out, 64, &(sgd_off as u64).to_le_bytes());
    put(&mut out, 72, &(sgd.len() as u64).to_le_bytes());
    for (l, (_, data, ulen)) in levels.iter().enumerate() {
        let e = 80 + 24 * l;
        put(&mut out, e, &(offsets[l] as u64).to_le_bytes());
        put(&mut out, e + 8, &(data.len() as u64).to_le_bytes());
        put(&mut out, e + 16, &ulen.to_le_bytes());
        put(&mut out, offsets[l], data);
    }
    put(&mut out, dfd_off, dfd);
    put(&mut out, kvd_off, &kvd);
    if sgd_off != 0 {
        put(&mut out, sgd_off, sgd);
    }
    Ok(out)
}

fn lcm(a: usize, b: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

/// The BasisLZ global data: header, image descriptors, codebooks, tables.
fn basislz_global_data(basis: &[u8], file: &TextureFile) -> Result<Vec<u8>, String> {
    let u16_at = |o: usize| u16::from_le_bytes([basis[o], basis[o + 1]]);
    let u24_at = |o: usize| u32::from_le_bytes([basis[o], basis[o + 1], basis[o + 2], 0]) as usize;
    let u32_at = |o: usize| {
        u32::from_le_bytes([basis[o], basis[o + 1], basis[o + 2], basis[o + 3]]) as usize
    };
    let section = |o: usize, n: usize| {
        basis
            .get(o..o + n)
            .ok_or_else(|| "encoder output: codebook section out of range".to_string())
    };
    let endpoints = section(u32_at(41), u24_at(45))?;
    let selectors = section(u32_at(50), u24_at(54))?;
    let tables = section(u32_at(57), u32_at(61))?;
    let slices = &file
        .etc1s()
        .ok_or("encoder output: no ETC1S codebook")?
        .slices;
    let mut g = Vec::new();
    g.extend_from_slice(&u16_at(39).to_le_bytes());
    g.extend_from_slice(&u16_at(48).to_le_bytes());
    for n in [endpoints.len(), selectors.len(), tables.len(), 0] {
        g.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for level in slices.iter() {
        for s in level {
            for v in [0, s.rgb_offset, s.rgb_len, s.alpha_offset, s.alpha_len] {
                g.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    g.extend_from_slice(endpoints);
    g.extend_from_slice(selectors);
    g.extend_from_slice(tables);
    Ok(g)
}
