//! The downstream API: what a provider crate declares, what `run` reports,
//! and what each rule's test would say.

use std::sync::Arc;

use tenferro_transfer_conformance::harness::INSIDE_CAPABILITIES;
use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{Verdict, harness::HarnessError};

use crate::support::blocks::counting_route;

fn sim_upload(route: &Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let Some(device) = route.destination().downcast::<SimDevice>() else {
        return Err("upload serves a simulated destination".into());
    };
    Ok(Arc::new(SimUpload::new(device.clone())))
}

use tenferro_transfer_conformance::BoxError;

fn broken_upload(
    faults: Vec<Fault>,
) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| Ok(Arc::new(Broken::new(sim_upload(route)?, faults.clone())) as _)
}

fn narrow() -> Capabilities {
    Capabilities::all()
        .dtypes([DType::F32, DType::I64])
        .views(ViewKinds::NONE)
        .max_elements(32)
}

fn verdicts(suite: &ProviderSuite, report: &Report, route: &str) -> Vec<(Rule, &'static str)> {
    Level::V1
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(report, route, *rule).verdict_name()))
        .collect()
}

#[test]
fn a_reference_provider_passes_every_checkable_rule_and_skips_the_rest() {
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .seed(3);
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    for (rule, verdict) in verdicts(&suite, &report, "upload") {
        let expected = if rule == Rule::CapabilityHonesty {
            "skip"
        } else {
            "pass"
        };
        assert_eq!(
            verdict,
            expected,
            "{rule}: {:?}",
            suite.check(&report, "upload", rule)
        );
    }
    let RuleVerdict::Skip(reason) = suite.check(&report, "upload", Rule::CapabilityHonesty) else {
        unreachable!()
    };
    assert!(reason.contains("cover every case"), "{reason}");
}

#[test]
fn every_pass_of_a_route_gives_one_reason_for_an_unchecked_capability_honesty() {
    let suite = ProviderSuite::new("sim-upload", Level::V2)
        .route("upload", Route::host_to_sim, sim_upload)
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    let RuleVerdict::Skip(reason) = suite.check(&report, "upload", Rule::CapabilityHonesty) else {
        panic!("{}", report.to_table());
    };
    assert!(reason.contains("cover every case"), "{reason}");
    assert!(!reason.contains(INSIDE_CAPABILITIES), "{reason}");
    // No row, of any pass, keeps the oracle's reason for a case inside.
    for record in report.records() {
        let why = record.outcome.why_unchecked(Rule::CapabilityHonesty);
        assert_ne!(why, Some(INSIDE_CAPABILITIES), "{}", record.head.layout);
    }
}

#[test]
fn declared_capabilities_bound_the_fixed_and_generated_cases() {
    let suite = ProviderSuite::new("gated", Level::V1)
        .route("upload", Route::host_to_sim, |route| {
            Ok(Arc::new(CapabilityGate::new(sim_upload(route)?, narrow())) as _)
        })
        .capabilities(narrow())
        .seed(5);
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    let outside: Vec<_> = report
        .rows()
        .iter()
        .filter(|row| row.layout.contains("[outside: "))
        .collect();
    // Five undeclared dtypes, one view, one oversized case.
    assert_eq!(outside.len(), 7, "{}", report.to_table());
    for row in report.rows() {
        if row.layout.contains("[outside: ") || row.dtype == "*" {
            continue;
        }
        assert!(
            ["F32", "I64"].contains(&row.dtype.as_str()),
            "{}",
            row.dtype
        );
        // A dtype's twins and inputs moved together: its cases again.
        if row.layout.starts_with("state: ") {
            continue;
        }
        assert!(row.layout == "owned", "{}", row.layout);
        assert!(row.shape.iter().product::<usize>() <= 32, "{:?}", row.shape);
    }
    assert!(
        suite
            .check(&report, "upload", Rule::CapabilityHonesty)
            .is_pass()
    );
}

