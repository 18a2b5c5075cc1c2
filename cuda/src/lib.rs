//! CUDA as a device of the tenferro transfer conformance suite, on
//! tenferro-gpu: an adapter of the harness's `DeviceEndpoint`, written the
//! way a vendor writes one for their own device, with reference providers
//! and routes.
//!
//! `CudaEndpoint` is a device of the rig, with tenferro-gpu's own
//! `CudaEngine` registration; `CudaUpload` and `CudaDownload` are the
//! reference providers between tenferro-cpu and CUDA; `CudaEarlyReturn`
//! is the deliberately broken one that returns before its copy lands.
//! The completion check asks the runtime's stream (`cuStreamQuery`) right
//! after the provider returns. Routes come from [`CudaRoutes`]
//! (`Route::host_to_cuda`, `Route::cuda_to_host`); without a usable device
//! they are built on an absent endpoint, whose gate
//! (`Route::gate`) returns the skip (`HarnessError::Unavailable`), or the
//! failure where the settings require the device.
//!
//! Everything but the routes and [`cuda_unavailable_reason`] needs the
//! crate's feature `cuda` (tenferro-gpu, cudarc loaded at run time: it
//! builds without a CUDA toolkit and skips without a driver); without it
//! the routes skip, saying so.
//!
//! This crate holds the suite's only unsafe code: five blocks (the
//! loader probe for libcuda, three driver calls on the stream, one pinned
//! allocation for the baseline), each with its `// SAFETY:` note.
//!
//! # Examples
//!
//! The routes exist with or without the feature; without a usable device
//! they skip with the reason (`CudaEndpoint`'s documentation runs a case
//! on one that is there):
//!
//! ```
//! use tenferro_transfer_cuda::CudaRoutes;
//! use tenferro_transfer_harness::{HarnessError, Route};
//!
//! let route = Route::host_to_cuda().unwrap();
//! match route.gate() {
//!     Ok(()) => println!("{} runs here", route.label()),
//!     // No feature, no driver or no device: a skip with its reason.
//!     Err(HarnessError::Unavailable { reason }) => println!("skipped: {reason}"),
//!     // The settings require CUDA and it is not here.
//!     Err(error) => println!("{error}"),
//! }
//! ```

// No function past 80 lines of code (clippy.toml); the oracle's
// rule-by-rule checks are the allowed exception, marked where they are.
#![warn(clippy::too_many_lines)]

#[cfg(feature = "cuda")]
mod baseline;
#[cfg(feature = "cuda")]
mod endpoint;
#[cfg(feature = "cuda")]
mod error;
#[cfg(feature = "cuda")]
mod providers;
#[cfg(feature = "cuda")]
mod round_trip;
mod routes;
#[cfg(feature = "cuda")]
mod stream;

#[cfg(feature = "cuda")]
pub use baseline::{Direction, HostMemory, RawCopies};
#[cfg(feature = "cuda")]
pub use endpoint::{CUDA_FAMILY, CudaEndpoint};
#[cfg(feature = "cuda")]
pub use error::CudaError;
#[cfg(feature = "cuda")]
pub use providers::{CudaDownload, CudaEarlyReturn, CudaUpload, EARLY_RETURN_HOLD};
#[cfg(feature = "cuda")]
pub use round_trip::{RoundTripOutcome, round_trip};
pub use routes::{CudaRoutes, REQUIRE_CUDA_ENV, cuda_required, cuda_unavailable_reason};

/// Why no CUDA device can be used, or `None` when one can: no driver
/// (libcuda cannot be loaded) or no device. Probed without opening anything,
/// since tenferro-gpu panics where libcuda is missing.
#[cfg(feature = "cuda")]
pub(crate) fn unavailable_reason() -> Option<String> {
    if !driver_present() {
        return Some("no CUDA driver: libcuda could not be loaded".to_owned());
    }
    if !tenferro_gpu::cuda::gpu_available() {
        return Some("no CUDA device: the driver reports no usable device".to_owned());
    }
    None
}

#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
fn driver_present() -> bool {
    // SAFETY: this only asks the dynamic loader whether libcuda can be
    // opened; it calls nothing inside the library.
    unsafe { tenferro_gpu::cuda::cudarc::driver::sys::is_culib_present() }
}
