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
//! use tenferro_transfer_harness::{Case, HostProvider, Layout, Oracle, Rig, Route};
//! use tenferro_tensor::DType;
//!
//! let route = Route::host_to_host().unwrap();
//! let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
//! let case = Case::patterned(DType::C64, vec![3, 5], Layout::Owned).unwrap();
//! assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
//! ```

// No function past 80 lines of code (clippy.toml); the oracle's
// rule-by-rule checks are the allowed exception, marked where they are.
#![warn(clippy::too_many_lines)]

mod absent;
mod accounting;
mod adapters;
#[cfg(feature = "arbitrary")]
mod arbitrary_impls;
mod capabilities;
mod case;
mod compact;
mod completion;
mod description;
mod device_error;
mod effects;
mod element;
mod endpoint;
mod error;
pub mod hold;
mod honesty;
mod host;
mod image_diff;
mod judgement;
mod ledger;
mod oracle;
mod outcome;
mod registration;
mod rig;
mod route;
mod rule;
pub mod settings;
mod skip;
mod special_values;
mod spy;
mod stage;
pub mod strategy;
pub mod trace;
mod watchdog;

pub use absent::device_required;
pub use accounting::{KeptMemory, Leak, MemoryGrowth, MemoryInUse, PhaseMemory};
pub use adapters::host::{CPU_STORAGE_CLASS, HOST_PROVIDER_ID, HostEndpoint, HostMemoryDomain};
#[cfg(feature = "arbitrary")]
pub use arbitrary_impls::FUZZ_PROFILE;
pub use case::{Case, Filler, Layout, MAX_BACKING_ELEMENTS, ViewAxis, ViewSpec};
pub use compact::{
    compact_strides, gather, is_compact, read_compact, read_view, strided_positions,
};
pub use completion::CompletionState;
pub use description::DeviceDescription;
pub use device_error::DeviceError;
pub use effects::{ChangedOutput, HeldOutputs, InputReads};
pub use element::{Element, PRESET_DTYPES, element_width};
pub use endpoint::{Availability, DeviceEndpoint, Endpoint, EngineRole, ReadBack, stage_via_host};
pub use error::{AdapterContext, HarnessError, describe_error};
pub use honesty::{
    CapabilityGate, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS, MAX_EXCEEDED_RANK, OutsideCase,
};
pub use host::HostProvider;
pub use judgement::{Judgement, Unchecked, Violation};
pub use ledger::{Allocation, AllocationLedger, LedgerMark};
pub use oracle::{INSIDE_CAPABILITIES, Oracle, abandoned_reason, not_reached_reason};
pub use outcome::{
    ContractVariant, LeakCheck, LeakedAllocation, Outcome, RuntimeOutput, RuntimeVerdict,
};
pub use registration::{declared_ingress, reregister, reshape_only};
pub use rig::{HOLD_RECENT, Rig};
pub use route::{PlacementRule, Route, StorageRule};
pub use rule::{RUNTIME_ORDER, Rule, UnknownRule};
pub use settings::{
    REQUIRE_DEVICES_ENV, REQUIRE_KIND_ENV, RequiredDevices, SettingDoc, Settings, SettingsError,
    require_kind_env,
};
pub use skip::{announce_skip, route_or_skip};
pub use spy::{
    ProviderResult, RequestRecord, ReturnedTensor, Spy, SpyRecord, StoragePanic, panic_message,
    source_chain,
};
pub use trace::{Trace, TraceEvent};
pub use watchdog::{DEFAULT_DEADLINE, RouteDeadline, Watchdog};

/// What [`with_element!`] expands to names; an implementation detail.
#[doc(hidden)]
pub mod reexports {
    pub use tenferro_tensor::{Complex, DType};
}
