//! What a transfer does besides its output: to the input it borrowed
//! (`input-intact`) and to the outputs it returned before, which the
//! caller still holds (`output-stable`). The rig reads both through the
//! devices; the oracle compares.

use crate::{Element, with_element};
use tenferro_tensor::{HostAccessError, StorageBuffer, Tensor, TensorRead};

use crate::{Endpoint, ReadBack};

/// The input's whole backing storage, read at the three moments
/// `input-intact` compares.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct InputReads {
    /// Before the call.
    pub before: ReadBack,
    /// As soon as the provider returned (or failed), before anything else
    /// ran; `None` when it never returned.
    pub after_return: Option<ReadBack>,
    /// After the output was read and dropped.
    pub after_drop: Option<ReadBack>,
}

impl InputReads {
    /// Reads of an input that could not be read at all, for `reason`.
    pub fn not_readable(reason: impl Into<String>) -> Self {
        Self {
            before: ReadBack::NotReadable {
                reason: reason.into(),
            },
            after_return: None,
            after_drop: None,
        }
    }
}

/// What the outputs the rig keeps alive ([`crate::Rig::keep_outputs`])
/// showed after a call.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct HeldOutputs {
    /// How many earlier outputs were read again after the call.
    pub reread: usize,
    /// Those whose bytes had changed.
    pub changed: Vec<ChangedOutput>,
}

/// An output the caller held whose bytes changed.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct ChangedOutput {
    /// The case whose output changed, in words (`F32 [7, 3] owned`).
    pub case: String,
    /// The later call after which it was seen changed, in words; `None`
    /// when it was seen at the end, as the held outputs were released.
    pub after: Option<String>,
    /// What changed: the first changed element, and how many.
    pub difference: String,
    /// Where the output was the provider's own, held by the runtime while
    /// later inputs of the same run moved: its input's place in the run
    /// and the run's number of inputs. `None`: an output the caller held.
    pub in_run: Option<(usize, usize)>,
}

/// The whole backing storage of `input`, read through `source`: a view's
/// gaps and the elements before its offset are read too. A tensor the
/// source's adapter reads back (memory `map_read` cannot reach) is read
/// that way; a view of such memory cannot be (the adapter reads whole
/// tensors), which is said.
pub(crate) fn read_backing(source: &Endpoint, input: &TensorRead<'_>) -> ReadBack {
    if let TensorRead::Tensor(tensor) = input
        && let Some(read) = source.adapter().read_back(tensor)
    {
        return read;
    }
    with_element!(input.dtype(), T => backing_image::<T>(source, input), external => ReadBack::NotReadable {
        reason: "external dtypes have no byte image".to_owned(),
    })
}

fn backing_image<T: Element>(source: &Endpoint, input: &TensorRead<'_>) -> ReadBack {
    let mut bytes = Vec::new();
    match input {
        TensorRead::Tensor(tensor) => {
            let Some(typed) = tensor.as_typed::<T>() else {
                return ReadBack::Failed {
                    reason: "the input does not hold its declared dtype".to_owned(),
                };
            };
            match typed.buffer() {
                StorageBuffer::Host(values) => T::extend_bytes(values, &mut bytes),
                StorageBuffer::Backend(storage) => match storage.map_read() {
                    Ok(values) => T::extend_bytes(&values, &mut bytes),
                    Err(error) => return refused(source, &error),
                },
            }
        }
        TensorRead::View(view) => {
            let Some(view) = T::typed_view(view.clone()) else {
                return ReadBack::Failed {
                    reason: "the input view does not hold its declared dtype".to_owned(),
                };
            };
            if let Ok(values) = view.host_storage() {
                T::extend_bytes(values, &mut bytes);
            } else if let Some(storage) = view.backend_buffer() {
                match storage.map_read() {
                    Ok(values) => T::extend_bytes(&values, &mut bytes),
                    Err(error) => return refused(source, &error),
                }
            } else {
                return ReadBack::NotReadable {
                    reason: format!(
                        "the input is a view whose backing {} cannot map, and its adapter reads whole tensors only",
                        source.name()
                    ),
                };
            }
        }
    }
    ReadBack::Bytes(bytes)
}

fn refused(source: &Endpoint, error: &HostAccessError) -> ReadBack {
    match error {
        HostAccessError::Unsupported { .. } => ReadBack::NotReadable {
            reason: format!(
                "the input's memory on {} cannot be mapped to the host ({error}) and its adapter reads nothing back",
                source.name()
            ),
        },
        other => ReadBack::Failed {
            reason: format!("map_read of the input failed: {other}"),
        },
    }
}

/// The byte image of a runtime output the rig holds, read again.
pub(crate) fn output_image(tensor: &Tensor) -> Result<Vec<u8>, String> {
    let read = TensorRead::from_tensor(tensor);
    with_element!(read.dtype(), T => {
        crate::read_compact::<T>(&read).map(|values| {
            let mut bytes = Vec::new();
            T::extend_bytes(&values, &mut bytes);
            bytes
        }).map_err(|error| error.to_string())
    }, external => Err("external dtype".to_owned()))
}
