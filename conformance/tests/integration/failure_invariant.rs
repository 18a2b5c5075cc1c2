//! A failure is never lost: on every broken provider of the self-test, run
//! through `ProviderSuite` as a vendor runs it, every failed row names a
//! rule it broke, the summary counts exactly the failed rows, and the rule
//! tests fail exactly when the summary says something failed.

use std::sync::Arc;

use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{BoxError, Report, SETUP, Verdict, selftest};

fn sim_download(route: &Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let Some(device) = route.source().downcast::<SimDevice>() else {
        return Err("download serves a simulated source".into());
    };
    Ok(Arc::new(SimDownload::new(device.clone())))
}

fn sim_upload(route: &Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let Some(device) = route.destination().downcast::<SimDevice>() else {
        return Err("upload serves a simulated destination".into());
    };
    Ok(Arc::new(SimUpload::new(device.clone())))
}

/// The invariant, with the rules whose tests fail.
fn check_invariant(suite: &ProviderSuite, report: &Report, name: &str) -> Vec<Rule> {
    let failed_rows: Vec<_> = report
        .rows()
        .iter()
        .filter(|row| row.verdict == Verdict::Fail)
        .collect();
    assert_eq!(report.summary().failed, failed_rows.len(), "{name}");
    for row in report.rows() {
        assert_eq!(
            row.verdict == Verdict::Fail,
            !row.violations.is_empty(),
            "{name}: a row's verdict and violations disagree: {row:?}"
        );
    }
    let failing: Vec<Rule> = suite
        .level()
        .rules()
        .iter()
        .copied()
        .filter(|rule| suite.check(report, "upload", *rule).verdict_name() == "fail")
        .collect();
    assert_eq!(
        report.summary().failed > 0,
        !failing.is_empty(),
        "{name}: the summary and the rule tests disagree\n{}",
        report.to_table()
    );
    // Every rule a row names fails its test; a setup row fails them all.
    for row in failed_rows {
        for violation in &row.violations {
            if violation.rule == SETUP {
                assert_eq!(failing.len(), suite.level().rules().len(), "{name}");
            } else {
                assert!(
                    failing.iter().any(|rule| rule.id() == violation.rule),
                    "{name}: {} is named by a failed row but its test passes",
                    violation.rule
                );
            }
        }
    }
    failing
}

#[test]
fn no_broken_provider_of_the_self_test_fails_the_summary_without_failing_a_rule_test() {
    let catalogue = selftest::catalogue();
    assert!(catalogue.len() > 20);
    for spec in catalogue {
        let name = spec.name();
        let faults = spec.faults.clone();
        // A fault that writes into its input needs an input in simulated
        // memory: a download's.
        let suite = if faults.contains(&Fault::WritesInput) {
            ProviderSuite::new(name.clone(), Level::LATEST).route(
                "upload",
                Route::sim_to_host,
                move |route| Ok(Arc::new(Broken::new(sim_download(route)?, faults.clone())) as _),
            )
        } else {
            ProviderSuite::new(name.clone(), Level::LATEST).route(
                "upload",
                Route::host_to_sim,
                move |route| Ok(Arc::new(Broken::new(sim_upload(route)?, faults.clone())) as _),
            )
        };
        let suite = suite
            // Small cases: the invariant does not depend on size, and a
            // hanging provider costs one deadline a case.
            .capabilities(Capabilities::all().max_elements(4096))
            .deadline(spec.deadline)
            .seed(3);
        let report = suite.run();
        let failing = check_invariant(&suite, &report, &name);
        for rule in &spec.expected {
            assert!(
                failing.contains(rule),
                "{name}: {rule} did not fail; failing: {failing:?}\n{}",
                report.to_table()
            );
        }
    }
}

#[test]
fn a_reference_provider_keeps_the_invariant_with_nothing_failed() {
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .seed(3);
    let report = suite.run();
    assert!(check_invariant(&suite, &report, "sim-upload").is_empty());
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
}
