//! The documentation keeps up with the code. The pages that quote the
//! adapter API, the settings and the manifests are checked in
//! `adapter.rs`; their code blocks in `code_blocks.rs`.

mod adapter;
mod code_blocks;

use tenferro_transfer_conformance::harness::Rule;

#[test]
fn the_contract_page_states_every_rule_as_the_catalogue_does() {
    let page = include_str!("../../../docs/contract.md");
    for rule in Rule::ALL {
        let row = format!(
            "| `{}` | {} | {} | {} |",
            rule.id(),
            rule.statement(),
            rule.origin(),
            rule.method()
        );
        assert!(
            page.contains(&row),
            "docs/contract.md is missing or has a stale row for {rule}:\n{row}"
        );
    }
}

#[test]
fn the_readme_shows_both_commands() {
    let readme = include_str!("../../../README.md");
    assert!(readme.contains("cargo run --release"));
    assert!(readme.contains("cargo test --workspace"));
}

#[test]
fn the_contract_page_quotes_each_example_violation_from_its_snapshot() {
    let page = include_str!("../../../docs/contract.md");
    let examples = page
        .split("## Example violations")
        .nth(1)
        .expect("docs/contract.md has an Example violations section");
    let mut quoted = 0;
    for line in examples.lines().filter(|line| line.starts_with("- `")) {
        let Some((head, quote)) = line.split_once(".snap`): ") else {
            continue;
        };
        let (rule, snapshot) = head
            .trim_start_matches("- `")
            .split_once("` (`")
            .expect("- `rule` (`snapshots/name.snap`): quote");
        let text =
            std::fs::read_to_string(format!("{}/../{snapshot}.snap", env!("CARGO_MANIFEST_DIR")))
                .unwrap_or_else(|error| panic!("{snapshot}: {error}"));
        let quote = quote.trim_end_matches(" ...");
        assert!(
            text.contains(&format!("violation {rule}: {quote}")),
            "docs/contract.md's example for {rule} is not in {snapshot}.snap:\n{quote}"
        );
        quoted += 1;
    }
    assert_eq!(
        quoted,
        tenferro_transfer_conformance::harness::Rule::ALL.len() - 1,
        "one example per rule but runtime-agreement"
    );
}

