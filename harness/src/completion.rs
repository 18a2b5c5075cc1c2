//! What the Spy asks the destination right after `transfer_blocking`
//! returns: has the copy into the returned tensor completed?

use std::fmt;

use tenferro_mock_devices::{AllocationLedger, StorageCompletion, sim_storage_of, with_element};
use tenferro_tensor::Tensor;

use crate::Endpoint;

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

impl Endpoint {
    /// Whether the copy into `tensor`, returned for this destination, has
    /// completed. Simulated memory knows; plain host memory has no
    /// completion state to observe.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::SimDevice;
    /// use tenferro_transfer_harness::{CompletionState, Endpoint};
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// let (tensor, token) = device.stream(0).enqueue_copy(vec![1], vec![2.5_f64]).unwrap();
    /// let endpoint = Endpoint::Sim(device);
    /// assert!(matches!(endpoint.completion_state(&tensor), CompletionState::Pending { .. }));
    /// token.wait().unwrap();
    /// assert_eq!(endpoint.completion_state(&tensor), CompletionState::Complete);
    /// ```
    pub fn completion_state(&self, tensor: &Tensor) -> CompletionState {
        #[cfg(feature = "cuda")]
        if let Self::Cuda(device) = self {
            return device.completion_state(tensor);
        }
        let storage = with_element!(tensor.dtype(), T => sim_storage_of::<T>(tensor).map(|storage| storage.completion()),
            external => None);
        match storage {
            Some(StorageCompletion::Complete) => CompletionState::Complete,
            Some(StorageCompletion::Pending { device, copy }) => CompletionState::Pending {
                detail: format!("copy #{copy} on {device} had not completed"),
            },
            Some(StorageCompletion::Failed(error)) => CompletionState::Failed {
                detail: error.to_string(),
            },
            Some(_) => CompletionState::Unknown {
                reason: "the simulated storage reports a state this harness does not know".into(),
            },
            None => CompletionState::Unknown {
                reason: match self {
                    Self::Host(_) => {
                        "plain host memory has no completion state to observe".to_owned()
                    }
                    _ => "the output is not simulated memory, so its completion cannot be observed"
                        .to_owned(),
                },
            },
        }
    }

    /// The allocation ledger of this endpoint's memory, when it keeps one
    /// (simulated devices and host engines with their own domain).
    pub fn ledger(&self) -> Option<&std::sync::Arc<AllocationLedger>> {
        match self {
            Self::Sim(device) => Some(device.ledger()),
            Self::Host(host) => host.domain().map(|domain| domain.ledger()),
            #[cfg(feature = "cuda")]
            Self::Cuda(_) => None,
        }
    }

    /// The byte image of `tensor` read through the device, for memory the
    /// Spy cannot map (CUDA); `None` where `map_read` is the way.
    pub(crate) fn device_image(&self, tensor: &Tensor) -> Option<Result<Vec<u8>, String>> {
        match self {
            #[cfg(feature = "cuda")]
            Self::Cuda(device) => device.image(tensor),
            _ => {
                let _ = tensor;
                None
            }
        }
    }
}