#[test]
fn a_provider_that_serves_more_than_it_declares_breaks_capability_honesty_only() {
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .capabilities(narrow())
        .seed(5);
    let report = suite.run();
    let failing: Vec<Rule> = verdicts(&suite, &report, "upload")
        .into_iter()
        .filter(|(_, verdict)| *verdict == "fail")
        .map(|(rule, _)| rule)
        .collect();
    assert_eq!(failing, vec![Rule::CapabilityHonesty]);
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::CapabilityHonesty) else {
        unreachable!()
    };
    assert!(text.contains("7 case(s) broke it"), "{text}");
    assert!(text.contains("dtype F64 is not declared"), "{text}");
    assert!(text.contains("declare the capability, or refuse"), "{text}");
}

#[test]
fn wrong_data_outside_the_capabilities_is_named_in_the_honesty_violation() {
    let suite = ProviderSuite::new("one-ulp", Level::V1)
        .route(
            "upload",
            Route::host_to_sim,
            broken_upload(vec![Fault::OneUlp]),
        )
        .capabilities(
            Capabilities::all()
                .dtypes([DType::F32])
                .max_elements(1 << 20),
        )
        .seed(2);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::CapabilityHonesty) else {
        panic!("{}", report.to_table())
    };
    assert!(text.contains("returned Ok with wrong data"), "{text}");
    assert!(text.contains("values:"), "{text}");
    assert_eq!(
        suite.check(&report, "upload", Rule::Values).verdict_name(),
        "fail"
    );
}

/// A state row is no one case: its failures name the row, and its one
/// replay (the first failing pair, moved in one run) is printed once, with
/// what it cannot promise.
#[test]
fn a_state_rows_failures_name_the_row_and_print_its_one_replay_once() {
    let suite = ProviderSuite::new("broken", Level::V1)
        .route(
            "upload",
            Route::host_to_sim,
            broken_upload(vec![Fault::SampledContentCache]),
        )
        .seed(11);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("{}", report.to_table())
    };
    let state: Vec<&str> = text
        .split("\ncase: ")
        .filter(|block| block.contains(" state: "))
        .collect();
    assert!(state.len() >= 2, "{text}");
    assert!(
        state.iter().all(|block| !block.contains("[] state:")),
        "{text}"
    );
    // Each row (its head, the block's first line) prints its replay in
    // full once, first, then "as above".
    let mut rows: Vec<&str> = Vec::new();
    for block in &state {
        let row = block.lines().next().unwrap_or_default();
        let full = block.contains("replay: TRANSFER_CONFORMANCE_REPLAY=");
        let again = block.contains("replay: as above");
        assert_eq!(full, !rows.contains(&row), "{text}");
        assert_eq!(again, rows.contains(&row), "{text}");
        rows.push(row);
    }
    assert!(
        rows.len() > rows.iter().collect::<std::collections::BTreeSet<_>>().len(),
        "{text}"
    );
    assert!(
        text.contains("moved in one run; the row moved them one run each"),
        "{text}"
    );
}

#[rstest::rstest]
#[case::early_return(Fault::EarlyReturn, Rule::Completion)]
#[case::negative_zero(Fault::NegativeZeroLost, Rule::Values)]
#[case::leaky(Fault::Leaky, Rule::NoLeak)]
#[case::panic(Fault::Panic, Rule::NoPanic)]
#[case::wrong_dtype(Fault::WrongDtype, Rule::Dtype)]
fn each_rule_test_fails_for_the_fault_it_exists_to_catch(#[case] fault: Fault, #[case] rule: Rule) {
    let suite = ProviderSuite::new("broken", Level::V1)
        .route("upload", Route::host_to_sim, broken_upload(vec![fault]))
        .seed(11);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", rule) else {
        panic!("{rule} did not fail for {fault:?}:\n{}", report.to_table())
    };
    assert!(
        text.starts_with(&format!("rule {rule} failed on route upload")),
        "{text}"
    );
    assert!(text.contains("case: "), "{text}");
    assert!(text.contains("replay: "), "{text}");
}

