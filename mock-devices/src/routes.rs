//! The routes of the simulated devices, as constructors on the harness's
//! `Route` ([`SimRoutes`]): bring the trait into scope (the conformance
//! crate's prelude does) and write `Route::host_to_sim`.

use std::sync::Arc;

use tenferro_transfer_harness::{Endpoint, HarnessError, HostEndpoint, Route};

use crate::{HostDomain, SimDevice};

/// The simulated devices' routes, on the harness's [`Route`].
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, SimRoutes};
/// use tenferro_transfer_harness::Route;
///
/// let route = Route::host_to_sim().unwrap();
/// assert_eq!(route.label(), "host->sim0");
/// assert!(route.destination().downcast::<SimDevice>().is_some());
/// ```
pub trait SimRoutes: Sized {
    /// Host (tenferro-cpu) to a fresh simulated device `sim0`.
    ///
    /// # Errors
    ///
    /// As [`Route::new`], or a device setup failure.
    fn host_to_sim() -> Result<Self, HarnessError>;

    /// A fresh simulated device `sim0` to host (tenferro-cpu).
    ///
    /// # Errors
    ///
    /// As [`SimRoutes::host_to_sim`].
    fn sim_to_host() -> Result<Self, HarnessError>;

    /// Simulated device `sim0` to simulated device `sim1`.
    ///
    /// # Errors
    ///
    /// As [`SimRoutes::host_to_sim`].
    fn sim_to_sim() -> Result<Self, HarnessError>;

    /// Host engine `host-src`, which owns a [`HostDomain`] (managed memory
    /// in an allocation domain of its own), to the plain host engine
    /// `host`.
    ///
    /// tenferro-cpu runs only on plain host buffers, so the engine with the
    /// domain is the source (which never runs anything) and the provider
    /// must deliver plain host memory. The domain's allocations are
    /// accounted, so this route checks `no-leak` on the host.
    ///
    /// # Errors
    ///
    /// As [`Route::new`].
    fn managed_to_host() -> Result<Self, HarnessError>;
}

fn sim(ordinal: usize) -> Result<Endpoint, HarnessError> {
    SimDevice::new(ordinal)
        .map(Endpoint::new)
        .map_err(|error| HarnessError::adapter(format!("opening sim{ordinal}"), error))
}

impl SimRoutes for Route {
    fn host_to_sim() -> Result<Self, HarnessError> {
        Route::new(Endpoint::host("host")?, sim(0)?)
    }

    fn sim_to_host() -> Result<Self, HarnessError> {
        Route::new(sim(0)?, Endpoint::host("host")?)
    }

    fn sim_to_sim() -> Result<Self, HarnessError> {
        Route::new(sim(0)?, sim(1)?)
    }

    fn managed_to_host() -> Result<Self, HarnessError> {
        Route::new(
            Endpoint::new(HostEndpoint::managed(
                "host-src",
                Arc::new(HostDomain::new()),
            )?),
            Endpoint::host("host")?,
        )
    }
}
