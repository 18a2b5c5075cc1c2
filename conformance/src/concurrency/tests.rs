//! What a failing concurrent call's account says of the same call in the
//! other repeats.

use super::*;

fn call(repeat: usize, outcome: CaseOutcome) -> Call {
    Call {
        repeat,
        thread: 0,
        index: 3,
        recipe: r#"{"dtype":"F32","shape":[1],"layout":{"kind":"owned"},"seed":0,"specials":0}"#
            .parse()
            .unwrap(),
        span: (0, 1),
        outcome,
        accounting_seen: PhaseEvidence::default(),
        coverage: Coverage::default(),
    }
}

fn pressure(later: CaseOutcome) -> Pressure {
    Pressure {
        options: ConcurrencyOptions {
            threads: 1,
            cases_per_thread: 4,
            repeats: 2,
            ..ConcurrencyOptions::default()
        },
        planned: 2,
        calls: vec![
            call(
                0,
                CaseOutcome::NotSetUp {
                    message: "hung".to_owned(),
                },
            ),
            call(1, later),
        ],
    }
}

#[test]
fn a_call_not_run_in_another_repeat_is_said_not_run_never_passed() {
    let pressure = pressure(CaseOutcome::Skipped {
        reason: "after the provider hung on an earlier call".to_owned(),
    });
    let text = pressure.account(
        &pressure.calls[0],
        &Alone::Failed,
        |_| String::new(),
        |_| String::new(),
    );
    assert!(
        text.contains("the same call in repeat 2: not run: after the provider hung"),
        "{text}"
    );
    assert!(!text.contains("passed"), "{text}");
    assert!(pressure.identical_repeats());
}

#[test]
fn a_call_that_passed_in_another_repeat_is_nondeterministic() {
    let pressure = pressure(CaseOutcome::Passed {
        checked: vec![tenferro_transfer_harness::Rule::Values],
        unchecked: Vec::new(),
    });
    let text = pressure.account(
        &pressure.calls[0],
        &Alone::Failed,
        |_| String::new(),
        |_| String::new(),
    );
    assert!(
        text.contains("the same call in repeat 2: passed (nondeterministic)"),
        "{text}"
    );
    assert!(!pressure.identical_repeats());
}

#[test]
fn a_call_that_passed_alone_is_replayed_by_its_schedule_only() {
    let pressure = pressure(CaseOutcome::Passed {
        checked: vec![tenferro_transfer_harness::Rule::Values],
        unchecked: Vec::new(),
    });
    let account = |alone: &Alone| {
        pressure.account(
            &pressure.calls[0],
            alone,
            |_| "CASE ALONE".to_owned(),
            |seed| format!("SCHEDULE {seed}"),
        )
    };
    let passed = account(&Alone::Passed);
    assert!(
        !passed.contains("CASE ALONE") && passed.contains("replay: SCHEDULE"),
        "{passed}"
    );
    let failed = account(&Alone::Failed);
    assert!(failed.contains("replay: CASE ALONE; SCHEDULE"), "{failed}");
}

#[test]
fn a_call_of_a_repeat_run_to_judge_the_memory_says_so() {
    let mut pressure = pressure(CaseOutcome::Passed {
        checked: vec![tenferro_transfer_harness::Rule::Values],
        unchecked: Vec::new(),
    });
    pressure.extend(pressure.clone());
    let account =
        |call: &Call| pressure.account(call, &Alone::Failed, |_| String::new(), |_| String::new());
    let planned = account(&pressure.calls[0]);
    assert!(
        planned.contains("repeat 1 of 4") && !planned.contains("judge the devices' memory"),
        "{planned}"
    );
    let added = account(&pressure.calls[2]);
    assert!(
        added.contains("repeat 3 of 4 (the 2 planned, and more run to judge the devices' memory)"),
        "{added}"
    );
}

