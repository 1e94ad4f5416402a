//! The docs' own rules, checked on the files: the README stays a page whose
//! two commands come first and are the ones CI runs, every page of the guide
//! is compiled as doctests, links between pages lead somewhere, and the docs
//! speak of the code as it is (history goes to CHANGELOG.md).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every page a reader is sent to: README, the guide, the Bevy README, the
/// architecture, contributing and changelog pages.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    pages.push(root.join("mipstream-bevy/README.md"));
    pages.extend(guide());
    pages
}

fn guide() -> Vec<PathBuf> {
    let mut guide: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    guide
}

#[test]
fn the_readme_is_a_page_that_opens_with_the_two_commands_ci_runs() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the rest belongs in docs/"
    );
    let mut fence = readme.lines().skip_while(|l| !l.starts_with("```"));
    assert_eq!(
        fence.next(),
        Some("```sh"),
        "the README opens with a shell block"
    );
    let commands: Vec<&str> = fence.take_while(|l| !l.starts_with("```")).collect();
    assert_eq!(commands.len(), 2, "two commands: {commands:?}");
    let command = |l: &str| l.split('#').next().unwrap().trim().to_string();
    assert_eq!(
        command(commands[0]),
        "cargo run --release -p mipstream-tools --example viewer"
    );
    assert_eq!(command(commands[1]), ".ci/test");
    // CI runs the README's test command itself, not a copy of it
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.lines().any(|l| l.trim() == ".ci/test"),
        ".ci/run must call the README's test command"
    );
}

#[test]
fn every_page_of_the_guide_is_compiled_as_doctests() {
    let lib = read(&root().join("src/lib.rs"));
    for page in guide() {
        let name = page.file_name().unwrap().to_str().unwrap();
        let include = format!("include_str!(\"../docs/{name}\")");
        assert!(
            lib.contains(&include),
            "src/lib.rs's doc_pages does not include docs/{name}"
        );
    }
    assert!(lib.contains("include_str!(\"../README.md\")"));
}

#[test]
fn the_docs_describe_the_code_as_it_is_not_its_rounds() {
    for page in pages() {
        let text = read(&page).to_lowercase();
        for phrase in ["this round", "last round", "previous round", "next round"] {
            // CHANGELOG.md is where history goes
            if page.ends_with("CHANGELOG.md") {
                continue;
            }
            assert!(
                !text.contains(phrase),
                "{} says \"{phrase}\"",
                page.display()
            );
        }
    }
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of a page's markdown links `](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[test]
fn links_between_pages_lead_to_a_file_and_a_heading_that_exist() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        for link in links(&text) {
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            let (file, fragment) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", page.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                let heads = anchors(&read(&target));
                if !heads.iter().any(|h| h == fragment) {
                    broken.push(format!("{}: {link} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
