//! Meshes: cooking glTF (FlightHelmet from the shared data: LOD chains,
//! textures in the right colour space, the scene file), clear errors for
//! broken glTF, and FlightHelmet streamed and rendered (the `.msmesh`
//! container's validation is `mesh_files.rs`).

mod common;
#[path = "common/scene_render.rs"]
mod scene_render;

use mipstream::cook::gltf::{cook_gltf, GltfCookError, GltfCookOptions};
use mipstream::mesh::scene_file::SceneFile;
use mipstream::mesh::MeshFile;
use mipstream::{MemorySource, TextureFile};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

fn helmet_gltf() -> PathBuf {
    common::shared_data().join("scenes/FlightHelmet/FlightHelmet.gltf")
}

/// FlightHelmet cooked once for every test of this binary.
fn cooked_helmet() -> &'static (PathBuf, SceneFile) {
    static COOKED: OnceLock<(PathBuf, SceneFile)> = OnceLock::new();
    COOKED.get_or_init(|| {
        let out = common::output_dir().join("meshes-flighthelmet");
        let _ = std::fs::remove_dir_all(&out);
        let opts = GltfCookOptions {
            quality: 0,
            ..GltfCookOptions::default()
        };
        let mut stages = Vec::new();
        let cooked = cook_gltf(&helmet_gltf(), &out, &opts, |p| {
            stages.push((p.stage, p.done, p.total))
        })
        .unwrap();
        assert!(stages.contains(&("textures", 15, 15)), "{stages:?}");
        assert!(stages.contains(&("meshes", 6, 6)), "{stages:?}");
        assert_eq!(cooked.scene, SceneFile::load(&cooked.scene_path).unwrap());
        (out, cooked.scene)
    })
}

#[test]
fn flight_helmet_cooks_into_lod_chains_that_halve_with_growing_error() {
    let (out, scene) = cooked_helmet();
    assert_eq!(scene.meshes.len(), 6);
    assert_eq!(scene.instances.len(), 6);
    let source = {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(helmet_gltf()).unwrap()).unwrap();
        json
    };
    for (k, m) in scene.meshes.iter().enumerate() {
        assert!(
            m.triangles.len() >= 4,
            "{}: {} LODs",
            m.name,
            m.triangles.len()
        );
        // LOD 0 is the whole primitive
        let indices = source["meshes"][k]["primitives"][0]["indices"]
            .as_u64()
            .unwrap();
        let count = source["accessors"][indices as usize]["count"]
            .as_u64()
            .unwrap();
        assert_eq!(m.triangles[0] as u64 * 3, count, "{}", m.name);
        for w in m.triangles.windows(2) {
            assert!(w[1] < w[0], "{}: {:?}", m.name, m.triangles);
        }
        // the first steps halve (later ones may stop short of half near the error limit)
        assert!(
            m.triangles[1] * 10 <= m.triangles[0] * 6,
            "{:?}",
            m.triangles
        );
        assert_eq!(m.errors[0], 0.0);
        for w in m.errors.windows(2) {
            assert!(w[1] > w[0], "{}: errors {:?}", m.name, m.errors);
        }
        // the container says the same and every LOD reads back in range
        let file = MeshFile::open_path(out.join(&m.file)).unwrap();
        let info = file.info();
        assert_eq!(info.lods.len(), m.triangles.len());
        // each LOD's image error measured, none for LOD 0, more for the
        // coarsest than for the first simplified one
        let image: Vec<f32> = info.lods.iter().map(|l| l.image_error.unwrap()).collect();
        assert_eq!(image[0], 0.0, "{}", m.name);
        assert!(image.iter().all(|e| e.is_finite() && *e >= 0.0));
        assert!(image[image.len() - 1] > image[1], "{}: {image:?}", m.name);
        for (l, lod) in info.lods.iter().enumerate() {
            assert_eq!(lod.triangles(), m.triangles[l]);
            assert_eq!(lod.error, m.errors[l]);
            let data = file.read_lod(l as u32).unwrap();
            assert_eq!(data.indices.len() as u32, lod.index_count);
            assert!(data
                .vertices
                .iter()
                .all(|v| (Vec3Like(v.normal).len() - 1.0).abs() < 0.01));
        }
        // a LOD read touches its own bytes only
        let src = Arc::new(MemorySource::new(
            "m",
            std::fs::read(out.join(&m.file)).unwrap(),
        ));
        let file = MeshFile::open(src.clone()).unwrap();
        let before = mipstream::ByteSource::bytes_read(&*src);
        file.read_lod(2).unwrap();
        assert_eq!(
            mipstream::ByteSource::bytes_read(&*src) - before,
            file.info().lods[2].bytes()
        );
    }
    let [lo, hi] = scene.bounds;
    assert!((0..3).all(|i| hi[i] > lo[i]), "bounds {lo:?} {hi:?}");
}

