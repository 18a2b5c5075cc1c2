//! The documentation keeps up with the code.

use tenferro_transfer_conformance::harness::Rule;

#[test]
fn the_contract_page_states_every_rule_as_the_catalogue_does() {
    let page = include_str!("../../docs/contract.md");
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
    let readme = include_str!("../../README.md");
    assert!(readme.contains("cargo run --release"));
    assert!(readme.contains("cargo test --workspace"));
}

#[test]
fn the_contract_page_quotes_each_example_violation_from_its_snapshot() {
    let page = include_str!("../../docs/contract.md");
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
    assert_eq!(quoted, 12, "one example per rule but runtime-agreement");
}
