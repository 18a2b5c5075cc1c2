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

impl CompletionState {
    /// A copy into the tensor is still in flight: [`CompletionState::Pending`]
    /// with `detail` (which copy, in words).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::CompletionState;
    ///
    /// assert_eq!(CompletionState::pending("copy #3").to_string(), "pending: copy #3");
    /// ```
    pub fn pending(detail: impl Into<String>) -> Self {
        Self::Pending {
            detail: detail.into(),
        }
    }

    /// The destination cannot tell: [`CompletionState::Unknown`] with
    /// `reason`, which the report shows for the skip.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::CompletionState;
    ///
    /// let state = CompletionState::unknown("the tensor is not in this device's memory");
    /// assert!(matches!(state, CompletionState::Unknown { .. }));
    /// ```
    pub fn unknown(reason: impl Into<String>) -> Self {
        Self::Unknown {
            reason: reason.into(),
        }
    }
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
