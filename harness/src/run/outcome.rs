//! `Outcome`: what one case did: the runtime's verdict and the Spy's record.

use std::fmt;
use std::time::Duration;

use crate::{Allocation, TraceEvent};
use serde::Serialize;
use tenferro_runtime::{EventDomainId, TransferProviderContractError};
use tenferro_tensor::DType;

use crate::source_chain;
use crate::{ProviderResult, SpyRecord};

/// The runtime's own contract check that fired, by
/// `TransferProviderContractError` variant.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContractVariant {
    /// `DTypeMismatch`.
    DTypeMismatch,
    /// `ShapeMismatch`.
    ShapeMismatch,
    /// `InvalidBufferLength`.
    InvalidBufferLength,
    /// `DestinationPlacementMismatch`.
    DestinationPlacementMismatch,
    /// `DestinationResidencyMismatch`.
    DestinationResidencyMismatch,
    /// `LogicalElementCount`.
    LogicalElementCount,
    /// A variant this harness does not know yet (tenferro grew one).
    Unknown(String),
}

impl ContractVariant {
    /// Classify a runtime contract error.
    pub fn of(error: &TransferProviderContractError) -> Self {
        match error {
            TransferProviderContractError::DTypeMismatch { .. } => Self::DTypeMismatch,
            TransferProviderContractError::ShapeMismatch { .. } => Self::ShapeMismatch,
            TransferProviderContractError::InvalidBufferLength { .. } => Self::InvalidBufferLength,
            TransferProviderContractError::DestinationPlacementMismatch { .. } => {
                Self::DestinationPlacementMismatch
            }
            TransferProviderContractError::DestinationResidencyMismatch { .. } => {
                Self::DestinationResidencyMismatch
            }
            TransferProviderContractError::LogicalElementCount { .. } => Self::LogicalElementCount,
            other => Self::Unknown(format!("{other:?}")),
        }
    }

    /// The variant's name as tenferro spells it.
    pub fn name(&self) -> &str {
        match self {
            Self::DTypeMismatch => "DTypeMismatch",
            Self::ShapeMismatch => "ShapeMismatch",
            Self::InvalidBufferLength => "InvalidBufferLength",
            Self::DestinationPlacementMismatch => "DestinationPlacementMismatch",
            Self::DestinationResidencyMismatch => "DestinationResidencyMismatch",
            Self::LogicalElementCount => "LogicalElementCount",
            Self::Unknown(debug) => debug,
        }
    }
}

impl fmt::Display for ContractVariant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What the runtime's output tensor held after the destination consumed the
/// transfer.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeOutput {
    /// Output dtype.
    pub dtype: DType,
    /// Output shape.
    pub shape: Vec<usize>,
    /// The logical values, compared as they were read with the case's:
    /// `Same`, or their little-endian image where they differ, or why they
    /// could not be read.
    pub bytes: crate::Compared,
}

/// How `Runtime::run` ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RuntimeVerdict {
    /// The runtime accepted the transfer and the program ran.
    Accepted(RuntimeOutput),
    /// The runtime rejected the provider's output.
    ContractError {
        /// Which check fired.
        variant: ContractVariant,
        /// Display of the contract error.
        message: String,
        /// Debug of the contract error.
        debug: String,
    },
    /// The provider returned `Err` and the runtime passed it through.
    ProviderError {
        /// The error's Display.
        message: String,
        /// Its source chain.
        chain: Vec<String>,
    },
    /// The provider panicked (caught by the Spy).
    ProviderPanicked {
        /// The panic message.
        message: String,
    },
    /// The run did not finish before the watchdog's deadline.
    TimedOut {
        /// The deadline.
        limit: Duration,
    },
    /// The run did not finish within the short deadline a route's later
    /// cases get once its provider has hung ([`crate::RouteDeadline`]):
    /// not proven to hang, so not judged.
    Abandoned {
        /// The short deadline.
        limit: Duration,
        /// The case the provider first hung on, in words.
        hung_on: String,
    },
    /// The run moved several inputs and stopped at an earlier one's
    /// transfer ([`crate::Rig::run_together`]), before this input moved:
    /// nothing of it to judge.
    NotReached {
        /// The input the run stopped at, in words.
        stopped_at: String,
    },
    /// A panic escaped `Runtime::run` after the provider had returned its
    /// tensor: in a call the runtime or the destination engine made into
    /// the returned storage (`len`, `map_read`, its `Drop`, ...), or in the
    /// destination engine's handling of it. The runtime's own verdict on
    /// the output is lost with the unwind.
    Unwound {
        /// The panic message.
        message: String,
    },
    /// The run failed for another reason.
    Other {
        /// The error's Display.
        message: String,
        /// Its source chain.
        chain: Vec<String>,
    },
}

