//! The fixed suite and the self-test, as `cargo test` runs them. (The
//! self-test's kill matrix is pinned in `snapshots.rs`, with the other
//! snapshots.)

use std::sync::Arc;

use tenferro_mock_devices::providers::{Broken, Fault};

use tenferro_tensor::DType;
use tenferro_transfer_conformance::harness::{Case, Layout, Oracle, Rig, Rule};
use tenferro_transfer_conformance::{
    BUILTIN_PROVIDERS, SuiteOptions, Verdict, builtin_provider, fixed_shapes, run_fixed_suite,
    selftest,
};

#[test]
fn reference_providers_pass_every_route_dtype_and_fixed_shape() {
    let report = run_fixed_suite(&BUILTIN_PROVIDERS, &SuiteOptions::default());
    assert!(!report.failed(), "{}", report.to_table());
    // Every fixed case, each dtype's twins and inputs moved together, and
    // each provider's held pass (its outputs held and read again, and the
    // devices' memory over it).
    assert_eq!(
        report.summary().passed,
        BUILTIN_PROVIDERS.len() * (7 * fixed_shapes(true).len() + 7 + 2)
    );
    assert_eq!(report.summary().skipped, 0);
    for name in ["strided-view", "large"] {
        let shape = fixed_shapes(true)
            .into_iter()
            .find(|shape| shape.name == name)
            .unwrap()
            .shape;
        assert_eq!(
            report
                .rows()
                .iter()
                .filter(|row| row.shape == shape)
                .count(),
            4 * 7,
            "{name}"
        );
    }
}

#[test]
fn an_injected_fault_fails_the_suite() {
    let options = SuiteOptions {
        inject: vec![Fault::Swapped],
        ..SuiteOptions::quick(&[DType::I64])
    };
    let report = run_fixed_suite(&[*builtin_provider("sim-download").unwrap()], &options);
    assert!(report.failed());
    let failed: Vec<_> = report
        .rows()
        .iter()
        .filter(|row| row.verdict == Verdict::Fail)
        .collect();
    assert!(failed.iter().all(|row| {
        row.violations
            .iter()
            .all(|violation| violation.rule == "values")
    }));
    assert!(
        failed
            .iter()
            .all(|row| row.provider == "sim-download[swapped]")
    );
}

#[test]
fn a_provider_with_two_faults_shows_both_rules() {
    let builtin = builtin_provider("sim-upload").unwrap();
    let route = builtin.route().unwrap();
    let broken = Broken::new(
        builtin.provider(&route).unwrap(),
        vec![Fault::WrongDtype, Fault::HostPlacement],
    );
    let mut rig = Rig::new(route.clone(), Arc::new(broken)).unwrap();
    let case = Case::patterned(DType::F32, vec![7, 3], Layout::Owned).unwrap();
    let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
    assert_eq!(
        judgement.rules(),
        vec![Rule::Dtype, Rule::Placement],
        "{judgement:?}"
    );
}

#[test]
fn every_rule_the_builtin_routes_can_break_has_a_broken_provider() {
    let covered: Vec<Rule> = selftest::catalogue()
        .iter()
        .flat_map(|spec| spec.expected.clone())
        .collect();
    let uncovered: Vec<Rule> = Rule::ALL
        .into_iter()
        .filter(|rule| !covered.contains(rule))
        .collect();
    // The two a provider cannot break alone: capability-honesty is broken
    // by a declaration (conformance/tests/integration/capabilities.rs), and
    // runtime-agreement by the runtime disagreeing with the oracle
    // (harness/src/judge/oracle/mod.rs's tests, conformance/tests/integration/rig.rs).
    assert_eq!(
        uncovered,
        [Rule::CapabilityHonesty, Rule::RuntimeAgreement],
        "rules no broken provider or device fault of the self-test breaks"
    );
}

#[test]
fn every_builtin_route_label_is_the_label_of_its_route() {
    for provider in tenferro_transfer_conformance::all_builtin_providers() {
        match provider.route() {
            Ok(route) => assert_eq!(provider.route_label, route.label(), "{}", provider.name),
            // A CUDA route that cannot be built here keeps its stated label.
            Err(error) => assert!(provider.name.starts_with("cuda-"), "{error}"),
        }
    }
}
