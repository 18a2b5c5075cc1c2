//! The pages that quote the adapter API (its methods, the vendor example's
//! adapter and suites), the settings table and the manifests keep up with
//! the code.

/// The `[profile...]` sections of a TOML file, without comments or blank
/// lines.
fn profile_sections(toml: &str) -> Vec<&str> {
    let mut in_profile = false;
    let mut lines = Vec::new();
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_profile = line.starts_with("[profile.");
        }
        if in_profile && !line.is_empty() && !line.starts_with('#') {
            lines.push(line);
        }
    }
    lines
}

#[test]
fn the_package_check_builds_with_the_workspace_profiles() {
    // `cargo package` verifies each crate outside the workspace, where the
    // root manifest's profiles do not apply; .ci/run passes them again
    // with `--config .ci/package.toml`.
    let workspace = profile_sections(include_str!("../../../Cargo.toml"));
    assert!(!workspace.is_empty(), "Cargo.toml has no [profile] section");
    assert_eq!(
        profile_sections(include_str!("../../../.ci/package.toml")),
        workspace,
        ".ci/package.toml's profiles differ from Cargo.toml's"
    );
    assert!(
        include_str!("../../../.ci/run")
            .contains("cargo package --workspace --exclude 'example-*' --config .ci/package.toml"),
        ".ci/run does not package with .ci/package.toml"
    );
}

/// docs/settings.md lists every setting the suite reads, as the code's one
/// table (`settings::SETTINGS`) says it: those a provider crate sets, then
/// this repository's own, each with who reads it.
#[test]
fn the_settings_page_is_the_settings_table() {
    use tenferro_transfer_conformance::harness::settings::SETTINGS;
    let page = include_str!("../../../docs/settings.md");
    for (section, vendor_facing) in [
        ("## For a provider crate's tests", true),
        ("## This repository's own", false),
    ] {
        let mut table = String::from(
            "| variable | takes | default | effect | read by |\n|---|---|---|---|---|\n",
        );
        for setting in SETTINGS
            .iter()
            .filter(|setting| setting.vendor_facing == vendor_facing)
        {
            table.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                setting.name, setting.values, setting.default, setting.effect, setting.read_by
            ));
        }
        let under = page
            .split(section)
            .nth(1)
            .unwrap_or_else(|| panic!("docs/settings.md has no section {section}"));
        assert!(
            under.contains(&table),
            "docs/settings.md does not hold the table under {section}; it should read:\n{table}"
        );
    }
}

#[test]
fn install_lines_match_whether_the_crate_is_published() {
    // While CHANGELOG.md says 0.1.0 is not published, no document tells a
    // reader to depend on it from crates.io or to `cargo install` it by
    // name: those lines would fail for everyone who pastes them.
    let changelog = include_str!("../../../CHANGELOG.md");
    if !changelog.contains("## 0.1.0 (not yet published)") {
        return;
    }
    let documents = [
        ("README.md", include_str!("../../../README.md")),
        ("conformance/README.md", include_str!("../../README.md")),
        ("cli/README.md", include_str!("../../../cli/README.md")),
        ("docs/guide.md", include_str!("../../../docs/guide.md")),
    ];
    for (name, text) in documents {
        for line in text.lines() {
            let line = line.trim();
            assert!(
                !line.starts_with("tenferro-transfer-conformance = \"0.1\""),
                "{name} depends on the unpublished crate from crates.io: {line}"
            );
            assert!(
                !line.starts_with("cargo install tenferro-transfer-conformance"),
                "{name} installs the unpublished CLI by name: {line}"
            );
        }
    }
}

/// The methods of `DeviceEndpoint`, read from its source.
fn adapter_trait_methods() -> Vec<String> {
    let source = include_str!("../../../harness/src/device/endpoint.rs");
    let body = source
        .split_once("pub trait DeviceEndpoint")
        .expect("endpoint.rs declares DeviceEndpoint")
        .1;
    // The trait ends at the first closing brace at the start of a line.
    let body = body.split("\n}\n").next().unwrap_or(body);
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("fn "))
        .map(|rest| {
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or(rest)
                .to_owned()
        })
        .collect()
}

