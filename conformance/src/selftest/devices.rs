//! The built-in routes on other kinds of simulated device: devices that
//! only count their memory (as real devices do), and devices whose layout
//! kernels write fresh memory (so only the runtime holds the provider's
//! output).

use tenferro_mock_devices::{Accounting, Kernels, SimDevice};
use tenferro_transfer_harness::{Endpoint, Route};

use super::catalogue::Devices;

/// `route` on `devices`: itself as built, or with its simulated devices
/// replaced; `None` where the route has no simulated device to replace.
pub fn on_devices(route: &Route, devices: Devices) -> Option<Route> {
    match devices {
        Devices::AsBuilt => Some(route.clone()),
        Devices::CountingOnly => on_counting_devices(route),
        Devices::CopyingKernels => on_copying_kernels(route),
    }
}

/// `route` with every simulated device replaced by one that only counts
/// its memory in use, as real devices do; `None` without one.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::harness::Route;
/// use tenferro_transfer_conformance::mock_devices::SimRoutes;
/// use tenferro_transfer_conformance::selftest::on_counting_devices;
///
/// let route = on_counting_devices(&Route::host_to_sim().unwrap()).unwrap();
/// assert!(route.destination().ledger().is_none());
/// assert!(route.destination().memory_in_use().is_some());
/// assert!(on_counting_devices(&Route::host_to_host().unwrap()).is_none());
/// ```
pub fn on_counting_devices(route: &Route) -> Option<Route> {
    replaced(route, |device| {
        SimDevice::named_with("sim", device.ordinal(), Accounting::CountsOnly).ok()
    })
}

/// `route` with every simulated device replaced by one whose layout
/// kernels (reshape, compaction) write fresh memory instead of aliasing
/// their input ([`Kernels::Copying`]); `None` without one.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::harness::Route;
/// use tenferro_transfer_conformance::mock_devices::{Kernels, SimDevice, SimRoutes};
/// use tenferro_transfer_conformance::selftest::on_copying_kernels;
///
/// let route = on_copying_kernels(&Route::host_to_sim().unwrap()).unwrap();
/// let device = route.destination().downcast::<SimDevice>().unwrap();
/// assert_eq!(device.kernels(), Kernels::Copying);
/// ```
pub fn on_copying_kernels(route: &Route) -> Option<Route> {
    replaced(route, |device| {
        let copying = SimDevice::named_with("sim", device.ordinal(), device.accounting()).ok()?;
        copying.set_kernels(Kernels::Copying);
        Some(copying)
    })
}

/// `route` with each simulated device replaced by `with`'s device.
fn replaced(route: &Route, with: impl Fn(&SimDevice) -> Option<SimDevice>) -> Option<Route> {
    let replace = |endpoint: &Endpoint| -> Option<Endpoint> {
        endpoint
            .downcast::<SimDevice>()
            .and_then(&with)
            .map(Endpoint::new)
    };
    let (source, destination) = (replace(route.source()), replace(route.destination()));
    if source.is_none() && destination.is_none() {
        return None;
    }
    Route::new(
        source.unwrap_or_else(|| route.source().clone()),
        destination.unwrap_or_else(|| route.destination().clone()),
    )
    .ok()
}
