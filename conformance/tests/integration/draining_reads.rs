//! A device whose every read drains the queues of the devices beside it,
//! as a vendor runtime whose download synchronises the whole context may
//! (its adapter's `read_back` says a read may do so). A device-to-device
//! provider that returns before its copy lands must still fail
//! `completion` there: the suite asks the output's completion probe
//! before anything reads through a device, the borrowed input included.
//! Written as a vendor would, from the public API: the adapter
//! (`support::vendor_sim`) wraps the simulated device's own.

use std::sync::Arc;

use tenferro_tensor::Error;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::adapter::*;

use crate::support::blocks::copy_onto;
use crate::support::vendor_sim::{VendorSim, on_vendor_sim};
use crate::support::verdicts::no_rule_fails;

/// `sim0` to `sim1`, each read through either draining both.
fn draining_route() -> Result<Route, HarnessError> {
    let open = |ordinal| SimDevice::new(ordinal).adapter_context(format!("opening sim{ordinal}"));
    let (source, destination) = (open(0)?, open(1)?);
    let endpoint = |device: &SimDevice| {
        let drains = vec![source.clone(), destination.clone()];
        Endpoint::new(VendorSim::new(device.clone(), drains, false))
    };
    Route::new(endpoint(&source), endpoint(&destination))
}

/// A device-to-device copy that waits for its copy, or returns at once.
#[derive(Debug)]
struct Peer {
    destination: SimDevice,
    waits: bool,
}

impl TransferProvider for Peer {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "Peer::transfer_blocking";
        let input = request.input();
        with_element!(input.dtype(), T => {
            let values = read_compact::<T>(input)?;
            copy_onto(&self.destination, input.shape().to_vec(), values, self.waits, OP)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

fn peer(waits: bool) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    on_vendor_sim(false, move |destination| {
        Arc::new(Peer {
            destination: destination.device.clone(),
            waits,
        })
    })
}

#[test]
fn a_copy_returned_unwaited_fails_completion_where_reads_drain_the_queues() {
    let suite = ProviderSuite::new("draining-reads", Level::V2)
        .route("waits", draining_route, peer(true))
        .route("returns_early", draining_route, peer(false))
        // Owned inputs only: the suite reads a view's backing by mapping it,
        // an owned tensor through the adapter's draining `read_back`.
        .capabilities_for("returns_early", Capabilities::all().views(ViewKinds::NONE))
        .profile(Profile::Quick)
        .seed(7);
    let report = suite.run();
    no_rule_fails(&suite, &report, "waits", Level::V2.rules());
    assert!(
        matches!(
            suite.check(&report, "waits", Rule::Completion),
            RuleVerdict::Pass { .. }
        ),
        "{}",
        report.to_table()
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "returns_early", Rule::Completion) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("on sim1"), "{text}");
}
