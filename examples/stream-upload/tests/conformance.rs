//! The conformance suite, run the way a provider crate runs it: one
//! `#[test]` per rule and route (`cargo test -- --list` shows them).

use std::sync::Arc;

use example_stream_upload::{MAX_ELEMENTS, SERVED_DTYPES, StreamUpload};
use tenferro_transfer_conformance::prelude::*;

fn suite() -> ProviderSuite {
    ProviderSuite::new("stream-upload", Level::V2)
        // A route: its name (tests are named after it), how to build it,
        // and how to build your provider for it.
        .route("upload", Route::host_to_sim, |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("stream-upload serves a simulated destination".into());
            };
            Ok(Arc::new(StreamUpload::new(device.clone())) as Arc<dyn TransferProvider>)
        })
        // What you serve. Inside: every rule applies. Just outside each
        // limit: you must answer with a typed Err (rule `capability-honesty`).
        .capabilities(
            Capabilities::all()
                .dtypes(SERVED_DTYPES)
                .max_elements(MAX_ELEMENTS),
        )
        .profile(Profile::Quick)
}

tenferro_transfer_conformance::conformance_tests!(level = V2, suite = suite, routes = [upload]);

/// Every rule of the level passes for real: each was checked on at least
/// one case (a rule test of a skipped rule also reports `ok`).
#[test]
fn every_rule_of_the_level_is_checked_and_passes() {
    let (suite, report) = __transfer_conformance_run();
    for rule in Level::V2.rules() {
        let verdict = suite.check(report, "upload", *rule);
        assert!(verdict.is_pass(), "{rule}: {verdict:?}");
    }
}