#[test]
fn a_generated_failure_comes_first_with_its_replay_command_and_replays_exactly() {
    let suite = ProviderSuite::new("broken", Level::V1)
        .route(
            "upload",
            Route::host_to_sim,
            broken_upload(vec![Fault::OneUlp]),
        )
        .seed(1);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", Rule::Values) else {
        panic!("{}", report.to_table())
    };
    let first_case = text
        .lines()
        .find(|line| line.starts_with("case: "))
        .unwrap();
    assert!(first_case.contains("generated: "), "{text}");
    let replay = text
        .lines()
        .find(|line| line.contains("TRANSFER_CONFORMANCE_REPLAY='"))
        .unwrap();
    let json = replay.split('\'').nth(1).unwrap();
    let replayed = suite.replay(json);
    assert_eq!(replayed.rows().len(), 1, "{}", replayed.to_table());
    assert_eq!(replayed.rows()[0].verdict, Verdict::Fail);
    assert_eq!(replayed.rows()[0].violations[0].rule, "values");
}

#[test]
fn setup_failures_fail_every_rule_of_their_route_and_never_panic() {
    let suite = ProviderSuite::new("unbuildable", Level::V1)
        .route(
            "no_route",
            || {
                Err(HarnessError::InvalidRoute {
                    reason: "no such device".into(),
                })
            },
            sim_upload,
        )
        .route("no_provider", Route::host_to_sim, |_| {
            Err("the driver is missing".into())
        })
        .route("panicking", Route::host_to_sim, |_| {
            panic!("the factory panicked")
        })
        .route("Bad-Name", Route::host_to_sim, sim_upload);
    let report = suite.run();
    assert_eq!(report.summary().failed, 4, "{}", report.to_table());
    for (route, needle) in [
        ("no_route", "no such device"),
        ("no_provider", "the driver is missing"),
        ("panicking", "the factory panicked"),
        ("Bad-Name", "not a Rust identifier"),
    ] {
        for rule in Level::V1.rules() {
            let RuleVerdict::Fail(text) = suite.check(&report, route, *rule) else {
                panic!("{route}/{rule} did not fail:\n{}", report.to_table())
            };
            assert!(text.contains(needle), "{text}");
        }
    }
}

#[test]
fn a_suite_without_routes_or_an_unknown_route_fails_instead_of_passing() {
    let empty = ProviderSuite::new("empty", Level::V1);
    let report = empty.run();
    assert_eq!(report.summary().failed, 1);
    let suite = ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .seed(1);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "download", Rule::Values) else {
        unreachable!()
    };
    assert!(text.contains("declared routes: upload"), "{text}");
}

#[test]
fn completion_is_a_skip_on_a_host_destination_never_a_pass() {
    let suite = ProviderSuite::new("sim-download", Level::V1)
        .route("download", Route::sim_to_host, |route| {
            let Some(device) = route.source().downcast::<SimDevice>() else {
                return Err("download serves a simulated source".into());
            };
            Ok(Arc::new(SimDownload::new(device.clone())) as _)
        })
        .seed(1);
    let report = suite.run();
    let RuleVerdict::Skip(reason) = suite.check(&report, "download", Rule::Completion) else {
        panic!("{}", report.to_table())
    };
    assert!(reason.contains("plain host memory"), "{reason}");
    assert!(suite.check(&report, "download", Rule::Values).is_pass());
}

#[test]
fn a_skip_gives_the_cases_reasons_not_the_phase_rows() {
    // Level V2 holds outputs over a pass and judges the memory over each
    // phase in rows of their own; they judge no case, so they are not
    // where `completion` went unchecked.
    let suite = ProviderSuite::new("sim-download", Level::V2)
        .route("download", Route::sim_to_host, |route| {
            let Some(device) = route.source().downcast::<SimDevice>() else {
                return Err("download serves a simulated source".into());
            };
            Ok(Arc::new(SimDownload::new(device.clone())) as _)
        })
        .profile(Profile::Quick)
        .seed(1);
    let report = suite.run();
    assert!(
        report
            .records()
            .iter()
            .any(|record| record.outcome.is_judged() && record.coverage.is_empty()),
        "the run has phase rows"
    );
    let RuleVerdict::Skip(reason) = suite.check(&report, "download", Rule::Completion) else {
        panic!("{}", report.to_table())
    };
    assert!(reason.contains("plain host memory"), "{reason}");
    assert!(!reason.contains("over the phase"), "{reason}");
    assert!(!reason.contains("held over the pass"), "{reason}");
}

