//! Fuzzes the `.msmesh` reader: any bytes either fail to open with an error,
//! or open, and then every LOD reads (or fails with an error).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mipstream::mesh::MeshFile;
use mipstream::MemorySource;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = MeshFile::open(Arc::new(MemorySource::new("fuzz", data.to_vec()))) else {
        return;
    };
    for lod in 0..file.info().lods.len() as u32 {
        if let Ok(l) = file.read_lod(lod) {
            assert!(l.indices.iter().all(|&i| (i as usize) < l.vertices.len()));
        }
    }
});
