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

// The layers, lowest first; each imports only those below it (the
// crate's root holds the errors and the settings every layer reads).
mod device;
mod draw;
mod error;
mod judge;
mod run;
pub mod settings;
mod values;

pub use draw::strategy;
pub use run::{hold, trace};

// The errors, and the settings every layer reads.
pub use error::{AdapterContext, HarnessError, describe_error, panic_message, source_chain};
pub use settings::{
    DEFAULT_PLAN_LIMIT, REQUIRE_DEVICES_ENV, REQUIRE_KIND_ENV, RequiredDevices, SettingDoc,
    Settings, SettingsError, require_kind_env,
};

// values: what a case is.
pub use values::case::{Case, Filler, MAX_BACKING_ELEMENTS};
pub use values::compact::{
    compact_strides, gather, is_compact, read_compact, read_view, strided_positions,
};
pub use values::compared::{Compared, compare_as_read};
pub use values::element::{Element, PRESET_DTYPES, element_width};
pub use values::equal_as_numbers::{NEGATIVE_ZEROS, OTHER_NAN_PAYLOAD, WITH_NANS};
pub use values::layout::{Layout, ViewAxis, ViewSpec};
pub use values::runs::{RUN_LENGTHS, RUNS_ELEMENTS};

// device: the device adapter API.
pub use device::absent::device_required;
pub use device::completion::CompletionState;
pub use device::description::DeviceDescription;
pub use device::device_error::DeviceError;
pub use device::endpoint::{
    Availability, DEFERRED_READ_STALL, DeviceEndpoint, EngineRole, QUEUE_STALL, ReadBack,
    stage_via_host,
};
pub use device::host::adapter::{
    CPU_STORAGE_CLASS, HOST_PROVIDER_ID, HostEndpoint, HostMemoryDomain,
};
pub use device::host::provider::HostProvider;
pub use device::ledger::{Allocation, AllocationLedger, LedgerMark};
pub use device::memory::{MemoryGrowth, MemoryInUse};
pub use device::registration::{declared_ingress, reregister, reshape_only};
pub use device::route::{PlacementRule, Route, StorageRule};
pub use device::side::Endpoint;
pub use device::skip::{announce_skip, route_or_skip};

// run: running a case.
pub use run::accounting::{KeptMemory, Leak, PhaseEvidence, PhaseMemory};
pub use run::effects::{ChangedOutput, HeldOutputs, InputBefore, InputReads};
pub use run::outcome::{
    ContractVariant, LeakCheck, LeakedAllocation, Outcome, RuntimeOutput, RuntimeVerdict,
};
pub use run::rig::{HOLD_RECENT, HOLD_SAME_SIZE, Rig};
pub use run::spy::{ProviderResult, RequestRecord, ReturnedTensor, Spy, SpyRecord, StoragePanic};
pub use run::trace::{Trace, TraceEvent};
pub use run::watchdog::{DEFAULT_DEADLINE, RouteDeadline, Watchdog};

// judge: judging it.
pub use judge::judgement::{Judgement, Unchecked, Violation};
pub use judge::oracle::{INSIDE_CAPABILITIES, Oracle, abandoned_reason, not_reached_reason};
pub use judge::rule::{RUNTIME_ORDER, Rule, UnknownRule};

// draw: drawing cases.
#[cfg(feature = "arbitrary")]
pub use draw::arbitrary_impls::FUZZ_PROFILE;
pub use draw::honesty::{
    CapabilityGate, MAX_EXCEEDED_BYTES, MAX_EXCEEDED_ELEMENTS, MAX_EXCEEDED_RANK, OutsideCase,
};

/// What [`with_element!`] expands to names; an implementation detail.
#[doc(hidden)]
pub mod reexports {
    pub use tenferro_tensor::{Complex, DType};
}
