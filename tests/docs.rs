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

/// A measured number: a figure followed by a unit of time, quality or
/// speed (`0.41 ms`, `45.5 dB`, `296.6 MiB/s`, `1.5x faster`), not a bound
/// (`needs 28 dB`, `at most 2 ms`) or a setting.
fn measurements(paragraph: &str) -> Vec<String> {
    const UNITS: [&str; 8] = [
        " ms", " µs", " dB", " MiB/s", " GiB/s", " fps", "x faster", "x slower",
    ];
    const BOUNDS: [&str; 8] = [
        "need", "bound", "within", "at least", "at most", "under ", "asked", "bar ",
    ];
    let chars: Vec<char> = paragraph.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
            j += 1;
        }
        let rest: String = chars[j..chars.len().min(j + 9)].iter().collect();
        let unit = UNITS.iter().find(|u| {
            rest.starts_with(**u)
                && rest[u.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        });
        if let Some(u) = unit {
            let before: String = chars[i.saturating_sub(40)..i].iter().collect();
            let before = before.to_lowercase();
            if !BOUNDS.iter().any(|b| before.contains(b)) {
                let number: String = chars[i..j].iter().collect();
                found.push(format!("{number}{u}"));
            }
        }
        i = j.max(i + 1);
    }
    found
}

/// A commit named the way the docs name one: 7 to 10 hex digits, at least
/// one a letter and one a digit.
fn names_a_commit(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        (7..=10).contains(&w.len())
            && w.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_ascii_alphabetic())
    })
}

fn names_a_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(10).any(|w| {
        w[..4].starts_with(b"20")
            && w[..4].iter().all(u8::is_ascii_digit)
            && w[4] == b'-'
            && w[5..7].iter().all(u8::is_ascii_digit)
            && w[7] == b'-'
            && w[8..].iter().all(u8::is_ascii_digit)
    })
}

#[test]
fn every_measured_number_in_the_docs_says_when_and_on_what_build() {
    // the rule of the guide: a number says its date, backend, commit and
    // command, in its paragraph or in the section it belongs to
    // (CONTRIBUTING.md states the tests' bounds, CHANGELOG.md is history)
    let mut unsourced = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        if name == "CONTRIBUTING.md" || name == "CHANGELOG.md" {
            continue;
        }
        let text = read(&page);
        let mut sections = vec![String::new()];
        for line in text.lines() {
            if line.starts_with("## ") || line.starts_with("# ") {
                sections.push(String::new());
            }
            let last = sections.last_mut().unwrap();
            last.push_str(line);
            last.push('\n');
        }
        for section in &sections {
            let sourced = names_a_commit(section) && names_a_date(section);
            for paragraph in section.split("\n\n") {
                let numbers = measurements(paragraph);
                seen += numbers.len();
                let here = names_a_commit(paragraph) && names_a_date(paragraph);
                if !numbers.is_empty() && !here && !sourced {
                    let head: String = paragraph.trim().chars().take(70).collect();
                    unsourced.push(format!("{name}: {numbers:?} in {head:?}"));
                }
            }
        }
    }
    // the check reads the docs' numbers (results, performance)
    assert!(seen > 60, "{seen} measured numbers found");
    assert!(
        unsourced.is_empty(),
        "numbers without a commit and a date in their paragraph or section: {unsourced:#?}"
    );
}

#[test]
fn measured_numbers_are_told_from_bounds_and_sources_are_recognised() {
    assert_eq!(
        measurements("update 0.136 ms, 45.5 dB"),
        ["0.136 ms", "45.5 dB"]
    );
    assert!(measurements("the test needs 28 dB and 0.12").is_empty());
    assert!(measurements("8 MiB per frame, level 2 ms_x").is_empty());
    assert_eq!(measurements("1.5x faster than"), ["1.5x faster"]);
    assert!(names_a_commit("release build of f0bb621, lavapipe"));
    assert!(!names_a_commit("the function deadbeef and 1234567"));
    assert!(names_a_date("2026-12-04 23:31"));
    assert!(!names_a_date("2026-1-4"));
}
