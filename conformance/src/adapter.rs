//! Everything a device adapter and its suite need, in one import:
//!
//! ```
//! use tenferro_transfer_conformance::adapter::*;
//! ```
//!
//! The adapter trait ([`DeviceEndpoint`]) and what its methods take and
//! return, the helpers that write its registration and staging, the
//! tenferro identities a description names, and the suite's declaration
//! ([`ProviderSuite`], [`Level`], [`Route`], [`Capabilities`], ...) with
//! `conformance_tests!`, and [`AdapterContext`] for the device's own
//! errors. docs/guide.md shows a whole adapter written against it.
//!
//! # Examples
//!
//! A destination device of one's own (here a second tenferro-cpu engine),
//! declared and run:
//!
//! ```
//! use std::sync::Arc;
//! use tenferro_cpu::CpuEngine;
//! use tenferro_transfer_conformance::adapter::*;
//!
//! #[derive(Debug)]
//! struct MyCpu {
//!     description: DeviceDescription,
//! }
//!
//! impl MyCpu {
//!     fn open() -> Result<Self, HarnessError> {
//!         let id = EngineId::new("my-vendor.cpu0.v1").adapter_context("engine id")?;
//!         let class = StorageClass::new("tenferro-cpu.host.v1").adapter_context("storage class")?;
//!         let description =
//!             DeviceDescription::new("cpu0", "my-cpu", id, class, PlacementRule::Host, StorageRule::PlainHost);
//!         Ok(Self { description })
//!     }
//!     fn cpu(&self) -> CpuEngine {
//!         CpuEngine::serial().with_runtime_engine_id(self.description.engine_id.clone())
//!     }
//! }
//!
//! impl DeviceEndpoint for MyCpu {
//!     fn describe(&self) -> DeviceDescription {
//!         self.description.clone()
//!     }
//!     fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
//!         let id = &self.description.engine_id;
//!         let stock = tenferro_cpu::runtime_engine_registration_with_id(&self.cpu(), id.clone())
//!             .adapter_context("cpu0's stock registration")?;
//!         let provider = ProviderId::new("my-vendor.cpu").adapter_context("provider id")?;
//!         let identity = ProviderDeviceIdentity::new(provider, "cpu0").adapter_context("identity")?;
//!         let hardware = tenferro_cpu::runtime_hardware_class().adapter_context("hardware class")?;
//!         self.description
//!             .registration::<CpuEngine>(role, identity, hardware, stock.capabilities().clone())
//!     }
//!     fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
//!         Ok(Box::new(self.cpu()))
//!     }
//! }
//!
//! let suite = ProviderSuite::new("host-copy", Level::V2)
//!     .route("upload", || Route::new(Endpoint::host("host")?, Endpoint::new(MyCpu::open()?)), |_| {
//!         Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
//!     })
//!     .seed(1);
//! let report = suite.run();
//! assert!(suite.check(&report, "upload", Rule::Values).is_pass(), "{}", report.to_table());
//! ```

pub use crate::prelude::*;
pub use tenferro_runtime::{
    CoreCapabilityBundle, EngineId, EngineRegistration, ExecutionEngine, HardwareClassId,
    ProviderDeviceIdentity, ProviderId, StorageClass,
};
pub use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, MemoryKind, Placement, TensorRead,
};
pub use tenferro_transfer_harness::{
    AdapterContext, AllocationLedger, Availability, Case, CompletionState, DeviceDescription,
    DeviceEndpoint, EngineRole, HarnessError, Layout, MemoryInUse, PlacementRule, ReadBack,
    StorageRule, ViewSpec, declared_ingress, reshape_only, stage_via_host,
};
