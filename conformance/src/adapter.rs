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
//! The [crate's front page](crate#examples) declares a device of one's
//! own with it and runs the suite over it.

pub use crate::prelude::*;
pub use tenferro_runtime::{
    CoreCapabilityBundle, EngineId, EngineRegistration, ExecutionEngine, HardwareClassId,
    ProviderDeviceIdentity, ProviderId, StorageClass,
};
pub use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, MemoryKind, Placement, TensorRead, TensorView,
};
pub use tenferro_transfer_harness::{
    AdapterContext, AllocationLedger, Availability, Case, CompletionState, DeviceDescription,
    DeviceEndpoint, Element, EngineRole, HarnessError, Layout, MemoryInUse, PlacementRule,
    ReadBack, StorageRule, ViewSpec, declared_ingress, read_compact, reshape_only, stage_via_host,
    with_element,
};
