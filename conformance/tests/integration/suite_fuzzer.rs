//! Fuzzing a vendor's own provider through its `ProviderSuite`:
//! the bytes a fuzzer feeds decode into the suite's routes and cases; a
//! correct provider survives them, a broken one crashes with a replay line
//! that reproduces the failure under `cargo test`.

use std::sync::Arc;

use tenferro_transfer_conformance::harness::Violation;
use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::prelude::*;
use tenferro_transfer_conformance::{FuzzFailure, SuiteFuzzer};

/// Deterministic pseudo-random inputs (splitmix64), as a fuzzer's corpus.
fn inputs(count: u64) -> Vec<Vec<u8>> {
    (0..count)
        .map(|seed| {
            let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (0..(seed % 96) as usize)
                .map(|_| {
                    state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    (z ^ (z >> 31)) as u8
                })
                .collect()
        })
        .collect()
}

fn upload(faults: Vec<Fault>) -> ProviderSuite {
    ProviderSuite::new("fuzzed-upload", Level::V1).route(
        "upload",
        Route::host_to_sim,
        move |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("the upload serves a simulated destination".into());
            };
            let correct: Arc<dyn TransferProvider> = Arc::new(SimUpload::new(device.clone()));
            Ok(if faults.is_empty() {
                correct
            } else {
                Arc::new(Broken::new(correct, faults.clone()))
            })
        },
    )
}

fn two_routes() -> ProviderSuite {
    upload(Vec::new()).route("host", Route::host_to_host, |_| {
        Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
    })
}

#[test]
fn a_correct_provider_survives_every_input_on_every_route() {
    let mut fuzzer: SuiteFuzzer = two_routes().fuzzer();
    for input in inputs(300) {
        if let Err(failure) = fuzzer.run(&input) {
            panic!("input {input:?}: {failure}");
        }
    }
    let stats = fuzzer.stats();
    assert_eq!(stats.inputs, 300);
    assert!(stats.cases > 300, "{stats:?}");
}

#[test]
fn a_broken_provider_crashes_with_a_replay_that_reproduces_under_cargo_test() {
    let mut fuzzer = upload(vec![Fault::OneUlp])
        .invoked_from("my-provider", "conformance")
        .fuzzer();
    let failure = inputs(300)
        .iter()
        .find_map(|input| fuzzer.run(input).err())
        .expect("a one-ULP provider survived 300 inputs");
    let FuzzFailure::Broke {
        violations, route, ..
    } = &failure
    else {
        panic!("{failure}");
    };
    let recipe = failure.recipe().expect("a broken rule names its case");
    assert_eq!(route, "upload");
    assert!(
        violations
            .iter()
            .all(|violation| violation.rule == Rule::Values),
        "{failure}"
    );
    let text = failure.to_string();
    assert!(
        text.contains(&format!(
            "TRANSFER_CONFORMANCE_REPLAY='{recipe}' cargo test -p my-provider --test conformance upload::"
        )),
        "{text}"
    );
    // What the replay line runs: the suite's replay of that one case.
    let suite = upload(vec![Fault::OneUlp]);
    let report = suite.replay(recipe);
    assert!(
        matches!(
            suite.check(&report, "upload", Rule::Values),
            RuleVerdict::Fail(_)
        ),
        "{}",
        report.to_table()
    );
}

#[test]
fn an_absent_device_is_skipped_not_passed() {
    let mut fuzzer = ProviderSuite::new("cuda-upload", Level::V1)
        .route("upload", Route::host_to_cuda, |_| Err("never built".into()))
        .fuzzer();
    if tenferro_transfer_conformance::cuda::cuda_unavailable_reason().is_none() {
        return; // a GPU is here
    }
    fuzzer.run(b"any bytes").unwrap();
    assert_eq!(fuzzer.stats().unavailable, 1);
    assert_eq!(fuzzer.stats().inputs, 0);
}

/// The rules the first failing input of `inputs(300)` broke, and which input
/// it was.
fn first_failure(mut fuzzer: SuiteFuzzer) -> Option<(usize, Vec<Rule>)> {
    inputs(300)
        .iter()
        .enumerate()
        .find_map(|(at, input)| match fuzzer.run(input) {
            Ok(()) => None,
            Err(FuzzFailure::Broke { violations, .. }) => {
                Some((at, Violation::rules_of(&violations)))
            }
            Err(other) => panic!("input {at}: {other}"),
        })
}

#[test]
fn inline_fuzzing_finds_what_the_worker_finds() {
    for faults in [
        vec![Fault::OneUlp],
        vec![Fault::Panic],
        vec![Fault::EarlyReturn],
    ] {
        let on_worker = first_failure(upload(faults.clone()).fuzzer());
        let inline = first_failure(upload(faults.clone()).fuzzer().inline());
        assert!(
            on_worker.is_some(),
            "{faults:?} survived 300 inputs on the worker"
        );
        assert_eq!(inline, on_worker, "{faults:?}");
    }
    let mut fuzzer = two_routes().fuzzer().inline();
    for input in inputs(300) {
        if let Err(failure) = fuzzer.run(&input) {
            panic!("inline, input {input:?}: {failure}");
        }
    }
    assert_eq!(fuzzer.stats().inputs, 300);
}