struct Vec3Like([f32; 3]);
impl Vec3Like {
    fn len(&self) -> f32 {
        self.0.iter().map(|c| c * c).sum::<f32>().sqrt()
    }
}

#[test]
fn flight_helmet_textures_are_cooked_in_the_colour_space_of_their_slot() {
    let (out, scene) = cooked_helmet();
    assert_eq!(scene.materials.len(), 6);
    let files = common::files_with(&out.join("textures"), &[".ktx2"]);
    assert_eq!(
        files.len(),
        15,
        "5 materials x 3 images, 1 material with 3 more"
    );
    for m in &scene.materials {
        let open =
            |p: &Option<PathBuf>| TextureFile::open_path(out.join(p.as_ref().unwrap())).unwrap();
        assert!(open(&m.base_color).info().srgb, "{}", m.name);
        assert!(!open(&m.normal).info().srgb, "{}", m.name);
        assert!(!open(&m.metallic_roughness).info().srgb, "{}", m.name);
        // FlightHelmet packs occlusion with roughness and metal: one file
        assert_eq!(m.occlusion, m.metallic_roughness);
        assert_eq!(open(&m.base_color).info().width, 512);
    }
}

/// A minimal glTF with one triangle primitive, buffers inline.
fn triangle_gltf(indices: [u16; 3], extra: &str) -> String {
    // three positions (36 bytes) then three u16 indices (6 bytes, padded to 8)
    let mut bin = Vec::new();
    for p in [[0f32, 0., 0.], [1., 0., 0.], [0., 1., 0.]] {
        for c in p {
            bin.extend_from_slice(&c.to_le_bytes());
        }
    }
    for i in indices {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    bin.extend_from_slice(&[0, 0]);
    let b64 = base64_encode(&bin);
    format!(
        r#"{{"asset":{{"version":"2.0"}},{extra}
        "buffers":[{{"byteLength":{len},"uri":"data:application/octet-stream;base64,{b64}"}}],
        "bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":36}},{{"buffer":0,"byteOffset":36,"byteLength":6}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
                     {{"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}],
        "nodes":[{{"mesh":0}}],"scenes":[{{"nodes":[0]}}],"scene":0}}"#,
        len = bin.len()
    )
}

