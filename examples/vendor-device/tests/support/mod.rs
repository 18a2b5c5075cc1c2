//! The vendor device as the suite sees it: the adapter, its two routes and
//! the suite over them (`opening.rs` opens the device, `opaque.rs` reads
//! back memory the host cannot map, `suites.rs` has the other suites; the
//! fuzz target includes them too).
#![allow(dead_code)] // Each test target uses part of it.

mod opaque;
mod opening;
mod suites;
pub use suites::*;

use std::sync::Arc;

use example_vendor_device::{CopyState, MAX_ELEMENTS, VENDOR_DEVICE_KIND, VENDOR_FAMILY};
use example_vendor_device::{VendorDevice, VendorDownload, VendorUpload};
use tenferro_transfer_conformance::adapter::*;

/// A [`VendorDevice`] as a route endpoint, a source or a destination.
#[derive(Debug)]
pub struct VendorEndpoint {
    pub device: VendorDevice,
    /// Every allocation, where this endpoint lists them (`opening.rs`).
    ledger: Option<Arc<AllocationLedger>>,
}

impl DeviceEndpoint for VendorEndpoint {
    fn describe(&self) -> DeviceDescription {
        let device = &self.device;
        DeviceDescription::new(
            device.name(),
            VENDOR_DEVICE_KIND,
            device.engine_id().clone(),
            device.storage_class().clone(),
            PlacementRule::Device(device.device_id()),
            StorageRule::domain(VENDOR_FAMILY, device.allocation_domain()),
        )
    }

    /// The device's own registration; as a source the suite strips it.
    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let own = self.device.registration().adapter_context("registration")?;
        self.describe().registration_from(role, own)
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(self.device.engine()))
    }

    /// A source: the case's values (a view's backing) uploaded; tenferro carves views.
    fn stage(&self, case: &Case, take: &mut dyn FnMut(TensorRead<'_>)) -> Result<(), HarnessError> {
        let upload = |host: Tensor| self.device.upload(&TensorRead::from_tensor(&host));
        stage_via_host(case, |host| upload(host).map_err(HarnessError::stage), take)
    }

    /// Memory the host cannot map (opaque, as a GPU's) is downloaded (`opaque.rs`).
    fn read_back(&self, tensor: &Tensor) -> Option<ReadBack> {
        opaque::read_back(&self.device, tensor)
    }

    /// A view input's whole storage, read on the device where it is opaque.
    fn read_back_view(&self, view: &TensorView<'_>) -> Option<ReadBack> {
        opaque::read_back_view(&self.device, view)
    }

    fn completion(&self, tensor: &Tensor) -> CompletionState {
        match self.device.copy_state(tensor) {
            Some(CopyState::Landed) => CompletionState::Complete,
            Some(CopyState::InFlight { copy }) => CompletionState::pending(format!("copy #{copy}")),
            state => CompletionState::unknown(format!("the device says {state:?}")),
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
            Ok(Arc::new(VendorUpload::new(npu.device.clone())))
        })
        .route("download", download_route, |route| {
            let npu = route.source().try_downcast::<VendorEndpoint>()?;
            Ok(Arc::new(VendorDownload::new(npu.device.clone())))
        })
        .capabilities(Capabilities::all().max_elements(MAX_ELEMENTS))
}
