//! Whether CUDA can run here. A missing GPU makes the CUDA routes' device
//! an absent one, which the general availability of every endpoint turns
//! into a skip with its reason, or a failure where the settings require
//! CUDA ([`crate::Endpoint::gate`]).

use std::io::Write as _;

use crate::{HarnessError, Route};

/// Whether the settings require CUDA (`TRANSFER_CONFORMANCE_REQUIRE_CUDA=1`,
/// or `TRANSFER_CONFORMANCE_REQUIRE_DEVICES` naming `cuda` or `all`). A
/// setting the suite does not know counts as not requiring it here; the
/// run that reads the settings reports it.
pub fn cuda_required() -> bool {
    crate::Settings::current().is_ok_and(|settings| settings.require_devices.requires("cuda"))
}

/// Why CUDA cannot run here, or `None` when it can: built without the
/// `cuda` feature, no driver, or no device.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::cuda_unavailable_reason;
///
/// if let Some(reason) = cuda_unavailable_reason() {
///     println!("CUDA cases are skipped: {reason}");
/// }
/// ```
pub fn cuda_unavailable_reason() -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        crate::cuda::unavailable_reason()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Some("built without the `cuda` feature (build with `--features cuda`)".to_owned())
    }
}

/// For tests: the route when CUDA can run; `None` after printing a visible
/// `SKIP` line with the reason; the error when CUDA is required or the
/// route fails for another reason (the test then fails).
///
/// The line goes straight to the process's stderr, past libtest's output
/// capture, so `cargo test` shows it even for a test that returns early.
///
/// # Errors
///
/// Every error of `route` or of its [`gate`](Route::gate) but
/// [`HarnessError::Unavailable`].
pub fn route_or_skip(
    test: &str,
    route: Result<Route, HarnessError>,
) -> Result<Option<Route>, HarnessError> {
    match route.and_then(|route| route.gate().map(|()| route)) {
        Ok(route) => Ok(Some(route)),
        Err(HarnessError::Unavailable { reason }) => {
            announce_skip(test, &reason);
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Print `SKIP <test>: <reason>` on stderr, unbuffered and uncaptured.
pub fn announce_skip(test: &str, reason: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIP {test}: {reason}");
}

/// CUDA device `ordinal` as an endpoint: the real device where CUDA can
/// run, else an absent one ([`crate::Endpoint::absent`]) whose routes are
/// skipped with the reason, or fail where the settings require CUDA.
fn cuda_endpoint(ordinal: u32) -> Result<crate::Endpoint, HarnessError> {
    let name = format!("cuda{ordinal}");
    match cuda_unavailable_reason() {
        Some(reason) => crate::Endpoint::absent(&name, "cuda", &reason),
        #[cfg(feature = "cuda")]
        None => Ok(crate::Endpoint::new(crate::cuda::CudaEndpoint::open(
            ordinal,
        )?)),
        #[cfg(not(feature = "cuda"))]
        None => crate::Endpoint::absent(&name, "cuda", "built without the `cuda` feature"),
    }
}

impl Route {
    /// Host (tenferro-cpu) to CUDA device 0 (`host->cuda0`).
    ///
    /// Where CUDA cannot run (no feature, no driver, no device) the route
    /// is built on an absent device: its cases are skipped with the
    /// reason, or fail where the settings require CUDA.
    ///
    /// # Errors
    ///
    /// A device setup failure of a GPU that is there.
    pub fn host_to_cuda() -> Result<Self, HarnessError> {
        Self::new(crate::Endpoint::host("host")?, cuda_endpoint(0)?)
    }

    /// CUDA device 0 to host (tenferro-cpu) (`cuda0->host`).
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_cuda`].
    pub fn cuda_to_host() -> Result<Self, HarnessError> {
        Self::new(cuda_endpoint(0)?, crate::Endpoint::host("host")?)
    }
}
