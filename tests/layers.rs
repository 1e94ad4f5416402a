//! The layering rules of ARCHITECTURE.md, checked on the source itself so a
//! change that breaks one fails here rather than in a review:
//! - the demo is a crate of its own (`mipstream-tools`) that the library
//!   does not depend on, and the runtime never imports the cooking code;
//! - the planner and the streamer's decisions touch no GPU device or queue;
//!   outside `gpu/`, core code never calls the device or the queue;
//! - the transcoder does not import the CPU decoder (both use `blocks.rs`);
//! - no source file (library, tests, examples, benches, the tools and the
//!   Bevy plugin) runs over 800 lines;
//! - the runtime blocks on the GPU only in `GpuStore::wait_idle`, which
//!   counts its waits, and in the readback of a picture;
//! - modules name each other in no cycle (library, tools, Bevy plugin), no
//!   import runs up the layers, and nothing imports through the crate root.

use std::path::{Path, PathBuf};

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p: PathBuf = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without its comments (doc links may name anything).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_cooking(path: &str) -> bool {
    path.starts_with("cook/") || path == "mesh/lod.rs" || path == "mesh/scene_file.rs"
}

/// The `[dependencies]`-like tables of a manifest (not dev-dependencies).
fn runtime_dependency_tables(manifest: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = line.contains("dependencies]") && !line.contains("dev-dependencies");
        } else if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_library_does_not_depend_on_the_demo_and_the_runtime_never_imports_cooking() {
    let mut broken = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let runtime = runtime_dependency_tables(&manifest);
    assert!(runtime.contains("wgpu"), "{runtime}");
    if runtime.contains("mipstream-tools") {
        broken.push("the library depends on mipstream-tools (tests only may)".to_string());
    }
    // the demo's tests drive the library through the tools crate, not the reverse
    assert!(
        manifest.contains("mipstream-tools = { path"),
        "dev-dependency gone?"
    );
    for (path, text) in sources() {
        let code = code(&text);
        if code.contains("mipstream_tools") {
            broken.push(format!("{path} names the tools crate"));
        }
        if !is_cooking(&path) && code.contains("crate::cook") {
            broken.push(format!("{path} (runtime) imports the cooking code"));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn only_gpu_calls_the_device_and_the_decisions_touch_no_gpu_at_all() {
    // calls on a wgpu::Device, Queue or Texture (GpuStore's own methods of
    // similar names are the way to them)
    let calls = [
        "device.create",
        "device().create",
        "queue.write",
        "queue().write",
        "queue.submit",
        "queue().submit",
        "on_submitted_work_done",
        "create_command_encoder",
        "create_view(",
        "push_error_scope",
        "device.poll",
        "device().poll",
    ];
    let mut broken = Vec::new();
    for (path, text) in sources() {
        let code = code(&text);
        let core = !is_cooking(&path) && !path.starts_with("gpu/");
        if core {
            for c in calls {
                if code.contains(c) {
                    broken.push(format!("{path} calls {c} outside gpu/"));
                }
            }
        }
        let pure = path.starts_with("plan/") || path.starts_with("streamer/work");
        if pure
            && (code.contains("wgpu::Device")
                || code.contains("wgpu::Queue")
                || code.contains(".device("))
        {
            broken.push(format!(
                "{path} must stay pure CPU but names the device or queue"
            ));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// Every `.rs` file under `dir` (relative to the crate), recursively.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn transcoding_and_decoding_do_not_import_each_other_and_files_stay_short() {
    let mut broken = Vec::new();
    for (path, text) in sources() {
        if path == "transcode.rs" && code(&text).contains("crate::decode") {
            broken.push("transcode.rs imports decode.rs (use blocks.rs)".to_string());
        }
    }
    // the same size rule for the library, its tests, examples and benches,
    // the tools and the Bevy plugin
    let roots = [
        "src",
        "tests",
        "examples",
        "benches",
        "mipstream-tools",
        "mipstream-bevy",
    ];
    let files: Vec<PathBuf> = roots.iter().flat_map(|r| rust_files(r)).collect();
    assert!(files.len() > 100, "{} files found", files.len());
    for p in files {
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        if lines > 800 {
            broken.push(format!("{}: {lines} lines", p.display()));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn the_runtime_blocks_on_the_gpu_only_where_it_counts_the_wait() {
    // a blocking poll lives in two places: `GpuStore::wait_idle`, which
    // counts each wait (`FrameStats::gpu_waits`, asserted 0 over every
    // update of tests/gpu_memory.rs), and the readback of a picture
    let mut broken = Vec::new();
    for (path, text) in sources() {
        let code = code(&text);
        for c in ["PollType::Wait", "wait_indefinitely", "PollType::wait"] {
            let allowed = path == "gpu/store.rs" || path == "gpu/readback.rs";
            if code.contains(c) && !allowed {
                broken.push(format!("{path} blocks on the GPU ({c})"));
            }
        }
        if path == "gpu/store.rs" {
            let waits = code.matches("PollType::Wait").count();
            let counted = code.contains("self.waits += 1");
            if waits != 1 || !counted {
                broken.push(format!(
                    "gpu/store.rs: {waits} blocking polls, the wait counted: {counted}"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[path = "common/modgraph.rs"]
mod modgraph;

#[test]
fn modules_name_each_other_in_no_cycle_and_nothing_imports_through_the_crate_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in ["src", "mipstream-tools/src", "mipstream-bevy/src"] {
        let modules = modgraph::modules(&root.join(src));
        assert!(modules.len() > 5, "{src}: {} modules", modules.len());
        let edges = modgraph::edges(&modules);
        // the graph is read, not empty: the streamer names the planner
        if src == "src" {
            assert!(
                edges["streamer::work"].contains("plan"),
                "{:?}",
                edges["streamer::work"]
            );
        }
        for cycle in modgraph::cycles(&edges) {
            found.push((src, cycle));
        }
        // inside the crate, a type is named where it lives, not through the
        // root's re-exports (`crate::Streamer` runs up and back down)
        let reexported = modgraph::root_reexports(&modules[""]);
        if src == "src" {
            assert!(reexported.contains("Streamer"), "{reexported:?}");
        }
        for (m, code) in &modules {
            if m.is_empty() {
                continue;
            }
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    !reexported.contains(&name),
                    "{src}/{m} names crate::{name}, a re-export: name it where it lives"
                );
            }
        }
    }
    assert!(found.is_empty(), "module cycles: {found:#?}");
}

/// The library's layers, lowest first (ARCHITECTURE.md): a module may name
/// only modules of its own layer or below.
const LAYERS: &[&str] = &[
    "parallel",
    "source",
    "format",
    "container",
    "blocks",
    "kinds",
    "loss",
    "ids",
    "fault",
    "transcode",
    "decode",
    "mesh",
    "gpu",
    "worker",
    "plan",
    "streamer",
    "scene",
    "cook",
];

#[test]
fn no_import_runs_up_the_layers() {
    let modules = modgraph::modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = modgraph::edges(&modules);
    let layer = |m: &str| {
        let top = m.split("::").next().unwrap();
        LAYERS.iter().position(|l| *l == top)
    };
    let mut up = Vec::new();
    let mut checked = 0;
    for (m, to) in &edges {
        if m.is_empty() {
            continue;
        }
        let from = layer(m).unwrap_or_else(|| panic!("{m} is in no layer: add it to LAYERS"));
        for d in to.iter().filter(|d| !d.is_empty()) {
            checked += 1;
            if layer(d).is_some_and(|l| l > from) {
                up.push(format!("{m} -> {d}"));
            }
        }
    }
    assert!(checked > 150, "{checked} imports read");
    assert!(up.is_empty(), "imports running up the layers: {up:#?}");
}
