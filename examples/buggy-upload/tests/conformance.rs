//! The conformance suite against `MemcpyUpload`. The macro's rule tests run
//! only with `--features demonstrate-failure`, because `values` fails on
//! purpose; the test below pins what that failure says.

use std::sync::Arc;

use example_buggy_upload::MemcpyUpload;
use tenferro_transfer_conformance::prelude::*;

fn suite() -> ProviderSuite {
    ProviderSuite::new("memcpy-upload", Level::V2)
        .route("upload", Route::host_to_sim, |route| {
            let Some(device) = route.destination().downcast::<SimDevice>() else {
                return Err("memcpy-upload serves a simulated destination".into());
            };
            Ok(Arc::new(MemcpyUpload::new(device.clone())) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
        .seed(1)
        // The rule tests exist only with this feature: replay lines name it.
        .replay_args("--features demonstrate-failure")
}

#[cfg(feature = "demonstrate-failure")]
tenferro_transfer_conformance::conformance_tests!(level = V2, suite = suite, routes = [upload]);

/// Exactly what `cargo test --features demonstrate-failure upload::values`
/// prints when it fails, and that the bug breaks no other rule.
#[test]
fn the_bug_fails_values_and_only_values() {
    // As the macro's tests run it: its replay lines name this package and
    // test target, so they run as pasted at the repository root.
    let suite = suite().invoked_from(env!("CARGO_PKG_NAME"), module_path!());
    let report = suite.run();
    let mut failing = Vec::new();
    for rule in Level::V2.rules() {
        if let RuleVerdict::Fail(text) = suite.check(&report, "upload", *rule) {
            failing.push(rule.id());
            if *rule == Rule::Values {
                insta::with_settings!({
                    snapshot_path => "../../../snapshots",
                    prepend_module_to_snapshot => false,
                    filters => vec![(r"seed \d+", "seed [seed]")],
                }, {
                    insta::assert_snapshot!("example-buggy-upload-values", text);
                });
            }
        }
    }
    assert_eq!(failing, vec!["values"]);
}
