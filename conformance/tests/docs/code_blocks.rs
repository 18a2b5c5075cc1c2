//! Every Rust block of the README and docs/ compiles as a doctest (the
//! pages are included by `src/doc_pages.rs`) or says why not: a block
//! fenced `rust,ignore` has the words "not compiled as a doctest" and the
//! reason in the prose just before it. A fence with no language would be
//! compiled as Rust by rustdoc, so every fence names its language.

use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the conformance crate sits in the workspace")
        .to_path_buf()
}

/// Every page a reader reads: the READMEs and each page of docs/, found
/// on disk so that a new page is held to the same rule.
fn pages() -> Vec<String> {
    let mut pages = vec![
        "README.md".to_owned(),
        "conformance/README.md".to_owned(),
        "cli/README.md".to_owned(),
    ];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced block's opening: its line number (from 1), its info string
/// and the prose paragraph just before it.
struct Opening {
    line: usize,
    info: String,
    before: String,
}

fn openings(text: &str) -> Vec<Opening> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut inside = false;
    for (at, line) in lines.iter().enumerate() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        if inside {
            inside = false;
            continue;
        }
        inside = true;
        let mut paragraph: Vec<&str> = lines[..at]
            .iter()
            .rev()
            .skip_while(|line| line.trim().is_empty())
            .take_while(|line| !line.trim().is_empty())
            .copied()
            .collect();
        paragraph.reverse();
        found.push(Opening {
            line: at + 1,
            info: info.trim().to_owned(),
            before: paragraph.join(" "),
        });
    }
    found
}

#[test]
fn every_rust_block_of_the_pages_compiles_or_says_why_not() {
    let included = include_str!("../../src/doc_pages.rs");
    let mut problems = Vec::new();
    let mut compiled = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).expect("a readable page");
        let include = match page.strip_prefix("conformance/") {
            Some(own) => format!("include_str!(\"../{own}\")"),
            None => format!("include_str!(\"../../{page}\")"),
        };
        if !included.contains(&include) {
            problems.push(format!(
                "{page}: not included by conformance/src/doc_pages.rs ({include})"
            ));
        }
        for opening in openings(&text) {
            let at = format!("{page}:{}", opening.line);
            match opening.info.as_str() {
                "" => problems.push(format!(
                    "{at}: a fence with no language is compiled as Rust; name it (text, sh, toml, rust)"
                )),
                "rust" => compiled += 1,
                "rust,ignore" if opening.before.contains("not compiled as a doctest") => {}
                "rust,ignore" => problems.push(format!(
                    "{at}: a `rust,ignore` block without \"not compiled as a doctest: <why>\" just before it"
                )),
                info if info.starts_with("rust") => problems.push(format!(
                    "{at}: `{info}`: a Rust block is `rust` (compiled) or `rust,ignore` with the reason"
                )),
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The README's provider-crate snippets compile; if none did, the
    // check would hold of nothing.
    assert!(compiled >= 2, "only {compiled} Rust blocks are compiled");
}

#[test]
fn a_block_without_a_reason_or_a_language_is_found() {
    let page = "Some prose.\n\n```rust,ignore\nfn f() {}\n```\n\nMore (not compiled as a doctest: quoted).\n\n```rust,ignore\n```\n\n```\nx\n```\n";
    let found = openings(page);
    let infos: Vec<(&str, bool)> = found
        .iter()
        .map(|opening| {
            (
                opening.info.as_str(),
                opening.before.contains("not compiled as a doctest"),
            )
        })
        .collect();
    assert_eq!(
        infos,
        [("rust,ignore", false), ("rust,ignore", true), ("", false)]
    );
    assert_eq!(
        found.iter().map(|opening| opening.line).collect::<Vec<_>>(),
        [3, 9, 12]
    );
}

#[test]
fn the_readme_snippet_is_the_front_pages_example() {
    // docs.rs shows the crate's front page; the README shows the same
    // device and suite, and the front page runs them.
    let readme = include_str!("../../../README.md")
        .split_once("\n## In your provider crate\n")
        .expect("README.md has the provider-crate section")
        .1;
    let snippet = readme
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body)
        .expect("the section's Rust block");
    let front: String = include_str!("../../src/lib.rs")
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        front.contains(snippet),
        "the README's first Rust block is not in conformance/src/lib.rs's front page:\n{snippet}"
    );
}
