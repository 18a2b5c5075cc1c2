//! Real CUDA endpoints and providers on tenferro-gpu (feature `cuda`).
//!
//! [`CudaEndpoint`] is a device of the rig, with tenferro-gpu's own
//! `CudaEngine` registration; [`CudaUpload`] and [`CudaDownload`] are the
//! reference providers between tenferro-cpu and CUDA; [`CudaEarlyReturn`]
//! is the deliberately broken one that returns before its copy lands.
//! The completion check asks the runtime's stream (`cuStreamQuery`) right
//! after the provider returns. Routes come from [`crate::Route::host_to_cuda`]
//! and [`crate::Route::cuda_to_host`]; without a usable device they are
//! built on an absent endpoint, whose gate ([`crate::Route::gate`]) returns
//! the skip ([`crate::HarnessError::Unavailable`]), or the failure where
//! the settings require the device.
//!
//! This module holds the harness's only unsafe code: five blocks (the
//! loader probe for libcuda, three driver calls on the stream, one pinned
//! allocation for the baseline), each with its `// SAFETY:` note.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use tenferro_transfer_harness::cuda::{CudaEndpoint, CudaUpload};
//! use tenferro_transfer_harness::{Case, HarnessError, Layout, Oracle, Rig, Route};
//! use tenferro_tensor::DType;
//!
//! match Route::host_to_cuda().and_then(|route| route.gate().map(|()| route)) {
//!     Ok(route) => {
//!         let device = route.destination().downcast::<CudaEndpoint>().unwrap().clone();
//!         let mut rig = Rig::new(route.clone(), Arc::new(CudaUpload::new(device))).unwrap();
//!         let case = Case::patterned(DType::F32, vec![3, 5], Layout::Owned).unwrap();
//!         assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
//!     }
//!     // No driver or no device: a skip with its reason, never a pass.
//!     Err(HarnessError::Unavailable { reason }) => println!("skipped: {reason}"),
//!     Err(error) => panic!("{error}"),
//! }
//! ```

mod baseline;
mod endpoint;
mod error;
mod providers;
mod round_trip;
mod stream;

pub use baseline::{Direction, HostMemory, RawCopies};
pub use endpoint::{CUDA_FAMILY, CudaEndpoint};
pub use error::CudaError;
pub use providers::{CudaDownload, CudaEarlyReturn, CudaUpload, EARLY_RETURN_HOLD};
pub use round_trip::{RoundTripOutcome, round_trip};

/// Why no CUDA device can be used, or `None` when one can: no driver
/// (libcuda cannot be loaded) or no device. Probed without opening anything,
/// since tenferro-gpu panics where libcuda is missing.
pub(crate) fn unavailable_reason() -> Option<String> {
    if !driver_present() {
        return Some("no CUDA driver: libcuda could not be loaded".to_owned());
    }
    if !tenferro_gpu::cuda::gpu_available() {
        return Some("no CUDA device: the driver reports no usable device".to_owned());
    }
    None
}

#[allow(unsafe_code)]
fn driver_present() -> bool {
    // SAFETY: this only asks the dynamic loader whether libcuda can be
    // opened; it calls nothing inside the library.
    unsafe { tenferro_gpu::cuda::cudarc::driver::sys::is_culib_present() }
}
