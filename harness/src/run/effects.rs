//! What a transfer does besides its output: to the input it borrowed
//! (`input-intact`) and to the outputs it returned before, which the
//! caller still holds (`output-stable`). The rig reads both through the
//! devices; the oracle compares.

use std::sync::Arc;

use crate::{Case, Element, Layout, with_element};
use tenferro_tensor::{HostAccessError, StorageBuffer, Tensor, TensorRead};

use crate::{Endpoint, ReadBack};

/// The input's whole backing storage, read at the three moments
/// `input-intact` compares. The reads after the call are compared with
/// the read before it as their bytes are read: an input that did not
/// change keeps no image of itself, so a case costs no more memory than
/// its own tensors however large it is.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct InputReads {
    /// Before the call.
    pub before: InputBefore,
    /// As soon as the provider returned (or failed), before anything else
    /// ran; `None` when it never returned, or there was nothing read
    /// before the call to compare with.
    pub after_return: Option<Reread>,
    /// After the output was read and dropped; `None` when there was
    /// nothing read before the call to compare with.
    pub after_drop: Option<Reread>,
}

impl InputReads {
    /// Reads of an input that could not be read at all, for `reason`.
    pub fn not_readable(reason: impl Into<String>) -> Self {
        Self {
            before: InputBefore::NotReadable {
                reason: reason.into(),
            },
            after_return: None,
            after_drop: None,
        }
    }
}

/// What the input's backing held before the call: what the reads after it
/// are compared with.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum InputBefore {
    /// Byte for byte the case's own values (an owned input, staged as the
    /// case says): no copy is kept, the case is the reference.
    CaseValues,
    /// The backing's bytes as read: a view's (its gaps included), or an
    /// owned input that did not hold the case's values.
    Bytes(Arc<[u8]>),
    /// The read failed.
    Failed {
        /// Why.
        reason: String,
    },
    /// The input cannot be read here.
    NotReadable {
        /// Why.
        reason: String,
    },
}

impl InputBefore {
    /// The bytes the reads after the call must equal, or `None` when
    /// nothing was read.
    pub fn reference<'a>(&'a self, case: &'a Case) -> Option<&'a [u8]> {
        match self {
            InputBefore::CaseValues => Some(case.values()),
            InputBefore::Bytes(bytes) => Some(bytes),
            InputBefore::Failed { .. } | InputBefore::NotReadable { .. } => None,
        }
    }

    /// [`InputBefore::reference`], shared rather than borrowed.
    pub(crate) fn shared_reference(&self, case: &Case) -> Option<Arc<[u8]>> {
        match self {
            InputBefore::CaseValues => Some(case.shared_values()),
            InputBefore::Bytes(bytes) => Some(Arc::clone(bytes)),
            InputBefore::Failed { .. } | InputBefore::NotReadable { .. } => None,
        }
    }
}

/// A read of the input after the call, compared with what it held before
/// the call ([`InputBefore::reference`]) as its bytes were read.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Reread {
    /// Every byte as before the call; no image is kept.
    Unchanged,
    /// Some byte changed: the whole backing as read, for the report.
    Changed(Vec<u8>),
    /// The read failed.
    Failed {
        /// Why.
        reason: String,
    },
    /// The input cannot be read here.
    NotReadable {
        /// Why.
        reason: String,
    },
}