#[test]
fn an_output_still_written_into_beside_other_calls_says_whose_write_it_may_be() {
    let failed = CaseOutcome::Failed {
        violations: crate::record::Violations::new(vec![tenferro_transfer_harness::Violation {
            rule: tenferro_transfer_harness::Rule::Completion,
            message:
                "transfer_blocking returned while the copy into its output was still in flight"
                    .to_owned(),
        }])
        .unwrap(),
        checked: vec![tenferro_transfer_harness::Rule::Completion],
        unchecked: Vec::new(),
    };
    let mut pressure = pressure(failed.clone());
    pressure.calls[0] = call(1, failed);
    // Another thread's call of the same repeat, in flight at the same time.
    pressure.calls[1].thread = 1;
    let account = |alone: &Alone| {
        pressure.account(
            &pressure.calls[0],
            alone,
            |_| String::new(),
            |_| String::new(),
        )
    };
    let beside = account(&Alone::Passed);
    assert!(
        beside.contains("may be another call's: one block handed to two calls in flight"),
        "{beside}"
    );
    // Failing alone too, it is the call's own missing wait.
    assert!(!account(&Alone::Failed).contains("another call's"));
}

/// Whether a copy queued on `device` now lands on its own at once (its
/// queues are not stalled).
fn lands_at_once(device: &tenferro_mock_devices::SimDevice) -> bool {
    let (_tensor, token) = device
        .stream(0)
        .enqueue_copy(vec![1], vec![1.5_f64])
        .unwrap();
    token.is_complete()
}

#[test]
fn twin_rounds_stall_the_destination_and_one_other_round_in_three_the_source() {
    use std::time::Duration;
    use tenferro_mock_devices::{CompletionMode, SimDevice, SimRoutes};

    let stalled = |round: usize| {
        let route = Route::sim_to_sim().unwrap();
        let sides = [route.source(), route.destination()]
            .map(|side| side.downcast::<SimDevice>().unwrap().clone());
        for device in &sides {
            device.set_completion_mode(CompletionMode::Latency {
                base: Duration::ZERO,
                jitter: Duration::ZERO,
                seed: 1,
            });
        }
        stall_round(&route, round);
        sides.map(|device| !lands_at_once(&device))
    };
    assert!(twin_round(3) && twin_round(7) && !twin_round(6));
    assert_eq!(stalled(0), [true, false]);
    assert_eq!(stalled(1), [false, false]);
    assert_eq!(stalled(2), [false, false]);
    assert_eq!(stalled(3), [false, true]);
    assert_eq!(stalled(6), [true, false]);
    assert_eq!(stalled(7), [false, true]);
}

/// A host endpoint whose adapter panics when asked to stall.
#[derive(Debug)]
struct PanickingStall(tenferro_transfer_harness::HostEndpoint);

impl tenferro_transfer_harness::DeviceEndpoint for PanickingStall {
    fn describe(&self) -> tenferro_transfer_harness::DeviceDescription {
        self.0.describe()
    }
    fn registration(
        &self,
        role: tenferro_transfer_harness::EngineRole,
    ) -> Result<tenferro_runtime::EngineRegistration, HarnessError> {
        self.0.registration(role)
    }
    fn engine(
        &self,
        role: tenferro_transfer_harness::EngineRole,
    ) -> Result<Box<dyn tenferro_runtime::ExecutionEngine>, HarnessError> {
        self.0.engine(role)
    }
    fn stage(
        &self,
        case: &tenferro_transfer_harness::Case,
        use_input: &mut dyn FnMut(tenferro_tensor::TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        self.0.stage(case, use_input)
    }
    fn stall_queues(&self, _pause: std::time::Duration) -> bool {
        panic!("the adapter's stall panicked")
    }
}

#[test]
fn an_adapter_whose_stall_panics_does_not_hang_the_concurrent_calls() {
    use tenferro_transfer_harness::{Endpoint, HostEndpoint, HostProvider};

    let route = Route::new(
        Endpoint::new(PanickingStall(HostEndpoint::plain("host-a").unwrap())),
        Endpoint::new(PanickingStall(HostEndpoint::plain("host-b").unwrap())),
    )
    .unwrap();
    let provider: Arc<dyn TransferProvider> = Arc::new(HostProvider::new());
    let options = ConcurrencyOptions {
        threads: 2,
        cases_per_thread: 8,
        repeats: 1,
        ..ConcurrencyOptions::default()
    };
    let pressure = drive(
        &route,
        &provider,
        Profile::Quick,
        &Capabilities::all(),
        &options,
    )
    .unwrap();
    assert_eq!(pressure.calls.len(), 16);
    assert!(pressure.failures().next().is_none());
}
