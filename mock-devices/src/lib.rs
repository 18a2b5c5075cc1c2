//! Simulated devices for testing tenferro transfer providers without
//! hardware: [`SimDevice`] (identities, allocation domain, placement, fault
//! plan), [`SimStorage`] (device memory that a pending copy poisons and
//! locks), [`SimStream`] (queued copies that complete late), the executable
//! [`SimEngine`] with its own event domain, and reference providers
//! [`SimUpload`], [`SimDownload`] and [`SimPeer`].
//!
//! # Examples
//!
//! ```
//! use tenferro_mock_devices::{read_compact, SimDevice};
//! use tenferro_tensor::TensorRead;
//!
//! let device = SimDevice::new(0).unwrap();
//! let tensor = device.tensor(vec![3], vec![1.0_f32, f32::NAN, -0.0]).unwrap();
//! let values = read_compact::<f32>(&TensorRead::from_tensor(&tensor)).unwrap();
//! assert_eq!(values[2].to_bits(), (-0.0_f32).to_bits());
//! ```

mod adapter;
#[cfg(feature = "arbitrary")]
mod arbitrary_impls;
mod clock;
mod copy_state;
mod device;
mod engine;
mod error;
mod event_domain;
mod fault;
mod host_domain;
pub mod providers;
mod registration;
mod routes;
mod storage;
mod stream;

#[cfg(feature = "arbitrary")]
pub use arbitrary_impls::MAX_FUZZ_SPIKE;
pub use copy_state::{CompletionMode, CopyToken, StorageCompletion};
pub use device::{
    Accounting, Kernels, SIM_DEVICE_KIND, SIM_FAMILY, SIM_HARDWARE_CLASS, SIM_PROVIDER_ID,
    SimDevice,
};
pub use engine::SimEngine;
pub use error::MockError;
pub use event_domain::SimEventDomainDriver;
pub use fault::FaultPlan;
pub use host_domain::{HOST_DOMAIN_FAMILY, HostDomain};
pub use providers::{SimDownload, SimPeer, SimUpload};
pub use routes::SimRoutes;
pub use storage::SimStorage;
pub use stream::{SimStream, sim_storage_of};
// The vocabulary the harness owns and these devices speak, as a vendor's
// device does: elements, layouts, traces, ledgers, device errors and
// engine roles.
pub use tenferro_transfer_harness::trace::current_launch_domain;
pub use tenferro_transfer_harness::{
    Allocation, AllocationLedger, DeviceError, Element, EngineRole, PRESET_DTYPES, Trace,
    TraceEvent, compact_strides, element_width, gather, hold, is_compact, read_compact, read_view,
    strided_positions, trace, with_element,
};
