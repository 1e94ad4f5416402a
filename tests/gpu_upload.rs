//! Uploading level ranges `[k..n)` into wgpu textures on the test adapter.

mod common;

use common::sample::sample;
use image::RgbaImage;
use mipstream::gpu::{upload_levels, valid_base_level, UploadError};
use mipstream::transcode::{
    choose_targets, transcode_level, LevelImage, TextureClass, TranscodeOptions,
};
use mipstream::TextureFile;

fn levels(file: &TextureFile, range: std::ops::Range<u32>) -> Vec<LevelImage> {
    let g = common::gpu();
    let c = choose_targets(file.info(), TextureClass::Color, g.device.features()).unwrap();
    range
        .map(|l| {
            transcode_level(
                file,
                &file.read_level(l).unwrap(),
                &TranscodeOptions::new(c.full, c.srgb),
            )
            .unwrap()
        })
        .collect()
}

fn cpu(level: &LevelImage) -> RgbaImage {
    let d = mipstream::decode::decode_level_image(level, 0).unwrap();
    RgbaImage::from_raw(d.width, d.height, d.pixels).unwrap()
}

const SAME_TEXELS: common::Tolerance = common::Tolerance {
    min_psnr: 45.0,
    max_flip: 0.02,
};

/// A texture made of levels 3..11 of a 1024x1024 file is 128x128 with 8 mips,
/// and its mip j samples as file level 3 + j.
#[test]
fn partial_levels_upload_with_level_k_as_base() {
    let g = common::gpu();
    let file =
        TextureFile::open_path(common::shared_data().join("sponza-textures/sponza_arch_diff.ktx2"))
            .unwrap();
    let lv = levels(&file, 3..11);
    let tex = upload_levels(&g.device, &g.queue, "arch 3..11", file.info(), &lv).unwrap();
    assert_eq!((tex.texture.width(), tex.texture.height()), (128, 128));
    assert_eq!(
        (
            tex.first_level,
            tex.level_count,
            tex.texture.mip_level_count()
        ),
        (3, 8, 8)
    );
    assert_eq!(tex.bytes, lv.iter().map(|l| l.gpu_bytes()).sum::<u64>());
    for mip in [0, 4, 7] {
        let got = sample(g, &tex.texture, tex.view_dimension, mip, 0);
        assert_eq!(got.width(), 128 >> mip);
        common::assert_images_close(
            &format!("partial-mip{mip}"),
            &got,
            &cpu(&lv[mip as usize]),
            SAME_TEXELS,
        );
    }
}

/// Block-compressed textures need a base whose size is a whole number of
/// blocks: 768x512 level 6 (12x8) can be a base, level 7 (6x4) cannot.
#[test]
fn unaligned_base_is_refused_and_aligned_accepted() {
    let g = common::gpu();
    let file = TextureFile::open_path(
        common::shared_data().join("ktx2-samples/kodak-vulkan/kodim23_UASTC.ktx2"),
    )
    .unwrap();
    let all = levels(&file, 6..10);
    let format = all[0].format;
    if format.block_dimensions() == (1, 1) {
        panic!("the test adapter offers no compressed format; this test needs BC (lavapipe) or ETC2/ASTC (llvmpipe)");
    }
    assert!(valid_base_level(format, 768, 512, 6));
    assert!(!valid_base_level(format, 768, 512, 7));
    upload_levels(&g.device, &g.queue, "6..10", file.info(), &all).unwrap();
    match upload_levels(&g.device, &g.queue, "7..10", file.info(), &all[1..]) {
        Err(UploadError::UnalignedBase {
            level: 7,
            width: 6,
            height: 4,
            ..
        }) => {}
        other => panic!("expected UnalignedBase for level 7, got {other:?}"),
    }
}

#[test]
fn inconsistent_level_lists_are_refused() {
    let g = common::gpu();
    let file =
        TextureFile::open_path(common::shared_data().join("sponza-textures/sponza_arch_diff.ktx2"))
            .unwrap();
    let lv = levels(&file, 4..8);
    let gap = vec![lv[0].clone(), lv[2].clone()];
    let e = upload_levels(&g.device, &g.queue, "gap", file.info(), &gap).unwrap_err();
    assert!(matches!(e, UploadError::Inconsistent { .. }), "{e}");
    assert!(e.to_string().contains("level 6 follows level 4"), "{e}");
    let e = upload_levels(&g.device, &g.queue, "none", file.info(), &[]).unwrap_err();
    assert!(matches!(e, UploadError::Empty { .. }), "{e}");
}

/// A golden image of what the adapter samples from a transcoded Kodak photo
/// (mip 2 of the UASTC file): catches any change in transcoding or upload.
#[test]
fn kodim23_mip2_matches_its_golden() {
    let g = common::gpu();
    let file = TextureFile::open_path(
        common::shared_data().join("ktx2-samples/kodak-vulkan/kodim23_UASTC.ktx2"),
    )
    .unwrap();
    let lv = levels(&file, 2..10);
    let tex = upload_levels(&g.device, &g.queue, "kodim23", file.info(), &lv).unwrap();
    let got = sample(g, &tex.texture, tex.view_dimension, 0, 0);
    // BC7 on lavapipe, ASTC on llvmpipe: both within 2% FLIP of the golden
    common::check_golden(
        "kodim23-uastc-mip2",
        &got,
        common::Tolerance {
            min_psnr: 38.0,
            max_flip: 0.05,
        },
    );
}
