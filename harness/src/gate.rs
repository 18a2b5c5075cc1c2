//! Whether CUDA can run here, and what a missing GPU turns into: a skip
//! with its reason, or a failure where the user demands CUDA.

use std::io::Write as _;

use crate::{HarnessError, Route};

/// Set to `1` to turn every CUDA skip (no feature, no driver, no device)
/// into a failure.
pub const REQUIRE_CUDA_ENV: &str = "TRANSFER_CONFORMANCE_REQUIRE_CUDA";

/// Whether [`REQUIRE_CUDA_ENV`] is `1`.
pub fn cuda_required() -> bool {
    std::env::var(REQUIRE_CUDA_ENV).is_ok_and(|value| value.trim() == "1")
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

/// `Ok` when CUDA can run; otherwise [`HarnessError::Unavailable`] (a skip)
/// or, where [`REQUIRE_CUDA_ENV`] is `1`, [`HarnessError::CudaRequired`].
///
/// # Errors
///
/// As above.
pub fn cuda_gate() -> Result<(), HarnessError> {
    match cuda_unavailable_reason() {
        None => Ok(()),
        Some(reason) if cuda_required() => Err(HarnessError::CudaRequired { reason }),
        Some(reason) => Err(HarnessError::Unavailable { reason }),
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
/// Every error of `route` but [`HarnessError::Unavailable`].
pub fn route_or_skip(
    test: &str,
    route: Result<Route, HarnessError>,
) -> Result<Option<Route>, HarnessError> {
    match route {
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

impl Route {
    /// Host (tenferro-cpu) to CUDA device 0 (`host->cuda0`).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Unavailable`] without a usable device (a skip),
    /// [`HarnessError::CudaRequired`] then where [`REQUIRE_CUDA_ENV`] is `1`,
    /// or a device setup failure.
    pub fn host_to_cuda() -> Result<Self, HarnessError> {
        cuda_gate()?;
        #[cfg(feature = "cuda")]
        {
            Self::new(
                crate::Endpoint::host("host")?,
                crate::Endpoint::new(crate::cuda::CudaEndpoint::open(0)?),
            )
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(HarnessError::Unavailable {
                reason: "built without the `cuda` feature".to_owned(),
            })
        }
    }

    /// CUDA device 0 to host (tenferro-cpu) (`cuda0->host`).
    ///
    /// # Errors
    ///
    /// As [`Route::host_to_cuda`].
    pub fn cuda_to_host() -> Result<Self, HarnessError> {
        cuda_gate()?;
        #[cfg(feature = "cuda")]
        {
            Self::new(
                crate::Endpoint::new(crate::cuda::CudaEndpoint::open(0)?),
                crate::Endpoint::host("host")?,
            )
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(HarnessError::Unavailable {
                reason: "built without the `cuda` feature".to_owned(),
            })
        }
    }
}
