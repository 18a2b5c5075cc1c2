//! insta snapshots, in the top-level `snapshots/` folder, of every runtime
//! contract error a real run produces, of the oracle's report for every
//! broken provider of the self-test, of the self-test's kill matrix, of
//! every rendering of a small report, and of the built-in providers'
//! coverage map.
//!
//! Every test that takes a snapshot lives here: the snapshots are outside
//! this crate (the examples and docs share them), so this file runs in the
//! repository and is left out of the published package (`exclude` in
//! Cargo.toml).

use std::fmt::Write as _;
use std::sync::Arc;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_tensor::DType;
use tenferro_transfer_conformance::harness::{Case, Layout, Oracle, Rig, RuntimeVerdict, Watchdog};
use tenferro_transfer_conformance::{BUILTIN_PROVIDERS, builtin_provider, fixed_shapes, selftest};

mod support;

use support::with_snapshot_settings;

/// The runtime's own rejection of a broken sim-upload output, from a real run.
fn contract_error(fault: Fault) -> String {
    let builtin = builtin_provider("sim-upload").unwrap();
    let route = builtin.route().unwrap();
    let broken = Broken::new(builtin.provider(&route).unwrap(), vec![fault]);
    let mut rig = Rig::new(route, Arc::new(broken)).unwrap();
    let case = Case::patterned(DType::F32, vec![7, 3], Layout::Owned).unwrap();
    match rig.run(&case).unwrap().runtime {
        RuntimeVerdict::ContractError {
            variant,
            message,
            debug,
        } => {
            format!("variant: {variant}\ndisplay: {message}\ndebug: {debug}\n")
        }
        other => panic!("{fault:?} did not produce a contract error: {other:?}"),
    }
}

#[test]
fn runtime_contract_errors_from_real_runs() {
    for (fault, variant) in [
        (Fault::WrongDtype, "DTypeMismatch"),
        (Fault::RankChanged, "ShapeMismatch"),
        (Fault::LyingLength, "InvalidBufferLength"),
        (Fault::HostPlacement, "DestinationPlacementMismatch"),
        (Fault::ForeignDomain, "DestinationResidencyMismatch"),
    ] {
        let text = contract_error(fault);
        assert!(text.starts_with(&format!("variant: {variant}\n")), "{text}");
        with_snapshot_settings!({
            insta::assert_snapshot!(format!("contract-error-{variant}"), text);
        });
    }
}

#[test]
fn oracle_reports_of_every_broken_provider() {
    for spec in selftest::catalogue() {
        // The first case, in a fixed order, on which the fault applies.
        let found = BUILTIN_PROVIDERS.iter().find_map(|builtin| {
            let route = builtin.route().unwrap();
            PRESET_DTYPES.iter().find_map(|&dtype| {
                fixed_shapes(false).into_iter().find_map(|shape| {
                    let case = Case::patterned(dtype, shape.shape, shape.layout).unwrap();
                    spec.applies(&case, &route)
                        .then(|| (*builtin, route.clone(), case))
                })
            })
        });
        let (builtin, route, case) =
            found.unwrap_or_else(|| panic!("{} applies nowhere", spec.name()));
        // As the self-test runs it: on its devices, in its sequence of
        // calls, judged as one.
        let route = selftest::on_devices(&route, spec.devices).unwrap();
        let broken = Broken::new(builtin.provider(&route).unwrap(), spec.faults.clone());
        let judgement = selftest::judge_exercised(
            &route,
            Arc::new(broken),
            &case,
            spec.exercised,
            spec.deadline,
        )
        .unwrap();
        let mut text = format!(
            "provider: {}\nroute: {}\ncase: {:?} {:?} {}\n",
            spec.name(),
            route.label(),
            case.dtype(),
            case.shape(),
            case.layout_label()
        );
        if spec.exercised == selftest::Exercised::ConcurrentTwins {
            // Which calls cross, and with whose values, is the threads'
            // timing: the rules are pinned, not the messages.
            for rule in judgement.rules() {
                let _ = writeln!(text, "violation {rule}: on a call of a concurrent round");
            }
        } else {
            for violation in judgement.violations() {
                let _ = writeln!(text, "violation {}: {}", violation.rule, violation.message);
            }
        }
        for unchecked in judgement.unchecked() {
            let _ = writeln!(text, "unchecked {}: {}", unchecked.rule, unchecked.reason);
        }
        assert_eq!(judgement.rules(), spec.expected, "{text}");
        with_snapshot_settings!({
            insta::assert_snapshot!(format!("oracle-{}", spec.name()), text);
        });
    }
}

#[test]
fn oracle_reports_of_every_device_fault_plan() {
    for spec in selftest::device_faults() {
        let found = BUILTIN_PROVIDERS.iter().find_map(|builtin| {
            let route = builtin.route().unwrap();
            PRESET_DTYPES.iter().find_map(|&dtype| {
                fixed_shapes(false).into_iter().find_map(|shape| {
                    let case = Case::patterned(dtype, shape.shape, shape.layout).unwrap();
                    spec.applies(&case, &route)
                        .then(|| (*builtin, route.clone(), case))
                })
            })
        });
        let (builtin, route, case) =
            found.unwrap_or_else(|| panic!("{} applies nowhere", spec.name));
        let mut rig = Watchdog::new(
            route.clone(),
            builtin.provider(&route).unwrap(),
            spec.deadline,
        )
        .unwrap();
        for endpoint in [route.source(), route.destination()] {
            if let Some(device) = endpoint.downcast::<tenferro_mock_devices::SimDevice>() {
                device.install_faults(spec.plan.clone());
            }
        }
        let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
        let mut text = format!(
            "device fault plan: {} ({})\nprovider: reference {}\nroute: {}\ncase: {:?} {:?} {}\n",
            spec.name,
            spec.plan,
            builtin.name,
            route.label(),
            case.dtype(),
            case.shape(),
            case.layout_label()
        );
        for violation in judgement.violations() {
            let _ = writeln!(text, "violation {}: {}", violation.rule, violation.message);
        }
        for expected in judgement.expected_errors() {
            let _ = writeln!(text, "expected error: {expected}");
        }
        assert_eq!(judgement.rules(), spec.expected, "{text}");
        assert_eq!(
            judgement.expected_errors().is_empty(),
            !spec.expects_error,
            "{text}"
        );
        with_snapshot_settings!({
            insta::assert_snapshot!(format!("device-fault-{}", spec.name), text);
        });
    }
}

