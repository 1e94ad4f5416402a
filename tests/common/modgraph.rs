//! The module graph of a crate's source, read from the files: which module
//! names which (`crate::`, `super::`, `self::` paths, `use` groups
//! included), and the cycles in it. Test modules (`#[cfg(test)]` onwards,
//! `tests.rs`, `tests/`) and `src/bin` are left out; a module naming its own
//! ancestor or descendant is not an edge (a parent and its children are
//! one room).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`streamer::work`, `""` for the root) to its code.
pub(crate) fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let rel = p
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "bin" || rel.ends_with("/tests") || rel == "tests" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Some(stem) = rel.strip_suffix(".rs") else {
                continue;
            };
            let mut parts: Vec<&str> = stem.split('/').collect();
            if parts.last() == Some(&"tests") {
                continue;
            }
            if matches!(parts.last(), Some(&"mod") | Some(&"lib") | Some(&"main")) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            out.insert(parts.join("::"), code(&text));
        }
    }
    out
}

/// Code without comments, cut where its tests begin.
fn code(text: &str) -> String {
    let text: String = text
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path a piece of code names from `crate`, `super` or `self`, as
/// segments; `use a::{b, c::d}` gives `a::b` and `a::c::d`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|k| chars[i..].iter().take(k.len()).copied().eq(k.chars()));
        if starts && (i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != ':') {
            i = read_path(&chars, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads a path (with groups) at `i` after `prefix`; returns where it ends.
fn read_path(
    chars: &[char],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut segs = prefix;
    loop {
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        if i > start {
            segs.push(chars[start..i].iter().collect());
        }
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
            if chars.get(i) == Some(&'{') {
                i += 1;
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => return i,
                        Some('}') => return i + 1,
                        _ => {}
                    }
                    let before = i;
                    i = read_path(chars, i, segs.clone(), out);
                    // skip `as name` and anything else up to the item's end
                    while chars.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                        i += 1;
                    }
                    if i == before {
                        i += 1;
                    }
                }
            }
            continue;
        }
        out.push(segs);
        return i;
    }
}

/// The deepest module of `modules` a path from module `at` lands in.
fn resolve(modules: &BTreeMap<String, String>, at: &str, path: &[String]) -> String {
    let mut base: Vec<String> = if at.is_empty() {
        Vec::new()
    } else {
        at.split("::").map(String::from).collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        _ => {
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
    }
    let mut best = base.join("::");
    for s in rest {
        base.push(s.clone());
        let name = base.join("::");
        if !modules.contains_key(&name) {
            break;
        }
        best = name;
    }
    best
}

fn related(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| y.is_empty() || x == y || x.starts_with(&format!("{y}::"));
    inside(a, b) || inside(b, a)
}

/// Module to the modules it names (ancestors and descendants left out).
pub(crate) fn edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(m, code)| {
            let to = paths(code)
                .iter()
                .map(|p| resolve(modules, m, p))
                .filter(|d| !related(m, d))
                .collect();
            (m.clone(), to)
        })
        .collect()
}

/// The cycles: every set of two or more modules that reach each other,
/// each sorted, the list sorted.
pub(crate) fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut out: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, r) in &reached {
        let scc: Vec<String> = r
            .iter()
            .filter(|n| reached.get(n).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        if scc.len() > 1 {
            out.insert(scc);
        }
    }
    out.into_iter().collect()
}

/// The names the crate root re-exports (`pub use a::{B, C as D}`).
pub(crate) fn root_reexports(root: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = root;
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + 8..];
        let end = rest.find(';').unwrap_or(rest.len());
        for item in rest[..end].split([',', '{', '}']) {
            let name = item.split_whitespace().last().unwrap_or("");
            let name = name.rsplit("::").next().unwrap_or("");
            if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                out.insert(name.to_string());
            }
        }
        rest = &rest[end..];
    }
    out
}
