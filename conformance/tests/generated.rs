//! The generated suite: every reference provider passes the profile chosen
//! by TRANSFER_CONFORMANCE_PROFILE (default: `default`), and narrow-corner
//! broken providers are found and shrunk to minimal cases.

use std::process::Command;

use tenferro_mock_devices::providers::Fault;
use tenferro_transfer_conformance::generated::{
    GeneratedOptions, REPLAY_ENV, replay, run_generated,
};
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{Layout, Rule};
use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, builtin_provider};

#[test]
fn every_reference_provider_passes_the_generated_suite() {
    if let Ok(json) = std::env::var(REPLAY_ENV) {
        let recipe: Recipe = json.parse().expect("a recipe");
        for provider in &BUILTIN_PROVIDERS {
            let judgement = replay(provider, &[], &recipe).unwrap();
            assert!(
                judgement.passed(),
                "{}: {:?}",
                provider.name,
                judgement.violations
            );
        }
        return;
    }
    let options = GeneratedOptions {
        regressions: Some("proptest-regressions/generated.txt"),
        ..GeneratedOptions::new(Profile::from_env().unwrap())
    }
    .with_env_seed()
    .unwrap();
    for provider in &BUILTIN_PROVIDERS {
        let report = run_generated(provider, &options).unwrap();
        println!("{}", report.to_text());
        assert!(report.failure.is_none(), "{}", report.to_text());
        assert!(report.cases >= u64::from(options.profile.cases()));
    }
}

/// Run the default profile against sim-upload with `fault` injected and
/// return the shrunk recipe, after checking that it still fails.
fn shrunk(fault: Fault) -> Recipe {
    let provider = builtin_provider("sim-upload").unwrap();
    let options = GeneratedOptions {
        seed: Some(1),
        inject: vec![fault],
        ..GeneratedOptions::new(Profile::Default)
    };
    let report = run_generated(provider, &options).unwrap();
    let text = report.to_text();
    let failure = report
        .failure
        .unwrap_or_else(|| panic!("{fault:?} was not found: {text}"));
    assert!(
        failure
            .violations
            .iter()
            .all(|violation| violation.rule == "values"),
        "{}",
        text
    );
    let judgement = replay(provider, &[fault], &failure.minimal).unwrap();
    assert_eq!(
        judgement.rules(),
        vec![Rule::Values],
        "the minimal case no longer shows the fault"
    );
    assert!(
        replay(provider, &[], &failure.minimal).unwrap().passed(),
        "the case fails without the fault"
    );
    failure.minimal
}

#[test]
fn a_c64_odd_last_dimension_fault_is_found_and_shrunk() {
    let minimal = shrunk(Fault::CornerC64OddLastDim);
    assert_eq!(minimal.dtype, "C64");
    assert_eq!(minimal.shape, vec![1, 1], "{minimal:?}");
    assert_eq!(minimal.layout, Layout::Owned);
}

#[test]
fn a_last_element_of_an_offset_view_fault_is_found_and_shrunk() {
    let minimal = shrunk(Fault::CornerLastOfOffsetView);
    let Layout::View(spec) = &minimal.layout else {
        panic!("not a view: {minimal:?}")
    };
    assert_ne!(spec.offset(), 0);
    assert_eq!(minimal.shape.iter().product::<usize>(), 1, "{minimal:?}");
}

#[test]
fn a_fault_above_4096_elements_is_found_and_shrunk() {
    let minimal = shrunk(Fault::CornerAbove4096);
    let count: usize = minimal.shape.iter().product();
    assert!((4097..=4200).contains(&count), "{minimal:?}");
}

#[test]
fn a_failing_case_prints_a_replay_command_that_reproduces_it() {
    let provider = builtin_provider("sim-peer").unwrap();
    let options = GeneratedOptions {
        seed: Some(3),
        inject: vec![Fault::OneUlp],
        ..GeneratedOptions::new(Profile::Quick)
    };
    let failure = run_generated(provider, &options).unwrap().failure.unwrap();
    assert!(
        failure
            .replay_command
            .starts_with("cargo run --release -- replay --provider sim-peer --inject one-ulp '")
    );
    let json = failure.minimal.to_json();
    assert!(failure.replay_env.contains(&json));
    let output = Command::new(env!("CARGO_BIN_EXE_transfer-conformance"))
        .args([
            "replay",
            "--provider",
            "sim-peer",
            "--inject",
            "one-ulp",
            &json,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("sim-peer: FAIL") && stdout.contains("values:"),
        "{stdout}"
    );
}
