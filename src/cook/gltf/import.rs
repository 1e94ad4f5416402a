//! Reading glTF: parsing (required extensions checked, panics inside the
//! `gltf` crate caught), primitives read and checked, images found in buffer
//! views, data URIs or files.

use super::{GltfCookError, SUPPORTED_REQUIRED};
use crate::mesh::container::{Vertex, ATTR_NORMAL, ATTR_TANGENT, ATTR_UV};
use glam::Vec3;
use std::path::Path;

/// One primitive's geometry, read and checked.
struct Primitive {
    vertices: Vec<Vertex>,
    indices: Vec<u32>,
    attributes: u32,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Parses glTF or GLB bytes and loads their buffers (`base`: the folder
/// relative URIs resolve against; None refuses external references). Checks
/// required extensions. Panics inside the `gltf` crate become errors.
pub fn parse(
    name: &str,
    bytes: &[u8],
    base: Option<&Path>,
) -> Result<(gltf::Document, Vec<gltf::buffer::Data>), GltfCookError> {
    let parse_err = |reason: String| GltfCookError::Parse {
        path: name.to_owned(),
        reason,
    };
    let result = std::panic::catch_unwind(|| -> Result<_, GltfCookError> {
        // required extensions first: the validating parse only says
        // "unsupported extension"
        let unchecked = gltf::Gltf::from_slice_without_validation(bytes)
            .map_err(|e| parse_err(format!("not valid glTF: {e}")))?;
        if let Some(ext) = unchecked
            .document
            .extensions_required()
            .find(|e| !SUPPORTED_REQUIRED.contains(e))
        {
            return Err(GltfCookError::UnsupportedExtension {
                path: name.to_owned(),
                extension: ext.to_owned(),
            });
        }
        let gltf::Gltf { document, blob } =
            gltf::Gltf::from_slice(bytes).map_err(|e| parse_err(format!("not valid glTF: {e}")))?;
        let buffers =
            gltf::import_buffers(&document, base, blob).map_err(|e| GltfCookError::Buffers {
                path: name.to_owned(),
                reason: e.to_string(),
            })?;
        Ok((document, buffers))
    });
    result.unwrap_or_else(|p| {
        Err(parse_err(format!(
            "the glTF reader failed on this input: {}",
            panic_message(p)
        )))
    })
}

/// Reads every triangle primitive's geometry; indices are checked against
/// the vertex count, missing normals generated, missing uvs and tangents zero.
pub fn read_primitives(
    name: &str,
    document: &gltf::Document,
    buffers: &[gltf::buffer::Data],
    warnings: &mut Vec<String>,
) -> Result<Vec<(usize, usize, PrimitiveGeometry)>, GltfCookError> {
    let mut out = Vec::new();
    for mesh in document.meshes() {
        let mesh_name = mesh
            .name()
            .map_or_else(|| format!("#{}", mesh.index()), str::to_owned);
        for prim in mesh.primitives() {
            let err = |reason: String| GltfCookError::Primitive {
                path: name.to_owned(),
                mesh: mesh_name.clone(),
                primitive: prim.index(),
                reason,
            };
            if prim.mode() != gltf::mesh::Mode::Triangles {
                warnings.push(format!(
                    "mesh {mesh_name} primitive {}: mode {:?} skipped (only triangle lists stream)",
                    prim.index(),
                    prim.mode()
                ));
                continue;
            }
            let read = std::panic::catch_unwind(|| read_primitive(&prim, buffers))
                .unwrap_or_else(|p| {
                    Err(format!(
                        "the glTF reader failed on this primitive: {}",
                        panic_message(p)
                    ))
                })
                .map_err(err)?;
            if read.attributes & ATTR_NORMAL == 0 {
                warnings.push(format!(
                    "mesh {mesh_name} primitive {}: no normals; generated smooth ones",
                    prim.index()
                ));
            }
            out.push((
                mesh.index(),
                prim.index(),
                PrimitiveGeometry {
                    name: format!("{mesh_name}.{}", prim.index()),
                    material: prim.material().index(),
                    vertices: read.vertices,
                    indices: read.indices,
                    attributes: read.attributes,
                },
            ));
        }
    }
    Ok(out)
}

/// Geometry of one primitive (public for the fuzz target and tests).
#[derive(Debug, Clone, PartialEq)]
pub struct PrimitiveGeometry {
    /// `mesh.primitive`.
    pub name: String,
    /// glTF material index.
    pub material: Option<usize>,
    /// Vertices.
    pub vertices: Vec<Vertex>,
    /// Triangle list indices, all in range.
    pub indices: Vec<u32>,
    /// `ATTR_*` bits present in the source.
    pub attributes: u32,
}

fn read_primitive(
    prim: &gltf::Primitive<'_>,
    buffers: &[gltf::buffer::Data],
) -> Result<Primitive, String> {
    let reader = prim.reader(|b| buffers.get(b.index()).map(|d| &d.0[..]));
    let positions: Vec<[f32; 3]> = reader
        .read_positions()
        .ok_or("no POSITION attribute (or its data is missing)")?
        .collect();
    let n = positions.len();
    if n == 0 {
        return Err("no vertices".into());
    }
    if n > u32::MAX as usize {
        return Err(format!("{n} vertices: more than 32-bit indices address"));
    }
    if positions.iter().flatten().any(|c| !c.is_finite()) {
        return Err("a position is not finite".into());
    }
    let mut attributes = 1;
    let mut vertices: Vec<Vertex> = positions
        .iter()
        .map(|p| Vertex {
            position: *p,
            tangent: [0.0, 0.0, 0.0, 1.0],
            ..Vertex::default()
        })
        .collect();
    let check_len = |what: &str, len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(format!("{what} has {len} entries for {n} positions"))
        }
    };
    if let Some(normals) = reader.read_normals() {
        let normals: Vec<[f32; 3]> = normals.collect();
        check_len("NORMAL", normals.len())?;
        for (v, nrm) in vertices.iter_mut().zip(normals) {
            v.normal = nrm;
        }
        attributes |= ATTR_NORMAL;
    }
    if let Some(uvs) = reader.read_tex_coords(0) {
        let uvs: Vec<[f32; 2]> = uvs.into_f32().collect();
        check_len("TEXCOORD_0", uvs.len())?;
        for (v, uv) in vertices.iter_mut().zip(uvs) {
            v.uv = uv;
        }
        attributes |= ATTR_UV;
    }
    if let Some(tangents) = reader.read_tangents() {
        let tangents: Vec<[f32; 4]> = tangents.collect();
        check_len("TANGENT", tangents.len())?;
        for (v, t) in vertices.iter_mut().zip(tangents) {
            v.tangent = t;
        }
        attributes |= ATTR_TANGENT;
    }
    let indices: Vec<u32> = match reader.read_indices() {
        Some(i) => i.into_u32().collect(),
        None => (0..n as u32).collect(),
    };
    if !indices.len().is_multiple_of(3) {
        return Err(format!("{} indices: not whole triangles", indices.len()));
    }
    if let Some((at, i)) = indices.iter().enumerate().find(|(_, &i)| i as usize >= n) {
        return Err(format!("index {at} is {i}, but there are {n} vertices"));
    }
    if indices.is_empty() {
        return Err("no triangles".into());
    }
    if attributes & ATTR_NORMAL == 0 {
        smooth_normals(&mut vertices, &indices);
    }
    Ok(Primitive {
        vertices,
        indices,
        attributes,
    })
}