fn base64_encode(b: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn cook_text(name: &str, text: &str) -> Result<mipstream::cook::gltf::CookedGltf, GltfCookError> {
    let dir = common::output_dir().join(format!("meshes-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.gltf"));
    std::fs::write(&path, text).unwrap();
    cook_gltf(&path, &dir.join("out"), &GltfCookOptions::default(), |_| {})
}

#[test]
fn a_tiny_gltf_cooks_with_generated_normals_and_a_default_material() {
    let cooked = cook_text("triangle", &triangle_gltf([0, 1, 2], "")).unwrap();
    assert_eq!(cooked.scene.meshes.len(), 1);
    assert_eq!(cooked.scene.meshes[0].triangles, vec![1]);
    assert_eq!(cooked.scene.materials[0].name, "default");
    assert!(
        cooked.warnings.iter().any(|w| w.contains("no normals")),
        "{:?}",
        cooked.warnings
    );
    let file = MeshFile::open_path(
        cooked
            .scene_path
            .parent()
            .unwrap()
            .join(&cooked.scene.meshes[0].file),
    )
    .unwrap();
    let lod = file.read_lod(0).unwrap();
    assert!(lod.vertices.iter().all(|v| v.normal == [0.0, 0.0, 1.0]));
}

#[test]
fn broken_gltf_gets_clear_errors() {
    let e = cook_text("bad-index", &triangle_gltf([0, 1, 7], ""))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("primitive 0") && e.contains("index 2 is 7") && e.contains("3 vertices"),
        "{e}"
    );
    let e = cook_text(
        "required-ext",
        &triangle_gltf([0, 1, 2], r#""extensionsUsed":["KHR_draco_mesh_compression"],"extensionsRequired":["KHR_draco_mesh_compression"],"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("requires the extension KHR_draco_mesh_compression"),
        "{e}"
    );
    let e = cook_text("not-json", "{\"asset\": ")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not valid glTF"), "{e}");
    // a buffer file that is not there
    let text = r#"{"asset":{"version":"2.0"},"buffers":[{"byteLength":64,"uri":"missing.bin"}]}"#;
    let e = cook_text("missing-buffer", text).unwrap_err().to_string();
    assert!(
        e.contains("buffers") && e.contains("missing-buffer.gltf"),
        "{e}"
    );
    // a missing input file
    let e = cook_gltf(
        Path::new("/nonexistent/x.gltf"),
        Path::new("/tmp/x"),
        &GltfCookOptions::default(),
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("/nonexistent/x.gltf"), "{e}");
}

#[test]
fn ktx2_images_through_khr_texture_basisu_keep_their_levels_and_gain_a_measured_loss() {
    let dir = common::output_dir().join("meshes-basisu");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ktx2 = common::repo().join("assets/checker-uastc.ktx2");
    std::fs::copy(&ktx2, dir.join("checker.ktx2")).unwrap();
    let extra = r#""extensionsUsed":["KHR_texture_basisu"],"extensionsRequired":["KHR_texture_basisu"],
        "images":[{"uri":"checker.ktx2","mimeType":"image/ktx2"}],
        "textures":[{"extensions":{"KHR_texture_basisu":{"source":0}}}],
        "materials":[{"pbrMetallicRoughness":{"baseColorTexture":{"index":0}}}],"#;
    let text =
        triangle_gltf([0, 1, 2], extra).replace(r#""indices":1}"#, r#""indices":1,"material":0}"#);
    std::fs::write(dir.join("basisu.gltf"), text).unwrap();
    let cooked = cook_gltf(
        &dir.join("basisu.gltf"),
        &dir.join("out"),
        &GltfCookOptions::default(),
        |_| {},
    )
    .unwrap();
    let tex = cooked.scene.materials[0].base_color.as_ref().unwrap();
    let (a, b) = (
        mipstream::TextureFile::open_path(&ktx2).unwrap(),
        mipstream::TextureFile::open_path(dir.join("out").join(tex)).unwrap(),
    );
    assert_eq!(a.info().levels.len(), b.info().levels.len());
    for l in 0..a.info().levels.len() as u32 {
        assert_eq!(
            a.read_level(l).unwrap().data,
            b.read_level(l).unwrap().data,
            "level {l}"
        );
    }
    assert!(matches!(
        mipstream::loss::TextureLoss::from_info(b.info()),
        Some(Ok(_))
    ));
}

// ---------------------------------------------------------------------------
// FlightHelmet streamed: textures and meshes under one budget, rendered.

use glam::{UVec2, Vec3};
use mipstream::{Budget, Streamer, StreamerOptions, View};
use mipstream_tools::gltf_scene::StreamedScene;
use mipstream_tools::reference::ReferenceScene;
use mipstream_tools::render_mesh::{MeshDraw, MeshRenderer};
use std::time::Duration;

const SIZE: UVec2 = UVec2::new(192, 192);

fn helmet_streamer(budget: u64) -> (Streamer, StreamedScene) {
    helmet_streamer_with(StreamerOptions {
        budget: Budget::Bytes(budget),
        ..Default::default()
    })
}

fn helmet_streamer_with(options: StreamerOptions) -> (Streamer, StreamedScene) {
    let g = common::gpu();
    let mut s = Streamer::with_options(&g.device, &g.queue, options);
    let (out, _) = cooked_helmet();
    let scene = StreamedScene::load(&mut s, &out.join("scene.json")).unwrap();
    (s, scene)
}

/// The camera `distance` scene radii from the helmet's centre.
fn helmet_view(scene: &StreamedScene, distance: f32) -> View {
    let (eye, at) = scene.orbit_eye(distance);
    View::look_at(eye, at, Vec3::Y, 0.8, SIZE, 0.01, 1000.0)
}

fn render(renderer: &mut MeshRenderer, view: &View, draws: &[MeshDraw<'_>]) -> image::RgbaImage {
    scene_render::render(renderer, view, draws, SIZE)
}

fn render_streamed(
    renderer: &mut MeshRenderer,
    s: &mut Streamer,
    scene: &mut StreamedScene,
    view: &View,
) -> image::RgbaImage {
    scene_render::render_streamed(renderer, s, scene, view, SIZE)
}

#[test]
fn flight_helmet_at_full_budget_matches_the_uncooked_reference() {
    let g = common::gpu();
    let (mut s, mut scene) = helmet_streamer(512 << 20);
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);
    let view = helmet_view(&scene, 1.6);
    s.settle(std::slice::from_ref(&view), Duration::from_secs(120))
        .unwrap();
    s.check_invariants().unwrap();
    let r = s.report();
    assert_eq!(r.meshes.len(), 6);
    for m in &r.meshes {
        // at least what the view needs (the spare budget goes finer)
        assert!(m.resident <= m.wanted, "{m:?}");
        assert!(m.screen_error_px <= 1.0, "{m:?}");
        assert_eq!(m.below, None, "{m:?}");
    }
    assert!(
        r.meshes.iter().any(|m| m.resident < m.lods - 1),
        "close up, some mesh above its coarsest LOD:\n{r}"
    );
    for t in &r.textures {
        assert_eq!(t.below, None, "{t:?}");
    }
    let streamed = render_streamed(&mut renderer, &mut s, &mut scene, &view);
    let reference = ReferenceScene::load(&g.device, &g.queue, &renderer, &helmet_gltf()).unwrap();
    let expected = render(&mut renderer, &view, &reference.draws());
    assert!(common::black_fraction(&streamed) < 0.05);
    // the helmet covers a good part of the picture
    let bg = [46u8, 49, 57];
    let covered = streamed
        .pixels()
        .filter(|p| p.0[..3].iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 3))
        .count();
    assert!(
        covered > (SIZE.x * SIZE.y / 5) as usize,
        "{covered} pixels show the helmet"
    );
    let p = common::psnr(&streamed, &expected);
    let (f, _) = common::flip(&expected, &streamed);
    eprintln!("FlightHelmet streamed vs uncooked reference: PSNR {p:.2} dB, FLIP {f:.4}");
    common::assert_images_close(
        "flighthelmet-vs-reference",
        &streamed,
        &expected,
        common::Tolerance {
            min_psnr: 28.0,
            max_flip: 0.12,
        },
    );
    common::check_golden(
        "flighthelmet-full-budget",
        &streamed,
        common::Tolerance {
            min_psnr: 30.0,
            max_flip: 0.1,
        },
    );
}

#[test]
fn flying_away_from_the_helmet_and_back_drops_and_restores_meshes_and_textures() {
    let g = common::gpu();
    // what everything costs at full detail, measured on an unlimited streamer
    let (mut full, full_scene) = helmet_streamer(512 << 20);
    let near = helmet_view(&full_scene, 1.3);
    full.settle(std::slice::from_ref(&near), Duration::from_secs(120))
        .unwrap();
    let fr = full.report();
    let (full_bytes, full_mesh) = (fr.totals.accounted(), fr.totals.mesh);
    let wanted: Vec<u32> = fr.meshes.iter().map(|m| m.wanted).collect();
    assert!(full_mesh > 0);
    drop(full);
    // a budget that cannot hold everything the near view wants
    let budget = full_bytes * 6 / 10;
    // without the spare-budget floor the plan holds what the views need and
    // no more, so leaving shows as drops (with it, detail the budget has
    // room for stays resident for a camera that comes back)
    let mut options = StreamerOptions {
        budget: Budget::Bytes(budget),
        ..Default::default()
    };
    options.planner.spare_floor = false;
    let (mut s, mut scene) = helmet_streamer_with(options);
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);
    let check = |s: &Streamer, what: &str| {
        s.check_invariants()
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", s.report()));
        let r = s.report();
        let meshes: u64 = r.meshes.iter().map(|m| m.bytes).sum();
        assert_eq!(r.totals.mesh, meshes, "{what}");
        assert!(r.totals.accounted() <= budget, "{what}: {r}");
    };
    s.settle(std::slice::from_ref(&near), Duration::from_secs(120))
        .unwrap();
    check(&s, "near");
    let r0 = s.report();
    let near_mesh_lods: Vec<u32> = r0.meshes.iter().map(|m| m.resident).collect();
    let near_tex: Vec<u32> = r0.textures.iter().map(|t| t.resident).collect();
    assert!(
        r0.meshes.iter().any(|m| m.resident < m.lods - 1),
        "near: some mesh above its coarsest LOD\n{r0}"
    );
    assert!(r0.totals.mesh > r0.meshes.iter().map(|m| m.bytes).min().unwrap());
    let before = render_streamed(&mut renderer, &mut s, &mut scene, &near);
    // fly away over 90 frames, hold far, fly back
    let path = |i: u32| -> f32 {
        match i {
            0..90 => 1.3 * (60.0f32).powf(i as f32 / 90.0),
            90..150 => 78.0,
            _ => 1.3 * (60.0f32).powf(1.0 - (i - 150) as f32 / 90.0),
        }
    };
    let mut far_mesh_bytes = u64::MAX;
    let mut far_lods = Vec::new();
    for i in 0..240 {
        let v = helmet_view(&scene, path(i));
        s.update(std::slice::from_ref(&v));
        check(&s, &format!("frame {i}"));
        if i % 30 == 0 {
            render_streamed(&mut renderer, &mut s, &mut scene, &v);
        }
        if i == 149 {
            let r = s.report();
            far_mesh_bytes = r.totals.mesh;
            far_lods = r.meshes.iter().map(|m| (m.resident, m.lods)).collect();
            assert!(
                r.textures
                    .iter()
                    .zip(&near_tex)
                    .any(|(t, &n)| t.resident > n),
                "far: textures dropped levels\n{r}"
            );
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    assert!(
        far_lods.iter().all(|&(l, n)| l == n - 1),
        "far: every mesh at its coarsest {far_lods:?}"
    );
    assert!(
        far_mesh_bytes < r0.totals.mesh,
        "{far_mesh_bytes} vs {}",
        r0.totals.mesh
    );
    s.settle(std::slice::from_ref(&near), Duration::from_secs(120))
        .unwrap();
    check(&s, "back");
    let r1 = s.report();
    // Where a budget-limited streamer settles depends on the order loads
    // arrive in (what is resident is kept over a newcomer of equal worth),
    // so "back" means: every mesh that wants detail has it again.
    for (m, near_lod) in r1.meshes.iter().zip(&near_mesh_lods) {
        if m.wanted < m.lods - 1 && *near_lod < m.lods - 1 {
            assert!(
                m.resident < m.lods - 1,
                "{} did not come back\n{r1}\n{:?}",
                m.label,
                r1.meshes
            );
        }
    }
    // and every mesh is within a LOD of what its view wants (growing into a
    // LOD needs its bytes free beside the plan, so a large LOD 0 held before
    // leaving may not fit again beside what arrived first), and the budget
    // is used about as fully as before
    for m in &r1.meshes {
        assert!(
            m.resident <= m.wanted + 1,
            "{} is {}\n{r1}",
            m.label,
            m.resident
        );
    }
    assert!(
        r1.totals.accounted() * 10 >= r0.totals.accounted() * 8,
        "held {} vs {} before\n{r1}",
        r1.totals.accounted(),
        r0.totals.accounted()
    );
    let back_tex: Vec<u32> = r1.textures.iter().map(|t| t.resident).collect();
    let finer_or_same = back_tex
        .iter()
        .zip(&near_tex)
        .filter(|(b, n)| b <= n)
        .count();
    assert!(
        finer_or_same * 10 >= near_tex.len() * 8,
        "{back_tex:?} vs {near_tex:?}"
    );
    let after = render_streamed(&mut renderer, &mut s, &mut scene, &near);
    let p = common::psnr(&after, &before);
    assert!(p > 30.0, "the picture came back: {p:.2} dB");
    // the budget bites: something is below what the full streamer had
    let below: Vec<_> = r1.meshes.iter().map(|m| m.resident).collect();
    assert!(
        below.iter().zip(&wanted).any(|(b, w)| b > w)
            || r1.textures.iter().any(|t| t.below.is_some()),
        "a 60% budget limited nothing\n{r1}"
    );
}

#[test]
fn the_benchmark_runs_on_the_cooked_helmet_with_meshes_streamed() {
    use mipstream_tools::bench::{self, BenchOptions, Strategy};
    use mipstream_tools::source::SceneSource;
    let (out, _) = cooked_helmet();
    let opts = BenchOptions {
        scene: SceneSource::Gltf(out.join("scene.json")),
        frames: 16,
        quality_every: 4,
        size: UVec2::new(128, 72),
        frame_pause: Duration::from_millis(1),
        ..Default::default()
    };
    let r = bench::run(&opts, |_| {}).unwrap();
    assert_eq!(r.scene, "meshes-flighthelmet");
    let get = |s: Strategy| r.strategies.iter().find(|x| x.strategy == s).unwrap();
    let (full, uniform, ms) = (
        get(Strategy::Full),
        get(Strategy::UniformBias),
        get(Strategy::Mipstream),
    );
    // full residency counts every mesh at LOD 0 beside every texture level
    let (s, scene) = helmet_streamer(512 << 20);
    let meshes: u64 = scene
        .meshes
        .iter()
        .map(|&m| s.mesh_bytes_at(m, 0).unwrap())
        .sum();
    let textures: u64 = s
        .texture_ids()
        .iter()
        .map(|&t| s.full_bytes(t).unwrap())
        .sum();
    assert_eq!(r.full_residency_bytes, meshes + textures);
    assert!(meshes > 0 && textures > 0);
    assert!(full.peak_resident_bytes >= r.full_residency_bytes);
    assert_eq!(ms.frames_over_budget, 0);
    assert_eq!(uniform.frames_over_budget, 0);
    assert!(ms.peak_resident_bytes <= r.budget_bytes);
    assert!(uniform.psnr_db_mean < 100.0 && ms.psnr_db_mean < 100.0);
    assert!(ms.psnr_db_mean > 20.0, "{}", ms.psnr_db_mean);
    let json = r.to_json();
    assert_eq!(json["scene"], "meshes-flighthelmet");
    assert!(json["strategies"]["mipstream"]["psnr_db_mean"].is_number());
}

#[test]
fn the_viewer_shows_a_cooked_gltf_scene_headless() {
    use mipstream_tools::source::SceneSource;
    use mipstream_tools::viewer::{run_headless, ViewerOptions};
    let (out, _) = cooked_helmet();
    let shot = common::output_dir().join("viewer-flighthelmet.png");
    let summary = run_headless(&ViewerOptions {
        scene: SceneSource::Gltf(out.join("scene.json")),
        frames: 20,
        size: UVec2::new(320, 180),
        ui: false,
        screenshot: Some(shot.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(summary.over_budget_frames, 0, "{summary}");
    assert!(summary.peak_resident_bytes > 0 && summary.full_residency_bytes > 0);
    let img = image::open(&shot).unwrap().to_rgba8();
    // the helmet is on screen: a good share of the pixels are not background
    let bg = [46u8, 49, 57];
    let covered = img
        .pixels()
        .filter(|p| p.0[..3].iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 3))
        .count();
    assert!(covered > 320 * 180 / 20, "{covered} pixels show the helmet");
}

#[test]
fn a_scene_with_a_broken_mesh_file_names_it_and_registers_nothing() {
    use mipstream::scene::SceneReadError;
    use mipstream_tools::gltf_scene::SceneLoadError;
    // the cooked helmet copied, its fourth mesh's coarsest LOD pointing
    // outside its vertices (the file opens; reading that LOD fails)
    let (out, file) = cooked_helmet();
    let copy = common::output_dir().join("meshes-broken-scene");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(copy.join("meshes")).unwrap();
    std::fs::copy(out.join("scene.json"), copy.join("scene.json")).unwrap();
    for m in &file.meshes {
        std::fs::copy(out.join(&m.file), copy.join(&m.file)).unwrap();
    }
    let broken = copy.join(&file.meshes[3].file);
    let mut bytes = std::fs::read(&broken).unwrap();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&broken, bytes).unwrap();
    let g = common::gpu();
    let mut s = Streamer::new(&g.device, &g.queue);
    let e = StreamedScene::load(&mut s, &copy.join("scene.json")).unwrap_err();
    assert!(
        matches!(&e, SceneLoadError::Read(SceneReadError::Mesh { path, .. }) if *path == broken),
        "{e}"
    );
    assert!(e.to_string().contains("index"), "{e}");
    // the meshes are read before any registers: none is left behind
    assert!(s.mesh_ids().is_empty());
    assert_eq!(s.report().totals.mesh, 0);
}

/// Lockstep runs repeat exactly for the engine rules too, on a scene whose
/// renderer writes buffers between updates: `finish_loads` submits the
/// queue's pending writes before it waits, so no release waits on a flush
/// the next update makes (its finish raced the update's first poll, and an
/// engine rule that fills its budget to the byte decided differently).
#[test]
fn lockstep_runs_of_the_engine_rules_repeat_exactly_on_the_cooked_helmet() {
    use mipstream_tools::bench::{self, BenchOptions, Strategy};
    use mipstream_tools::source::SceneSource;
    let (out, _) = cooked_helmet();
    let opts = BenchOptions {
        scene: SceneSource::Gltf(out.join("scene.json")),
        frames: 40,
        quality_every: 4,
        size: UVec2::new(128, 72),
        strategies: vec![Strategy::Full, Strategy::UnrealPool, Strategy::UnityBudget],
        lockstep: true,
        ..Default::default()
    };
    let per_frame = |r: &bench::BenchResult| -> Vec<Vec<(u64, Option<u64>)>> {
        r.strategies
            .iter()
            .map(|s| {
                let f = s.frames.iter();
                f.map(|f| (f.uploaded, f.psnr_db.map(f64::to_bits)))
                    .collect()
            })
            .collect()
    };
    let a = per_frame(&bench::run(&opts, |_| {}).unwrap());
    for run in 0..2 {
        let b = per_frame(&bench::run(&opts, |_| {}).unwrap());
        assert_eq!(a, b, "run {run}: the lockstep runs differ");
    }
}

/// Each texture's (level, tier) and each mesh's drawn LOD, in id order.
fn held_assets(s: &Streamer) -> (Vec<(u32, mipstream::Tier)>, Vec<u32>) {
    let t = s.texture_ids().into_iter().map(|id| {
        let st = s.texture_status(id).unwrap();
        (st.resident, st.tier)
    });
    let m = s
        .mesh_ids()
        .into_iter()
        .map(|id| s.mesh_status(id).unwrap().resident);
    (t.collect(), m.collect())
}

/// `settle_canonical` forgets history with meshes too: a streamer that flew
/// in to the helmet (lockstep, three times a binding budget, then cut) keeps
/// other levels in at least a quarter of the textures and of the meshes
/// after a plain settle, and after `settle_canonical` holds every texture
/// level and tier and every mesh LOD a fresh one settles to, and draws the
/// same picture (two scene radii away, a third of the way from the tails
/// to what the view wants: there the flight leaves history on both
/// backends; at half the way, where it did before the fit made room for
/// growths the greedy pass ruled out, the plain settle now lands on all
/// but one texture and two meshes of the fresh streamer's levels).
#[test]
fn settle_canonical_forgets_a_flight_with_meshes() {
    let (mut probe, probe_scene) = helmet_streamer(512 << 20);
    let view = helmet_view(&probe_scene, 2.0);
    let wanted = probe.wanted_bytes(&[view]);
    let tails = probe.report().tail_bytes;
    drop(probe);
    let budget = tails + (wanted - tails) / 3;
    let g = common::gpu();
    let mut renderer = MeshRenderer::new(&g.device, &g.queue, wgpu::TextureFormat::Rgba8UnormSrgb);

    let (mut fresh, mut fresh_scene) = helmet_streamer(budget);
    fresh
        .settle_canonical(&[view], Duration::from_secs(120))
        .unwrap();
    let a = held_assets(&fresh);
    let fresh_img = render_streamed(&mut renderer, &mut fresh, &mut fresh_scene, &view);

    let (mut flown, mut flown_scene) = helmet_streamer(budget * 3);
    for f in 0..60 {
        let distance = 8.0 - 7.0 * (f as f32 / 59.0);
        flown.update(&[helmet_view(&flown_scene, distance)]);
        flown.finish_loads(Duration::from_secs(60)).unwrap();
    }
    flown.set_budget(Budget::Bytes(budget));
    // a plain settle, in lockstep (what it keeps must not hang on the
    // loader's speed): updates at the view until nothing is left to load
    // (until it converges, as `settle` stops)
    for _ in 0..120 {
        flown.update(&[view]);
        flown.finish_loads(Duration::from_secs(60)).unwrap();
        if flown.converged() {
            break;
        }
    }
    assert!(flown.converged(), "the plain settle converged");
    let sticky = held_assets(&flown);
    let t = (0..a.0.len()).filter(|&i| a.0[i] != sticky.0[i]).count();
    let m = (0..a.1.len()).filter(|&i| a.1[i] != sticky.1[i]).count();
    eprintln!(
        "the plain settle left {t} of {} textures and {m} of {} meshes elsewhere",
        a.0.len(),
        a.1.len()
    );
    assert!(
        t * 4 >= a.0.len() && m * 4 >= a.1.len(),
        "history left {t} of {} textures and {m} of {} meshes elsewhere",
        a.0.len(),
        a.1.len()
    );
    flown
        .settle_canonical(&[view], Duration::from_secs(120))
        .unwrap();
    flown.check_invariants().unwrap();
    assert_eq!(held_assets(&flown), a, "textures, then meshes");
    let flown_img = render_streamed(&mut renderer, &mut flown, &mut flown_scene, &view);
    assert!(
        fresh_img.as_raw() == flown_img.as_raw(),
        "the pictures differ (PSNR {:.2} dB)",
        common::psnr(&fresh_img, &flown_img)
    );
}
