//! A device whose engine queues its layout kernels and does not wait for
//! them (`Kernels::Queued`), as an asynchronous device's engine does:
//! `Runtime::run` returns with the reshape of the moved value still
//! queued, and the device refuses to map its result until the engine is
//! synchronized. A caller synchronizes before it reads; so does the suite,
//! so a correct provider passes every rule on such a device (blind probe
//! 12: the re-read of a queued runtime output failed `output-stable` with
//! "GPU access is in progress").

use std::sync::Arc;

use tenferro_transfer_conformance::mock_devices::Kernels;
use tenferro_transfer_conformance::prelude::*;

use crate::support::kernels::with_kernels;

#[test]
fn a_correct_provider_passes_every_rule_where_the_engine_queues_its_kernels() {
    let suite = ProviderSuite::new("queued-kernels", Level::V2)
        .route(
            "upload",
            || with_kernels(Route::host_to_sim(), Kernels::Queued),
            |route| {
                Ok(Arc::new(SimUpload::new(
                    route.destination().try_downcast::<SimDevice>()?.clone(),
                )) as _)
            },
        )
        .route(
            "peer",
            || with_kernels(Route::sim_to_sim(), Kernels::Queued),
            |route| {
                Ok(Arc::new(SimPeer::new(
                    route.source().try_downcast::<SimDevice>()?.clone(),
                    route.destination().try_downcast::<SimDevice>()?.clone(),
                )) as _)
            },
        )
        .profile(Profile::Quick)
        .seed(3);
    let report = suite.run();
    for route in ["upload", "peer"] {
        for rule in Level::V2.rules() {
            assert!(
                !matches!(suite.check(&report, route, *rule), RuleVerdict::Fail(_)),
                "{route} {rule}: {:?}\n{}",
                suite.check(&report, route, *rule),
                report.to_table()
            );
        }
        // The runtime's outputs were read: values and output-stable are
        // checked, not skipped.
        for rule in [Rule::Values, Rule::OutputStable] {
            assert!(
                matches!(suite.check(&report, route, rule), RuleVerdict::Pass { .. }),
                "{route} {rule}: {:?}",
                suite.check(&report, route, rule)
            );
        }
    }
}
