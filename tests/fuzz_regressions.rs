//! Inputs the fuzzer (`fuzz/`, target `ktx2_reader`) once crashed on. Each must
//! now load or be refused, and decode or fail, without a panic.

mod common;

use mipstream::transcode::{choose_targets, transcode_level, TextureClass, TranscodeOptions};
use mipstream::TextureFile;

#[test]
fn former_fuzz_crashes_no_longer_panic() {
    let dir = common::repo().join("tests/fuzz-regressions");
    let files = common::files_with(&dir, &[".ktx2", ".basis"]);
    assert!(!files.is_empty());
    for path in files {
        let Ok(file) = TextureFile::open_path(&path) else {
            continue;
        };
        let info = file.info().clone();
        for features in [
            wgpu::Features::empty(),
            wgpu::Features::TEXTURE_COMPRESSION_BC,
        ] {
            let Ok(c) = choose_targets(&info, TextureClass::Color, features) else {
                continue;
            };
            for level in 0..info.levels.len() as u32 {
                let Ok(raw) = file.read_level(level) else {
                    continue;
                };
                let _ = transcode_level(&file, &raw, &TranscodeOptions::new(c.full, c.srgb));
                let _ = mipstream::decode::decode_rgba8(&file, &raw, 0);
            }
        }
    }
}
