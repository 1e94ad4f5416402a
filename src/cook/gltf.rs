//! `mipstream cook-gltf`: a glTF 2.0 scene into streamable pieces.
//!
//! Every mesh primitive becomes a `.msmesh` LOD chain ([`crate::mesh::lod`]),
//! every material texture a KTX2 file cooked through the texture pipeline in
//! the colour space its slot needs (base colour and emissive sRGB; normal
//! maps as normal maps; metallic-roughness and occlusion linear; an image
//! used in two kinds of slot is cooked once per kind), and `scene.json`
//! ([`crate::mesh::scene_file`]) ties them together with the node transforms.
//!
//! Images may be PNG or JPEG (files, buffer views or data URIs), or KTX2
//! through `KHR_texture_basisu` (copied as they are; the `gltf` crate has no
//! typed support, so the extension's JSON is read). Textures and meshes are
//! cooked on every core. Broken or unsupported input is a typed error naming
//! the file and the part; a panic inside the `gltf` crate on malformed input
//! is caught and reported as such.

use super::{cook_image, Codec, CookError, CookOptions};
use crate::mesh::container::{write_mesh, Vertex, ATTR_NORMAL, ATTR_TANGENT, ATTR_UV};
use crate::mesh::lod::{build_lod_chain, LodOptions};
use crate::mesh::scene_file::{SceneFile, SceneInstance, SceneMaterial, SceneMesh};
use glam::{Mat4, Vec3};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Extensions a file may mark required and still be cooked.
pub const SUPPORTED_REQUIRED: [&str; 2] = ["KHR_texture_basisu", "KHR_materials_emissive_strength"];

/// How to cook a glTF scene.
#[derive(Debug, Clone, PartialEq)]
pub struct GltfCookOptions {
    /// Texture codec. Default: UASTC.
    pub codec: Codec,
    /// Texture quality 0-100 (see [`CookOptions::quality`]). Default: 50.
    pub quality: u8,
    /// The LOD chains.
    pub lods: LodOptions,
    /// Threads (0: every core). Default: 0.
    pub threads: usize,
}

impl Default for GltfCookOptions {
    fn default() -> Self {
        Self {
            codec: Codec::Uastc,
            quality: 50,
            lods: LodOptions::default(),
            threads: 0,
        }
    }
}

/// Why a glTF scene could not be cooked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GltfCookError {
    /// The file could not be read or parsed.
    #[error("{path}: {reason}")]
    Parse {
        /// The glTF file.
        path: String,
        /// What the reader said.
        reason: String,
    },
    /// The file requires an extension mipstream does not implement.
    #[error("{path}: requires the extension {extension}, which mipstream does not support (supported: {supported})", supported = SUPPORTED_REQUIRED.join(", "))]
    UnsupportedExtension {
        /// The glTF file.
        path: String,
        /// The extension.
        extension: String,
    },
    /// A buffer is missing or short.
    #[error("{path}: buffers: {reason}")]
    Buffers {
        /// The glTF file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A mesh primitive cannot be read.
    #[error("{path}: mesh {mesh} primitive {primitive}: {reason}")]
    Primitive {
        /// The glTF file.
        path: String,
        /// Mesh name or index.
        mesh: String,
        /// Primitive index.
        primitive: usize,
        /// What is wrong.
        reason: String,
    },
    /// An image cannot be read.
    #[error("{path}: image {image}: {reason}")]
    Image {
        /// The glTF file.
        path: String,
        /// Image name or index.
        image: String,
        /// What is wrong.
        reason: String,
    },
    /// Cooking a texture failed.
    #[error(transparent)]
    Cook(#[from] CookError),
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Output {
        /// The file or folder.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What was cooked.
#[derive(Debug, Clone)]
pub struct CookedGltf {
    /// The scene file's path.
    pub scene_path: PathBuf,
    /// Its contents.
    pub scene: SceneFile,
    /// Things skipped or generated (non-triangle primitives, missing normals...).
    pub warnings: Vec<String>,
}

/// Progress of a cook: stage, done, total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GltfProgress {
    /// `"meshes"` or `"textures"`.
    pub stage: &'static str,
    /// Items done.
    pub done: usize,
    /// Items in the stage.
    pub total: usize,
}

/// Colour space and kind a texture slot needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Srgb,
    Linear,
    Normal,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Srgb => "srgb",
            Kind::Linear => "linear",
            Kind::Normal => "normal",
        }
    }
}

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
fn texture_image(texture: &gltf::Texture<'_>) -> Option<usize> {
    texture
        .extension_value("KHR_texture_basisu")
        .and_then(|v| v.get("source"))
        .and_then(|s| s.as_u64())
        .map(|s| s as usize)
        .or_else(|| texture.source().map(|s| s.index()))
}

