//! Whether CUDA can run here, and the CUDA routes. A missing GPU makes the
//! routes' device an absent one, which the general availability of every
//! endpoint turns into a skip with its reason, or a failure where the
//! settings require CUDA ([`Route::gate`]).

use tenferro_transfer_harness::{Endpoint, HarnessError, Route, Settings};

/// `TRANSFER_CONFORMANCE_REQUIRE_CUDA`: `1` requires CUDA, a missing GPU
/// failing every case of the CUDA routes instead of skipping them. It is
/// the harness's alias of `TRANSFER_CONFORMANCE_REQUIRE_DEVICES=cuda`, as
/// every device kind has one
/// ([`REQUIRE_KIND_ENV`](tenferro_transfer_harness::REQUIRE_KIND_ENV)).
///
/// # Examples
///
/// ```
/// use tenferro_transfer_cuda::REQUIRE_CUDA_ENV;
/// use tenferro_transfer_harness::require_kind_env;
///
/// assert_eq!(REQUIRE_CUDA_ENV, require_kind_env("cuda"));
/// ```
pub const REQUIRE_CUDA_ENV: &str = "TRANSFER_CONFORMANCE_REQUIRE_CUDA";

/// Whether the settings require CUDA (`TRANSFER_CONFORMANCE_REQUIRE_CUDA=1`,
/// or `TRANSFER_CONFORMANCE_REQUIRE_DEVICES` naming `cuda` or `all`). A
/// setting the suite does not know counts as not requiring it here; the
/// run that reads the settings reports it.
pub fn cuda_required() -> bool {
    Settings::current().is_ok_and(|settings| settings.require_devices.requires("cuda"))
}

/// Why CUDA cannot run here, or `None` when it can: built without the
/// `cuda` feature, no driver, or no device.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_cuda::cuda_unavailable_reason;
///
/// if let Some(reason) = cuda_unavailable_reason() {
///     println!("CUDA cases are skipped: {reason}");
/// }
/// ```
pub fn cuda_unavailable_reason() -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        crate::unavailable_reason()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Some("built without the `cuda` feature (build with `--features cuda`)".to_owned())
    }
}

/// CUDA device `ordinal` as an endpoint: the real device where CUDA can
/// run, else an absent one ([`Endpoint::absent`]) whose routes are
/// skipped with the reason, or fail where the settings require CUDA.
fn cuda_endpoint(ordinal: u32) -> Result<Endpoint, HarnessError> {
    let name = format!("cuda{ordinal}");
    match cuda_unavailable_reason() {
        Some(reason) => Endpoint::absent(&name, "cuda", &reason),
        #[cfg(feature = "cuda")]
        None => Ok(Endpoint::new(crate::CudaEndpoint::open(ordinal)?)),
        #[cfg(not(feature = "cuda"))]
        None => Endpoint::absent(&name, "cuda", "built without the `cuda` feature"),
    }
}

/// The CUDA routes, as constructors of [`Route`] (`Route::host_to_cuda`),
/// the way `SimRoutes` gives the simulated ones: in scope through the
/// conformance crate's prelude.
pub trait CudaRoutes: Sized {
    /// Host (tenferro-cpu) to CUDA device 0 (`host->cuda0`).
    ///
    /// Where CUDA cannot run (no feature, no driver, no device) the route
    /// is built on an absent device: its cases are skipped with the
    /// reason, or fail where the settings require CUDA.
    ///
    /// # Errors
    ///
    /// A device setup failure of a GPU that is there.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_cuda::CudaRoutes;
    /// use tenferro_transfer_harness::Route;
    ///
    /// let route = Route::host_to_cuda().unwrap();
    /// assert_eq!(route.label(), "host->cuda0");
    /// ```
    fn host_to_cuda() -> Result<Self, HarnessError>;

    /// CUDA device 0 to host (tenferro-cpu) (`cuda0->host`).
    ///
    /// # Errors
    ///
    /// As [`CudaRoutes::host_to_cuda`].
    fn cuda_to_host() -> Result<Self, HarnessError>;
}

impl CudaRoutes for Route {
    fn host_to_cuda() -> Result<Self, HarnessError> {
        Route::new(Endpoint::host("host")?, cuda_endpoint(0)?)
    }

    fn cuda_to_host() -> Result<Self, HarnessError> {
        Route::new(cuda_endpoint(0)?, Endpoint::host("host")?)
    }
}
