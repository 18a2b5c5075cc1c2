//! The vendor device as the conformance suite sees it: an adapter of the
//! suite's `DeviceEndpoint` trait, and the suite declared over it. Test-side
//! code, so the crate itself does not depend on the suite; the fuzz target
//! (`fuzz/fuzz_targets/transfer_contract.rs`) includes this file too.

use std::sync::Arc;

use example_vendor_device::{
    AllocationObserver, CopyState, EarlyReturnUpload, MAX_ELEMENTS, VENDOR_FAMILY, VendorDevice,
    VendorError, VendorUpload,
};
use tenferro_runtime::{EngineRegistration, ExecutionEngine};
use tenferro_tensor::{AllocationDomainId, Tensor};
use tenferro_transfer_conformance::harness::{
    AllocationLedger, CompletionState, DeviceDescription, DeviceEndpoint, EngineRole, HarnessError,
    PlacementRule, StorageRule,
};
use tenferro_transfer_conformance::prelude::{
    Capabilities, Endpoint, Level, Profile, ProviderSuite, Route, TransferProvider,
};

/// Device kind of the vendor's devices in `TRANSFER_CONFORMANCE_REQUIRE_DEVICES`.
pub const KIND: &str = "vendor-npu";

/// A [`VendorDevice`] as a route endpoint (a destination: it does not stage
/// inputs).
#[derive(Debug)]
pub struct VendorEndpoint {
    device: VendorDevice,
    ledger: Arc<AllocationLedger>,
}

impl VendorEndpoint {
    /// Open device `npu<ordinal>` and account its allocations.
    pub fn open(ordinal: usize) -> Result<Self, HarnessError> {
        let device = VendorDevice::open(ordinal).map_err(setup)?;
        Ok(Self::over(device))
    }

    /// Account `device`'s allocations from now on.
    pub fn over(device: VendorDevice) -> Self {
        let ledger = Arc::new(AllocationLedger::default());
        device.set_allocation_observer(Arc::new(LedgerObserver {
            ledger: Arc::clone(&ledger),
            domain: device.allocation_domain(),
        }));
        Self { device, ledger }
    }

    /// The device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

fn setup(error: VendorError) -> HarnessError {
    HarnessError::adapter("opening the vendor device", error)
}

/// Writes every device allocation into the harness's ledger, on the thread
/// that allocates or frees (the device calls the observer there), so the
/// rig attributes each allocation to the case that made it.
struct LedgerObserver {
    ledger: Arc<AllocationLedger>,
    domain: AllocationDomainId,
}

impl AllocationObserver for LedgerObserver {
    fn allocated(&self, id: u64, bytes: usize) {
        self.ledger.open(id, self.domain, bytes);
    }

    fn freed(&self, id: u64) {
        self.ledger.close(id);
    }
}

impl DeviceEndpoint for VendorEndpoint {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            self.device.name(),
            KIND,
            self.device.engine_id().clone(),
            self.device.storage_class().clone(),
            PlacementRule::Device(self.device.device_id()),
            StorageRule::Domain {
                family: VENDOR_FAMILY,
                domain: self.device.allocation_domain(),
            },
        )
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let role = match role {
            EngineRole::Source => example_vendor_device::EngineRole::Source,
            _ => example_vendor_device::EngineRole::Destination,
        };
        self.device
            .registration(role)
            .map_err(|source| HarnessError::Config {
                context: format!("registration of `{}`", self.device.name()),
                source: Box::new(source),
            })
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(self.device.engine()))
    }

    /// The device knows, per allocation, whether the copy into it landed.
    fn completion(&self, tensor: &Tensor) -> CompletionState {
        match self.device.copy_state(tensor) {
            Some(CopyState::Landed) => CompletionState::Complete,
            Some(CopyState::InFlight { copy }) => CompletionState::Pending {
                detail: format!("copy #{copy} on {} had not landed", self.device.name()),
            },
            Some(other) => CompletionState::Unknown {
                reason: format!(
                    "the device reports a copy state this adapter does not know: {other:?}"
                ),
            },
            None => CompletionState::Unknown {
                reason: format!(
                    "the output is not in {}'s memory, so its completion cannot be observed",
                    self.device.name()
                ),
            },
        }
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        Some(Arc::clone(&self.ledger))
    }

    fn stages_views(&self) -> bool {
        false
    }
}

/// Host (tenferro-cpu) to a fresh vendor device `npu0`.
pub fn upload_route() -> Result<Route, HarnessError> {
    Route::new(
        Endpoint::host("host")?,
        Endpoint::new(VendorEndpoint::open(0)?),
    )
}

/// The suite for the provider `make` builds on the route's device.
pub fn suite_of(name: &str, make: fn(VendorDevice) -> Arc<dyn TransferProvider>) -> ProviderSuite {
    ProviderSuite::new(name, Level::V1)
        .route("upload", upload_route, move |route| {
            let Some(endpoint) = route.destination().downcast::<VendorEndpoint>() else {
                return Err("the upload serves a vendor device destination".into());
            };
            Ok(make(endpoint.device().clone()))
        })
        .capabilities(Capabilities::all().max_elements(MAX_ELEMENTS))
        .profile(Profile::Quick)
}

/// The suite of the correct upload.
pub fn correct_suite() -> ProviderSuite {
    suite_of("vendor-upload", |device| {
        Arc::new(VendorUpload::new(device))
    })
}

/// The suite of the upload that returns before its copy lands.
pub fn broken_suite() -> ProviderSuite {
    suite_of("early-return-upload", |device| {
        Arc::new(EarlyReturnUpload::new(device))
    })
    .seed(1)
}

/// The suite the tests (and the fuzz target) run: the broken upload with
/// the `demonstrate-failure` feature, the correct one without.
pub fn suite() -> ProviderSuite {
    if cfg!(feature = "demonstrate-failure") {
        broken_suite()
    } else {
        correct_suite()
    }
}
