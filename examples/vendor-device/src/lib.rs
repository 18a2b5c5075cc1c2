//! An example vendor crate with a device of its own, written from scratch
//! against tenferro 0.9 (no simulated device underneath):
//!
//! - [`VendorDevice`]: memory in an allocation domain of its own
//!   ([`VendorStorage`], backend family [`VENDOR_FAMILY`]) and an
//!   asynchronous copy engine, a worker thread that lands queued copies
//!   later. Until a copy lands its memory holds poison, `map_read` refuses
//!   it (`HostAccessError::GpuAccessInProgress`), and the device reports
//!   the allocation's [`CopyState`] as in flight.
//! - [`VendorEngine`]: its tenferro engine, and
//!   [`VendorDevice::registration`], its runtime registration.
//! - [`VendorUpload`]: a correct host-to-device provider, which waits for
//!   its copy; [`EarlyReturnUpload`]: the same without the wait.
//!
//! `tests/conformance.rs` runs the conformance suite against them through
//! a device adapter of the suite's own trait (`tests/support`).

mod copy_engine;
mod device;
mod engine;
mod error;
mod provider;
mod scalar;
mod storage;

pub use copy_engine::CopyTicket;
pub use device::{
    DEFAULT_BATCH_WINDOW, VENDOR_DEVICE_KIND, VENDOR_HARDWARE_CLASS, VENDOR_PROVIDER_ID,
    VendorDevice,
};
pub use engine::{EngineRole, VendorEngine};
pub use error::VendorError;
pub use provider::{EarlyReturnUpload, MAX_ELEMENTS, VendorUpload};
pub use scalar::{DeviceScalar, read_compact};
pub use storage::{AllocationObserver, CopyState, VENDOR_FAMILY, VendorStorage};