impl Reread {
    /// A whole read (an adapter's `read_back`) compared with `reference`.
    fn of(read: ReadBack, reference: &[u8]) -> Self {
        match read {
            ReadBack::Bytes(bytes) if bytes == reference => Reread::Unchanged,
            ReadBack::Bytes(bytes) => Reread::Changed(bytes),
            ReadBack::Failed { reason } => Reread::Failed { reason },
            ReadBack::NotReadable { reason } => Reread::NotReadable { reason },
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
    with_element!(input.dtype(), T => visit_backing::<T, _>(source, input, |values| {
        let mut bytes = Vec::new();
        T::extend_bytes(values, &mut bytes);
        ReadBack::Bytes(bytes)
    }).unwrap_or_else(|unread| unread), external => ReadBack::NotReadable {
        reason: "external dtypes have no byte image".to_owned(),
    })
}

/// The whole backing storage of `input`, read as [`read_backing`] reads
/// it and compared with `reference` chunk by chunk as it is read: no image
/// is made unless it differs.
pub(crate) fn reread_backing(
    source: &Endpoint,
    input: &TensorRead<'_>,
    reference: &[u8],
) -> Reread {
    if let TensorRead::Tensor(tensor) = input
        && let Some(read) = source.adapter().read_back(tensor)
    {
        return Reread::of(read, reference);
    }
    with_element!(input.dtype(), T => visit_backing::<T, _>(source, input, |values| compare::<T>(values, reference))
        .unwrap_or_else(|unread| Reread::of(unread, reference)), external => Reread::NotReadable {
        reason: "external dtypes have no byte image".to_owned(),
    })
}

/// The elements per chunk a reread compares at a time.
const COMPARED_AT_ONCE: usize = 4096;

/// `values` compared with `reference`, a chunk at a time; the whole image
/// only when they differ.
fn compare<T: Element>(values: &[T], reference: &[u8]) -> Reread {
    let mut chunk_bytes = Vec::new();
    let mut offset = 0;
    for chunk in values.chunks(COMPARED_AT_ONCE) {
        chunk_bytes.clear();
        T::extend_bytes(chunk, &mut chunk_bytes);
        let end = offset + chunk_bytes.len();
        if reference.get(offset..end) != Some(chunk_bytes.as_slice()) {
            return changed(values);
        }
        offset = end;
    }
    if offset == reference.len() {
        Reread::Unchanged
    } else {
        changed(values)
    }
}

fn changed<T: Element>(values: &[T]) -> Reread {
    let mut bytes = Vec::new();
    T::extend_bytes(values, &mut bytes);
    Reread::Changed(bytes)
}

/// `visit` called with the whole backing of `input` as `T`s, or why it
/// cannot be read (a [`ReadBack`] that is not `Bytes`).
fn visit_backing<T: Element, R>(
    source: &Endpoint,
    input: &TensorRead<'_>,
    visit: impl FnOnce(&[T]) -> R,
) -> Result<R, ReadBack> {
    match input {
        TensorRead::Tensor(tensor) => {
            let Some(typed) = tensor.as_typed::<T>() else {
                return Err(ReadBack::Failed {
                    reason: "the input does not hold its declared dtype".to_owned(),
                });
            };
            match typed.buffer() {
                StorageBuffer::Host(values) => Ok(visit(values)),
                StorageBuffer::Backend(storage) => match storage.map_read() {
                    Ok(values) => Ok(visit(&values)),
                    Err(error) => Err(refused(source, &error)),
                },
            }
        }
        TensorRead::View(view) => {
            let Some(view) = T::typed_view(view.clone()) else {
                return Err(ReadBack::Failed {
                    reason: "the input view does not hold its declared dtype".to_owned(),
                });
            };
            if let Ok(values) = view.host_storage() {
                Ok(visit(values))
            } else if let Some(storage) = view.backend_buffer() {
                match storage.map_read() {
                    Ok(values) => Ok(visit(&values)),
                    Err(error) => Err(refused(source, &error)),
                }
            } else {
                Err(ReadBack::NotReadable {
                    reason: format!(
                        "the input is a view whose backing {} cannot map, and its adapter reads whole tensors only",
                        source.name()
                    ),
                })
            }
        }
    }
}

/// What the input held before the call, read through `source`: an owned
/// input is compared with the case's values as it is read and keeps no
/// copy when it holds them; a view's backing (its gaps included) is kept.
pub(crate) fn read_before(source: &Endpoint, input: &TensorRead<'_>, case: &Case) -> InputBefore {
    if matches!(case.layout(), Layout::Owned) {
        return match reread_backing(source, input, case.values()) {
            Reread::Unchanged => InputBefore::CaseValues,
            Reread::Changed(bytes) => InputBefore::Bytes(bytes.into()),
            Reread::Failed { reason } => InputBefore::Failed { reason },
            Reread::NotReadable { reason } => InputBefore::NotReadable { reason },
        };
    }
    match read_backing(source, input) {
        ReadBack::Bytes(bytes) => InputBefore::Bytes(bytes.into()),
        ReadBack::Failed { reason } => InputBefore::Failed { reason },
        ReadBack::NotReadable { reason } => InputBefore::NotReadable { reason },
    }
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
        crate::values::compact::read_compact_bytes::<T>(&read).map_err(|error| error.to_string())
    }, external => Err("external dtype".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(values: &[f64]) -> Vec<u8> {
        let mut bytes = Vec::new();
        f64::extend_bytes(values, &mut bytes);
        bytes
    }

    #[test]
    fn an_unchanged_read_keeps_no_image_and_a_change_anywhere_is_seen() {
        let values: Vec<f64> = (0..3 * COMPARED_AT_ONCE + 7).map(|i| i as f64).collect();
        let reference = image(&values);
        assert_eq!(compare::<f64>(&values, &reference), Reread::Unchanged);
        // A change in the last, partial chunk, past the first whole ones.
        let mut changed = values.clone();
        *changed.last_mut().unwrap() = -0.0;
        assert_eq!(
            compare::<f64>(&changed, &reference),
            Reread::Changed(image(&changed))
        );
        // A NaN payload differs bit for bit, though both are NaN.
        let mut nan = values.clone();
        nan[COMPARED_AT_ONCE] = f64::from_bits(0x7ff8_0000_0000_0001);
        let mut other = values.clone();
        other[COMPARED_AT_ONCE] = f64::NAN;
        assert_eq!(
            compare::<f64>(&nan, &image(&other)),
            Reread::Changed(image(&nan))
        );
    }

    #[test]
    fn a_read_of_another_length_is_a_change() {
        let values = [1.0_f64, 2.0, 3.0];
        let longer = image(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            compare::<f64>(&values, &longer),
            Reread::Changed(image(&values))
        );
        assert_eq!(
            compare::<f64>(&values, &longer[..16]),
            Reread::Changed(image(&values))
        );
        assert_eq!(compare::<f64>(&[], &[]), Reread::Unchanged);
    }
}
