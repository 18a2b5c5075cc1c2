//! Routes whose simulated devices' layout kernels work as a test asks
//! (`Kernels`): queued, or reading their input as they run.

use tenferro_transfer_conformance::harness::{HarnessError, Route};
use tenferro_transfer_conformance::mock_devices::{Kernels, SimDevice};

/// `route` with its simulated endpoints' kernels set to `kernels`.
pub fn with_kernels(
    route: Result<Route, HarnessError>,
    kernels: Kernels,
) -> Result<Route, HarnessError> {
    let route = route?;
    for endpoint in [route.source(), route.destination()] {
        if let Some(device) = endpoint.downcast::<SimDevice>() {
            device.set_kernels(kernels);
        }
    }
    Ok(route)
}
