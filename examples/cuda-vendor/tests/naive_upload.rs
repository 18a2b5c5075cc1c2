//! The conformance suite against `NaiveUpload`, which returns before its
//! copy has landed. Its rule tests run only with
//! `--features demonstrate-failure`, because `completion` fails on purpose
//! on a GPU; the test below pins that `completion` is the only rule it
//! breaks.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use example_cuda_vendor::{NaiveUpload, RuntimeSource};
use tenferro_transfer_conformance::cuda::CudaEndpoint;
use tenferro_transfer_conformance::harness::announce_skip;
use tenferro_transfer_conformance::prelude::*;

fn suite() -> ProviderSuite {
    ProviderSuite::new("naive-upload", Level::V2)
        .route("naive_upload", Route::host_to_cuda, |route| {
            let Some(device) = route.destination().downcast::<CudaEndpoint>() else {
                return Err("naive-upload serves a CUDA destination".into());
            };
            let device = device.clone();
            let runtime = RuntimeSource::new(move || device.runtime());
            Ok(Arc::new(NaiveUpload::new(runtime)) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
}

#[cfg(feature = "demonstrate-failure")]
tenferro_transfer_conformance::conformance_tests!(
    level = V2,
    suite = suite,
    routes = [naive_upload]
);

/// On a GPU, `completion` fails and no other rule does. Without one, every
/// rule is a skip (announced), or, with
/// `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1`, a failure naming the reason.
#[test]
fn the_naive_upload_fails_completion_and_only_completion() {
    const TEST: &str = "the_naive_upload_fails_completion_and_only_completion";
    let suite = suite();
    let report = suite.run();
    let verdicts: Vec<(Rule, RuleVerdict)> = Level::V2
        .rules()
        .iter()
        .map(|rule| (*rule, suite.check(&report, "naive_upload", *rule)))
        .collect();
    // No GPU here: every rule is a skip with the route's reason.
    if let Some((_, RuleVerdict::Skip(reason))) = verdicts.first()
        && verdicts
            .iter()
            .all(|(_, verdict)| matches!(verdict, RuleVerdict::Skip(_)))
    {
        announce_skip(TEST, reason);
        return;
    }
    let failing: Vec<(&str, &str)> = verdicts
        .iter()
        .filter_map(|(rule, verdict)| match verdict {
            RuleVerdict::Fail(text) => Some((rule.id(), text.as_str())),
            _ => None,
        })
        .collect();
    let rules: Vec<&str> = failing.iter().map(|(rule, _)| *rule).collect();
    assert_eq!(
        rules,
        ["completion"],
        "expected `completion` and nothing else to fail; first failure:\n{}",
        failing.first().map_or("(none)", |(_, text)| text)
    );
}
