//! A glTF file's buffers, with `EXT_meshopt_compression` undone.
//!
//! Files that went through gltfpack (`-c`) or glTF-Transform (`meshopt`)
//! keep their geometry in compressed buffer views: each view carries the
//! extension naming a buffer range of meshoptimizer-coded data, the stride,
//! count, mode (`ATTRIBUTES`, `TRIANGLES`, `INDICES`) and filter (`NONE`,
//! `OCTAHEDRAL`, `QUATERNION`, `EXPONENTIAL`, `COLOR`); the view's own
//! buffer is then usually a *fallback* buffer with no data at all (the
//! extension marks it `"fallback": true`). Buffers load as `gltf` loads them,
//! fallback buffers as zeros of their length, and every compressed view is
//! decoded (the `meshopt` crate's decoders and filters) into the bytes its
//! view covers, so the accessors read plain data afterwards. A view whose
//! buffer has real data keeps it (the uncompressed fallback the
//! specification allows).

use gltf::buffer::Data;
use std::path::Path;

/// The extension's name.
pub(super) const MESHOPT: &str = "EXT_meshopt_compression";

/// Largest fallback buffer made (its length comes from the file).
pub(super) const MAX_FALLBACK_BYTES: usize = 1 << 30;

/// Loads every buffer of `document` and decodes its meshopt-compressed
/// views. `base`: where relative URIs resolve (None refuses them).
pub(super) fn load(
    document: &gltf::Document,
    base: Option<&Path>,
    mut blob: Option<Vec<u8>>,
) -> Result<Vec<Data>, String> {
    let mut buffers = Vec::new();
    for buffer in document.buffers() {
        let fallback = buffer
            .extension_value(MESHOPT)
            .and_then(|v| v.get("fallback"))
            .and_then(|f| f.as_bool())
            .unwrap_or(false);
        let data = if fallback {
            if buffer.length() > MAX_FALLBACK_BYTES {
                return Err(format!(
                    "buffer {}: a fallback buffer of {} bytes (at most {MAX_FALLBACK_BYTES} are made)",
                    buffer.index(),
                    buffer.length()
                ));
            }
            Data(vec![0; buffer.length()])
        } else {
            Data::from_source_and_blob(buffer.source(), base, &mut blob)
                .map_err(|e| format!("buffer {}: {e}", buffer.index()))?
        };
        if data.len() < buffer.length() {
            return Err(format!(
                "buffer {} holds {} bytes where it declares {}",
                buffer.index(),
                data.len(),
                buffer.length()
            ));
        }
        buffers.push((data, fallback));
    }
    for view in document.views() {
        let Some(ext) = view.extension_value(MESHOPT) else {
            continue;
        };
        let target = view.buffer().index();
        if !buffers[target].1 {
            continue; // the view's own data is there: read it as it is
        }
        let (start, len) = (view.offset(), view.length());
        let decoded = decode_view(ext, &buffers, len)
            .map_err(|e| format!("buffer view {}: {MESHOPT}: {e}", view.index()))?;
        let dest = buffers[target]
            .0
             .0
            .get_mut(start..start.saturating_add(len))
            .ok_or_else(|| format!("buffer view {} lies outside its buffer", view.index()))?;
        if decoded.len() > dest.len() {
            return Err(format!(
                "buffer view {}: {MESHOPT} decodes to {} bytes for a view of {len}",
                view.index(),
                decoded.len()
            ));
        }
        dest[..decoded.len()].copy_from_slice(&decoded);
    }
    Ok(buffers.into_iter().map(|(d, _)| d).collect())
}

/// The bytes one compressed view decodes to (at most `limit`: the view's
/// own length, checked before anything is allocated).
fn decode_view(
    ext: &serde_json::Value,
    buffers: &[(Data, bool)],
    limit: usize,
) -> Result<Vec<u8>, String> {
    let int = |key: &str| -> Result<usize, String> {
        ext.get(key)
            .and_then(|v| v.as_u64())
            .map(|v| v as usize)
            .ok_or_else(|| format!("no {key}"))
    };
    let buffer = int("buffer")?;
    let offset = ext.get("byteOffset").and_then(|v| v.as_u64()).unwrap_or(0) as usize;
    let (length, stride, count) = (int("byteLength")?, int("byteStride")?, int("count")?);
    let mode = ext.get("mode").and_then(|v| v.as_str()).unwrap_or("");
    let filter = ext.get("filter").and_then(|v| v.as_str()).unwrap_or("NONE");
    let (source, fallback) = buffers
        .get(buffer)
        .map(|(d, f)| (&d.0, *f))
        .ok_or_else(|| format!("buffer {buffer} does not exist"))?;
    if fallback {
        return Err(format!(
            "its data is in buffer {buffer}, a fallback buffer with none"
        ));
    }
    let encoded = offset
        .checked_add(length)
        .and_then(|end| source.get(offset..end))
        .ok_or_else(|| format!("{offset}..+{length} lies outside buffer {buffer}"))?;
    if count.checked_mul(stride).is_none_or(|n| n > limit) {
        return Err(format!(
            "{count} elements of {stride} bytes do not fit its view of {limit} bytes"
        ));
    }
    let err = |e: meshopt::Error| format!("{mode} data does not decode: {e:?}");
    match mode {
        "ATTRIBUTES" => {
            if stride == 0 || stride % 4 != 0 || stride > 256 {
                return Err(format!(
                    "byteStride {stride}: attributes need a multiple of 4 up to 256"
                ));
            }
            let mut words = attributes(encoded, count, stride).map_err(err)?;
            apply_filter(filter, &mut words, stride)?;
            Ok(bytemuck::cast_slice(&words).to_vec())
        }
        "TRIANGLES" | "INDICES" => {
            if filter != "NONE" {
                return Err(format!("filter {filter} on indices"));
            }
            let tri = mode == "TRIANGLES";
            match stride {
                2 => {
                    let v: Vec<u16> = if tri {
                        meshopt::decode_index_buffer(encoded, count).map_err(err)?
                    } else {
                        meshopt::decode_index_sequence(encoded, count).map_err(err)?
                    };
                    Ok(bytemuck::cast_slice(&v).to_vec())
                }
                4 => {
                    let v: Vec<u32> = if tri {
                        meshopt::decode_index_buffer(encoded, count).map_err(err)?
                    } else {
                        meshopt::decode_index_sequence(encoded, count).map_err(err)?
                    };
                    Ok(bytemuck::cast_slice(&v).to_vec())
                }
                s => Err(format!("byteStride {s} for indices (2 or 4)")),
            }
        }
        m => Err(format!("unknown mode {m:?}")),
    }
}

