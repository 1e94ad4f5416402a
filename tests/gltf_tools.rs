//! glTF as real tools write it: FlightHelmet through Debian's gltfpack
//! (meshopt compression with quantized attributes, and without
//! quantization), a mesh written with three unshared vertices per triangle,
//! texture transforms and texture coordinate sets, skins, Draco, and KTX2
//! images that cannot stream as they are.

mod common;
#[path = "common/scene_render.rs"]
mod scene_render;

use glam::{UVec2, Vec3};
use mipstream::cook::gltf::{cook_gltf, CookedGltf, GltfCookError, GltfCookOptions};
use mipstream::mesh::MeshFile;
use mipstream::{Budget, Streamer, StreamerOptions, TextureFile, View};
use mipstream_tools::gltf_scene::StreamedScene;
use mipstream_tools::reference::ReferenceScene;
use mipstream_tools::render_mesh::MeshRenderer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SIZE: UVec2 = UVec2::new(192, 192);

fn helmet_gltf() -> PathBuf {
    common::shared_data().join("scenes/FlightHelmet/FlightHelmet.gltf")
}

/// Runs Debian's gltfpack; its absence is a failure that says what to install.
fn gltfpack(input: &Path, output: &Path, flags: &[&str]) {
    let o = Command::new("gltfpack")
        .arg("-i")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(flags)
        .output()
        .unwrap_or_else(|e| panic!("gltfpack: {e}: install it with `apt-get install gltfpack`"));
    assert!(
        o.status.success(),
        "gltfpack {flags:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn cook(input: &Path, out: &Path, opts: &GltfCookOptions) -> Result<CookedGltf, GltfCookError> {
    let _ = std::fs::remove_dir_all(out);
    cook_gltf(input, out, opts, |_| {})
}

fn fast() -> GltfCookOptions {
    GltfCookOptions {
        quality: 0,
        ..GltfCookOptions::default()
    }
}

/// The cooked scene at `out`, streamed with room for everything, settled
/// and drawn from the helmet's orbit camera.
fn streamed_picture(out: &Path) -> image::RgbaImage {
    let g = common::gpu();
    let mut s = Streamer::with_options(
        &g.device,
        &g.queue,
        StreamerOptions {
            budget: Budget::Bytes(512 << 20),
            ..Default::default()
        },
    );
    let mut scene = StreamedScene::load(&mut s, &out.join("scene.json")).unwrap();
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);
    let view = helmet_view(&scene);
    s.settle(std::slice::from_ref(&view), Duration::from_secs(120))
        .unwrap();
    s.check_invariants().unwrap();
    scene_render::render_streamed(&mut renderer, &mut s, &mut scene, &view, SIZE)
}

fn helmet_view(scene: &StreamedScene) -> View {
    let (eye, at) = scene.orbit_eye(1.6);
    View::look_at(eye, at, Vec3::Y, 0.8, SIZE, 0.01, 1000.0)
}

/// The original FlightHelmet, uncooked, from the same camera.
fn reference_picture(streamed_out: &Path) -> image::RgbaImage {
    let g = common::gpu();
    let mut s = Streamer::new(&g.device, &g.queue);
    let scene = StreamedScene::load(&mut s, &streamed_out.join("scene.json")).unwrap();
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);
    let reference = ReferenceScene::load(&g.device, &g.queue, &renderer, &helmet_gltf()).unwrap();
    scene_render::render(
        &mut renderer,
        &helmet_view(&scene),
        &reference.draws(),
        SIZE,
    )
}

