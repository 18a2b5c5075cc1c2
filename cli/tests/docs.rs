//! The binary against the documents: README.md (the repository's and this
//! crate's) and docs/report-format.md quote its exit codes, its example
//! commands and a failing generated run, and this file runs each of them.
//!
//! These tests read files outside this crate, so they run in the repository
//! (`cargo test --workspace`) and are left out of the published package
//! (`exclude` in Cargo.toml).

use std::process::Command;

/// The rows `code | meaning` of the markdown table that follows `header`.
fn exit_code_rows(page: &str, header: &str) -> Vec<(String, String)> {
    page.lines()
        .skip_while(|line| *line != header)
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let (code, meaning) = line
                .trim_matches('|')
                .split_once(" | ")
                .unwrap_or_else(|| panic!("a row `| code | meaning |`: {line}"));
            (code.trim().to_owned(), meaning.trim().to_owned())
        })
        .collect()
}

#[test]
fn the_exit_code_tables_are_the_rows_help_prints() {
    let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    // `  N  meaning`, continued on lines indented further.
    let mut printed: Vec<(String, String)> = Vec::new();
    for line in help
        .split_once("Exit codes:\n")
        .expect("--help prints the exit codes")
        .1
        .lines()
        .take_while(|line| line.starts_with("  "))
    {
        let line = line.trim();
        match line.split_once("  ") {
            Some((code, meaning)) if code.parse::<u8>().is_ok() => {
                printed.push((code.to_owned(), meaning.to_owned()));
            }
            _ => {
                let (_, meaning) = printed.last_mut().expect("a code before its continuation");
                meaning.push(' ');
                meaning.push_str(line);
            }
        }
    }
    assert_eq!(printed.len(), 4, "{help}");
    for (page, text, header) in [
        (
            "README.md",
            include_str!("../../README.md"),
            "| exit code | meaning |",
        ),
        (
            "docs/report-format.md",
            include_str!("../../docs/report-format.md"),
            "| code | meaning |",
        ),
        (
            "cli/README.md",
            include_str!("../README.md"),
            "| exit code | meaning |",
        ),
    ] {
        assert_eq!(
            exit_code_rows(text, header),
            printed,
            "{page}'s exit-code table differs from --help's"
        );
    }
}

#[test]
fn the_readme_quotes_a_failing_generated_run_as_the_cli_prints_it() {
    let readme = include_str!("../../README.md");
    let (_, after) = readme
        .split_once("A failing run prints, for example (`cargo run --release -- ")
        .expect("README.md shows a failing generated run");
    let (args, after) = after.split_once("`)").unwrap();
    let quoted = after.split("```").nth(1).expect("a code block after it");
    let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{args}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut pinned = 0;
    for line in quoted.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("minimal case:") || trimmed.starts_with("replay") {
            assert!(
                stdout.lines().any(|printed| printed == line),
                "README.md quotes a line the CLI does not print:\n{line}\nprinted:\n{stdout}"
            );
            pinned += 1;
        }
    }
    assert_eq!(pinned, 3, "the minimal case and both replay lines");
}

/// A command of docs/report-format.md's example table: its environment,
/// its arguments, and whether stdout goes to `/dev/full`.
struct DocumentedCommand {
    env: Vec<(String, String)>,
    args: Vec<String>,
    to_dev_full: bool,
}

/// Split a shell line of the example table: `NAME=value` words first, then
/// `transfer-conformance` and its arguments (single quotes group a word),
/// and an optional `> /dev/full`.
fn documented_command(line: &str) -> DocumentedCommand {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote: {line}");
    if in_word {
        words.push(word);
    }
    let mut words = words.into_iter().peekable();
    let mut env = Vec::new();
    while let Some((name, value)) = words.peek().and_then(|word| word.split_once('=')) {
        env.push((name.to_owned(), value.to_owned()));
        words.next();
    }
    assert_eq!(
        words.next().as_deref(),
        Some("transfer-conformance"),
        "{line}"
    );
    let mut args: Vec<String> = words.collect();
    let to_dev_full = args.ends_with(&[">".to_owned(), "/dev/full".to_owned()]);
    if to_dev_full {
        args.truncate(args.len() - 2);
    }
    DocumentedCommand {
        env,
        args,
        to_dev_full,
    }
}

#[test]
fn every_exit_code_example_of_the_report_format_page_holds() {
    let page = include_str!("../../docs/report-format.md");
    let table = page
        .split_once("Examples; `cli/tests/docs.rs` runs every row")
        .expect("docs/report-format.md has the exit-code examples")
        .1;
    let gpu_usable = tenferro_transfer_conformance::cuda::cuda_unavailable_reason().is_none();
    let mut checked = 0;
    let mut codes = std::collections::BTreeSet::new();
    for row in table
        .lines()
        .skip_while(|line| !line.starts_with("| command |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
    {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let [command, code] = cells[..] else {
            panic!("a row of two cells: {row}")
        };
        let shell = command
            .strip_prefix('`')
            .and_then(|rest| rest.split_once('`'))
            .map(|(shell, _)| shell)
            .unwrap_or_else(|| panic!("a command in backticks: {row}"));
        let code: i32 = code.parse().unwrap_or_else(|_| panic!("a code: {row}"));
        if command.ends_with("(*no GPU*)") && gpu_usable {
            continue;
        }
        let documented = documented_command(shell);
        let mut process = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"));
        process
            .args(&documented.args)
            .env_remove("TRANSFER_CONFORMANCE_REQUIRE_CUDA")
            .envs(documented.env.iter().map(|(name, value)| (name, value)));
        if documented.to_dev_full {
            let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
                continue; // not Linux
            };
            process.stdout(full);
        }
        let output = process.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(code),
            "docs/report-format.md says `{shell}` exits {code}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if documented.to_dev_full {
            assert!(
                String::from_utf8_lossy(&output.stderr).contains("error: cannot write the report"),
                "{shell}"
            );
        }
        codes.insert(code);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} examples found");
    assert_eq!(codes.len(), if gpu_usable { 3 } else { 4 }, "{codes:?}");
}