#[test]
fn oracle_reports_of_capability_honesty() {
    use tenferro_transfer_conformance::harness::CapabilityGate;
    use tenferro_transfer_conformance::harness::strategy::{Capabilities, ViewKinds};

    let declared = Capabilities::all()
        .dtypes([DType::F64])
        .views(ViewKinds::NONE)
        .max_elements(64);
    let outside = declared.outside_cases().unwrap();
    let builtin = builtin_provider("sim-upload").unwrap();
    for (name, faults, gated, expected) in [
        (
            "serves-undeclared",
            vec![],
            false,
            vec!["capability-honesty"],
        ),
        (
            "wrong-data-outside",
            vec![Fault::OneUlp],
            false,
            vec!["capability-honesty"],
        ),
        (
            "panics-outside",
            vec![Fault::Panic],
            false,
            vec!["no-panic", "capability-honesty"],
        ),
        ("gated", vec![], true, vec![]),
    ] {
        let route = builtin.route().unwrap();
        let mut provider = builtin.provider(&route).unwrap();
        if !faults.is_empty() {
            provider = Arc::new(Broken::new(provider, faults));
        }
        if gated {
            provider = Arc::new(CapabilityGate::new(provider, declared.clone()));
        }
        let mut rig = Watchdog::new(route.clone(), provider, selftest::SELFTEST_DEADLINE).unwrap();
        let mut text = format!(
            "provider: {name} (declares F64, no views, at most 64 elements)\nroute: {}\n",
            route.label()
        );
        for case in &outside {
            let judgement = Oracle.judge_outside(case, &route, &rig.run(&case.case).unwrap());
            let rules: Vec<&str> = judgement.rules().iter().map(|rule| rule.id()).collect();
            assert_eq!(rules, expected, "{name} on {}: {judgement:?}", case.why);
            let _ = writeln!(
                text,
                "case: {:?} {:?} {} ({})",
                case.case.dtype(),
                case.case.shape(),
                case.case.layout_label(),
                case.why
            );
            for violation in judgement.violations() {
                let _ = writeln!(
                    text,
                    "  violation {}: {}",
                    violation.rule, violation.message
                );
            }
        }
        with_snapshot_settings!({
            insta::assert_snapshot!(format!("honesty-{name}"), text);
        });
    }
}

#[test]
fn the_self_test_kill_matrix_is_exact() {
    let report = selftest::run(&BUILTIN_PROVIDERS);
    assert!(report.passed(), "{}", report.to_table());
    assert_eq!(report.disagreements, 0);
    for spec in selftest::catalogue() {
        let row = report
            .providers
            .iter()
            .find(|row| row.name == spec.name())
            .unwrap();
        assert!(row.cases > 0, "{} never applied", row.name);
        assert_eq!(row.caught_rules, spec.expected, "{}", row.name);
    }
    let references: Vec<_> = report
        .providers
        .iter()
        .filter(|row| row.name.starts_with("reference:"))
        .collect();
    assert_eq!(references.len(), 4);
    assert!(
        references
            .iter()
            .all(|row| row.caught_rules.is_empty() && row.cases > 0)
    );
    // Every row, with its case counts, exactly as before simulated time:
    // a hang judged on the devices' own clock must give the same verdicts
    // as one waited out on the wall clock.
    let rows: String = report
        .to_table()
        .lines()
        .filter(|line| !line.starts_with("skipped"))
        .map(|line| format!("{line}\n"))
        .collect();
    with_snapshot_settings!({
        insta::assert_snapshot!("selftest-kill-matrix", rows);
    });
}

#[test]
fn markdown_rendering_of_the_small_report() {
    let markdown = support::small_report().to_markdown();
    with_snapshot_settings!({
        insta::assert_snapshot!("report-markdown", markdown);
    });
}

/// The built-in providers' coverage map (the main job's, without the CUDA
/// routes): which rules were checked on large cases and on each kind of
/// view, and the footer's lines to act on.
#[test]
fn the_coverage_map_of_the_builtin_providers() {
    let report = tenferro_transfer_conformance::run_fixed_suite(
        &BUILTIN_PROVIDERS,
        &tenferro_transfer_conformance::SuiteOptions::default(),
    );
    let table = report.to_table();
    let map = table
        .split_once("\ncoverage of ")
        .map(|(_, map)| format!("coverage of {map}"))
        .expect("the table has a coverage map");
    with_snapshot_settings!({
        insta::assert_snapshot!("builtin-coverage", map);
    });
}

#[test]
fn table_rendering_of_the_small_report() {
    let table = support::small_report().to_table();
    with_snapshot_settings!({
        insta::assert_snapshot!("report-table", table);
    });
}

#[test]
fn json_rendering_of_the_small_report() {
    let json = support::small_report().to_json().unwrap();
    with_snapshot_settings!({
        insta::assert_snapshot!("report-json", json);
    });
}

#[test]
fn junit_rendering_of_the_small_report() {
    let junit = support::small_report().to_junit().unwrap();
    with_snapshot_settings!({
        insta::assert_snapshot!("report-junit", junit);
    });
}
