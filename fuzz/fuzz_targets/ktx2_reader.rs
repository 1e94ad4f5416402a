//! Fuzzes the KTX2 / .basis reader and the transcoder entry: any bytes either
//! fail to open with an error, or open and then every level reads and
//! transcodes (or fails with an error). Panics, hangs and runaway allocations
//! are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mipstream::transcode::{choose_targets, transcode_level, TextureClass, TranscodeOptions};
use mipstream::{MemorySource, TextureFile};
use std::sync::Arc;

/// Levels larger than this are read but not transcoded, to keep each run fast.
const MAX_TRANSCODE_TEXELS: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = TextureFile::open(Arc::new(MemorySource::new("fuzz", data.to_vec()))) else {
        return;
    };
    let info = file.info().clone();
    let features = wgpu::Features::TEXTURE_COMPRESSION_BC;
    let choice = choose_targets(&info, TextureClass::Color, features).ok();
    for level in 0..info.levels.len() as u32 {
        let Ok(raw) = file.read_level(level) else { continue };
        let texels = raw.width as u64 * raw.height as u64 * info.images_per_level() as u64;
        if let Some(c) = choice {
            if texels <= MAX_TRANSCODE_TEXELS {
                let _ = transcode_level(&file, &raw, &TranscodeOptions::new(c.full, c.srgb));
            }
        }
    }
});
