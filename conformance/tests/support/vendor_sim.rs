//! A simulated device behind an adapter written as a vendor writes one,
//! wrapping the simulated device's own, with two habits of real device
//! runtimes: a read through the device that drains the queues of the
//! devices beside it (a download that synchronises the whole context),
//! and a `stage` that queues its upload and returns before it lands.

use std::sync::Arc;

use tenferro_runtime::TransferProvider;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::adapter::*;

/// A simulated device whose reads first complete every copy queued on
/// `drains`; with `queues_stage`, its staged inputs still have their
/// upload queued when the provider gets them.
#[derive(Debug)]
pub struct VendorSim {
    pub device: SimDevice,
    drains: Vec<SimDevice>,
    queues_stage: bool,
    stalls: bool,
    stall_panics: bool,
    corrupts_stage: bool,
    stage_panics_on_views: bool,
    read_back_panics: bool,
}

impl VendorSim {
    /// `device`, whose reads drain `drains` (itself included, where
    /// listed), staging as `queues_stage` says.
    pub fn new(device: SimDevice, drains: Vec<SimDevice>, queues_stage: bool) -> Self {
        Self {
            device,
            drains,
            queues_stage,
            stalls: false,
            stall_panics: false,
            corrupts_stage: false,
            stage_panics_on_views: false,
            read_back_panics: false,
        }
    }

    /// The same, whose `stall_queues` panics (an adapter's bug): the suite
    /// takes it as a device that cannot stall.
    pub fn panicking_stall(self) -> Self {
        Self {
            stall_panics: true,
            ..self
        }
    }

    /// The same, staging each owned input with its first element's lowest
    /// bit flipped: an adapter (or a device's upload) that is wrong, under
    /// a provider that is right.
    pub fn corrupting_stage(self) -> Self {
        Self {
            corrupts_stage: true,
            ..self
        }
    }

    /// The same, whose `stage` panics on a view case (an adapter's bug):
    /// the suite reports those cases as not set up, naming the adapter.
    pub fn panicking_stage_on_views(self) -> Self {
        Self {
            stage_panics_on_views: true,
            ..self
        }
    }

    /// The same, whose `read_back` and `read_back_view` panic (an
    /// adapter's bug): the suite cannot read inputs through it, and says so.
    pub fn panicking_read_back(self) -> Self {
        Self {
            read_back_panics: true,
            ..self
        }
    }

    /// The same, answering the suite's `stall_queues` with the simulated
    /// device's stall (which holds back copies only in latency mode).
    pub fn stalling(self) -> Self {
        Self {
            stalls: true,
            ..self
        }
    }
}

/// `route`'s side (`source` or destination) as the [`VendorSim`] it is.
pub fn vendor_sim(route: &Route, source: bool) -> Result<&VendorSim, BoxError> {
    let side = if source {
        route.source()
    } else {
        route.destination()
    };
    Ok(side.downcast::<VendorSim>().ok_or("a VendorSim endpoint")?)
}

/// A provider for `route`, made by `make` from its [`VendorSim`] side.
pub fn on_vendor_sim(
    source: bool,
    make: impl Fn(&VendorSim) -> Arc<dyn TransferProvider>,
) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| Ok(make(vendor_sim(route, source)?))
}

impl DeviceEndpoint for VendorSim {
    fn describe(&self) -> DeviceDescription {
        DeviceEndpoint::describe(&self.device)
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        DeviceEndpoint::registration(&self.device, role)
    }

    fn engine(&self, role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        DeviceEndpoint::engine(&self.device, role)
    }

    /// The case's values (a view's backing) copied in on stream 0; with
    /// `queues_stage`, the copy is left queued.
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        assert!(
            !(self.stage_panics_on_views && matches!(case.layout(), Layout::View(_))),
            "VendorSim::stage cannot stage views"
        );
        if self.corrupts_stage && matches!(case.layout(), Layout::Owned) && !case.is_empty() {
            let mut values = case.values().to_vec();
            values[0] ^= 1;
            let wrong = Case::new(case.dtype(), case.shape().to_vec(), Layout::Owned, values)?;
            return DeviceEndpoint::stage(&self.device, &wrong, use_input);
        }
        if !self.queues_stage {
            return DeviceEndpoint::stage(&self.device, case, use_input);
        }
        let upload = |host: Tensor| {
            let read = TensorRead::from_tensor(&host);
            with_element!(read.dtype(), T => {
                let values = read_compact::<T>(&read).map_err(HarnessError::stage)?;
                let (tensor, queued) = self
                    .device
                    .stream(0)
                    .enqueue_copy(read.shape().to_vec(), values)
                    .map_err(HarnessError::stage)?;
                drop(queued);
                Ok(tensor)
            }, external => Err(HarnessError::stage(tenferro_tensor::Error::unsupported(
                "VendorSim::stage",
                "preset dtypes only",
            ))))
        };
        stage_via_host(case, upload, use_input)
    }

    /// Drains, then lets the suite map the memory as it does the simulated
    /// device's.
    fn read_back(&self, _tensor: &Tensor) -> Option<ReadBack> {
        assert!(!self.read_back_panics, "VendorSim::read_back panics");
        for device in &self.drains {
            device.release_all();
        }
        None
    }

    fn read_back_view(&self, _view: &TensorView<'_>) -> Option<ReadBack> {
        assert!(!self.read_back_panics, "VendorSim::read_back_view panics");
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

    /// Copies still queued hold their memory until they land.
    fn settle(&self) {
        self.device.release_all();
    }

    fn stall_queues(&self, pause: std::time::Duration) -> bool {
        assert!(!self.stall_panics, "VendorSim::stall_queues panics");
        self.stalls && self.device.stall(pause)
    }

    fn launches_in_own_domain(&self) -> bool {
        DeviceEndpoint::launches_in_own_domain(&self.device)
    }
}
