//! The generated suite: every reference provider passes the profile chosen
//! by TRANSFER_CONFORMANCE_PROFILE (default: `default`), and narrow-corner
//! broken providers are found and shrunk to minimal cases.
//!
//! With TRANSFER_CONFORMANCE_REPLAY set, the first test replays that recipe
//! instead, on TRANSFER_CONFORMANCE_PROVIDER (default: every built-in
//! provider) with the faults of TRANSFER_CONFORMANCE_INJECT: the command a
//! failing generated run prints as "replay under cargo test".

use std::process::Command;

use tenferro_mock_devices::providers::Fault;
use tenferro_transfer_conformance::generated::{
    GeneratedFailure, GeneratedOptions, INJECT_ENV, PROVIDER_ENV, REPLAY_ENV, replay, run_generated,
};
use tenferro_transfer_conformance::harness::strategy::{Profile, Recipe};
use tenferro_transfer_conformance::harness::{Layout, Rule};
use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, builtin_provider};

#[test]
fn every_reference_provider_passes_the_generated_suite() {
    if let Ok(json) = std::env::var(REPLAY_ENV) {
        let recipe: Recipe = json.parse().expect("a recipe");
        let providers = match std::env::var(PROVIDER_ENV) {
            Ok(name) => vec![
                *builtin_provider(&name)
                    .unwrap_or_else(|| panic!("{PROVIDER_ENV}={name}: no such built-in provider")),
            ],
            Err(_) => BUILTIN_PROVIDERS.to_vec(),
        };
        let faults: Vec<Fault> = std::env::var(INJECT_ENV)
            .unwrap_or_default()
            .split(',')
            .filter(|name| !name.trim().is_empty())
            .map(|name| {
                Fault::from_name(name.trim())
                    .unwrap_or_else(|| panic!("{INJECT_ENV}: no fault `{name}`"))
            })
            .collect();
        for provider in &providers {
            let judgement = match replay(provider, &faults, &recipe) {
                Ok(judgement) => judgement,
                Err(error) if error.is_skip() => {
                    eprintln!("SKIP {}: {error}", provider.name);
                    continue;
                }
                Err(error) => panic!("{}: cannot replay: {error}", provider.name),
            };
            assert!(
                judgement.passed(),
                "{}: {:?}",
                provider.name,
                judgement.violations()
            );
        }
        return;
    }
    let options = GeneratedOptions {
        regressions: Some("proptest-regressions/generated.txt".into()),
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

/// The generated run's failure of sim-peer with a one-ULP fault, seed 3.
fn sim_peer_one_ulp_failure() -> GeneratedFailure {
    let options = GeneratedOptions {
        seed: Some(3),
        inject: vec![Fault::OneUlp],
        ..GeneratedOptions::new(Profile::Quick)
    };
    run_generated(builtin_provider("sim-peer").unwrap(), &options)
        .unwrap()
        .failure
        .unwrap()
}

/// The words of a `replay under cargo test` line: the environment it sets
/// and the command after it. Values are single-quoted as the suite quotes
/// them (`'\''` for a quote inside).
fn parse_env_command(line: &str) -> (Vec<(String, String)>, String) {
    let mut env = Vec::new();
    let mut rest = line.trim();
    while let Some((name, tail)) = rest.split_once('=') {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            break;
        }
        let (value, tail) = if let Some(quoted) = tail.strip_prefix('\'') {
            let mut value = String::new();
            let mut tail = quoted;
            loop {
                let (part, after) = tail.split_once('\'').expect("a closing quote");
                value.push_str(part);
                match after.strip_prefix("\\''") {
                    Some(after) => {
                        value.push('\'');
                        tail = after;
                    }
                    None => break (value, after),
                }
            }
        } else {
            let end = tail.find(' ').unwrap_or(tail.len());
            (tail[..end].to_owned(), &tail[end..])
        };
        env.push((name.to_owned(), value));
        rest = tail.trim_start();
    }
    (env, rest.to_owned())
}

/// Run this test binary's replay test the way `cargo test --test generated`
/// does, with `env` set and nothing else of the suite's variables.
fn run_replay_test(env: &[(String, String)]) -> std::process::Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([
        "every_reference_provider_passes_the_generated_suite",
        "--exact",
        "--test-threads=1",
    ]);
    for name in [REPLAY_ENV, PROVIDER_ENV, INJECT_ENV] {
        command.env_remove(name);
    }
    command.envs(env.iter().map(|(name, value)| (name, value)));
    command.output().unwrap()
}

#[test]
fn the_cargo_test_replay_of_a_failure_under_a_fault_reproduces_it() {
    let failure = sim_peer_one_ulp_failure();
    let (env, command) = parse_env_command(&failure.replay_env);
    assert_eq!(
        command, "cargo test --test generated",
        "{}",
        failure.replay_env
    );
    let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [REPLAY_ENV, PROVIDER_ENV, INJECT_ENV],
        "{}",
        failure.replay_env
    );
    assert_eq!(env[0].1, failure.minimal.to_json());

    // The printed command fails, on the provider and rule that failed.
    let output = run_replay_test(&env);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "the replay passed:\n{text}");
    assert!(
        text.contains("sim-peer: [") && text.contains("rule: Values"),
        "{text}"
    );

    // Without the fault the same case passes: the fault is what the
    // printed command carries.
    let output = run_replay_test(&env[..2]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