/// Area-weighted vertex normals.
fn smooth_normals(vertices: &mut [Vertex], indices: &[u32]) {
    let mut acc = vec![Vec3::ZERO; vertices.len()];
    for t in indices.chunks_exact(3) {
        let p = |i: u32| Vec3::from(vertices[i as usize].position);
        let n = (p(t[1]) - p(t[0])).cross(p(t[2]) - p(t[0]));
        for &i in t {
            acc[i as usize] += n;
        }
    }
    for (v, n) in vertices.iter_mut().zip(acc) {
        v.normal = n.normalize_or(Vec3::Y).to_array();
    }
}

/// The encoded bytes of an image of the glTF `name` (PNG, JPEG or KTX2),
/// from its buffer view or its file beside `base`.
pub fn image_bytes(
    name: &str,
    image: &gltf::Image<'_>,
    base: &Path,
    buffers: &[gltf::buffer::Data],
) -> Result<Vec<u8>, GltfCookError> {
    let label = image
        .name()
        .map_or_else(|| format!("#{}", image.index()), str::to_owned);
    let err = |reason: String| GltfCookError::Image {
        path: name.to_owned(),
        image: label.clone(),
        reason,
    };
    match image.source() {
        gltf::image::Source::View { view, .. } => {
            let data = buffers
                .get(view.buffer().index())
                .ok_or_else(|| err("its buffer is missing".into()))?;
            let (start, len) = (view.offset(), view.length());
            start
                .checked_add(len)
                .and_then(|end| data.0.get(start..end))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| err(format!("view {start}..+{len} outside its buffer")))
        }
        gltf::image::Source::Uri { uri, .. } => {
            if let Some(rest) = uri.strip_prefix("data:") {
                let b64 = rest
                    .split_once(";base64,")
                    .map(|(_, b)| b)
                    .ok_or_else(|| err("a data URI that is not base64".into()))?;
                return decode_base64(b64).ok_or_else(|| err("bad base64 in a data URI".into()));
            }
            if uri.contains("://") {
                return Err(err(format!("{uri}: only files next to the glTF are read")));
            }
            let path = base.join(percent_decode(uri));
            std::fs::read(&path).map_err(|e| err(format!("{}: {e}", path.display())))
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let clean: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// The image a texture shows: `KHR_texture_basisu`'s source when present.
pub(super) fn texture_image(texture: &gltf::Texture<'_>) -> Option<usize> {
    texture
        .extension_value("KHR_texture_basisu")
        .and_then(|v| v.get("source"))
        .and_then(|s| s.as_u64())
        .map(|s| s as usize)
        .or_else(|| texture.source().map(|s| s.index()))
}
