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