impl RuntimeVerdict {
    /// Classify the result of `Runtime::run`, with the Spy's last record to
    /// tell a provider's own error from the runtime's.
    pub(crate) fn classify(error: &tenferro_runtime::Error, last_call: Option<&SpyRecord>) -> Self {
        match last_call.map(|record| &record.result) {
            Some(ProviderResult::Failed { message, chain, .. }) => {
                return Self::ProviderError {
                    message: message.clone(),
                    chain: chain.clone(),
                };
            }
            Some(ProviderResult::Panicked { message }) => {
                return Self::ProviderPanicked {
                    message: message.clone(),
                };
            }
            _ => {}
        }
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(current) = next {
            if let Some(contract) = current.downcast_ref::<TransferProviderContractError>() {
                return Self::ContractError {
                    variant: ContractVariant::of(contract),
                    message: contract.to_string(),
                    debug: format!("{contract:?}"),
                };
            }
            next = current.source();
        }
        Self::Other {
            message: error.to_string(),
            chain: source_chain(error),
        }
    }

    /// The contract variant, when the runtime rejected the output.
    pub fn contract_variant(&self) -> Option<&ContractVariant> {
        match self {
            Self::ContractError { variant, .. } => Some(variant),
            _ => None,
        }
    }
}

/// An allocation a case left behind, and whose memory it was.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct LeakedAllocation {
    /// The endpoint's name.
    pub endpoint: String,
    /// The allocation.
    pub allocation: Allocation,
}

/// What the devices' accounting (ledgers, or counts of memory in use)
/// said after a case's tensors were dropped.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum LeakCheck {
    /// The accounting was read and vouches for the case: what it left
    /// behind (empty: no leak).
    Checked(Vec<crate::Leak>),
    /// No accounting could vouch for the case, and why.
    Unchecked(String),
    /// The accounting was read and vouches for the case: nothing leaked,
    /// but memory stayed in use that repeating the run did not grow, which
    /// the provider keeps and reuses (reported, never a failure).
    Kept(Vec<crate::KeptMemory>),
}

/// Everything one case produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How the runtime's run ended.
    pub runtime: RuntimeVerdict,
    /// Every provider call the Spy saw during the run.
    pub calls: Vec<SpyRecord>,
    /// The event domains the runtime's snapshot assigns to (source,
    /// destination).
    pub snapshot_event_domains: (EventDomainId, EventDomainId),
    /// The event-domain trace of the case.
    pub trace: Vec<TraceEvent>,
    /// Allocations the case left behind.
    pub leaks: LeakCheck,
    /// Whether the source's accounting showed the run's staged inputs
    /// while they were alive: the evidence that its silence over a phase
    /// of cases means something (`None` where the source accounts nothing,
    /// or the case timed out).
    pub source_saw_input: Option<bool>,
    /// The input's backing storage before, right after and well after the
    /// call (`input-intact`).
    pub input: crate::InputReads,
    /// The outputs of earlier cases the rig held, read again after this
    /// one (`output-stable`); `None` where the rig holds none.
    pub held: Option<crate::HeldOutputs>,
    /// When the returned output holds not this input's values but those of
    /// another input of the same run, or of an earlier input of the rig:
    /// that input, in words (a `values` failure names it).
    pub holds_values_of: Option<String>,
}

impl Outcome {
    /// The single provider call, when there was exactly one.
    pub fn call(&self) -> Option<&SpyRecord> {
        match self.calls.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }
}
