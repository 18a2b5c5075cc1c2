//! What the provider returned, read by the Spy before the runtime sees it:
//! [`ReturnedTensor`], every call into its storage under a panic guard.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use tenferro_tensor::{
    AllocationDomainId, DType, HostAccessError, Placement, StorageBuffer, Tensor, TensorRead,
};

use super::Spy;
use crate::panic_message;
use crate::values::compared::{ReferenceView, compare_with};
use crate::{Compared, CompletionState, Element, Endpoint, ReadBack, with_element};

/// A call into the returned tensor's storage that panicked while the Spy
/// read the tensor back. The storage is the provider's code, so this is a
/// `no-panic` violation of the provider's, not a crash of the harness.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct StoragePanic {
    /// The storage method (or probe) that panicked, e.g. `map_read`.
    pub method: &'static str,
    /// The panic message.
    pub message: String,
}

impl fmt::Display for StoragePanic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "the returned storage panicked in {}: {}",
            self.method, self.message
        )
    }
}

/// Runs one call into provider-owned storage, catching its panic.
struct StorageGuard<'a> {
    spy: Option<&'a Spy>,
    panics: Vec<StoragePanic>,
}

impl StorageGuard<'_> {
    fn call<R>(&mut self, method: &'static str, call: impl FnOnce() -> R) -> Option<R> {
        if let Some(spy) = self.spy {
            spy.set_stage(Some(method));
        }
        let result = catch_unwind(AssertUnwindSafe(call));
        if let Some(spy) = self.spy {
            spy.set_stage(None);
        }
        match result {
            Ok(value) => Some(value),
            Err(payload) => {
                self.panics.push(StoragePanic {
                    method,
                    message: panic_message(payload.as_ref()),
                });
                None
            }
        }
    }
}

/// What the provider returned, read before the runtime saw it.
///
/// Every call into the tensor's storage (`len`, `backend_family`,
/// `allocation_domain`, `map_read`, the destination's completion probe and
/// read-back) runs under a panic guard: a storage that panics is recorded
/// in [`ReturnedTensor::storage_panics`], and what could be read is kept.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnedTensor {
    /// Output dtype.
    pub dtype: DType,
    /// Output shape.
    pub shape: Vec<usize>,
    /// Length the output buffer reports, as the runtime measures it
    /// (`None` when `len` panicked).
    pub buffer_len: Option<usize>,
    /// What a second call of `len`, after the buffer was read, answered,
    /// when it differs from the first: a length that changes between calls.
    pub buffer_len_changed_to: Option<usize>,
    /// Output placement.
    pub placement: Placement,
    /// Backend family, `None` for plain host storage.
    pub backend_family: Option<&'static str>,
    /// Allocation domain, `None` for plain host storage.
    pub allocation_domain: Option<AllocationDomainId>,
    /// The whole buffer, compared as it was read with the values the case
    /// says it must hold: `Same`, or its little-endian image where it
    /// differs (or the Spy was not told the case), or why it could not be
    /// read (not readable: `values` is not checked; failed: a violation).
    pub bytes: Compared,
    /// Whether the copy into it had completed when the provider returned.
    pub completion: CompletionState,
    /// Calls into the storage that panicked while it was read back.
    pub storage_panics: Vec<StoragePanic>,
}

impl ReturnedTensor {
    pub(super) fn of(
        tensor: &Tensor,
        destination: Option<&Endpoint>,
        spy: Option<&Spy>,
        expected: Option<ReferenceView<'_>>,
    ) -> Self {
        let mut guard = StorageGuard {
            spy,
            panics: Vec::new(),
        };
        // Asked first, before anything else can complete the copy.
        let completion = match destination {
            Some(endpoint) => guard
                .call("the completion probe", || endpoint.completion_state(tensor))
                .unwrap_or_else(|| CompletionState::Unknown {
                    reason: "the returned storage panicked while its completion was probed"
                        .to_owned(),
                }),
            None => CompletionState::Unknown {
                reason: "the Spy was not told the destination".to_owned(),
            },
        };
        let read = TensorRead::from_tensor(tensor);
        let backend_family = guard
            .call("backend_family", || read.backend_family())
            .flatten();
        let allocation_domain = guard
            .call("allocation_domain", || read.allocation_domain())
            .flatten();
        let (buffer_len, mapped, buffer_len_changed_to) = with_element!(tensor.dtype(), T => buffer_image::<T>(tensor, &mut guard, expected),
            external => (Some(0), Compared::NotReadable { reason: "external dtypes have no byte image".to_owned() }, None));
        let bytes = destination
            .and_then(|endpoint| {
                guard
                    .call("the destination's read-back", || {
                        endpoint.adapter().read_back(tensor)
                    })
                    .unwrap_or_else(|| {
                        Some(ReadBack::Failed {
                            reason: "the returned storage panicked while it was read back"
                                .to_owned(),
                        })
                    })
            })
            .map_or(mapped, |read| match expected {
                Some(expected) => Compared::of(read, expected),
                None => Compared::from(read),
            });
        Self {
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
            buffer_len,
            buffer_len_changed_to,
            placement: tensor.placement().clone(),
            backend_family,
            allocation_domain,
            bytes,
            completion,
            storage_panics: guard.panics,
        }
    }

    /// The panic of `method`, if that storage call panicked.
    pub fn panic_in(&self, method: &str) -> Option<&StoragePanic> {
        self.storage_panics
            .iter()
            .find(|panic| panic.method == method)
    }
}

/// The buffer's length, the buffer compared with `expected` as it is read
/// (its byte image where it differs, or where nothing is expected), and a
/// second length read after it when it differs from the first.
fn buffer_image<T: Element>(
    tensor: &Tensor,
    guard: &mut StorageGuard<'_>,
    expected: Option<ReferenceView<'_>>,
) -> (Option<usize>, Compared, Option<usize>) {
    let Some(typed) = tensor.as_typed::<T>() else {
        return (
            Some(0),
            Compared::Failed {
                reason: "tensor does not hold its declared dtype".to_owned(),
            },
            None,
        );
    };
    let buffer = typed.buffer();
    let len = guard.call("len", || buffer.len());
    let read = |values: &[T]| match expected {
        Some(expected) => compare_with::<T>(values, expected),
        None => {
            let mut bytes = Vec::new();
            T::extend_bytes(values, &mut bytes);
            Compared::Image(bytes)
        }
    };
    let image = match buffer {
        StorageBuffer::Host(values) => read(values),
        StorageBuffer::Backend(storage) => {
            match guard.call("map_read", || {
                storage.map_read().map(|values| read(&values))
            }) {
                Some(Ok(compared)) => compared,
                // A storage that cannot be mapped to the host at all (device
                // memory whose adapter reads nothing back) leaves the values
                // unchecked: an honest skip, not the provider's fault.
                Some(Err(error @ HostAccessError::Unsupported { .. })) => Compared::NotReadable {
                    reason: format!(
                        "the output's storage cannot be mapped to the host ({error}) and its device's adapter reads nothing back"
                    ),
                },
                Some(Err(error)) => Compared::Failed {
                    reason: format!("map_read failed: {error}"),
                },
                None => Compared::Failed {
                    reason: "map_read panicked".to_owned(),
                },
            }
        }
    };
    let later = match (len, &buffer) {
        (Some(first), StorageBuffer::Backend(_)) => guard
            .call("len", || buffer.len())
            .filter(|&again| again != first),
        _ => None,
    };
    (len, image, later)
}
