//! An example vendor crate with a device of its own, written from scratch
//! against tenferro 0.9 (no simulated device underneath):
//!
//! - [`VendorDevice`]: memory in an allocation domain of its own
//!   ([`VendorStorage`], backend family [`VENDOR_FAMILY`]) and an
//!   asynchronous copy engine, a worker thread that lands queued copies
//!   later. Until a copy lands its memory holds poison, `map_read` refuses
//!   it (`HostAccessError::GpuAccessInProgress`), and the device reports
//!   the allocation's [`CopyState`] as in flight.
//!   The device counts its memory in use ([`VendorDevice::live_allocations`],
//!   [`VendorDevice::bytes_in_use`]) as real devices do, and frees an
//!   allocation once its last tensor and the last copy into it are gone
//!   ([`VendorDevice::synchronize`] waits for those).
//! - [`VendorEngine`]: its tenferro engine, and
//!   [`VendorDevice::registration`], its runtime registration. Its reshape
//!   of a tensor whose copy has landed is metadata only: the result shares
//!   the tensor's allocation, as on a real device.
//! - [`VendorUpload`]: a correct host-to-device provider, which waits for
//!   its copy; [`EarlyReturnUpload`]: the same without the wait.
//! - [`VendorDownload`]: a correct device-to-host provider.
//! - [`CachingUpload`]: a correct upload that keeps state between calls, a
//!   caching allocator of destination blocks (the memory it keeps is
//!   reported, not a leak).
//!
//! `tests/conformance.rs` runs the conformance suite against them through
//! a device adapter of the suite's own trait (`tests/support`), and
//! `tests/side_effects.rs` against the deliberately broken providers of
//! [`broken`].

#[doc(hidden)]
pub mod broken;
mod caching;
mod copy_engine;
mod device;
mod engine;
mod error;
mod provider;
mod scalar;
mod storage;

pub use caching::{CACHED_BLOCKS, CachingUpload};
pub use copy_engine::CopyTicket;
pub use device::{
    DEFAULT_BATCH_WINDOW, VENDOR_DEVICE_KIND, VENDOR_HARDWARE_CLASS, VENDOR_PROVIDER_ID,
    VendorDevice,
};
pub use engine::VendorEngine;
pub use error::VendorError;
pub use provider::{EarlyReturnUpload, MAX_ELEMENTS, VendorDownload, VendorUpload};
pub use scalar::{DeviceScalar, read_compact};
pub use storage::{AllocationObserver, CopyState, VENDOR_FAMILY, VendorStorage};
