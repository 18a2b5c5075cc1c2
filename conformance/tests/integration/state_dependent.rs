//! A generated failure that depends on what the provider kept from earlier
//! calls: the minimal case fails again on the provider that ran the earlier
//! cases, but its replay line runs it on a fresh provider, where it passes.
//! The row says so and prints the line that reruns the route's cases in
//! the same order; a provider broken from its first call keeps the plain
//! replay line, which fails again. Written as a vendor would: a staging
//! pool that, once warm, hands out blocks with a stale last element.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tenferro_runtime::TransferRequest;
use tenferro_tensor::Tensor;
use tenferro_transfer_conformance::mock_devices::providers::{Broken, Fault};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::sim_upload;
use crate::support::verdicts::replay_json;
use tenferro_transfer_conformance::{BoxError, Verdict};

/// Correct for its first `warm_after` calls, then one ulp off.
#[derive(Debug)]
struct WarmPoolGoesStale {
    correct: Arc<dyn TransferProvider>,
    stale: Arc<dyn TransferProvider>,
    warm_after: usize,
    calls: AtomicUsize,
}

impl TransferProvider for WarmPoolGoesStale {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.warm_after {
            self.correct.transfer_blocking(request)
        } else {
            self.stale.transfer_blocking(request)
        }
    }
}

fn stale_after(
    warm_after: usize,
) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        let correct: Arc<dyn TransferProvider> = Arc::new(sim_upload(route)?);
        Ok(Arc::new(WarmPoolGoesStale {
            stale: Arc::new(Broken::new(Arc::clone(&correct), vec![Fault::OneUlp])),
            correct,
            warm_after,
            calls: AtomicUsize::new(0),
        }))
    }
}

fn suite(warm_after: usize) -> ProviderSuite {
    ProviderSuite::new("pool", Level::V1)
        .route("upload", Route::host_to_sim, stale_after(warm_after))
        .capabilities(Capabilities::all().dtypes([DType::F32, DType::F64]))
        .profile(Profile::Quick)
        .invoked_from("my-crate", "conformance")
        .seed(3)
}

/// The generated row's message, and the recipe its replay line names.
fn generated_failure(report: &Report) -> (String, String) {
    let row = report
        .rows()
        .iter()
        .find(|row| row.layout.starts_with("generated:"))
        .unwrap();
    assert_eq!(row.verdict, Verdict::Fail, "{}", report.to_table());
    let message = row.violations[0].message.clone();
    let json = replay_json(&message).to_owned();
    (message, json)
}

#[test]
fn a_failure_only_a_warm_provider_shows_says_so_and_prints_the_route_rerun() {
    // Warm after the fixed cases: the generated run fails on the warm
    // provider, and a fresh one passes the minimal case.
    let suite = suite(60);
    let report = suite.run();
    let (message, json) = generated_failure(&report);
    assert!(
        message.contains("depends on the provider's state")
            && message.contains("passed on a fresh provider"),
        "{message}"
    );
    assert!(
        message.contains(
            "rerun: TRANSFER_CONFORMANCE_SEED=3 TRANSFER_CONFORMANCE_ROUTES=upload cargo test -p my-crate --test conformance upload::"
        ),
        "{message}"
    );
    // What it says of the replay line holds: the case alone passes.
    let replayed = suite.replay(&json);
    assert!(
        replayed
            .rows()
            .iter()
            .all(|row| row.verdict == Verdict::Pass),
        "{}",
        replayed.to_table()
    );
}

#[test]
fn a_provider_broken_from_its_first_call_keeps_the_replay_that_fails_again() {
    let suite = suite(0);
    let report = suite.run();
    let (message, json) = generated_failure(&report);
    assert!(
        !message.contains("depends on the provider's state") && !message.contains("rerun:"),
        "{message}"
    );
    let replayed = suite.replay(&json);
    assert!(
        replayed
            .rows()
            .iter()
            .any(|row| row.verdict == Verdict::Fail),
        "{}",
        replayed.to_table()
    );
}
