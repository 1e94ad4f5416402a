//! The `mipstream` command line: `info`, `decode`, `cook`, and its error contract
//! (one `error:` line on stderr, exit status 1; never a panic or a signal).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The tool, with the repository's cache of the built-in scene (the tests
/// run in `mipstream-tools/`, where its default, `target/mipstream-cache`,
/// would be a second cache).
fn tool() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mipstream"));
    c.env(
        "MIPSTREAM_CACHE",
        common::repo().join("target/mipstream-cache"),
    );
    c
}

fn mipstream(args: &[&str]) -> Output {
    tool().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the error contract and returns the message.
fn assert_clean_failure(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{what}: status {:?}, stderr {err}",
        o.status
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("error: "),
        "{what}: stderr must be one `error:` line, got {err:?}"
    );
    lines[0].to_owned()
}

fn kodak(name: &str) -> PathBuf {
    common::shared_data()
        .join("ktx2-samples/kodak-vulkan")
        .join(name)
}

#[test]
fn info_json_describes_levels_and_dfd() {
    let path = kodak("kodim23_UASTC.ktx2");
    let o = mipstream(&["info", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "UASTC");
    assert_eq!(v["container"], "KTX2");
    assert_eq!(
        (v["width"].as_u64(), v["height"].as_u64()),
        (Some(768), Some(512))
    );
    assert_eq!(v["level_count"], 10);
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels[2]["width"], 192);
    let r = &levels[2]["ranges"][0];
    assert!(r["offset"].as_u64().unwrap() > 0 && r["length"].as_u64().unwrap() > 0);
    assert_eq!(v["dfd"]["color_model"], 166);
    assert_eq!(v["srgb"], true);
    let text = mipstream(&["info", path.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("UASTC, 768x512, 10 level(s)") && t.contains("192x128"),
        "{t}"
    );
}

#[test]
fn decode_writes_the_level_as_png() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l2.png");
    let path = kodak("kodim23_ETC1S.ktx2");
    let o = mipstream(&[
        "decode",
        path.to_str().unwrap(),
        "--level",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let png = image::open(&out).unwrap().to_rgba8();
    assert_eq!(png.dimensions(), (192, 128));
    let f = mipstream::TextureFile::open_path(&path).unwrap();
    let lib = mipstream::decode::decode_rgba8(&f, &f.read_level(2).unwrap(), 0).unwrap();
    assert!(
        png.as_raw() == &lib.pixels,
        "CLI and library decodes differ"
    );
    // a cubemap face
    let cube = common::shared_data()
        .join("ktx2-conformance/input/ktx2_sample/cubemap_yokohama_basis_rd.ktx2");
    let o = mipstream(&[
        "decode",
        cube.to_str().unwrap(),
        "--level",
        "9",
        "--face",
        "5",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(image::open(&out).unwrap().width(), 4);
}

#[test]
fn bad_input_gets_one_error_line_and_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    let out = out.to_str().unwrap();
    let missing = mipstream(&["info", "/no/such/file.ktx2"]);
    assert!(assert_clean_failure(&missing, "missing").contains("/no/such/file.ktx2"));
    let text = dir.path().join("notes.ktx2");
    std::fs::write(&text, "hello, not a texture").unwrap();
    let e = assert_clean_failure(&mipstream(&["info", text.to_str().unwrap()]), "text file");
    assert!(e.contains("not a KTX2"), "{e}");
    let k = kodak("kodim23_UASTC.ktx2");
    let e = assert_clean_failure(
        &mipstream(&["decode", k.to_str().unwrap(), "--level", "10", "-o", out]),
        "level",
    );
    assert!(e.contains("level 10") && e.contains("10 level(s)"), "{e}");
    let e = assert_clean_failure(
        &mipstream(&["decode", k.to_str().unwrap(), "--face", "3", "-o", out]),
        "face",
    );
    assert!(e.contains("face 3"), "{e}");
    let three_d =
        common::shared_data().join("ktx2-conformance/input/ktx2_sample/astc_ldr_6x6_3dtex_7.ktx2");
    let e = assert_clean_failure(&mipstream(&["info", three_d.to_str().unwrap()]), "3D");
    assert!(e.contains("unsupported: 3D"), "{e}");
    let newer =
        common::shared_data().join("ktx2-samples/basis-universal/newer-format/kodim01.ktx2");
    let e = assert_clean_failure(
        &mipstream(&["info", newer.to_str().unwrap()]),
        "newer Basis",
    );
    assert!(e.contains("XUASTC"), "{e}");
    let bc = common::shared_data().join("ktx2-conformance/input/ktx2_sample/pattern_02_bc2.ktx2");
    let o = mipstream(&[
        "decode",
        bc.to_str().unwrap(),
        "--level",
        "3",
        "-o",
        "/no/such/dir/x.png",
    ]);
    assert_clean_failure(&o, "unwritable output");
}

/// `info` over every malformed file: status 0 or a clean failure, never a panic.
#[test]
fn info_survives_every_malformed_file() {
    let data = common::shared_data();
    let mut files = common::files_with(&data.join("ktx2-conformance/input/validate"), &[".ktx2"]);
    files.extend(common::files_with(
        &data.join("ktx2-samples/ktx-software/tests/badktx2"),
        &[".ktx2"],
    ));
    let (mut ok, mut failed) = (0, 0);
    for f in &files {
        let o = mipstream(&["info", f.to_str().unwrap(), "--json"]);
        if o.status.success() {
            serde_json::from_slice::<serde_json::Value>(&o.stdout)
                .unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", f.display()));
            ok += 1;
        } else {
            assert_clean_failure(&o, &f.display().to_string());
            failed += 1;
        }
    }
    eprintln!("info: {ok} described, {failed} refused");
    assert_eq!(ok + failed, 1162);
}

fn basisu(args: &[&str]) -> Output {
    Command::new(common::basisu_tool())
        .args(args)
        .output()
        .unwrap()
}

fn cook(input: &Path, output: &Path, extra: &[&str]) {
    let mut args = vec![
        "cook",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = mipstream(&args);
    assert!(o.status.success(), "cook failed: {}", stderr(&o));
}

/// A cooked photo is a valid KTX2 by the reference tool, has a full mip chain,
/// and decodes back within what UASTC promises (level 0 above 35 dB).
#[test]
fn cooked_photo_passes_the_reference_validator_and_keeps_its_quality() {
    let src = common::shared_data().join("ktx2-samples/basis-universal/kodim23.png");
    let dir = tempfile::tempdir().unwrap();
    for (codec, min_psnr) in [("uastc", 35.0), ("etc1s", 28.0)] {
        let out = dir.path().join(format!("k23-{codec}.ktx2"));
        cook(&src, &out, &["--codec", codec]);
        for check in ["-validate", "-info"] {
            let o = basisu(&[check, out.to_str().unwrap()]);
            let log = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success() && log.contains("Success"),
                "basisu {check} rejected {codec}:\n{log}"
            );
        }
        let f = mipstream::TextureFile::open_path(&out).unwrap();
        assert_eq!(f.info().levels.len(), 10, "full chain to 1x1");
        // cooked files carry their measured loss per level and compact tier
        let loss = mipstream::loss::TextureLoss::from_info(f.info())
            .expect("cooked with a loss")
            .unwrap();
        // each level loses more than the one before (the 1x1 level may come
        // closer than the 2x2 one: only the first levels are checked)
        assert!(
            loss.level_error[..6].windows(2).all(|w| w[0] < w[1]),
            "{loss:?}"
        );
        let bc1 = loss.compact(mipstream::loss::CompactFormat::Bc1).unwrap();
        assert!(bc1.level_error[0] > 0.0 && bc1.blur_levels.is_some());
        let d = mipstream::decode::decode_rgba8(&f, &f.read_level(0).unwrap(), 0).unwrap();
        let ours = image::RgbaImage::from_raw(d.width, d.height, d.pixels).unwrap();
        let source = image::open(&src).unwrap().to_rgba8();
        let p = common::psnr_channels(&ours, &source, 3);
        eprintln!(
            "{codec}: level 0 PSNR {p:.2} dB, {} bytes",
            std::fs::metadata(&out).unwrap().len()
        );
        assert!(p > min_psnr, "{codec}: PSNR {p:.2} dB <= {min_psnr}");
    }
}

#[test]
fn cook_normal_map_and_linear_data() {
    let dir = tempfile::tempdir().unwrap();
    let normal = dir.path().join("n.png");
    image::RgbaImage::from_fn(64, 32, |x, y| {
        let (nx, ny) = ((x as f32 / 63.0 - 0.5) * 0.8, (y as f32 / 31.0 - 0.5) * 0.8);
        let nz = (1.0 - nx * nx - ny * ny).sqrt();
        let q = |v: f32| ((v * 0.5 + 0.5) * 255.0).round() as u8;
        image::Rgba([q(nx), q(ny), q(nz), 255])
    })
    .save(&normal)
    .unwrap();
    let out = dir.path().join("n.ktx2");
    cook(&normal, &out, &["--normal-map"]);
    let o = basisu(&["-validate", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let f = mipstream::TextureFile::open_path(&out).unwrap();
    assert!(!f.info().srgb);
    assert!(f.info().has_alpha(), "normal maps carry Y in alpha");
    let c = mipstream::transcode::choose_targets(
        f.info(),
        mipstream::TextureClass::Normal,
        wgpu::Features::TEXTURE_COMPRESSION_BC,
    )
    .unwrap();
    assert_eq!(
        c.full,
        mipstream::transcode::Output::Transcode(mipstream::TargetFormat::Bc5)
    );
    assert_eq!(c.layout, mipstream::transcode::ChannelLayout::NormalRg);
    red_green_normals_on_every_device(&f);
    let lin = dir.path().join("l.ktx2");
    cook(&normal, &lin, &["--linear", "--codec", "etc1s"]);
    assert!(!mipstream::TextureFile::open_path(&lin).unwrap().info().srgb);
}

/// A renderer that reads normals from red and green (Bevy's
/// `StandardMaterial`) gets them there on every device: BC5 / EAC RG11 where
/// they exist, never ASTC (whose Basis transcode keeps Y in alpha), else
/// RGBA8 re-arranged to (X, Y, Z, 1) with Z reconstructed.
fn red_green_normals_on_every_device(f: &mipstream::TextureFile) {
    use mipstream::transcode::{
        choose_targets_with, transcode_level, ChannelLayout, NormalLayout, Output, TranscodeOptions,
    };
    use mipstream::{TargetFormat, TextureClass};
    let choose = |features| {
        choose_targets_with(
            f.info(),
            TextureClass::Normal,
            NormalLayout::RedGreen,
            features,
        )
        .unwrap()
    };
    let astc = wgpu::Features::TEXTURE_COMPRESSION_ASTC;
    let etc2 = wgpu::Features::TEXTURE_COMPRESSION_ETC2;
    assert_eq!(
        choose(astc | etc2).full,
        Output::Transcode(TargetFormat::EacRg11)
    );
    let any = mipstream::transcode::choose_targets(f.info(), TextureClass::Normal, astc).unwrap();
    assert_eq!(
        any.layout,
        ChannelLayout::NormalRa,
        "the default keeps ASTC"
    );
    for features in [astc, wgpu::Features::empty()] {
        let c = choose(features);
        assert_eq!(c.full, Output::Transcode(TargetFormat::Rgba8));
        assert_eq!(c.layout, ChannelLayout::NormalRgb);
        let raw = f.read_level(0).unwrap();
        let img = transcode_level(f, &raw, &TranscodeOptions::for_choice(&c, c.full)).unwrap();
        let plain = transcode_level(f, &raw, &TranscodeOptions::new(c.full, false)).unwrap();
        for (xyz, ra) in img.data.chunks_exact(4).zip(plain.data.chunks_exact(4)) {
            assert_eq!(
                (xyz[0], xyz[1], xyz[3]),
                (ra[0], ra[3], 255),
                "X, Y from red, alpha"
            );
            let v = |b: u8| b as f32 / 127.5 - 1.0;
            let len = (v(xyz[0]).powi(2) + v(xyz[1]).powi(2) + v(xyz[2]).powi(2)).sqrt();
            assert!((len - 1.0).abs() < 0.03, "unit length: {len} from {xyz:?}");
        }
    }
}

#[test]
fn cook_many_inputs_into_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for i in 0..3 {
        let p = dir.path().join(format!("in{i}.png"));
        image::RgbaImage::from_fn(32 + 8 * i, 16, |x, y| {
            image::Rgba([(x * 7) as u8, (y * 13) as u8, (i * 80) as u8, 255])
        })
        .save(&p)
        .unwrap();
        inputs.push(p);
    }
    let jpg = dir.path().join("photo.jpg");
    image::RgbImage::from_fn(40, 24, |x, y| {
        image::Rgb([(x * 5) as u8, (y * 9) as u8, 100])
    })
    .save(&jpg)
    .unwrap();
    inputs.push(jpg);
    let out = dir.path().join("out");
    let mut args = vec!["cook".to_owned()];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap().to_owned()));
    args.extend(["-o".into(), out.to_str().unwrap().to_owned()]);
    let o = tool().args(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for name in ["in0", "in1", "in2", "photo"] {
        let f = mipstream::TextureFile::open_path(out.join(format!("{name}.ktx2"))).unwrap();
        assert!(f.info().levels.len() >= 5);
    }
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        4,
        "one line per cooked file"
    );
}

#[test]
fn cook_refuses_bad_input_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.ktx2");
    let e = assert_clean_failure(
        &mipstream(&["cook", "/no/such.png", "-o", out.to_str().unwrap()]),
        "missing",
    );
    assert!(e.contains("/no/such.png"), "{e}");
    let bogus = dir.path().join("bogus.png");
    std::fs::write(&bogus, b"\x89PNG\r\n\x1a\nthis is not really a png").unwrap();
    let e = assert_clean_failure(
        &mipstream(&["cook", bogus.to_str().unwrap(), "-o", out.to_str().unwrap()]),
        "corrupt",
    );
    assert!(e.contains("bogus.png") && e.contains("PNG/JPEG"), "{e}");
    let o = mipstream(&[
        "cook",
        bogus.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quality",
        "101",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "clap rejects an out-of-range quality with usage status 2"
    );
}

#[test]
fn bench_planner_writes_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("planner.json");
    let o = mipstream(&[
        "bench-planner",
        "--objects",
        "2000",
        "--textures",
        "100",
        "--frames",
        "20",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["objects"], 2000);
    assert_eq!(v["textures"], 100);
    for key in ["update_ms_p50", "update_ms_p99", "update_ms_max"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}");
    }
}

#[test]
fn bench_refuses_bad_input_cleanly() {
    let msg = assert_clean_failure(
        &mipstream(&["bench", "--scene", "helmet.gltf"]),
        "glTF scene",
    );
    assert!(msg.contains("no such file"), "{msg}");
    let msg = assert_clean_failure(
        &mipstream(&["bench", "--budget-fraction=-1"]),
        "negative budget",
    );
    assert!(msg.contains("--budget-fraction"), "{msg}");
    let msg = assert_clean_failure(&mipstream(&["bench", "--backend", "glide"]), "backend");
    assert!(msg.contains("--backend"), "{msg}");
    let msg = assert_clean_failure(
        &mipstream(&["bench", "--transient-reserve", "0.9"]),
        "reserve",
    );
    assert!(msg.contains("--transient-reserve"), "{msg}");
    let msg = assert_clean_failure(
        &mipstream(&["bench-planner", "--objects", "0", "--textures", "1"]),
        "no objects",
    );
    assert!(msg.contains("--objects"), "{msg}");
}

#[test]
fn soak_writes_its_json_and_exits_zero_when_nothing_broke() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let o = mipstream(&[
        "soak",
        "--frames",
        "150",
        "--seed",
        "3",
        "--faults",
        "io,oom,budget",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("PASSED"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["frames"], 150);
    assert_eq!(v["seed"], 3);
    for key in [
        "invariant_violations",
        "frames_over_budget",
        "panics",
        "leaked_textures",
    ] {
        assert_eq!(v[key], 0, "{key}");
    }
    assert!(v["faults_injected"].as_u64().unwrap() > 0);
    assert!(v["peak_resident_bytes"].as_u64().unwrap() > 0);
    assert!(v["budget_bytes_max"].as_u64().unwrap() >= v["peak_resident_bytes"].as_u64().unwrap());
    assert!(v["oom_events"].is_u64());
}

#[test]
fn soak_refuses_bad_input_cleanly() {
    let msg = assert_clean_failure(&mipstream(&["soak", "--faults", "io,flood"]), "fault");
    assert!(
        msg.contains("flood") && msg.contains("io, slow, oom, budget"),
        "{msg}"
    );
    let msg = assert_clean_failure(&mipstream(&["soak", "--frames", "0"]), "no frames");
    assert!(msg.contains("--frames"), "{msg}");
    let msg = assert_clean_failure(&mipstream(&["soak", "--scene", "nowhere"]), "scene");
    assert!(msg.contains("nowhere"), "{msg}");
}

#[test]
fn cook_gltf_prints_each_chain_and_refuses_bad_input_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    // one triangle, buffer inline
    let gltf = r#"{"asset":{"version":"2.0"},
      "buffers":[{"byteLength":44,"uri":"data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAABAAIAAAA="}],
      "bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":36},{"buffer":0,"byteOffset":36,"byteLength":6}],
      "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
                   {"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"}],
      "meshes":[{"name":"tri","primitives":[{"attributes":{"POSITION":0},"indices":1}]}],
      "nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}],"scene":0}"#;
    let input = dir.path().join("tri.gltf");
    std::fs::write(&input, gltf).unwrap();
    let out = dir.path().join("out");
    let o = mipstream(&[
        "cook-gltf",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("1 meshes") && text.contains("tri.0"),
        "{text}"
    );
    assert!(
        stderr(&o).contains("warning: mesh tri primitive 0: no normals"),
        "{}",
        stderr(&o)
    );
    assert!(out.join("scene.json").is_file());
    // `info` reads the cooked mesh
    let mesh = std::fs::read_dir(out.join("meshes"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let o = mipstream(&["info", mesh.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["container"], "msmesh");
    assert_eq!(v["lods"][0]["triangles"], 1);
    assert_eq!(v["lods"][0]["vertices"], 3);
    let o = mipstream(&["info", mesh.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("mesh, 1 LOD(s)"));
    let cut = dir.path().join("cut.msmesh");
    std::fs::write(&cut, &std::fs::read(&mesh).unwrap()[..70]).unwrap();
    let msg = assert_clean_failure(&mipstream(&["info", cut.to_str().unwrap()]), "cut mesh");
    assert!(
        msg.contains("cut.msmesh") && msg.contains("past the end"),
        "{msg}"
    );

    let msg = assert_clean_failure(
        &mipstream(&[
            "cook-gltf",
            "/nonexistent/scene.gltf",
            "-o",
            out.to_str().unwrap(),
        ]),
        "missing input",
    );
    assert!(msg.contains("/nonexistent/scene.gltf"), "{msg}");
    let bad = dir.path().join("bad.gltf");
    std::fs::write(
        &bad,
        gltf.replace("\"max\":[1,1,0]}", "\"max\":[1,1,0]},{}"),
    )
    .unwrap();
    let msg = assert_clean_failure(
        &mipstream(&[
            "cook-gltf",
            bad.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]),
        "invalid glTF",
    );
    assert!(
        msg.contains("bad.gltf") && msg.contains("not valid glTF"),
        "{msg}"
    );
    let msg = assert_clean_failure(
        &mipstream(&[
            "cook-gltf",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--max-error",
            "0",
        ]),
        "zero error",
    );
    assert!(msg.contains("--max-error"), "{msg}");
}

/// `annotate` measures files it did not cook and stores the loss in them:
/// Basis (UASTC, ETC1S with its global data), plain RGBA8 and a BC7
/// cubemap; every level keeps its bytes, the Basis files stay valid for
/// the reference tool, `info` shows the curve, a second run keeps them.
#[test]
fn annotate_measures_files_it_did_not_cook_and_keeps_every_level() {
    let data = common::shared_data();
    let inputs = [
        kodak("kodim23_UASTC.ktx2"),
        kodak("kodim05_ETC1S.ktx2"),
        data.join("ktx2-samples/ktx2-crate/data/basic_texture.ktx2"),
        data.join("textures/Ryfjallet_cubemap_bc7.ktx2"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("annotated");
    let mut args = vec!["annotate".to_string()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = mipstream(&args);
    let log = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}{log}", stderr(&o));
    assert!(log.contains("4 annotated, 0 kept"), "{log}");
    for input in &inputs {
        let name = input.file_name().unwrap();
        let written = out.join(name);
        let (a, b) = (
            mipstream::TextureFile::open_path(input).unwrap(),
            mipstream::TextureFile::open_path(&written).unwrap(),
        );
        let n = a.info().levels.len();
        for l in 0..n as u32 {
            assert_eq!(
                a.read_level(l).unwrap().data,
                b.read_level(l).unwrap().data,
                "{name:?} level {l}"
            );
        }
        let loss = mipstream::loss::TextureLoss::from_info(b.info())
            .expect("a loss entry")
            .expect("a valid loss entry");
        assert_eq!(loss.level_error.len(), n);
        assert_eq!(loss.level_error[0], 0.0);
        // (the cubemap has one level: nothing to lose)
        assert!(
            n == 1 || loss.level_error[n - 1] > loss.level_error[1] * 0.5,
            "{name:?}: {:?}",
            loss.level_error
        );
        let basis = a.info().payload.is_basis();
        assert_eq!(
            !loss.compact.is_empty(),
            basis,
            "{name:?}: compact tiers are Basis ones"
        );
        if basis {
            let o = basisu(&["-validate", written.to_str().unwrap()]);
            let log = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success() && log.contains("Success"),
                "{name:?}:\n{log}"
            );
        }
        let o = mipstream(&["info", written.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["level_error"].as_array().unwrap().len(), n, "{name:?}");
        assert_eq!(
            v["compact_level_error"]["bc1"].is_array(),
            basis,
            "{name:?}"
        );
        let text = mipstream(&["info", written.to_str().unwrap()]);
        assert!(String::from_utf8_lossy(&text.stdout).contains("measured loss (mipstream.loss"));
    }
    // an original carries none, and info says what that means
    let o = mipstream(&["info", inputs[0].to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no measured loss"));
    // again, in place on the copies: nothing to do unless forced
    let o = mipstream(&["annotate", out.to_str().unwrap(), "--in-place"]);
    let log = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success() && log.contains("0 annotated, 4 kept"),
        "{log}"
    );
    let o = mipstream(&[
        "annotate",
        out.join("basic_texture.ktx2").to_str().unwrap(),
        "--in-place",
        "--force",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 annotated"));
    // said wrong: one error line
    let first = inputs[0].to_str().unwrap();
    assert_clean_failure(&mipstream(&["annotate", first]), "no destination");
    let junk = dir.path().join("junk.ktx2");
    std::fs::write(&junk, b"not a texture").unwrap();
    let m = assert_clean_failure(
        &mipstream(&[
            "annotate",
            junk.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]),
        "a junk file",
    );
    assert!(m.contains("junk.ktx2"), "{m}");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_clean_failure(
        &mipstream(&[
            "annotate",
            empty.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]),
        "an empty folder",
    );
}

#[test]
fn bench_transcode_prints_both_transcoders_and_their_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("noise.png");
    let img = image::RgbaImage::from_fn(72, 40, |x, y| {
        let h = (x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663)) % 251;
        image::Rgba([h as u8, (x * 3) as u8, (y * 5) as u8, 255])
    });
    img.save(&png).unwrap();
    let json = dir.path().join("transcode.json");
    let o = mipstream(&[
        "bench-transcode",
        "--image",
        png.to_str().unwrap(),
        "--seconds",
        "0.02",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(printed, v, "stdout and the file hold the same run");
    assert_eq!(
        (v["width"].as_u64(), v["height"].as_u64()),
        (Some(72), Some(40))
    );
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 10);
    for p in pairs {
        let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k} in {p}"));
        let (shipped, reference) = (f("shipped_mib_s"), f("reference_mib_s"));
        assert!(shipped > 0.0 && reference > 0.0, "{p}");
        assert!((f("ratio") - shipped / reference).abs() < 1e-9, "{p}");
        let uastc = p["source"] == "UASTC";
        let transcoder = p["shipped_transcoder"].as_str().unwrap();
        // the README test command builds every feature, `basis-cpp` included
        assert_eq!(transcoder.contains("C++"), uastc, "{p}");
        // ETC1S to BC7, RGBA8 and ASTC ship mipstream's one-pass loop,
        // timed beside basisu's own path
        let one_pass =
            !uastc && ["bc7", "rgba8", "astc4x4"].contains(&p["target"].as_str().unwrap());
        assert_eq!(transcoder.contains("one-pass"), one_pass, "{p}");
        assert_eq!(p["rust_mib_s"].is_number(), uastc || one_pass, "{p}");
        let filtered = !uastc && p["target"] == "bc7";
        assert_eq!(p["same_output_mib_s"].is_number(), filtered, "{p}");
        if !filtered {
            assert_eq!(p["ratio_same_output"], p["ratio"], "{p}");
        }
        // one 72x40 level: 18x10 blocks, 16 or 8 bytes each, or 4 bytes a texel
        let bytes = p["output_bytes"].as_u64().unwrap();
        assert!([180 * 16, 180 * 8, 72 * 40 * 4].contains(&bytes), "{p}");
    }
    let msg = assert_clean_failure(
        &mipstream(&["bench-transcode", "--image", "no-such.png"]),
        "missing image",
    );
    assert!(msg.contains("--image"), "{msg}");
    let msg = assert_clean_failure(
        &mipstream(&["bench-transcode", "--seconds", "0"]),
        "zero seconds",
    );
    assert!(msg.contains("--seconds"), "{msg}");
}