#[test]
fn level_v1_is_frozen() {
    let ids: Vec<&str> = Level::V1.rules().iter().map(|rule| rule.id()).collect();
    assert_eq!(
        ids,
        [
            "dtype",
            "shape",
            "buffer-length",
            "placement",
            "residency",
            "completion",
            "values",
            "no-error",
            "no-panic",
            "deadline",
            "no-leak",
            "capability-honesty",
            "runtime-agreement"
        ],
        "Level::V1 changed: a new rule belongs in a new level"
    );
    // The next level keeps every rule of V1 and adds its own.
    assert!(
        Level::V1
            .rules()
            .iter()
            .all(|rule| Level::V2.includes(*rule))
    );
    assert!(Level::V2.includes(Rule::InputIntact) && !Level::V1.includes(Rule::InputIntact));
    assert!("v3".parse::<Level>().is_err());
}

// The macro, expanded here exactly as in a provider crate: 13 rule tests
// for route `upload` and the level test must compile and pass.
fn macro_suite() -> ProviderSuite {
    ProviderSuite::new("sim-upload", Level::V1)
        .route("upload", Route::host_to_sim, sim_upload)
        .seed(9)
}

tenferro_transfer_conformance::conformance_tests!(
    level = V1,
    suite = macro_suite,
    routes = [upload]
);

/// The suite of `wrap` around the reference upload, at level V2, on a
/// counting device whose kernels alias or copy.
fn stateful_suite(
    name: &str,
    copying: bool,
    wrap: fn(Arc<dyn TransferProvider>) -> Arc<dyn TransferProvider>,
) -> ProviderSuite {
    let route: fn() -> Result<Route, HarnessError> = if copying {
        || counting_route(true)
    } else {
        || counting_route(false)
    };
    ProviderSuite::new(name, Level::V2)
        .route("upload", route, move |route| Ok(wrap(sim_upload(route)?)))
        .seed(7)
}

/// The rules of V2 that fail on `upload`.
fn failing(suite: &ProviderSuite, report: &Report) -> Vec<Rule> {
    Level::V2
        .rules()
        .iter()
        .copied()
        .filter(|rule| suite.check(report, "upload", *rule).verdict_name() == "fail")
        .collect()
}

/// Correct providers that keep state between calls pass every rule at
/// level V2, every rule checked but `capability-honesty`, on a device that
/// only counts its memory, whose kernels alias or copy: a caching
/// allocator and a recycling pool, whose kept blocks are reported as kept
/// memory (not a leak), and a cache keyed by the whole content.
#[rstest::rstest]
fn correct_stateful_providers_pass_every_rule(
    #[values(false, true)] copying: bool,
    #[values("caching-allocator", "recycling-pool", "full-content-cache")] name: &str,
) {
    use tenferro_transfer_conformance::mock_devices::providers::{CachingAllocator, ContentCache};
    let wrap: fn(Arc<dyn TransferProvider>) -> Arc<dyn TransferProvider> = match name {
        "caching-allocator" => |inner| Arc::new(CachingAllocator::new(inner, 4)),
        "recycling-pool" => |inner| Arc::new(CachingAllocator::new(inner, 1)),
        _ => |inner| Arc::new(ContentCache::new(inner)),
    };
    let suite = stateful_suite(name, copying, wrap);
    let report = suite.run();
    assert_eq!(failing(&suite, &report), vec![], "{}", report.to_table());
    for rule in Level::V2.rules() {
        let verdict = suite.check(&report, "upload", *rule);
        let expected = if *rule == Rule::CapabilityHonesty {
            "skip"
        } else {
            "pass"
        };
        assert_eq!(verdict.verdict_name(), expected, "{rule}: {verdict:?}");
    }
    let keeps_blocks = name != "full-content-cache";
    assert_eq!(
        !report.kept_memory().is_empty(),
        keeps_blocks,
        "{:?}",
        report.kept_memory()
    );
    if keeps_blocks {
        let json = report.to_json().unwrap();
        assert!(json.contains("\"kept_memory\""), "{json}");
    }
}