/// The libFuzzer flags `.ci/fuzz-smoke` passes (the words after `--` on the
/// `fuzz run` command).
fn fuzz_smoke_flags() -> Vec<String> {
    let script = include_str!("../../../.ci/fuzz-smoke");
    let run = script
        .split_once("fuzz run ")
        .expect(".ci/fuzz-smoke runs cargo fuzz run")
        .1;
    let flags = run
        .split_once(" -- \\\n")
        .expect("libFuzzer flags after --")
        .1;
    flags
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_fuzzing_page_says_what_fails_the_smoke_run_as_the_script_runs_it() {
    let flags = fuzz_smoke_flags();
    assert!(
        flags.iter().any(|flag| flag.starts_with("-timeout=")),
        "{flags:?}"
    );
    let page = include_str!("../../../docs/fuzzing.md");
    let ci = page
        .split_once("\n## CI\n")
        .expect("docs/fuzzing.md has a CI section")
        .1
        .split("\n## ")
        .next()
        .unwrap();
    for flag in &flags {
        // `-max_total_time="$seconds"` is written `-max_total_time=$FUZZ_SECONDS`.
        let flag = flag.replace("\"$seconds\"", "$FUZZ_SECONDS");
        assert!(
            ci.contains(&format!("`{flag}`")),
            "docs/fuzzing.md's CI section does not name `{flag}`, which .ci/fuzz-smoke passes"
        );
    }
    let leaks_off = flags.iter().any(|flag| flag == "-detect_leaks=0");
    let header = include_str!("../../../.ci/fuzz-smoke")
        .split("\nset -euo pipefail")
        .next()
        .unwrap();
    for (what, text) in [("docs/fuzzing.md", ci), (".ci/fuzz-smoke", header)] {
        assert_eq!(
            text.contains("a leak does not fail it"),
            leaks_off,
            "{what} must say whether a leak fails the smoke run (-detect_leaks=0: it does not)"
        );
        assert!(!text.contains("crash, leak or timeout"), "{what}");
    }
}

#[test]
fn the_ci_script_lists_every_step_in_its_header() {
    let script = include_str!("../../../.ci/run");
    let steps: Vec<&str> = script
        .lines()
        .filter_map(|line| line.strip_prefix("step \""))
        .map(|line| line.trim_end_matches('"'))
        .collect();
    let listed: Vec<&str> = script
        .lines()
        .skip_while(|line| *line != "# Steps, in order (each prints `=== <step>`):")
        .skip(1)
        .map_while(|line| line.strip_prefix("#   - "))
        .collect();
    assert!(steps.len() >= 10, "{steps:?}");
    assert_eq!(
        listed, steps,
        ".ci/run's header lists other steps than it runs"
    );
}

#[test]
fn the_guide_shows_the_buggy_example_with_the_command_ci_runs() {
    let guide = include_str!("../../../docs/guide.md");
    let command = guide
        .lines()
        .find_map(|line| {
            line.strip_prefix("$ cargo test ")
                .filter(|rest| rest.contains("buggy"))
        })
        .map(|rest| format!("cargo test {rest}"))
        .expect("the guide shows the buggy example's command");
    let script = include_str!("../../../.ci/run");
    assert!(
        script
            .lines()
            .any(|line| line.contains(&format!("if {command} >"))),
        ".ci/run does not run the guide's command `{command}`"
    );
}

#[test]
fn no_page_names_a_path_of_one_machine() {
    for (page, text) in [
        ("README.md", include_str!("../../../README.md")),
        (
            "docs/architecture.md",
            include_str!("../../../docs/architecture.md"),
        ),
        (
            "docs/contract.md",
            include_str!("../../../docs/contract.md"),
        ),
        ("docs/cuda.md", include_str!("../../../docs/cuda.md")),
        ("docs/fuzzing.md", include_str!("../../../docs/fuzzing.md")),
        ("docs/guide.md", include_str!("../../../docs/guide.md")),
        (
            "docs/performance.md",
            include_str!("../../../docs/performance.md"),
        ),
        (
            "docs/report-format.md",
            include_str!("../../../docs/report-format.md"),
        ),
        ("CHANGELOG.md", include_str!("../../../CHANGELOG.md")),
        ("conformance/README.md", include_str!("../../README.md")),
        ("cli/README.md", include_str!("../../../cli/README.md")),
        (
            "harness/README.md",
            include_str!("../../../harness/README.md"),
        ),
        (
            "mock-devices/README.md",
            include_str!("../../../mock-devices/README.md"),
        ),
    ] {
        for path in ["/root/", "/home/", "/Users/"] {
            assert!(
                !text.contains(path),
                "{page} names {path}: use $HOME or a variable"
            );
        }
    }
}

#[test]
fn the_docs_name_the_examples_in_repository_dependencies() {
    // Each in-repository dependency of an example crate, by manifest section.
    let mut found = Vec::new();
    for manifest in [
        include_str!("../../../examples/stream-upload/Cargo.toml"),
        include_str!("../../../examples/buggy-upload/Cargo.toml"),
        include_str!("../../../examples/cuda-vendor/Cargo.toml"),
    ] {
        let mut section = "";
        for line in manifest.lines() {
            if line.starts_with('[') {
                section = line;
            } else if line.contains("path = \"../../") {
                let name = line.split_once(' ').unwrap().0;
                found.push((section.to_owned(), name.to_owned()));
            }
        }
    }
    found.sort();
    found.dedup();
    // The docs say: the suite as a dev-dependency, as a third party has it;
    // the simulated device as a normal dependency, in place of a device of
    // their own. A change here must change README.md and docs/guide.md.
    assert_eq!(
        found,
        [
            (
                "[dependencies]".to_owned(),
                "tenferro-mock-devices".to_owned()
            ),
            (
                "[dev-dependencies]".to_owned(),
                "tenferro-transfer-conformance".to_owned()
            ),
        ]
    );
    for (page, text) in [
        ("README.md", include_str!("../../../README.md")),
        ("docs/guide.md", include_str!("../../../docs/guide.md")),
    ] {
        assert!(!text.contains("exactly as a third party"), "{page}");
        assert!(
            text.contains("`tenferro-mock-devices` (a normal dependency)"),
            "{page} does not say the examples depend on tenferro-mock-devices"
        );
    }
}

#[test]
fn the_vendor_device_example_takes_only_the_suite_and_as_a_dev_dependency() {
    // examples/vendor-device brings a device of its own: no simulated
    // device anywhere in its manifest, and the suite only in
    // [dev-dependencies], exactly as a third party adds it.
    let manifest = include_str!("../../../examples/vendor-device/Cargo.toml");
    assert!(!manifest.contains("tenferro-mock-devices"));
    assert!(!manifest.contains("tenferro-transfer-harness"));
    let mut section = "";
    let mut in_repository = Vec::new();
    for line in manifest.lines() {
        if line.starts_with('[') {
            section = line;
        } else if line.contains("path = \"../../") {
            in_repository.push((section, line.split_once(' ').unwrap().0));
        }
    }
    assert_eq!(
        in_repository,
        [("[dev-dependencies]", "tenferro-transfer-conformance")]
    );
    let guide = include_str!("../../../docs/guide.md");
    assert!(
        guide.contains("examples/vendor-device"),
        "docs/guide.md does not lead with the vendor-device example"
    );
}

#[test]
fn the_cuda_page_quotes_the_skip_reason_the_code_gives() {
    let page = include_str!("../../../docs/cuda.md");
    let Some(reason) = tenferro_transfer_conformance::cuda::cuda_unavailable_reason() else {
        return; // a usable GPU: nothing is skipped
    };
    assert!(
        page.contains(&reason),
        "docs/cuda.md does not quote the skip reason: {reason}"
    );
    // The routes skip with the same reason.
    use tenferro_transfer_conformance::cuda::CudaRoutes;
    for route in [
        tenferro_transfer_conformance::harness::Route::host_to_cuda(),
        tenferro_transfer_conformance::harness::Route::cuda_to_host(),
    ] {
        // Built on an absent device, gated like any other device.
        match route.unwrap().gate() {
            Err(tenferro_transfer_conformance::harness::HarnessError::Unavailable {
                reason: route_reason,
            }) => assert!(route_reason.ends_with(&reason), "{route_reason}"),
            Err(tenferro_transfer_conformance::harness::HarnessError::DeviceRequired {
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}

/// `n` with a comma every three digits, as the docs write numbers.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_guide_says_when_the_large_and_the_oversize_cases_exist() {
    let guide = include_str!("../../../docs/guide.md");
    let large = format!(
        "declared maximum is at least {} elements",
        thousands(tenferro_transfer_conformance::LARGE_ELEMENTS)
    );
    let oversize = format!(
        "declared maximum is below {} elements",
        thousands(tenferro_transfer_conformance::harness::MAX_EXCEEDED_ELEMENTS)
    );
    let rank = format!(
        "declared maximum is below rank {}",
        tenferro_transfer_conformance::harness::MAX_EXCEEDED_RANK
    );
    let bytes = format!(
        "declared maximum is below {} bytes",
        thousands(tenferro_transfer_conformance::harness::MAX_EXCEEDED_BYTES)
    );
    for text in [large, oversize, rank, bytes] {
        assert!(guide.contains(&text), "docs/guide.md does not say: {text}");
    }
}

/// Section 8 of the guide, the CUDA provider.
fn guide_cuda_section() -> &'static str {
    include_str!("../../../docs/guide.md")
        .split_once("\n## 8. A CUDA provider")
        .expect("docs/guide.md has section 8, the CUDA provider")
        .1
}

#[test]
fn the_guide_quotes_the_cuda_example_files_in_full() {
    let section = guide_cuda_section();
    for (file, fence, text) in [
        (
            "examples/cuda-vendor/Cargo.toml",
            "toml",
            include_str!("../../../examples/cuda-vendor/Cargo.toml"),
        ),
        (
            "examples/cuda-vendor/tests/conformance.rs",
            "rust,ignore",
            include_str!("../../../examples/cuda-vendor/tests/conformance.rs"),
        ),
    ] {
        assert!(
            section.contains(&format!("```{fence}\n{text}```\n")),
            "docs/guide.md's CUDA section does not quote {file} as it is"
        );
    }
}

#[test]
fn the_guide_shows_the_cuda_example_commands_the_scripts_run() {
    // gpu-check.sh runs the same commands in a release build.
    let scripts = [
        include_str!("../../../.ci/run"),
        include_str!("../../../scripts/gpu-check.sh"),
    ]
    .map(|script| script.replace("cargo test --release ", "cargo test "));
    let mut shown = 0;
    for line in guide_cuda_section()
        .lines()
        .filter(|line| line.contains("cargo test -p example-cuda-vendor"))
    {
        let command = line.trim_start_matches("$ ");
        let command = command.split(" #").next().unwrap_or(command);
        let command = command.split(" -- ").next().unwrap_or(command).trim();
        assert!(
            scripts.iter().any(|script| script.contains(command)),
            "neither .ci/run nor scripts/gpu-check.sh runs the guide's `{command}`"
        );
        shown += 1;
    }
    assert!(
        shown >= 4,
        "the guide's CUDA section shows {shown} commands"
    );
}

/// The fenced blocks of `text` that open with ```` ```{fence} ````.
fn fenced<'a>(text: &'a str, fence: &str) -> Vec<&'a str> {
    text.split(&format!("```{fence}\n"))
        .skip(1)
        .filter_map(|block| block.split_once("```").map(|(body, _)| body))
        .collect()
}

#[test]
fn the_crate_readme_shows_the_root_readmes_provider_crate_snippet() {
    // crates.io shows conformance/README.md: its dev-dependency and test
    // file are the root README's "In your provider crate", word for word.
    let root = include_str!("../../../README.md")
        .split_once("\n## In your provider crate\n")
        .expect("README.md has the provider-crate section")
        .1;
    let root = root.split("\n## ").next().unwrap_or(root);
    let krate = include_str!("../../README.md");
    for fence in ["toml", "rust", "rust,ignore"] {
        let expected = fenced(root, fence)[0];
        assert!(
            fenced(krate, fence).contains(&expected),
            "conformance/README.md does not quote the root README's {fence} block:\n{expected}"
        );
    }
}

#[test]
fn level_points_to_the_changelog_that_names_its_policy() {
    let level = include_str!("../../src/level.rs");
    assert!(
        level.contains("`CHANGELOG.md`"),
        "Level's policy does not name CHANGELOG.md"
    );
    let changelog = include_str!("../../../CHANGELOG.md");
    for words in ["Stricter checks", "`Level`", "## 0.1.0"] {
        assert!(
            changelog.contains(words),
            "CHANGELOG.md does not say {words}"
        );
    }
}