#[test]
fn files_optimised_by_gltfpack_cook_into_lod_chains_and_render_like_the_original() {
    let dir = common::output_dir().join("gltf-tools");
    std::fs::create_dir_all(&dir).unwrap();
    // -c: EXT_meshopt_compression with KHR_mesh_quantization; -noq: plain
    // floats (both with gltfpack's own texture coordinate transforms)
    for (flags, label) in [(&["-c"][..], "meshopt"), (&["-noq"][..], "noq")] {
        let glb = dir.join(format!("helmet-{label}.glb"));
        gltfpack(&helmet_gltf(), &glb, flags);
        let out = dir.join(format!("cooked-{label}"));
        let cooked = cook(&glb, &out, &fast()).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(cooked.scene.meshes.len(), 6, "{label}");
        for m in &cooked.scene.meshes {
            if m.triangles[0] > 1000 {
                assert!(
                    m.triangles.len() >= 3,
                    "{label}: {} has {:?}",
                    m.name,
                    m.triangles
                );
            }
            let f = MeshFile::open_path(out.join(&m.file)).unwrap();
            assert_eq!(f.info().lods.len(), m.triangles.len());
        }
        let streamed = streamed_picture(&out);
        let expected = reference_picture(&out);
        let p = common::psnr(&streamed, &expected);
        let (f, _) = common::flip(&expected, &streamed);
        eprintln!(
            "gltfpack {label}, cooked and streamed, vs the original: PSNR {p:.2} dB, FLIP {f:.4}"
        );
        common::assert_images_close(
            &format!("gltfpack-{label}-vs-reference"),
            &streamed,
            &expected,
            common::Tolerance {
                min_psnr: 28.0,
                max_flip: 0.12,
            },
        );
    }
}

