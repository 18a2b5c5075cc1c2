//! The built-in providers and the routes they serve.

use std::sync::Arc;

use tenferro_mock_devices::{SimDownload, SimPeer, SimUpload};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::{Endpoint, HarnessError, HostProvider, Route};

/// A built-in provider: its name, its route, and how to make it for that
/// route.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinProvider {
    /// Name used on the command line and in reports.
    pub name: &'static str,
    /// What it does, in a few words.
    pub summary: &'static str,
    route: fn() -> Result<Route, HarnessError>,
}

impl BuiltinProvider {
    /// A fresh route for this provider.
    ///
    /// # Errors
    ///
    /// Returns the harness's error if a device or endpoint cannot be set up.
    pub fn route(&self) -> Result<Route, HarnessError> {
        (self.route)()
    }

    /// The provider for `route` (one made by [`Self::route`]).
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidRoute`] if `route` has the wrong kind
    /// of endpoints for this provider.
    pub fn provider(&self, route: &Route) -> Result<Arc<dyn TransferProvider>, HarnessError> {
        let wrong = || HarnessError::InvalidRoute {
            reason: format!(
                "provider `{}` cannot serve route {}",
                self.name,
                route.label()
            ),
        };
        Ok(match (self.name, route.source(), route.destination()) {
            ("sim-upload", Endpoint::Host(_), Endpoint::Sim(device)) => {
                Arc::new(SimUpload::new(device.clone()))
            }
            ("sim-download", Endpoint::Sim(device), Endpoint::Host(_)) => {
                Arc::new(SimDownload::new(device.clone()))
            }
            ("sim-peer", Endpoint::Sim(from), Endpoint::Sim(to)) => {
                Arc::new(SimPeer::new(from.clone(), to.clone()))
            }
            ("host", Endpoint::Host(_), Endpoint::Host(_)) => Arc::new(HostProvider::new()),
            _ => return Err(wrong()),
        })
    }
}

/// Every built-in provider, one per route: host to sim, sim to host, sim to
/// sim, host to host.
pub const BUILTIN_PROVIDERS: [BuiltinProvider; 4] = [
    BuiltinProvider {
        name: "sim-upload",
        summary: "host (tenferro-cpu) to a simulated device",
        route: Route::host_to_sim,
    },
    BuiltinProvider {
        name: "sim-download",
        summary: "a simulated device to host (tenferro-cpu)",
        route: Route::sim_to_host,
    },
    BuiltinProvider {
        name: "sim-peer",
        summary: "one simulated device to another",
        route: Route::sim_to_sim,
    },
    BuiltinProvider {
        name: "host",
        summary: "a host engine with its own allocation domain to plain host (tenferro-cpu)",
        route: Route::host_to_host,
    },
];

/// The built-in provider called `name`.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::builtin_provider;
///
/// assert!(builtin_provider("sim-peer").is_some());
/// assert!(builtin_provider("cuda-upload").is_none());
/// ```
pub fn builtin_provider(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS
        .iter()
        .find(|provider| provider.name == name)
}