/// Cooks `input` (`.gltf` or `.glb`) into `out_dir`: `meshes/`, `textures/`
/// and `scene.json`.
pub fn cook_gltf(
    input: &Path,
    out_dir: &Path,
    opts: &GltfCookOptions,
    mut progress: impl FnMut(GltfProgress),
) -> Result<CookedGltf, GltfCookError> {
    let name = input.display().to_string();
    let bytes = std::fs::read(input).map_err(|e| GltfCookError::Parse {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    let base = input.parent().unwrap_or(Path::new("."));
    let (document, buffers) = parse(&name, &bytes, Some(base))?;
    let mut warnings = Vec::new();
    let primitives = read_primitives(&name, &document, &buffers, &mut warnings)?;
    let out_io = |path: &Path| {
        let path = path.display().to_string();
        move |source| GltfCookError::Output { path, source }
    };
    for sub in ["meshes", "textures"] {
        let d = out_dir.join(sub);
        std::fs::create_dir_all(&d).map_err(out_io(&d))?;
    }
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };

    // textures: (image, kind) once each
    let mut wanted: BTreeMap<(usize, Kind), ()> = BTreeMap::new();
    let slot = |t: Option<gltf::Texture<'_>>| t.and_then(|t| texture_image(&t));
    for m in document.materials() {
        let pbr = m.pbr_metallic_roughness();
        for (img, kind) in [
            (
                slot(pbr.base_color_texture().map(|t| t.texture())),
                Kind::Srgb,
            ),
            (slot(m.emissive_texture().map(|t| t.texture())), Kind::Srgb),
            (slot(m.normal_texture().map(|t| t.texture())), Kind::Normal),
            (
                slot(pbr.metallic_roughness_texture().map(|t| t.texture())),
                Kind::Linear,
            ),
            (
                slot(m.occlusion_texture().map(|t| t.texture())),
                Kind::Linear,
            ),
        ] {
            if let Some(i) = img {
                wanted.insert((i, kind), ());
            }
        }
    }
    let jobs: Vec<(usize, Kind)> = wanted.into_keys().collect();
    let images: Vec<gltf::Image<'_>> = document.images().collect();
    let mut encoded = Vec::with_capacity(jobs.len());
    for &(i, _) in &jobs {
        let image = images.get(i).ok_or_else(|| GltfCookError::Image {
            path: name.clone(),
            image: format!("#{i}"),
            reason: "a texture refers to an image that does not exist".into(),
        })?;
        encoded.push(image_bytes(&name, image, base, &buffers)?);
    }
    let texture_file = |i: usize, kind: Kind| -> PathBuf {
        let stem = images[i]
            .name()
            .map(sanitize)
            .unwrap_or_else(|| format!("image{i}"));
        PathBuf::from("textures").join(format!("{i:03}-{stem}-{}.ktx2", kind.suffix()))
    };
    let total = jobs.len();
    progress(GltfProgress {
        stage: "textures",
        done: 0,
        total,
    });
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| -> Result<(), GltfCookError> {
        for _ in 0..threads.min(total) {
            let tx = tx.clone();
            let (jobs, encoded, next, name) = (&jobs, &encoded, &next, &name);
            let texture_file = &texture_file;
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(i, kind)) = jobs.get(k) else { break };
                let out = out_dir.join(texture_file(i, kind));
                let r = cook_texture(name, i, kind, &encoded[k], opts).and_then(|ktx2| {
                    std::fs::write(&out, ktx2).map_err(|source| GltfCookError::Output {
                        path: out.display().to_string(),
                        source,
                    })
                });
                if tx.send(r).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (done, r) in rx.iter().enumerate() {
            r?;
            progress(GltfProgress {
                stage: "textures",
                done: done + 1,
                total,
            });
        }
        Ok(())
    })?;

    // meshes: LOD chains on every core
    let total = primitives.len();
    progress(GltfProgress {
        stage: "meshes",
        done: 0,
        total,
    });
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut chains: Vec<Option<Vec<crate::mesh::LodData>>> = vec![None; total];
    std::thread::scope(|scope| {
        for _ in 0..threads.min(total) {
            let tx = tx.clone();
            let (primitives, next) = (&primitives, &next);
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, _, p)) = primitives.get(k) else {
                    break;
                };
                let lods = build_lod_chain(&p.vertices, &p.indices, &opts.lods);
                if tx.send((k, lods)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (done, (k, lods)) in rx.iter().enumerate() {
            chains[k] = Some(lods);
            progress(GltfProgress {
                stage: "meshes",
                done: done + 1,
                total,
            });
        }
    });

    // materials (a default one last for primitives without)
    let tex = |t: Option<gltf::Texture<'_>>, kind: Kind| slot(t).map(|i| texture_file(i, kind));
    let mut materials: Vec<SceneMaterial> = document
        .materials()
        .map(|m| {
            let pbr = m.pbr_metallic_roughness();
            SceneMaterial {
                name: m
                    .name()
                    .map_or_else(|| format!("#{}", m.index().unwrap_or(0)), str::to_owned),
                base_color: tex(pbr.base_color_texture().map(|t| t.texture()), Kind::Srgb),
                base_color_factor: pbr.base_color_factor(),
                normal: tex(m.normal_texture().map(|t| t.texture()), Kind::Normal),
                normal_scale: m.normal_texture().map_or(1.0, |t| t.scale()),
                metallic_roughness: tex(
                    pbr.metallic_roughness_texture().map(|t| t.texture()),
                    Kind::Linear,
                ),
                metallic_factor: pbr.metallic_factor(),
                roughness_factor: pbr.roughness_factor(),
                occlusion: tex(m.occlusion_texture().map(|t| t.texture()), Kind::Linear),
                emissive: tex(m.emissive_texture().map(|t| t.texture()), Kind::Srgb),
                emissive_factor: m.emissive_factor(),
                alpha_mode: format!("{:?}", m.alpha_mode()).to_uppercase(),
                alpha_cutoff: m.alpha_cutoff().unwrap_or(0.5),
                double_sided: m.double_sided(),
            }
        })
        .collect();
    let default_material = materials.len();
    if primitives.iter().any(|(_, _, p)| p.material.is_none()) {
        materials.push(SceneMaterial {
            name: "default".into(),
            base_color: None,
            base_color_factor: [1.0; 4],
            normal: None,
            normal_scale: 1.0,
            metallic_roughness: None,
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            occlusion: None,
            emissive: None,
            emissive_factor: [0.0; 3],
            alpha_mode: "OPAQUE".into(),
            alpha_cutoff: 0.5,
            double_sided: false,
        });
    }

    let mut meshes = Vec::with_capacity(total);
    let mut by_mesh: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, ((mesh, _, p), lods)) in primitives.iter().zip(chains).enumerate() {
        let lods = lods.expect("every primitive was simplified");
        let file = PathBuf::from("meshes").join(format!("{k:03}-{}.msmesh", sanitize(&p.name)));
        let out = out_dir.join(&file);
        std::fs::write(&out, write_mesh(&lods, p.attributes)).map_err(out_io(&out))?;
        meshes.push(SceneMesh {
            name: p.name.clone(),
            file,
            material: p.material.unwrap_or(default_material),
            triangles: lods.iter().map(|l| l.indices.len() as u32 / 3).collect(),
            errors: lods.iter().map(|l| l.error).collect(),
        });
        by_mesh.entry(*mesh).or_default().push(k);
    }

    // instances: the default scene's node tree
    let mut instances = Vec::new();
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    let roots: Vec<gltf::Node<'_>> = match document
        .default_scene()
        .or_else(|| document.scenes().next())
    {
        Some(s) => s.nodes().collect(),
        None => document.nodes().collect(),
    };
    let mut stack: Vec<(gltf::Node<'_>, Mat4, usize)> =
        roots.into_iter().map(|n| (n, Mat4::IDENTITY, 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        if depth > 64 {
            warnings.push("node tree deeper than 64 levels (a cycle?): cut".into());
            continue;
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            for &k in by_mesh.get(&mesh.index()).map_or(&[][..], |v| v) {
                let (min, max) = mesh_bounds(&primitives[k].2.vertices);
                for corner in 0..8 {
                    let c = Vec3::new(
                        if corner & 1 == 0 { min.x } else { max.x },
                        if corner & 2 == 0 { min.y } else { max.y },
                        if corner & 4 == 0 { min.z } else { max.z },
                    );
                    let w = world.transform_point3(c);
                    lo = lo.min(w);
                    hi = hi.max(w);
                }
                instances.push(SceneInstance {
                    mesh: k,
                    node: node
                        .name()
                        .map_or_else(|| format!("#{}", node.index()), str::to_owned),
                    transform: world.to_cols_array(),
                });
            }
        }
        for child in node.children() {
            stack.push((child, world, depth + 1));
        }
    }
    if instances.is_empty() {
        (lo, hi) = (Vec3::ZERO, Vec3::ZERO);
    }
    let scene = SceneFile {
        format: crate::mesh::scene_file::FORMAT.into(),
        version: crate::mesh::scene_file::VERSION,
        source: input
            .file_name()
            .map_or(name.clone(), |f| f.to_string_lossy().into_owned()),
        meshes,
        materials,
        instances,
        bounds: [lo.to_array(), hi.to_array()],
    };
    let scene_path = out_dir.join("scene.json");
    scene.save(&scene_path).map_err(|e| GltfCookError::Output {
        path: scene_path.display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(CookedGltf {
        scene_path,
        scene,
        warnings,
    })
}

fn mesh_bounds(vertices: &[Vertex]) -> (Vec3, Vec3) {
    vertices.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), v| {
            let p = Vec3::from(v.position);
            (lo.min(p), hi.max(p))
        },
    )
}

fn sanitize(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if s.is_empty() {
        "unnamed".into()
    } else {
        s
    }
}

/// One texture: KTX2 as it is, PNG/JPEG cooked for its kind.
fn cook_texture(
    name: &str,
    image: usize,
    kind: Kind,
    bytes: &[u8],
    opts: &GltfCookOptions,
) -> Result<Vec<u8>, GltfCookError> {
    if bytes.starts_with(&crate::container::KTX2_MAGIC) {
        return Ok(bytes.to_vec());
    }
    let decoded = image::load_from_memory(bytes).map_err(|e| GltfCookError::Image {
        path: name.to_owned(),
        image: format!("#{image}"),
        reason: format!("not a PNG, JPEG or KTX2 image: {e}"),
    })?;
    let rgba = decoded.to_rgba8();
    let cook = CookOptions {
        codec: opts.codec,
        linear: kind != Kind::Srgb,
        normal_map: kind == Kind::Normal,
        quality: opts.quality,
        threads: 1,
        ..CookOptions::default()
    };
    Ok(cook_image(&format!("{name} image #{image}"), &rgba, &cook)?)
}