/// Little-endian bytes of `f32`s.
fn floats(v: impl IntoIterator<Item = f32>) -> Vec<u8> {
    v.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// A glTF whose one buffer is `bin` (as a data URI) and whose other parts
/// are `body` (JSON members after `asset`).
fn gltf_text(bin: &[u8], body: &str) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for c in bin.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            b64.push(if i <= c.len() {
                T[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    format!(
        r#"{{"asset":{{"version":"2.0"}},"buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{b64}"}}],{body}}}"#,
        bin.len()
    )
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = common::output_dir().join("gltf-tools");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A UV sphere written as exporters write seam-split or flat meshes: no
/// index buffer, three vertices of its own per triangle; smooth normals, or
/// one normal per face (`flat`).
fn unshared_sphere(flat: bool) -> (String, usize) {
    let (rings, segments) = (24u32, 48u32);
    let point = |r: u32, s: u32| {
        let th = std::f32::consts::PI * r as f32 / rings as f32;
        let ph = std::f32::consts::TAU * s as f32 / segments as f32;
        let n = [th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()];
        (n, [s as f32 / segments as f32, r as f32 / rings as f32])
    };
    let mut pos = Vec::new();
    let mut nrm = Vec::new();
    let mut uv = Vec::new();
    for r in 0..rings {
        for s in 0..segments {
            let quad = [
                point(r, s),
                point(r + 1, s),
                point(r + 1, s + 1),
                point(r, s + 1),
            ];
            for tri in [[0, 1, 2], [0, 2, 3]] {
                let p = tri.map(|k| Vec3::from(quad[k].0));
                let face = (p[1] - p[0])
                    .cross(p[2] - p[0])
                    .normalize_or(Vec3::Y)
                    .to_array();
                for k in tri {
                    let (n, t) = quad[k];
                    pos.extend(n);
                    nrm.extend(if flat { face } else { n });
                    uv.extend(t);
                }
            }
        }
    }
    let count = pos.len() / 3;
    let mut bin = floats(pos);
    let p_len = bin.len();
    bin.extend(floats(nrm));
    let n_len = bin.len() - p_len;
    bin.extend(floats(uv));
    let uv_len = bin.len() - p_len - n_len;
    let body = format!(
        r#""bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":{p_len}}},{{"buffer":0,"byteOffset":{p_len},"byteLength":{n_len}}},{{"buffer":0,"byteOffset":{},"byteLength":{uv_len}}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":{count},"type":"VEC3","min":[-1,-1,-1],"max":[1,1,1]}},
                     {{"bufferView":1,"componentType":5126,"count":{count},"type":"VEC3"}},
                     {{"bufferView":2,"componentType":5126,"count":{count},"type":"VEC2"}}],
        "meshes":[{{"name":"unshared","primitives":[{{"attributes":{{"POSITION":0,"NORMAL":1,"TEXCOORD_0":2}}}}]}}],
        "nodes":[{{"mesh":0}}],"scenes":[{{"nodes":[0]}}],"scene":0"#,
        p_len + n_len
    );
    (gltf_text(&bin, &body), count / 3)
}

#[test]
fn a_mesh_written_without_shared_vertices_welds_into_a_full_lod_chain() {
    let (text, triangles) = unshared_sphere(false);
    let path = write("unshared.gltf", &text);
    let dir = common::output_dir().join("gltf-tools");
    let unwelded = cook(
        &path,
        &dir.join("unshared-no-weld"),
        &GltfCookOptions {
            weld: false,
            ..fast()
        },
    )
    .unwrap();
    let welded = cook(&path, &dir.join("unshared"), &fast()).unwrap();
    let (before, after) = (&unwelded.scene.meshes[0], &welded.scene.meshes[0]);
    eprintln!(
        "{triangles} triangles, {} vertices: without the weld {:?} errors {:?}; welded ({} vertices merged) {:?} errors {:?}",
        3 * triangles,
        before.triangles,
        before.errors,
        after.welded_vertices,
        after.triangles,
        after.errors
    );
    assert_eq!(before.welded_vertices, 0);
    // without the weld every edge is a seam: only collapses across seams
    // simplify it (meshoptimizer's permissive mode), and every LOD keeps
    // three vertices per triangle: the welded chain holds far fewer bytes
    let vertices = |out: &Path, cooked: &CookedGltf| -> Vec<u32> {
        let f = MeshFile::open_path(out.join(&cooked.scene.meshes[0].file)).unwrap();
        f.info().lods.iter().map(|l| l.vertex_count).collect()
    };
    let (v_before, v_after) = (
        vertices(&dir.join("unshared-no-weld"), &unwelded),
        vertices(&dir.join("unshared"), &welded),
    );
    eprintln!("vertices per LOD: {v_before:?} without the weld, {v_after:?} welded");
    assert!(before.triangles.len() >= 3);
    assert!(v_after[0] * 4 < v_before[0], "{v_after:?} vs {v_before:?}");
    assert!(after.triangles.len() >= 3, "{:?}", after.triangles);
    assert!(
        after.welded_vertices > 2 * triangles,
        "{}",
        after.welded_vertices
    );
    assert_eq!(
        after.triangles[0] as usize, triangles,
        "LOD 0 is the whole mesh"
    );
    // flat shading: a normal seam at every edge the weld must keep; the
    // chain collapses across them (permissive mode) rather than stopping
    let (text, _) = unshared_sphere(true);
    let flat = cook(&write("flat.gltf", &text), &dir.join("flat"), &fast()).unwrap();
    let m = &flat.scene.meshes[0];
    eprintln!(
        "flat-shaded: {} vertices merged, {:?}",
        m.welded_vertices, m.triangles
    );
    assert!(m.triangles.len() >= 3, "{:?}", m.triangles);
    assert!(
        m.welded_vertices < 3 * triangles / 2,
        "face normals differ: {}",
        m.welded_vertices
    );
}

/// A unit quad with two texture coordinate sets (set 1 is half of set 0),
/// a PNG and a material using it through `texture_info`.
fn quad_with(texture_info: &str, extra_attributes: &str, extra: &str) -> String {
    let pos = floats([0., 0., 0., 1., 0., 0., 1., 1., 0., 0., 1., 0.]);
    let uv0 = floats([0., 0., 1., 0., 1., 1., 0., 1.]);
    let uv1 = floats([0., 0., 0.5, 0., 0.5, 0.5, 0., 0.5]);
    let idx: Vec<u8> = [0u16, 1, 2, 0, 2, 3]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let mut png = Vec::new();
    image::RgbaImage::from_fn(64, 64, |x, y| {
        image::Rgba([(x * 4) as u8, (y * 4) as u8, 128, 255])
    })
    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
    .unwrap();
    let mut bin = pos.clone();
    bin.extend(&uv0);
    bin.extend(&uv1);
    bin.extend(&idx);
    bin.extend([0, 0, 0, 0]);
    let png_at = bin.len();
    bin.extend(&png);
    let body = format!(
        r#""bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":48}},{{"buffer":0,"byteOffset":48,"byteLength":32}},{{"buffer":0,"byteOffset":80,"byteLength":32}},{{"buffer":0,"byteOffset":112,"byteLength":12}},{{"buffer":0,"byteOffset":{png_at},"byteLength":{}}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":4,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
                     {{"bufferView":1,"componentType":5126,"count":4,"type":"VEC2"}},
                     {{"bufferView":2,"componentType":5126,"count":4,"type":"VEC2"}},
                     {{"bufferView":3,"componentType":5123,"count":6,"type":"SCALAR"}}],
        "images":[{{"bufferView":4,"mimeType":"image/png"}}],"textures":[{{"source":0}}],
        "materials":[{{"pbrMetallicRoughness":{{"baseColorTexture":{texture_info}}}}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0,"TEXCOORD_0":1,"TEXCOORD_1":2{extra_attributes}}},"indices":3,"material":0}}]}}],
        {extra}"#,
        png.len()
    );
    gltf_text(&bin, &body)
}

