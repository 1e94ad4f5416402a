//! Every malformed or edge-case file of the KTX2 conformance suite (1,158 under
//! `validate/`), the KTX-Software `badktx2` files and the newer-Basis files go
//! through the loader (open, read every level, transcode for a BC adapter)
//! with no panic, in bounded time and bounded memory; where the reference
//! validator reports a problem that matters to loading, mipstream refuses the
//! file.
//!
//! Memory is measured with a counting global allocator, which is why this
//! binary holds a single test.
#![allow(unsafe_code)] // the counting allocator below; it only forwards to System

mod common;

use mipstream::transcode::{choose_targets, transcode_level, TextureClass, TranscodeOptions};
use mipstream::TextureFile;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator unchanged; the counters
// are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Validator message ids whose problem changes where data is or what it means:
/// file structure (header, level index, section offsets and lengths, DFD
/// framing), format identity (VkFormat, Basis colour model and scheme), and
/// texture shape (sizes, faces, depth, levels). A file carrying any of these
/// must be refused.
const MUST_REFUSE: &[u32] = &[
    1003, 2001, // truncated, not KTX2
    3001, 3002, 3003, 3004, // prohibited / invalid / unknown VkFormat, VkFormat with BasisLZ
    3006, 3007, 3008, 3009, 3010, 3011, 3013, 3014, 3015, 3016, // dimensions, faces, levels
    3018, 3019, // vendor or unknown supercompression
    3020, 3021, 3022, 3024, 3026, 3027, 3028, // section offsets and lengths
    4001, 4005, 4006, 4007, 4008, 4009, 4010, // level index sizes, inflated sizes
    6001, 6004, 6005, 6006, 6007, 6009, 6010, 6011, // DFD framing
    6017, 6018, 6023, 6026, 6027, // unloadable formats, Basis DFDs
    7101, 7102, 7103, 7104, 7105, 7106, 7130, // incomplete cubemaps
    8101, 8102, 8103, 8104, 8105, 8106, 8107, 8108, 8109, 8110, // BasisLZ global data
];

/// Validator messages mipstream deliberately does not act on, and why (for the
/// report; anything not in either list is only counted).
const IGNORED: &[(u32, &str)] = &[
    (3005, "typeSize is redundant with the VkFormat"),
    (3012, "typeSize is redundant with the VkFormat"),
    (
        3017,
        "levelCount 0 is read as one level; mipstream never generates mips at load",
    ),
    (3023, "an offset with zero length reads nothing"),
    (3025, "an offset with zero length reads nothing"),
    (
        4002,
        "levels are addressed by their offsets, which are checked in range and disjoint",
    ),
    (
        4003,
        "alignment of supercompressed data does not affect reading",
    ),
    (
        4004,
        "levels are addressed by their offsets, which are checked in range and disjoint",
    ),
    (
        6013,
        "the VkFormat decides sRGB; the DFD transfer function is redundant",
    ),
    (
        6014,
        "the VkFormat decides sRGB; the DFD transfer function is redundant",
    ),
    (
        6015,
        "the VkFormat decides the layout; the DFD colour model is redundant",
    ),
    (
        6016,
        "the VkFormat decides the layout; the DFD colour model is redundant",
    ),
    (6021, "bytesPlanes is redundant with the VkFormat"),
    (6025, "samples are redundant with the VkFormat"),
    (6028, "samples are redundant with the VkFormat"),
];

