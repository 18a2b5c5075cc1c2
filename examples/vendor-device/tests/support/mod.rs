//! The vendor device as the suite sees it: the adapter, its two routes and
//! the suite over them (test-side code; the fuzz target includes it too).
//! `ledger.rs` lists allocations; `suites.rs` has the other suites.
#![allow(dead_code)] // Each test target uses part of it.

mod ledger;
mod suites;
pub use suites::*;

use std::sync::Arc;

use example_vendor_device::{CopyState, MAX_ELEMENTS, VENDOR_FAMILY, VendorDevice, VendorEngine};
use example_vendor_device::{VendorDownload, VendorUpload};
use tenferro_transfer_conformance::adapter::*;

/// Device kind of the vendor's devices in `TRANSFER_CONFORMANCE_REQUIRE_DEVICES`.
pub const KIND: &str = "vendor-npu";

/// A [`VendorDevice`] as a route endpoint, a source or a destination.
#[derive(Debug)]
pub struct VendorEndpoint {
    pub device: VendorDevice,
    /// Every allocation, where this endpoint lists them (`ledger.rs`).
    ledger: Option<Arc<AllocationLedger>>,
}

impl VendorEndpoint {
    /// Device `npu<ordinal>`, accounted by its counts of memory in use.
    pub fn counting_only(ordinal: usize) -> Result<Self, HarnessError> {
        let device = VendorDevice::open(ordinal).map_err(|e| HarnessError::adapter("open", e))?;
        Ok(Self {
            device,
            ledger: None,
        })
    }
}

impl DeviceEndpoint for VendorEndpoint {
    fn describe(&self) -> DeviceDescription {
        let device = &self.device;
        DeviceDescription::new(
            device.name(),
            KIND,
            device.engine_id().clone(),
            device.storage_class().clone(),
            PlacementRule::Device(device.device_id()),
            StorageRule::Domain {
                family: VENDOR_FAMILY,
                domain: device.allocation_domain(),
            },
        )
    }

    // The device's own registration where it consumes the transfer (so the
    // suite checks its ingress); the suite's helper where it runs nothing.
    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let device = &self.device;
        match role {
            EngineRole::Destination => device
                .registration()
                .map_err(|e| HarnessError::adapter("the device's registration", e)),
            EngineRole::Source => self.describe().registration::<VendorEngine>(
                role,
                device.provider_device_identity().clone(),
                device.hardware_class().clone(),
                device.capabilities(),
            ),
        }
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(self.device.engine()))
    }

    /// A source: the case's values (a view's backing) uploaded, the view
    /// carved by tenferro.
    fn stage(&self, case: &Case, take: &mut dyn FnMut(TensorRead<'_>)) -> Result<(), HarnessError> {
        let upload = |host: Tensor| self.device.upload(&TensorRead::from_tensor(&host));
        stage_via_host(case, |host| upload(host).map_err(HarnessError::stage), take)
    }

    fn completion(&self, tensor: &Tensor) -> CompletionState {
        match self.device.copy_state(tensor) {
            Some(CopyState::Landed) => CompletionState::Complete,
            Some(CopyState::InFlight { copy }) => {
                let name = self.device.name();
                CompletionState::pending(format!("copy #{copy} on {name} had not landed"))
            }
            Some(other) => CompletionState::unknown(format!("the device says {other:?}")),
            None => CompletionState::unknown("the tensor is not in this device's memory"),
        }
    }

    fn allocation_ledger(&self) -> Option<Arc<AllocationLedger>> {
        self.ledger.clone()
    }

    fn memory_in_use(&self) -> Option<MemoryInUse> {
        let device = &self.device;
        Some(MemoryInUse::allocations(device.live_allocations()).with_bytes(device.bytes_in_use()))
    }

    /// The device frees an allocation once the copies into it are done.
    fn settle(&self) {
        self.device.synchronize();
    }
}

/// Host (tenferro-cpu) to a fresh vendor device `npu0`, listed in a ledger.
pub fn upload_route() -> Result<Route, HarnessError> {
    Route::host_to(VendorEndpoint::open(0)?)
}

/// A fresh vendor device `npu0`, listed in a ledger, to the host.
pub fn download_route() -> Result<Route, HarnessError> {
    Route::to_host(VendorEndpoint::open(0)?)
}

/// The correct providers: `VendorUpload` and `VendorDownload`.
pub fn correct_suite() -> ProviderSuite {
    ProviderSuite::new("vendor", LEVEL)
        .route("upload", upload_route, |route| {
            let npu = route.destination().try_downcast::<VendorEndpoint>()?;
            Ok(Arc::new(VendorUpload::new(npu.device.clone())) as Arc<dyn TransferProvider>)
        })
        .route("download", download_route, |route| {
            let npu = route.source().try_downcast::<VendorEndpoint>()?;
            Ok(Arc::new(VendorDownload::new(npu.device.clone())) as Arc<dyn TransferProvider>)
        })
        .capabilities(Capabilities::all().max_elements(MAX_ELEMENTS))
        .profile(Profile::Quick)
}
