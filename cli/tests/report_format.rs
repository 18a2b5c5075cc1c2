//! docs/report-format.md and the JSON the code writes agree: every field of
//! a real report is documented with its JSON type, and every documented
//! field occurs in a real report.

#[path = "../../conformance/tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;
use tenferro_transfer_conformance::mock_devices::SimRoutes;

use serde_json::Value;
use tenferro_tensor::DType;
use tenferro_transfer_conformance::generated::{
    GeneratedFailure, GeneratedOptions, GeneratedReport, run_generated,
};
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{Layout, ViewAxis, ViewSpec};
use tenferro_transfer_conformance::mock_devices::providers::Fault;
use tenferro_transfer_conformance::{ViolationRow, builtin_provider, selftest};

const PAGE: &str = include_str!("../../docs/report-format.md");

/// The field table under the `### {heading}` heading: path -> type words.
fn documented(heading: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = PAGE
        .find(&format!("\n### {heading}\n"))
        .unwrap_or_else(|| panic!("docs/report-format.md has no `### {heading}` section"));
    let section = &PAGE[start + 1..];
    let end = section[4..]
        .find("\n#")
        .map_or(section.len(), |end| end + 4);
    let mut fields = BTreeMap::new();
    for line in section[..end].lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let (path, rest) = rest
            .split_once("` | ")
            .expect("| `path` | type | meaning |");
        let (types, _) = rest.split_once(" | ").expect("| `path` | type | meaning |");
        let types = types
            .split(" or ")
            .map(|word| word.trim().to_owned())
            .collect();
        assert!(
            fields.insert(path.to_owned(), types).is_none(),
            "{heading}: `{path}` is documented twice"
        );
    }
    assert!(!fields.is_empty(), "{heading}: no field rows");
    fields
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every path in `value` with the JSON types seen there.
fn observed(value: &Value, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
    // An array of objects is documented through its items' fields.
    if !(path.is_empty() || path.ends_with("[]") && value.is_object()) {
        out.entry(path.to_owned())
            .or_default()
            .insert(json_type(value).to_owned());
    }
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                observed(item, &child, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                observed(item, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

fn check(heading: &str, samples: &[Value]) {
    let documented = documented(heading);
    let mut seen = BTreeMap::new();
    for sample in samples {
        observed(sample, "", &mut seen);
    }
    let missing: Vec<&String> = seen
        .keys()
        .filter(|path| !documented.contains_key(*path))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/report-format.md, {heading}: the code writes fields the page does not document: {missing:?}"
    );
    let stale: Vec<&String> = documented
        .keys()
        .filter(|path| !seen.contains_key(*path))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/report-format.md, {heading}: documented fields no real report has: {stale:?}"
    );
    for (path, types) in &seen {
        let allowed = &documented[path];
        for kind in types {
            // A documented number may hold integers too.
            let fits = allowed.contains(kind) || (kind == "integer" && allowed.contains("number"));
            assert!(
                fits,
                "docs/report-format.md, {heading}: `{path}` is documented as {allowed:?} but holds a {kind}"
            );
        }
    }
}

#[test]
fn the_suite_run_json_is_documented_field_by_field() {
    let mut records = support::small_records();
    // A device failure passed on as an expected error, as the self-test's
    // fault plans produce them.
    let expected = records[0]
        .clone()
        .with_expected_errors(vec!["sim0: injected device fault: copy refused".to_owned()]);
    records.push(expected);
    // Memory a provider kept and reused, as a caching allocator's blocks
    // show.
    let mut kept = records[0].clone();
    kept.kept_memory = vec![tenferro_transfer_conformance::harness::KeptMemory::new(
        "sim0",
        tenferro_transfer_conformance::harness::MemoryInUse::allocations(5)
            .with_bytes(160)
            .growth_since(
                &tenferro_transfer_conformance::harness::MemoryInUse::allocations(4)
                    .with_bytes(128),
            ),
    )];
    records.push(kept);
    let report = tenferro_transfer_conformance::Report::from_records(records);
    let sample = serde_json::to_value(&report).unwrap();
    // A ProviderSuite's report: its fixed and outside cases carry the
    // recipe that replays them alone.
    let suite = tenferro_transfer_conformance::ProviderSuite::new(
        "sim-upload",
        tenferro_transfer_conformance::Level::V1,
    )
    .route(
        "upload",
        tenferro_transfer_conformance::harness::Route::host_to_sim,
        |route| {
            let Some(device) = route
                .destination()
                .downcast::<tenferro_transfer_conformance::mock_devices::SimDevice>(
            ) else {
                return Err("a simulated destination".into());
            };
            Ok(
                std::sync::Arc::new(tenferro_transfer_conformance::mock_devices::SimUpload::new(
                    device.clone(),
                )) as _,
            )
        },
    )
    .capabilities(
        tenferro_transfer_conformance::harness::strategy::Capabilities::all()
            .dtypes([DType::F32])
            .max_elements(64),
    )
    .seed(5);
    let suite_sample = serde_json::to_value(suite.run()).unwrap();
    check("Suite run", &[sample, suite_sample]);
}

#[test]
fn the_self_test_json_is_documented_field_by_field() {
    let mut report = selftest::run(&[*builtin_provider("sim-peer").unwrap()]);
    assert!(report.passed(), "{}", report.to_table());
    // A self-test that catches a miss lists examples; a passing one has none.
    report.providers[0]
        .examples
        .push("F32 [7, 3] owned: expected values, caught nothing".to_owned());
    check("Self-test", &[serde_json::to_value(&report).unwrap()]);
}

#[test]
fn the_generated_run_json_is_documented_field_by_field() {
    let provider = builtin_provider("sim-upload").unwrap();
    let passing = run_generated(
        provider,
        &GeneratedOptions {
            seed: Some(1),
            ..GeneratedOptions::new(Profile::Quick)
        },
    )
    .unwrap();
    let failing = run_generated(
        provider,
        &GeneratedOptions {
            seed: Some(1),
            inject: vec![Fault::OneUlp],
            ..GeneratedOptions::new(Profile::Quick)
        },
    )
    .unwrap();
    assert!(passing.failure.is_none() && failing.failure.is_some());
    // A shrunk failure is usually owned; a view recipe has the layout's
    // other fields.
    let view = GeneratedReport {
        failure: Some(GeneratedFailure {
            minimal: Recipe {
                dtype: format!("{:?}", DType::F32),
                shape: vec![2],
                layout: Layout::View(ViewSpec {
                    backing_shape: vec![5],
                    axes: vec![ViewAxis {
                        first: 4,
                        step: -2,
                        len: 2,
                    }],
                    permutation: vec![0],
                }),
                seed: 3,
                specials: 16,
                values: Default::default(),
                twin: None,
                with: Vec::new(),
            },
            violations: vec![ViolationRow {
                rule: "values".to_owned(),
                message: "1 of 2 elements differ".to_owned(),
            }],
            replay_command: "cargo run --release -- replay ...".to_owned(),
            replay_env: "TRANSFER_CONFORMANCE_REPLAY=... cargo test".to_owned(),
            // A failure that did not reproduce says so.
            nondeterministic: Some(
                "nondeterministic: failed on case {...}, passed on replay".to_owned(),
            ),
            // One that failed again only on the provider that ran the
            // earlier cases says so (never beside the line above).
            depends_on_state: Some("depends on the provider's state: ...".to_owned()),
        }),
        elapsed: Duration::from_millis(250),
        ..passing.clone()
    };
    let sample = serde_json::to_value(vec![passing, failing, view]).unwrap();
    check("Generated run", &[sample]);
}

#[test]
fn the_rules_json_is_documented_field_by_field() {
    let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let sample: Value = serde_json::from_slice(&output.stdout).unwrap();
    check("Rules", &[sample]);
}

#[test]
fn exit_codes_are_the_same_in_the_page_the_readme_and_help() {
    let help = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let readme = include_str!("../../README.md");
    for code in ["0", "1", "2", "3"] {
        assert!(
            PAGE.contains(&format!("\n| {code} | ")),
            "report-format.md lacks exit code {code}"
        );
        assert!(
            help.contains(&format!("\n  {code}  ")),
            "--help lacks exit code {code}:\n{help}"
        );
        assert!(
            readme.contains(&format!("| {code} | ")),
            "README lacks exit code {code}"
        );
    }
}