/// `K` 32-bit words of one vertex (any `K`: arrays implement `Default`
/// only up to 32 elements).
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Words<const K: usize>([u32; K]);

impl<const K: usize> Default for Words<K> {
    fn default() -> Self {
        Self([0; K])
    }
}

fn decode_words<const K: usize>(encoded: &[u8], count: usize) -> meshopt::Result<Vec<u32>> {
    let v: Vec<Words<K>> = meshopt::decode_vertex_buffer(encoded, count)?;
    Ok(v.into_iter().flat_map(|w| w.0).collect())
}

/// Decodes `count` vertices of `stride` bytes (a multiple of 4 up to 256).
fn attributes(encoded: &[u8], count: usize, stride: usize) -> meshopt::Result<Vec<u32>> {
    macro_rules! by_stride {
        ($($k:literal)*) => {
            match stride / 4 {
                $($k => decode_words::<$k>(encoded, count),)*
                _ => unreachable!("stride checked by the caller"),
            }
        };
    }
    by_stride!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64)
}

/// Undoes a meshopt filter in place on decoded vertices.
fn apply_filter(filter: &str, words: &mut [u32], stride: usize) -> Result<(), String> {
    match (filter, stride) {
        ("NONE", _) => {}
        ("OCTAHEDRAL", 4) => {
            meshopt::decode_filter_oct::<i8>(bytemuck::cast_slice_mut::<u32, [i8; 4]>(words))
        }
        ("OCTAHEDRAL", 8) => {
            meshopt::decode_filter_oct::<i16>(bytemuck::cast_slice_mut::<u32, [i16; 4]>(words))
        }
        ("QUATERNION", 8) => {
            meshopt::decode_filter_quat(bytemuck::cast_slice_mut::<u32, [i16; 4]>(words))
        }
        // each 32-bit component on its own
        ("EXPONENTIAL", _) => {
            meshopt::decode_filter_exp::<1>(bytemuck::cast_slice_mut::<u32, [u32; 1]>(words))
        }
        ("COLOR", 4) => {
            meshopt::decode_filter_color::<u8>(bytemuck::cast_slice_mut::<u32, [u8; 4]>(words))
        }
        ("COLOR", 8) => {
            meshopt::decode_filter_color::<u16>(bytemuck::cast_slice_mut::<u32, [u16; 4]>(words))
        }
        (f, s) => return Err(format!("filter {f} with byteStride {s}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_attributes_and_indices_decode_back() {
        // 10 vertices of 12 bytes, and a triangle list
        let verts: Vec<[u32; 3]> = (0..10u32).map(|i| [i, i * 7, 1000 - i]).collect();
        let vs: Vec<Words<3>> = verts.iter().map(|&v| Words(v)).collect();
        let encoded = meshopt::encode_vertex_buffer(&vs).unwrap();
        let back = attributes(&encoded, 10, 12).unwrap();
        assert_eq!(back, verts.iter().flatten().copied().collect::<Vec<_>>());
        let indices: Vec<u32> = vec![0, 1, 2, 2, 1, 3, 3, 1, 4];
        let encoded = meshopt::encode_index_buffer(&indices, 10).unwrap();
        let data = vec![(Data(encoded.clone()), false)];
        let ext = serde_json::json!({"buffer": 0, "byteLength": encoded.len(), "byteStride": 4, "count": 9, "mode": "TRIANGLES"});
        let bytes = decode_view(&ext, &data, 36).unwrap();
        assert_eq!(bytemuck::cast_slice::<u8, u32>(&bytes), &indices[..]);
        // nonsense is an error, not a panic
        for bad in [
            serde_json::json!({"buffer": 0, "byteLength": 3, "byteStride": 4, "count": 9, "mode": "TRIANGLES"}),
            serde_json::json!({"buffer": 5, "byteLength": 3, "byteStride": 4, "count": 9, "mode": "TRIANGLES"}),
            serde_json::json!({"buffer": 0, "byteLength": encoded.len(), "byteStride": 6, "count": 9, "mode": "ATTRIBUTES"}),
            serde_json::json!({"buffer": 0, "byteLength": encoded.len(), "byteStride": 4, "count": 9, "mode": "FOO"}),
            serde_json::json!({"buffer": 0, "byteLength": encoded.len(), "byteStride": 4, "count": 4_000_000_000u64, "mode": "ATTRIBUTES"}),
            // more than the view holds: refused before decoding
            serde_json::json!({"buffer": 0, "byteLength": encoded.len(), "byteStride": 16, "count": 100_000, "mode": "ATTRIBUTES"}),
        ] {
            assert!(decode_view(&bad, &data, 1 << 20).is_err(), "{bad}");
        }
    }
}