/// The largest texture coordinates of a cooked scene's first mesh, LOD 0.
fn cooked_uv_max(out: &Path, cooked: &CookedGltf) -> [f32; 2] {
    let f = MeshFile::open_path(out.join(&cooked.scene.meshes[0].file)).unwrap();
    let lod = f.read_lod(0).unwrap();
    lod.vertices
        .iter()
        .fold([f32::MIN; 2], |m, v| [m[0].max(v.uv[0]), m[1].max(v.uv[1])])
}

#[test]
fn texture_transforms_and_coordinate_sets_are_baked_into_the_cooked_coordinates() {
    let dir = common::output_dir().join("gltf-tools");
    let nodes = r#""nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}],"scene":0"#;
    let cases = [
        // set 0 as it is
        (r#"{"index":0}"#, "", [1.0, 1.0]),
        // set 1 (half of set 0)
        (r#"{"index":0,"texCoord":1}"#, "", [0.5, 0.5]),
        // tiled 8 times: 8 times the texels per world unit
        (
            r#"{"index":0,"extensions":{"KHR_texture_transform":{"scale":[8,8]}}}"#,
            r#","extensionsUsed":["KHR_texture_transform"],"extensionsRequired":["KHR_texture_transform"]"#,
            [8.0, 8.0],
        ),
        // the transform's own texCoord and an offset
        (
            r#"{"index":0,"extensions":{"KHR_texture_transform":{"scale":[2,4],"offset":[1,0],"texCoord":1}}}"#,
            r#","extensionsUsed":["KHR_texture_transform"]"#,
            [2.0, 2.0],
        ),
    ];
    for (k, (info, used, want)) in cases.into_iter().enumerate() {
        let path = write(
            &format!("quad-{k}.gltf"),
            &quad_with(info, "", &format!("{nodes}{used}")),
        );
        let out = dir.join(format!("quad-{k}"));
        let cooked = cook(&path, &out, &fast()).unwrap_or_else(|e| panic!("case {k}: {e}"));
        let got = cooked_uv_max(&out, &cooked);
        assert!(
            (got[0] - want[0]).abs() < 1e-4 && (got[1] - want[1]).abs() < 1e-4,
            "case {k}: {got:?} vs {want:?}"
        );
    }
}

#[test]
fn skins_morphs_and_draco_say_what_was_not_kept() {
    let dir = common::output_dir().join("gltf-tools");
    let cook_as = |name: &str, gltf: &str| {
        cook(
            &write(&format!("{name}.gltf"), gltf),
            &dir.join(name),
            &fast(),
        )
    };
    let warned = |cooked: &CookedGltf, a: &str, b: &str| {
        assert!(
            cooked
                .warnings
                .iter()
                .any(|w| w.contains(a) && w.contains(b)),
            "{:?}",
            cooked.warnings
        )
    };
    // a skinned quad: cooked in its bind pose, and said so
    let skinned = quad_with(
        r#"{"index":0}"#,
        "",
        r#""nodes":[{"mesh":0,"skin":0},{"name":"joint"}],"skins":[{"joints":[1]}],"scenes":[{"nodes":[0,1]}],"scene":0"#,
    );
    warned(
        &cook_as("skinned", &skinned).unwrap(),
        "skinned",
        "bind pose",
    );
    // Draco required: refused by name
    let draco_required = quad_with(
        r#"{"index":0}"#,
        "",
        r#""nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}],"scene":0,"extensionsUsed":["KHR_draco_mesh_compression"],"extensionsRequired":["KHR_draco_mesh_compression"]"#,
    );
    let e = cook_as("draco-required", &draco_required)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("KHR_draco_mesh_compression") && e.contains("does not support"),
        "{e}"
    );
    // Draco used with the uncompressed fallback the specification allows
    let draco_used = quad_with(r#"{"index":0}"#, "", r#""nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}],"scene":0,"extensionsUsed":["KHR_draco_mesh_compression"]"#)
        .replace(
            r#""indices":3,"material":0"#,
            r#""indices":3,"material":0,"extensions":{"KHR_draco_mesh_compression":{"bufferView":0,"attributes":{"POSITION":0}}}"#,
        );
    warned(
        &cook_as("draco-fallback", &draco_used).unwrap(),
        "KHR_draco_mesh_compression",
        "fallback",
    );
}

#[test]
fn ktx2_images_that_cannot_stream_are_cooked_again_into_chains() {
    // AnisotropyBarnLamp ships two single-level RGB8 KTX2 images
    let src = common::shared_data().join("scenes/AnisotropyBarnLamp/AnisotropyBarnLamp.gltf");
    let out = common::output_dir().join("gltf-tools/barnlamp");
    let cooked = cook(&src, &out, &fast()).unwrap();
    let again: Vec<&String> = cooked
        .warnings
        .iter()
        .filter(|w| w.contains("cooked again"))
        .collect();
    assert_eq!(again.len(), 2, "{:?}", cooked.warnings);
    for m in &cooked.scene.materials {
        for t in [&m.base_color, &m.normal, &m.metallic_roughness]
            .into_iter()
            .flatten()
        {
            let f = TextureFile::open_path(out.join(t)).unwrap();
            assert!(
                f.info().levels.len() > 1,
                "{t:?}: {} level(s)",
                f.info().levels.len()
            );
            assert!(
                matches!(
                    mipstream::loss::TextureLoss::from_info(f.info()),
                    Some(Ok(_))
                ),
                "{t:?} carries its measured loss"
            );
        }
    }
}

/// A quad seen by an animated camera under an animated parent ("Rig" moves
/// from x 0 to 1 over 2 s, "Cam" below it at (0.5, 0.5, 4) turns a quarter
/// about y), an orthographic camera and a still one.
fn animated_camera_gltf() -> String {
    let s = std::f32::consts::FRAC_1_SQRT_2;
    let mut bin = floats([0., 0., 0., 1., 0., 0., 1., 1., 0., 0., 1., 0.]);
    bin.extend([0u16, 1, 2, 0, 2, 3].iter().flat_map(|i| i.to_le_bytes()));
    bin.extend([0, 0, 0, 0]);
    bin.extend(floats([0., 1., 2.]));
    bin.extend(floats([0., 0., 0., 0.5, 0., 0., 1., 0., 0.]));
    bin.extend(floats([0., 2.]));
    bin.extend(floats([0., 0., 0., 1., 0., s, 0., s]));
    assert_eq!(bin.len(), 152);
    let body = r#""bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":48},{"buffer":0,"byteOffset":48,"byteLength":12},
        {"buffer":0,"byteOffset":64,"byteLength":12},{"buffer":0,"byteOffset":76,"byteLength":36},
        {"buffer":0,"byteOffset":112,"byteLength":8},{"buffer":0,"byteOffset":120,"byteLength":32}],
        "accessors":[{"bufferView":0,"componentType":5126,"count":4,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
                     {"bufferView":1,"componentType":5123,"count":6,"type":"SCALAR"},
                     {"bufferView":2,"componentType":5126,"count":3,"type":"SCALAR","min":[0],"max":[2]},
                     {"bufferView":3,"componentType":5126,"count":3,"type":"VEC3"},
                     {"bufferView":4,"componentType":5126,"count":2,"type":"SCALAR","min":[0],"max":[2]},
                     {"bufferView":5,"componentType":5126,"count":2,"type":"VEC4"}],
        "meshes":[{"primitives":[{"attributes":{"POSITION":0},"indices":1}]}],
        "cameras":[{"type":"perspective","perspective":{"yfov":0.7,"znear":0.05}},
                   {"type":"orthographic","orthographic":{"xmag":1,"ymag":1,"znear":0.01,"zfar":10}}],
        "nodes":[{"mesh":0},{"name":"Rig","children":[2]},{"name":"Cam","camera":0,"translation":[0.5,0.5,4]},
                 {"name":"Top","camera":1,"translation":[0,5,0]},{"name":"Still","camera":0,"translation":[0.5,0.5,3]}],
        "animations":[{"name":"Fly","samplers":[{"input":2,"output":3,"interpolation":"LINEAR"},{"input":4,"output":5}],
                       "channels":[{"sampler":0,"target":{"node":1,"path":"translation"}},{"sampler":1,"target":{"node":2,"path":"rotation"}}]}],
        "scenes":[{"nodes":[0,1,3,4]}],"scene":0"#;
    gltf_text(&bin, body)
}

#[test]
fn a_scenes_animated_camera_is_cooked_and_becomes_the_benchmarks_path() {
    use mipstream::mesh::scene_file::SceneFile;
    use mipstream_tools::scene::Segment;
    use mipstream_tools::source::scene_path;
    let dir = common::output_dir().join("gltf-tools");
    let out = dir.join("camera");
    let cooked = cook(
        &write("camera.gltf", &animated_camera_gltf()),
        &out,
        &fast(),
    )
    .unwrap();
    assert!(
        cooked
            .warnings
            .iter()
            .any(|w| w.contains("Top") && w.contains("orthographic")),
        "{:?}",
        cooked.warnings
    );
    let cams = &cooked.scene.cameras;
    let names: Vec<&str> = cams.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Cam", "Still"]);
    let (cam, still) = (&cams[0], &cams[1]);
    assert_eq!(cam.animation.as_deref(), Some("Fly"));
    assert_eq!((cam.yfov, cam.znear, cam.zfar), (0.7, 0.05, None));
    // 30 keys a second over the 2 s the animation spans
    assert_eq!(cam.keys.len(), 61);
    assert_eq!((cam.keys[0].time, cam.keys[60].time), (0.0, 2.0));
    // halfway: the rig half way along x, the camera turned an eighth
    let k = cam.keys[30];
    assert!((k.time - 1.0).abs() < 1e-6);
    assert!(
        Vec3::from(k.eye).distance(Vec3::new(1.0, 0.5, 4.0)) < 1e-5,
        "{k:?}"
    );
    let eighth = Vec3::new(-1.0, 0.0, -1.0).normalize();
    assert!(Vec3::from(k.forward).distance(eighth) < 1e-5, "{k:?}");
    assert!(Vec3::from(k.up).distance(Vec3::Y) < 1e-5, "{k:?}");
    assert_eq!(still.animation, None);
    assert_eq!(still.keys.len(), 1);
    assert_eq!(still.keys[0].eye, [0.5, 0.5, 3.0]);
    // the file keeps them
    let file = SceneFile::load(&cooked.scene_path).unwrap();
    assert_eq!(file, cooked.scene);
    // the path follows the animated camera, with its field of view
    let path = scene_path(&file);
    assert!(
        path.describe().contains("camera Cam along Fly"),
        "{}",
        path.describe()
    );
    assert_eq!((path.cut_at, path.duration), (2.0, 2.5));
    let p = path.at(1.0);
    assert_eq!(p.segment, Segment::Track);
    assert!(p.eye.distance(Vec3::new(1.0, 0.5, 4.0)) < 1e-4, "{p:?}");
    let v = path.view(0.0, SIZE);
    assert_eq!(v.fov_y, 0.7);
    let centre = v.view_proj.project_point3(Vec3::new(0.5, 0.5, 0.0));
    assert!(
        centre.truncate().length() < 1e-4,
        "the quad in the middle: {centre}"
    );
    assert_eq!(path.at(2.2).segment, Segment::AfterCut);
    // a camera whose field of view is nonsense is refused on reading
    let mut bad = file.clone();
    bad.cameras[0].yfov = 0.0;
    let bad_path = dir.join("camera-bad.json");
    bad.save(&bad_path).unwrap();
    let e = SceneFile::load(&bad_path).unwrap_err().to_string();
    assert!(e.contains("camera Cam"), "{e}");
}
