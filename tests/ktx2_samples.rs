//! Every KTX2 file of the Khronos sample set (`ktx2_sample/`) either loads and
//! uploads on this adapter, with what the GPU samples matching the CPU decode
//! of the same texels, or is refused with a named reason.

mod common;

use common::sample::sample;
use mipstream::container::{OpenError, Payload};
use mipstream::transcode::{self, Output, TextureClass};
use mipstream::{gpu, TextureFile};
use std::path::Path;

/// Files of the sample set that are refused, and why.
const EXPECTED_REFUSALS: &[(&str, &str)] = &[("astc_ldr_6x6_3dtex_7.ktx2", "3D textures")];

enum Outcome {
    Loaded(String),
    Refused(String),
}

fn load_upload_and_compare(path: &Path) -> Result<Outcome, String> {
    let g = common::gpu();
    let file = match TextureFile::open_path(path) {
        Ok(f) => f,
        Err(e @ OpenError::Unsupported { .. }) => return Ok(Outcome::Refused(e.to_string())),
        Err(e) => return Err(e.to_string()),
    };
    let info = file.info();
    let choice = transcode::choose_targets(info, TextureClass::Color, g.device.features())
        .map_err(|e| e.to_string())?;
    let mut levels = Vec::new();
    for l in 0..info.levels.len() as u32 {
        let raw = file.read_level(l).map_err(|e| e.to_string())?;
        let img = transcode::transcode_level(
            &file,
            &raw,
            &transcode::TranscodeOptions::new(choice.full, choice.srgb),
        )
        .map_err(|e| e.to_string())?;
        levels.push(img);
    }
    let tex = gpu::upload_levels(&g.device, &g.queue, &info.name, info, &levels)
        .map_err(|e| e.to_string())?;
    // the largest and the smallest mip, first and last image
    let last_mip = levels.len() as u32 - 1;
    for mip in [0, last_mip] {
        for image in [0, info.images_per_level() - 1] {
            let expected = mipstream::decode::decode_level_image(&levels[mip as usize], image)
                .map_err(|e| e.to_string())?;
            let expected =
                image::RgbaImage::from_raw(expected.width, expected.height, expected.pixels)
                    .unwrap();
            let got = sample(g, &tex.texture, tex.view_dimension, mip, image);
            let name = format!(
                "sample-{}-mip{mip}-image{image}",
                path.file_stem().unwrap().to_string_lossy()
            );
            // sRGB decode then re-encode on the GPU, and decoders that round ASTC
            // differently (Mesa vs texture2ddecoder), may move a channel by one
            let tol = common::Tolerance {
                min_psnr: 45.0,
                max_flip: 0.02,
            };
            std::panic::catch_unwind(|| common::assert_images_close(&name, &got, &expected, tol))
                .map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "comparison failed".into())
            })?;
        }
    }
    let out = match choice.full {
        Output::Transcode(t) => format!("transcoded to {t}"),
        Output::AsStored => "as stored".into(),
        Output::DecodeToRgba8 => "decoded to RGBA8 on the CPU".into(),
    };
    Ok(Outcome::Loaded(format!(
        "{} {}x{} x{} levels -> {:?} ({out})",
        match info.payload {
            Payload::Plain(f) => f.name,
            p => p.name(),
        },
        info.width,
        info.height,
        levels.len(),
        tex.format
    )))
}

#[test]
fn every_sample_file_loads_and_uploads_or_is_refused_with_a_reason() {
    let dir = common::shared_data().join("ktx2-conformance/input/ktx2_sample");
    let files = common::files_with(&dir, &[".ktx2"]);
    assert!(
        files.len() >= 56,
        "expected the 56 sample files, found {}",
        files.len()
    );
    let (mut refused, mut failures) = (Vec::new(), Vec::new());
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        match load_upload_and_compare(path) {
            Ok(Outcome::Loaded(s)) => eprintln!("loaded  {name}: {s}"),
            Ok(Outcome::Refused(why)) => {
                eprintln!("refused {name}: {why}");
                refused.push((name, why));
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} files failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let names: Vec<&str> = refused.iter().map(|r| r.0.as_str()).collect();
    let expected: Vec<&str> = EXPECTED_REFUSALS.iter().map(|r| r.0).collect();
    assert_eq!(
        names, expected,
        "refused files differ from the expected list"
    );
    for ((_, why), (_, reason)) in refused.iter().zip(EXPECTED_REFUSALS) {
        assert!(why.contains(reason), "{why} does not name {reason}");
    }
}
