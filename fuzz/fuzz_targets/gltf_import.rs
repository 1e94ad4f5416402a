//! Fuzzes the glTF import of `cook-gltf`: parsing (JSON or GLB, buffers from
//! data URIs or the GLB chunk; external files are refused), reading every
//! triangle primitive, and building LOD chains for the small ones. Any input
//! ends in an error or in geometry whose indices are all in range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mipstream::cook::gltf::{parse, read_primitives};
use mipstream::mesh::lod::{build_lod_chain, LodOptions};

fuzz_target!(|data: &[u8]| {
    // panics inside the gltf crate are caught by `parse` and turned into
    // errors (as in production); libfuzzer's hook would abort before that
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let Ok((document, buffers)) = parse("fuzz.gltf", data, None) else {
        return;
    };
    let mut warnings = Vec::new();
    let Ok(primitives) = read_primitives("fuzz.gltf", &document, &buffers, &mut warnings) else {
        return;
    };
    for (_, _, p) in primitives {
        assert!(p.indices.iter().all(|&i| (i as usize) < p.vertices.len()));
        if p.indices.len() <= 30_000 {
            let lods = build_lod_chain(&p.vertices, &p.indices, &LodOptions::default());
            for l in &lods {
                assert!(l.indices.iter().all(|&i| (i as usize) < l.vertices.len()));
            }
        }
    }
});