/// Broken providers that keep state between calls fail exactly their
/// rule through the suite at level V2: a pool that hands out an
/// allocation the runtime still holds (`output-stable`, on a device whose
/// kernels copy, where only runs of several inputs hold the provider's
/// output), a staging slot shared by concurrent calls (`values`, seen in
/// the concurrent rounds whose threads send one shape at once) and a cache
/// that compares a few sampled elements (`values`, seen on twins).
#[rstest::rstest]
#[case::live_output_pool(
    Fault::ReusesLiveOutput,
    Rule::OutputStable,
    "which the runtime holds until the program ends"
)]
#[case::shared_staging_slot(Fault::SharedStagingSlot, Rule::Values, "that thread")]
#[case::sampled_content_cache(
    Fault::SampledContentCache,
    Rule::Values,
    "the output holds the values of"
)]
fn broken_stateful_providers_fail_exactly_their_rule(
    #[case] fault: Fault,
    #[case] rule: Rule,
    #[case] said: &str,
) {
    let suite = ProviderSuite::new(fault.name(), Level::V2)
        .route(
            "upload",
            || counting_route(true),
            broken_upload(vec![fault]),
        )
        .seed(7);
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report),
        vec![rule],
        "{}",
        report.to_table()
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "upload", rule) else {
        unreachable!("{rule} failed above");
    };
    assert!(text.contains(said), "{text}");
}

/// An upload that deadlocks on inputs above 20 elements (the fixed case
/// `[7, 3]` is the first) after it allocated their destination: it never
/// returns, and never frees.
#[derive(Debug)]
struct DeadlocksAbove20 {
    inner: Arc<dyn TransferProvider>,
    device: SimDevice,
}

impl TransferProvider for DeadlocksAbove20 {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if request.input().shape().iter().product::<usize>() > 20 {
            let _destination = self.device.tensor(vec![2], vec![0_i64, 0])?;
            // A lock never released: a real deadlock, no simulated hang.
            let (_never, wait) = std::sync::mpsc::channel::<()>();
            let _ = wait.recv();
        }
        self.inner.transfer_blocking(request)
    }
}

/// A provider that hangs fails `deadline`; the memory its hung calls hold
/// is not a leak: on a device that only counts, `no-leak` holds on the
/// cases and is not checked over the phases after the hang (the held pass
/// and the concurrent calls), naming the hung calls.
#[test]
fn memory_held_by_hung_calls_is_not_judged_a_leak() {
    let suite = ProviderSuite::new("deadlocks", Level::V2)
        .route(
            "upload",
            || counting_route(false),
            |route| {
                let Some(device) = route.destination().downcast::<SimDevice>() else {
                    return Err("upload serves a simulated destination".into());
                };
                Ok(Arc::new(DeadlocksAbove20 {
                    inner: sim_upload(route)?,
                    device: device.clone(),
                }) as Arc<dyn TransferProvider>)
            },
        )
        .capabilities(Capabilities::all().dtypes([DType::F64]).max_elements(256))
        .deadline(std::time::Duration::from_millis(300))
        .seed(7);
    let report = suite.run();
    assert_eq!(
        failing(&suite, &report),
        vec![Rule::Deadline],
        "{}",
        report.to_table()
    );
    let phases: Vec<_> = report
        .rows()
        .iter()
        .filter(|row| row.layout.contains("memory over"))
        .collect();
    assert!(!phases.is_empty(), "{}", report.to_table());
    for row in phases {
        let reason = row
            .unchecked
            .iter()
            .find(|item| item.rule == Rule::NoLeak)
            .map(|item| item.reason.as_str())
            .unwrap_or_default();
        assert!(reason.contains("never returned"), "{row:?}");
    }
}
