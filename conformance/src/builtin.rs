//! The built-in providers and the routes they serve.

use std::sync::Arc;
use tenferro_mock_devices::SimRoutes;
use tenferro_transfer_cuda::CudaRoutes;

use tenferro_mock_devices::{SimDevice, SimDownload, SimPeer, SimUpload};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::{Endpoint, HarnessError, HostEndpoint, HostProvider, Route, Rule};

/// The CUDA device of an endpoint, when it is one.
#[cfg(feature = "cuda")]
fn cuda(endpoint: &Endpoint) -> Option<tenferro_transfer_cuda::CudaEndpoint> {
    endpoint
        .downcast::<tenferro_transfer_cuda::CudaEndpoint>()
        .cloned()
}

/// A built-in provider: its name, its route, and how to make it for that
/// route.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinProvider {
    /// Name used on the command line and in reports.
    pub name: &'static str,
    /// What it does, in a few words.
    pub summary: &'static str,
    /// Its route's label, known even where the route cannot be built (a
    /// skipped CUDA route still names its row).
    pub route_label: &'static str,
    route: fn() -> Result<Route, HarnessError>,
}

impl BuiltinProvider {
    /// A fresh route for this provider, gated ([`Route::gate`]).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Unavailable`] (a skip) where a device of the route
    /// is absent, [`HarnessError::DeviceRequired`] (a failure) where the
    /// settings require it, or the harness's error if a device or endpoint
    /// cannot be set up.
    pub fn route(&self) -> Result<Route, HarnessError> {
        let route = (self.route)()?;
        route.gate()?;
        Ok(route)
    }

    /// This provider declared as a vendor's crate declares its own: a
    /// [`ProviderSuite`](crate::ProviderSuite) pinned to `Level::V1`, with
    /// one route named after the provider (`sim-upload` becomes
    /// `sim_upload`) and every capability declared. Its run goes through
    /// the same runner, records and rule checks as a vendor's.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::{builtin_provider, harness::Rule};
    ///
    /// let builtin = builtin_provider("sim-peer").unwrap();
    /// let suite = builtin.suite().seed(1);
    /// let report = suite.run();
    /// assert!(suite.check(&report, "sim_peer", Rule::Values).is_pass());
    /// ```
    pub fn suite(&self) -> crate::ProviderSuite {
        let builtin = *self;
        crate::ProviderSuite::new(self.name, crate::Level::V1).route(
            &self.name.replace('-', "_"),
            // Ungated: the suite gates every declared route, once.
            move || (builtin.route)(),
            move |route| builtin.provider(route).map_err(Into::into),
        )
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
        let sim = |endpoint: &Endpoint| endpoint.downcast::<SimDevice>().cloned();
        let host = |endpoint: &Endpoint| endpoint.downcast::<HostEndpoint>().is_some();
        let (source, destination) = (route.source(), route.destination());
        Ok(match self.name {
            "sim-upload" if host(source) => {
                Arc::new(SimUpload::new(sim(destination).ok_or_else(wrong)?))
            }
            "sim-download" if host(destination) => {
                Arc::new(SimDownload::new(sim(source).ok_or_else(wrong)?))
            }
            "sim-peer" => Arc::new(SimPeer::new(
                sim(source).ok_or_else(wrong)?,
                sim(destination).ok_or_else(wrong)?,
            )),
            "host" if host(source) && host(destination) => Arc::new(HostProvider::new()),
            #[cfg(feature = "cuda")]
            "cuda-upload" if host(source) => Arc::new(tenferro_transfer_cuda::CudaUpload::new(
                cuda(destination).ok_or_else(wrong)?,
            )),
            #[cfg(feature = "cuda")]
            "cuda-download" if host(destination) => Arc::new(
                tenferro_transfer_cuda::CudaDownload::new(cuda(source).ok_or_else(wrong)?),
            ),
            _ => return Err(wrong()),
        })
    }

    /// The deliberately broken providers of this provider's own kind that
    /// the self-test runs on `route`, besides the generic faults (for
    /// `cuda-upload`: `cuda-early-return`).
    pub fn native_broken(&self, route: &Route) -> Vec<NativeBroken> {
        #[cfg(feature = "cuda")]
        if let ("cuda-upload", Some(device)) = (self.name, cuda(route.destination())) {
            return vec![NativeBroken {
                name: "cuda-early-return",
                expected: vec![Rule::Completion],
                provider: Arc::new(tenferro_transfer_cuda::CudaEarlyReturn::new(device)),
            }];
        }
        // Only CUDA routes have broken providers of their own so far.
        let _ = route;
        Vec::new()
    }
}

/// A deliberately broken provider that only makes sense on one kind of
/// route (it breaks the contract through that device's own API).
#[derive(Clone, Debug)]
pub struct NativeBroken {
    /// Name in the kill matrix.
    pub name: &'static str,
    /// Exactly the rules that must catch it, on every case.
    pub expected: Vec<Rule>,
    /// The provider.
    pub provider: Arc<dyn TransferProvider>,
}

/// Every built-in provider, one per route: host to sim, sim to host, sim to
/// sim, host to host.
pub const BUILTIN_PROVIDERS: [BuiltinProvider; 4] = [
    BuiltinProvider {
        name: "sim-upload",
        summary: "host (tenferro-cpu) to a simulated device",
        route_label: "host->sim0",
        route: Route::host_to_sim,
    },
    BuiltinProvider {
        name: "sim-download",
        summary: "a simulated device to host (tenferro-cpu)",
        route_label: "sim0->host",
        route: Route::sim_to_host,
    },
    BuiltinProvider {
        name: "sim-peer",
        summary: "one simulated device to another",
        route_label: "sim0->sim1",
        route: Route::sim_to_sim,
    },
    BuiltinProvider {
        name: "host",
        summary: "a host engine with its own allocation domain to plain host (tenferro-cpu)",
        route_label: "host-src->host",
        route: Route::managed_to_host,
    },
];

/// The built-in CUDA providers, on CUDA device 0 through tenferro-gpu.
/// Always listed: without the `cuda` feature, a driver or a device their
/// routes return [`HarnessError::Unavailable`], and their cases are
/// reported as skipped with that reason.
pub const CUDA_PROVIDERS: [BuiltinProvider; 2] = [
    BuiltinProvider {
        name: "cuda-upload",
        summary: "host (tenferro-cpu) to CUDA device 0 (tenferro-gpu upload, then synchronize)",
        route_label: "host->cuda0",
        route: Route::host_to_cuda,
    },
    BuiltinProvider {
        name: "cuda-download",
        summary: "CUDA device 0 to host (tenferro-gpu download)",
        route_label: "cuda0->host",
        route: Route::cuda_to_host,
    },
];

/// Every built-in provider: the simulated and host ones, then the CUDA ones.
pub fn all_builtin_providers() -> Vec<BuiltinProvider> {
    BUILTIN_PROVIDERS
        .iter()
        .chain(&CUDA_PROVIDERS)
        .copied()
        .collect()
}

/// The built-in provider called `name`.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::builtin_provider;
///
/// assert!(builtin_provider("sim-peer").is_some());
/// assert!(builtin_provider("cuda-upload").is_some());
/// assert!(builtin_provider("rocm-upload").is_none());
/// ```
pub fn builtin_provider(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS
        .iter()
        .chain(&CUDA_PROVIDERS)
        .find(|provider| provider.name == name)
}
