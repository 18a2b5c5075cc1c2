//! The rig that runs a tenferro `TransferProvider` through the real
//! `Runtime`, the Spy that watches it, and the Oracle that judges it.
//!
//! A [`Case`] is staged on the source of a [`Route`]; a [`Rig`] runs it
//! through a runtime whose only plan moves the input through the provider
//! under test, wrapped in a [`Spy`]; the [`Outcome`] holds the runtime's
//! verdict and the Spy's record; the [`Oracle`] checks every [`Rule`] on
//! its own and returns every [`Violation`].
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use tenferro_mock_devices::{SimDevice, SimDownload};
//! use tenferro_transfer_harness::{Case, Oracle, Rig, Route};
//! use tenferro_tensor::DType;
//!
//! let route = Route::sim_to_host().unwrap();
//! let device = route.source().downcast::<SimDevice>().unwrap().clone();
//! let mut rig = Rig::new(route.clone(), Arc::new(SimDownload::new(device))).unwrap();
//! let case = Case::patterned(DType::C64, vec![3, 5], tenferro_transfer_harness::Layout::Owned).unwrap();
//! assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
//! ```

mod accounting;
mod adapters;
#[cfg(feature = "arbitrary")]
mod arbitrary_impls;
mod capabilities;
mod case;
mod completion;
#[cfg(feature = "cuda")]
pub mod cuda;
mod effects;
mod endpoint;
mod error;
mod gate;
mod honesty;
mod host;
mod oracle;
mod outcome;
mod rig;
mod route;
mod rule;
pub mod settings;
mod special_values;
mod spy;
mod stage;
pub mod strategy;
mod watchdog;

pub use accounting::{Leak, MemoryGrowth, MemoryInUse, PhaseMemory};
pub use adapters::host::{CPU_STORAGE_CLASS, HOST_PROVIDER_ID, HostEndpoint};
#[cfg(feature = "arbitrary")]
pub use arbitrary_impls::FUZZ_PROFILE;
pub use case::{Case, Filler, Layout, MAX_BACKING_ELEMENTS, ViewAxis, ViewSpec};
pub use completion::CompletionState;
pub use effects::{ChangedOutput, HeldOutputs, InputReads};
pub use endpoint::{
    Availability, DeviceEndpoint, Endpoint, ReadBack, declared_ingress, device_required,
    stage_via_host,
};
pub use error::{HarnessError, describe_error};
pub use gate::{announce_skip, cuda_required, cuda_unavailable_reason, route_or_skip};
pub use honesty::{
    CapabilityGate, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS, MAX_EXCEEDED_RANK, OutsideCase,
};
pub use host::{HOST_DOMAIN_FAMILY, HostDomain, HostProvider};
pub use oracle::{INSIDE_CAPABILITIES, Judgement, Oracle, Unchecked, Violation, abandoned_reason};
pub use outcome::{
    ContractVariant, LeakCheck, LeakedAllocation, Outcome, RuntimeOutput, RuntimeVerdict,
};
pub use rig::Rig;
pub use route::{PlacementRule, Route, StorageRule};
pub use rule::{RUNTIME_ORDER, Rule, UnknownRule};
pub use settings::{
    REQUIRE_CUDA_ENV, REQUIRE_DEVICES_ENV, RequiredDevices, SettingDoc, Settings, SettingsError,
};
pub use spy::{
    ProviderResult, RequestRecord, ReturnedTensor, Spy, SpyRecord, StoragePanic, panic_message,
    source_chain,
};
pub use tenferro_mock_devices::{AllocationLedger, EngineRole};
pub use watchdog::{DEFAULT_DEADLINE, RouteDeadline, Watchdog};