#[test]
fn the_architecture_page_lists_every_adapter_method_and_no_other() {
    let methods = adapter_trait_methods();
    assert!(methods.len() >= 10, "read {methods:?} from endpoint.rs");
    let page = include_str!("../../../docs/architecture.md");
    let listed: Vec<String> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .map(|rest| {
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or(rest)
                .to_owned()
        })
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    for method in &methods {
        assert!(
            listed.contains(method),
            "docs/architecture.md's adapter table does not list `{method}`"
        );
    }
    // Rows of the table that name a method the trait no longer has.
    let table = page
        .split_once("| `describe`")
        .expect("docs/architecture.md has the adapter method table")
        .1;
    let table = table.split("\n\n").next().unwrap_or(table);
    for row in table.lines().filter_map(|line| line.strip_prefix("| `")) {
        let name: String = row
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        assert!(
            methods.contains(&name),
            "docs/architecture.md's adapter table lists `{name}`, which DeviceEndpoint does not have"
        );
    }
}

#[test]
fn the_fuzzing_page_quotes_the_vendor_fuzz_target_whole() {
    let page = include_str!("../../../docs/fuzzing.md");
    let target =
        include_str!("../../../examples/vendor-device/fuzz/fuzz_targets/transfer_contract.rs");
    let quoted = page
        .split_once("equal to the file):\n\n```rust,ignore\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body)
        .expect("docs/fuzzing.md quotes the vendor's fuzz target");
    assert_eq!(
        quoted, target,
        "docs/fuzzing.md's quote of examples/vendor-device/fuzz/fuzz_targets/transfer_contract.rs is not the whole file as it is"
    );
}

#[test]
fn the_guide_lists_the_tests_the_macro_makes_for_the_quoted_suite() {
    let guide = include_str!("../../../docs/guide.md");
    let listing = guide
        .split_once("$ cargo test --test conformance -- --list\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body)
        .expect("docs/guide.md shows the macro's --list");
    let shown: Vec<&str> = listing.lines().collect();
    // The suite the guide quotes pins level V2 on one route, `upload`; the
    // example's file has one test of its own, listed first by name.
    let mut expected = vec![
        "every_rule_of_the_level_is_checked_and_passes: test".to_owned(),
        "transfer_conformance_level: test".to_owned(),
        "transfer_conformance_routes: test".to_owned(),
    ];
    let mut rules: Vec<String> = tenferro_transfer_conformance::Level::V2
        .rules()
        .iter()
        .map(|rule| format!("upload::{}: test", rule.test_name()))
        .collect();
    rules.sort();
    expected.extend(rules);
    let count = format!("{} tests, 0 benchmarks", expected.len());
    expected.push(String::new());
    expected.push(count);
    assert_eq!(
        shown, expected,
        "docs/guide.md's --list is not what the example's file lists"
    );
    let file = include_str!("../../../examples/stream-upload/tests/conformance.rs");
    assert!(
        file.contains("fn every_rule_of_the_level_is_checked_and_passes()"),
        "examples/stream-upload's own test changed its name; the guide's --list shows it"
    );
    assert!(
        guide.contains("conformance_tests!(level = V2, suite = suite, routes = [upload]);"),
        "the guide's --list belongs to a V2 suite on route upload"
    );
}

#[test]
fn the_guide_quotes_the_stream_upload_suite_as_it_is() {
    let guide = include_str!("../../../docs/guide.md");
    let file = include_str!("../../../examples/stream-upload/tests/conformance.rs");
    let start = file
        .find("use std::sync::Arc;")
        .expect("the example's imports");
    let end = file
        .find("routes = [upload]);\n")
        .map(|at| at + "routes = [upload]);\n".len())
        .expect("the example's macro call");
    assert!(
        guide.contains(&file[start..end]),
        "docs/guide.md section 2 does not quote examples/stream-upload/tests/conformance.rs as it is:\n{}",
        &file[start..end]
    );
}

#[test]
fn the_guide_quotes_the_vendor_adapter_whole() {
    let guide = include_str!("../../../docs/guide.md");
    let adapter = include_str!("../../../examples/vendor-device/tests/support/mod.rs");
    assert!(
        guide.contains(&format!("```rust,ignore\n{adapter}```")),
        "docs/guide.md section 0 does not quote examples/vendor-device/tests/support/mod.rs whole, as it is"
    );
}

#[test]
fn the_vendor_adapter_and_its_suite_fit_in_a_page() {
    let adapter = include_str!("../../../examples/vendor-device/tests/support/mod.rs");
    let lines = adapter.lines().count();
    assert!(
        lines <= 110,
        "examples/vendor-device/tests/support/mod.rs (the adapter, both routes and the suite) has {lines} lines; the guide promises a page of at most 110"
    );
    let imports: Vec<&str> = adapter
        .lines()
        .filter(|line| line.starts_with("use tenferro_transfer"))
        .collect();
    assert_eq!(imports, ["use tenferro_transfer_conformance::adapter::*;"]);
}