/// Error (and fatal) message ids of a validator golden.
fn golden_errors(golden: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(golden).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    let mut ids: Vec<u32> = v["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["type"] == "error" || m["type"] == "fatal")
                .filter_map(|m| m["id"].as_u64())
                .map(|id| id as u32)
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Opens, reads and transcodes every level. `Err` is the refusal message.
/// Also returns the bytes the decoded levels would occupy, for the memory bound.
fn load(path: &Path) -> (Result<(), String>, u64) {
    let file = match TextureFile::open_path(path) {
        Ok(f) => f,
        Err(e) => return (Err(e.to_string()), 0),
    };
    let info = file.info();
    let decoded: u64 = info
        .levels
        .iter()
        .map(|l| l.width as u64 * l.height as u64 * 4 * info.images_per_level() as u64)
        .sum();
    let features = wgpu::Features::TEXTURE_COMPRESSION_BC;
    let choice = match choose_targets(info, TextureClass::Color, features) {
        Ok(c) => c,
        Err(e) => return (Err(e.to_string()), decoded),
    };
    for l in 0..info.levels.len() as u32 {
        let raw = match file.read_level(l) {
            Ok(r) => r,
            Err(e) => return (Err(e.to_string()), decoded),
        };
        if let Err(e) = transcode_level(
            &file,
            &raw,
            &TranscodeOptions::new(choice.full, choice.srgb),
        ) {
            return (Err(e.to_string()), decoded);
        }
    }
    (Ok(()), decoded)
}

#[test]
fn malformed_files_are_refused_or_loaded_without_panic_in_bounded_time_and_memory() {
    let data = common::shared_data();
    let conformance = data.join("ktx2-conformance");
    let mut inputs: Vec<(std::path::PathBuf, Vec<u32>)> =
        common::files_with(&conformance.join("input/validate"), &[".ktx2"])
            .into_iter()
            .map(|p| {
                let id_dir = p.parent().unwrap().file_name().unwrap().to_owned();
                let golden = conformance
                    .join("golden/validate")
                    .join(id_dir)
                    .join(format!(
                        "{}.out.json",
                        p.file_stem().unwrap().to_string_lossy()
                    ));
                let ids = golden_errors(&golden);
                (p, ids)
            })
            .collect();
    assert_eq!(inputs.len(), 1158, "the validate suite has 1,158 files");
    for extra in [
        "ktx2-samples/ktx-software/tests/badktx2",
        "ktx2-samples/basis-universal/newer-format",
    ] {
        for p in common::files_with(&data.join(extra), &[".ktx2"]) {
            inputs.push((p, Vec::new()));
        }
    }

    let (mut refused, mut loaded, mut violations) = (0, 0, Vec::new());
    let mut worst_time = Duration::ZERO;
    let mut ignored_seen = std::collections::BTreeMap::<u32, usize>::new();
    for (path, ids) in &inputs {
        let size = std::fs::metadata(path).unwrap().len();
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(|| load(path));
        let elapsed = start.elapsed();
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before) as u64;
        worst_time = worst_time.max(elapsed);
        let name = path.strip_prefix(&data).unwrap().display().to_string();
        let Ok((result, decoded)) = outcome else {
            violations.push(format!("{name}: panicked"));
            continue;
        };
        // bounded memory: the file, the decoded levels, and fixed overheads
        let bound = 4 * size + 2 * decoded + (1 << 20);
        if peak > bound {
            violations.push(format!(
                "{name}: peak allocation {peak} bytes > bound {bound}"
            ));
        }
        if elapsed > Duration::from_secs(2) {
            violations.push(format!("{name}: took {elapsed:?}"));
        }
        match &result {
            Ok(()) => {
                loaded += 1;
                if let Some(id) = ids.iter().find(|id| MUST_REFUSE.contains(id)) {
                    violations.push(format!(
                        "{name}: loaded, but the validator reports error {id}"
                    ));
                }
                for id in ids {
                    if IGNORED.iter().any(|(i, _)| i == id) {
                        *ignored_seen.entry(*id).or_default() += 1;
                    }
                }
            }
            Err(message) => {
                refused += 1;
                let first = message.lines().next().unwrap_or_default();
                if first.len() < 20 || !first.contains(path.file_name().unwrap().to_str().unwrap())
                {
                    violations.push(format!("{name}: unclear refusal: {message}"));
                }
            }
        }
    }
    eprintln!(
        "{} files: {refused} refused, {loaded} loaded, slowest {worst_time:?}",
        inputs.len()
    );
    for (id, n) in &ignored_seen {
        let why = IGNORED
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, w)| *w)
            .unwrap_or_default();
        eprintln!("  loaded {n} file(s) flagged {id}: {why}");
    }
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
}
