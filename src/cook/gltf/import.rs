//! Reading glTF: parsing (required extensions checked, panics inside the
//! `gltf` crate caught), primitives read and checked, images found in buffer
//! views, data URIs or files.

use super::attributes::{read_f32, weld};
use super::{GltfCookError, SUPPORTED_REQUIRED};
use crate::mesh::container::{Vertex, ATTR_NORMAL, ATTR_TANGENT, ATTR_UV};
use glam::Vec3;
use std::path::Path;

/// One primitive's geometry, read and checked.
struct Primitive {
    vertices: Vec<Vertex>,
    indices: Vec<u32>,
    attributes: u32,
    /// The material's texture coordinate set is not there.
    uv_missing: bool,
}

/// The texture coordinates a material's textures sample: one set (the
/// base colour's, else the first textured slot's) with its
/// `KHR_texture_transform` baked in, since one set is cooked per vertex.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct UvChoice {
    set: u32,
    /// `u' = m[0] u + m[1] v + m[2]`, `v' = m[3] u + m[4] v + m[5]`.
    transform: Option<[f32; 6]>,
}

impl UvChoice {
    fn of(m: &gltf::Material<'_>, warnings: &mut Vec<String>) -> Self {
        let pbr = m.pbr_metallic_roughness();
        // (offset, rotation, scale, texCoord override) of a slot's transform
        type Transform = ([f32; 2], f32, [f32; 2], Option<u32>);
        let typed = |t: Option<gltf::texture::TextureTransform<'_>>| -> Option<Transform> {
            t.map(|t| (t.offset(), t.rotation(), t.scale(), t.tex_coord()))
        };
        // normal and occlusion maps keep the extension as raw JSON
        let raw = |v: Option<&serde_json::Value>| -> Option<Transform> {
            let v = v?;
            let pair = |key: &str, default: [f32; 2]| {
                v.get(key)
                    .and_then(|a| a.as_array())
                    .and_then(|a| Some([a.first()?.as_f64()? as f32, a.get(1)?.as_f64()? as f32]))
                    .unwrap_or(default)
            };
            Some((
                pair("offset", [0.0, 0.0]),
                v.get("rotation").and_then(|r| r.as_f64()).unwrap_or(0.0) as f32,
                pair("scale", [1.0, 1.0]),
                v.get("texCoord").and_then(|c| c.as_u64()).map(|c| c as u32),
            ))
        };
        let slot = |set: u32, t: Option<Transform>| {
            let set = t.and_then(|t| t.3).unwrap_or(set);
            Self {
                set,
                transform: t.map(|([ox, oy], r, [sx, sy], _)| {
                    let (sin, cos) = r.sin_cos();
                    [cos * sx, sin * sy, ox, -sin * sx, cos * sy, oy]
                }),
            }
        };
        const TRANSFORM: &str = "KHR_texture_transform";
        let slots: Vec<(&str, Self)> = [
            pbr.base_color_texture().map(|t| {
                (
                    "base colour",
                    slot(t.tex_coord(), typed(t.texture_transform())),
                )
            }),
            m.normal_texture().map(|t| {
                (
                    "normal map",
                    slot(t.tex_coord(), raw(t.extension_value(TRANSFORM))),
                )
            }),
            pbr.metallic_roughness_texture().map(|t| {
                (
                    "metallic-roughness map",
                    slot(t.tex_coord(), typed(t.texture_transform())),
                )
            }),
            m.occlusion_texture().map(|t| {
                (
                    "occlusion map",
                    slot(t.tex_coord(), raw(t.extension_value(TRANSFORM))),
                )
            }),
            m.emissive_texture().map(|t| {
                (
                    "emissive map",
                    slot(t.tex_coord(), typed(t.texture_transform())),
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        let Some(&(first, chosen)) = slots.first() else {
            return Self::default();
        };
        for (what, other) in &slots[1..] {
            if *other != chosen {
                warnings.push(format!(
                    "material {}: its {what} samples other texture coordinates than its {first} (set {} vs {}{}): cooked with the {first}'s (one set is cooked per vertex)",
                    m.name().map_or_else(|| format!("#{}", m.index().unwrap_or(0)), str::to_owned),
                    other.set,
                    chosen.set,
                    if other.transform != chosen.transform { ", or another KHR_texture_transform" } else { "" },
                ));
            }
        }
        chosen
    }
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
        // the crate's validation refuses required extensions it has no
        // types for (quantization, meshopt): validate without those
        let gltf::Gltf { document, blob } = unchecked;
        let mut json = document.into_json();
        json.extensions_required
            .retain(|e| !SUPPORTED_REQUIRED.contains(&e.as_str()));
        let document = gltf::Document::from_json(json)
            .map_err(|e| parse_err(format!("not valid glTF: {e}")))?;
        let buffers = super::buffers::load(&document, base, blob).map_err(|reason| {
            GltfCookError::Buffers {
                path: name.to_owned(),
                reason,
            }
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
    let uvs: Vec<UvChoice> = document
        .materials()
        .map(|m| UvChoice::of(&m, warnings))
        .collect();
    let skinned: std::collections::BTreeSet<usize> = document
        .nodes()
        .filter(|n| n.skin().is_some())
        .filter_map(|n| n.mesh().map(|m| m.index()))
        .collect();
    for mesh in document.meshes() {
        let mesh_name = mesh
            .name()
            .map_or_else(|| format!("#{}", mesh.index()), str::to_owned);
        if skinned.contains(&mesh.index()) {
            warnings.push(format!(
                "mesh {mesh_name}: skinned; cooked in its bind pose (joints and weights are not kept: animation is not streamed)"
            ));
        }
        if mesh.primitives().any(|p| p.morph_targets().len() > 0) {
            warnings.push(format!(
                "mesh {mesh_name}: has morph targets; cooked with none applied (morphs are not streamed)"
            ));
        }
        for prim in mesh.primitives() {
            if prim.extension_value("KHR_draco_mesh_compression").is_some() {
                warnings.push(format!(
                    "mesh {mesh_name} primitive {}: KHR_draco_mesh_compression is not decoded; its uncompressed fallback accessors are read",
                    prim.index()
                ));
            }
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
            let uv = prim
                .material()
                .index()
                .and_then(|m| uvs.get(m).copied())
                .unwrap_or_default();
            let read = std::panic::catch_unwind(|| read_primitive(&prim, buffers, uv))
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
            if read.uv_missing {
                warnings.push(format!(
                    "mesh {mesh_name} primitive {}: its material samples TEXCOORD_{}, which it does not have; texture coordinates are zero",
                    prim.index(),
                    uv.set
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
                    welded: 0,
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
    /// Vertices the weld merged (copies of one point with the same
    /// attributes; see [`PrimitiveGeometry::weld`]).
    pub welded: usize,
}

impl PrimitiveGeometry {
    /// Merges copies of one point with the same attributes (see the
    /// module `attributes`), so a mesh written without shared vertices can
    /// be simplified; counts them in `welded`.
    pub fn weld(&mut self) {
        self.welded += weld(&mut self.vertices, &mut self.indices);
    }
}

fn read_primitive(
    prim: &gltf::Primitive<'_>,
    buffers: &[gltf::buffer::Data],
    uv: UvChoice,
) -> Result<Primitive, String> {
    use gltf::Semantic;
    let reader = prim.reader(|b| buffers.get(b.index()).map(|d| &d.0[..]));
    let attribute = |s: Semantic| prim.get(&s);
    let positions: Vec<[f32; 3]> = read_f32(
        &attribute(Semantic::Positions).ok_or("no POSITION attribute")?,
        buffers,
    )?;
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
    if let Some(a) = attribute(Semantic::Normals) {
        let normals: Vec<[f32; 3]> = read_f32(&a, buffers)?;
        check_len("NORMAL", normals.len())?;
        for (v, nrm) in vertices.iter_mut().zip(normals) {
            // quantized normals are near unit length: make them so
            v.normal = Vec3::from(nrm).normalize_or(Vec3::Z).to_array();
        }
        attributes |= ATTR_NORMAL;
    }
    let mut uv_missing = false;
    match attribute(Semantic::TexCoords(uv.set)) {
        Some(a) => {
            let uvs: Vec<[f32; 2]> = read_f32(&a, buffers)?;
            check_len(&format!("TEXCOORD_{}", uv.set), uvs.len())?;
            for (v, [u, w]) in vertices.iter_mut().zip(uvs) {
                v.uv = match uv.transform {
                    Some(m) => [m[0] * u + m[1] * w + m[2], m[3] * u + m[4] * w + m[5]],
                    None => [u, w],
                };
            }
            attributes |= ATTR_UV;
        }
        None => uv_missing = uv.set > 0 || uv.transform.is_some(),
    }
    if let Some(a) = attribute(Semantic::Tangents) {
        let tangents: Vec<[f32; 4]> = read_f32(&a, buffers)?;
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
        uv_missing,
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
