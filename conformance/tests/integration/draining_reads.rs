//! A device whose every read drains the queues of the devices beside it,
//! as a vendor runtime whose download synchronises the whole context may
//! (its adapter's `read_back` says a read may do so). A device-to-device
//! provider that returns before its copy lands must still fail
//! `completion` there: the suite asks the output's completion probe
//! before anything reads through a device, the borrowed input included.
//! Written as a vendor would, from the public API: the adapter wraps the
//! simulated device's own.

use std::sync::Arc;

use tenferro_tensor::Error;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::{read_compact, with_element};

use crate::support::verdicts::no_rule_fails;

/// A simulated device whose reads first complete every copy queued on
/// `drains` (itself and its peer).
#[derive(Debug)]
struct DrainingSim {
    device: SimDevice,
    drains: Vec<SimDevice>,
}

impl DeviceEndpoint for DrainingSim {
    fn describe(&self) -> DeviceDescription {
        DeviceEndpoint::describe(&self.device)
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        DeviceEndpoint::registration(&self.device, role)
    }

    fn engine(&self, role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        DeviceEndpoint::engine(&self.device, role)
    }

    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        DeviceEndpoint::stage(&self.device, case, use_input)
    }

    /// Drains, then lets the suite map the memory as it does the simulated
    /// device's.
    fn read_back(&self, _tensor: &Tensor) -> Option<ReadBack> {
        for device in &self.drains {
            device.release_all();
        }
        None
    }

    fn completion(&self, tensor: &Tensor) -> CompletionState {
        DeviceEndpoint::completion(&self.device, tensor)
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        DeviceEndpoint::allocation_ledger(&self.device)
    }

    fn memory_in_use(&self) -> Option<MemoryInUse> {
        DeviceEndpoint::memory_in_use(&self.device)
    }

    fn launches_in_own_domain(&self) -> bool {
        DeviceEndpoint::launches_in_own_domain(&self.device)
    }
}

/// `sim0` to `sim1`, each read through either draining both.
fn draining_route() -> Result<Route, HarnessError> {
    let open = |ordinal| {
        SimDevice::new(ordinal)
            .map_err(|error| HarnessError::adapter(format!("opening sim{ordinal}"), error))
    };
    let (source, destination) = (open(0)?, open(1)?);
    let endpoint = |device: &SimDevice| {
        Endpoint::new(DrainingSim {
            device: device.clone(),
            drains: vec![source.clone(), destination.clone()],
        })
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
            let (tensor, token) = self
                .destination
                .stream(0)
                .enqueue_copy(input.shape().to_vec(), read_compact::<T>(input)?)?;
            if self.waits {
                token.wait().map_err(|error| Error::backend_source(OP, error))?;
            }
            Ok(tensor)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

fn peer(route: &Route, waits: bool) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let destination = route
        .destination()
        .downcast::<DrainingSim>()
        .ok_or("a draining simulated destination")?;
    Ok(Arc::new(Peer {
        destination: destination.device.clone(),
        waits,
    }))
}

#[test]
fn a_copy_returned_unwaited_fails_completion_where_reads_drain_the_queues() {
    let suite = ProviderSuite::new("draining-reads", Level::V2)
        .route("waits", draining_route, |route| peer(route, true))
        .route("returns_early", draining_route, |route| peer(route, false))
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
