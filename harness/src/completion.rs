//! What the Spy asks the destination right after `transfer_blocking`
//! returns: has the copy into the returned tensor completed? Each device's
//! adapter answers ([`crate::DeviceEndpoint::completion`]).

use std::fmt;

/// The completion state of a returned tensor, as its destination reports it.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum CompletionState {
    /// Every copy into the tensor has completed.
    Complete,
    /// A copy into the tensor is still in flight.
    Pending {
        /// Which copy, in words.
        detail: String,
    },
    /// The copy into the tensor failed, and the provider returned it anyway.
    Failed {
        /// The device's error.
        detail: String,
    },
    /// The destination cannot tell; the rule is not checked.
    Unknown {
        /// Why not.
        reason: String,
    },
}

impl fmt::Display for CompletionState {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Complete => formatter.write_str("complete"),
            Self::Pending { detail } => write!(formatter, "pending: {detail}"),
            Self::Failed { detail } => write!(formatter, "failed: {detail}"),
            Self::Unknown { reason } => write!(formatter, "unknown: {reason}"),
        }
    }
}
