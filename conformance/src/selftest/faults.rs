//! A simulated device's fault plan as the runner's hook: the self-test and
//! the fuzzer hand a [`FaultPlan`] to the runner, which arms it on the
//! route's simulated devices for one case. Only this module names the
//! simulated device.

use tenferro_mock_devices::{FaultPlan, SimDevice};
use tenferro_transfer_harness::Route;

use crate::runner::CaseHook;

/// Install `plan` on every simulated endpoint of `route` (an empty plan
/// removes the faults); endpoints of other devices are left alone.
pub fn install(route: &Route, plan: &FaultPlan) {
    for endpoint in [route.source(), route.destination()] {
        if let Some(device) = endpoint.downcast::<SimDevice>() {
            device.install_faults(plan.clone());
        }
    }
}

impl CaseHook for FaultPlan {
    fn arm(&self, route: &Route) {
        install(route, self);
    }

    fn disarm(&self, route: &Route) {
        install(route, &FaultPlan::new());
    }
}
