//! Fuzzes the transcoder entry directly: a valid template file (ETC1S,
//! UASTC, ASTC, ETC2) keeps its header, and the fuzzer's bytes replace its
//! level data (and, for BasisLZ, its global codebooks), so nearly every input
//! reaches the block decoders instead of stopping at header validation. Each
//! level is transcoded for a BC adapter, an ETC2/ASTC adapter and one with no
//! compressed formats (RGBA8). An error is fine; a panic, a hang or a runaway
//! allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mipstream::transcode::{choose_targets, transcode_level, TextureClass, TranscodeOptions};
use mipstream::{MemorySource, TextureFile};
use std::sync::Arc;

const TEMPLATES: [&[u8]; 6] = [
    include_bytes!("../templates/etc1s-mipmap.ktx2"),
    include_bytes!("../templates/basis-reference-mipmap.ktx2"),
    include_bytes!("../templates/uastc-checker.ktx2"),
    include_bytes!("../templates/uastc-8x8.ktx2"),
    include_bytes!("../templates/astc-mipmap.ktx2"),
    include_bytes!("../templates/etc2-mipmap.ktx2"),
];

fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// Overwrites `dst` with `src` repeated.
fn fill(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src.iter().cycle()) {
        *d = *s;
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let template = TEMPLATES[data[0] as usize % TEMPLATES.len()];
    let mode = data[1];
    let payload = &data[2..];
    let info = TextureFile::open(Arc::new(MemorySource::new("template", template.to_vec())))
        .expect("templates open")
        .info()
        .clone();
    let mut bytes = template.to_vec();
    // mode bit 0: replace every level, else only level (mode >> 4)
    let only = (mode & 1 == 0).then(|| (mode >> 4) as usize % info.levels.len());
    for (i, level) in info.levels.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        for &(offset, len) in &level.ranges {
            fill(&mut bytes[offset as usize..(offset + len) as usize], payload);
        }
    }
    // mode bit 1: the BasisLZ global data (codebooks, slice descriptors) too
    if mode & 2 != 0 {
        let (at, len) = (u64_at(&bytes, 64), u64_at(&bytes, 72));
        if len > 0 && at + len <= bytes.len() {
            let rotated: Vec<u8> = payload.iter().rev().copied().collect();
            fill(&mut bytes[at..at + len], &rotated);
        }
    }
    // `MIPSTREAM_FUZZ_DUMP=out.ktx2 .../transcode crash-...` writes the file
    // an input builds, for tests/fuzz-regressions/
    if let Some(path) = std::env::var_os("MIPSTREAM_FUZZ_DUMP") {
        std::fs::write(path, &bytes).expect("writing MIPSTREAM_FUZZ_DUMP");
    }
    let Ok(file) = TextureFile::open(Arc::new(MemorySource::new("fuzz", bytes))) else {
        return;
    };
    let info = file.info().clone();
    let adapters = [
        wgpu::Features::TEXTURE_COMPRESSION_BC,
        wgpu::Features::TEXTURE_COMPRESSION_ETC2 | wgpu::Features::TEXTURE_COMPRESSION_ASTC,
        wgpu::Features::empty(),
    ];
    let features = adapters[(mode >> 2) as usize % adapters.len()];
    let Ok(choice) = choose_targets(&info, TextureClass::Color, features) else {
        return;
    };
    for level in 0..info.levels.len() as u32 {
        let Ok(raw) = file.read_level(level) else {
            continue;
        };
        let _ = transcode_level(&file, &raw, &TranscodeOptions::new(choice.full, choice.srgb));
        if let Some(compact) = choice.compact {
            let _ = transcode_level(&file, &raw, &TranscodeOptions::new(compact, choice.srgb));
        }
    }
});
