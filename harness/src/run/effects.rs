//! What a transfer does besides its output: to the input it borrowed
//! (`input-intact`) and to the outputs it returned before, which the
//! caller still holds (`output-stable`). The rig reads both through the
//! devices; the oracle compares.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::values::compared::{Reference, ReferenceView, compare_with};
use crate::{Case, Compared, Element, Layout, with_element};
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
    pub after_return: Option<Compared>,
    /// After the output was read and dropped; `None` when there was
    /// nothing read before the call to compare with.
    pub after_drop: Option<Compared>,
    /// By a reader beside the call, while it was in flight (where the rig
    /// was asked to, [`Rig::watch_inputs`](crate::Rig::watch_inputs)): the
    /// first read that differed, or `Same`; `None` when nothing was read
    /// in flight.
    pub in_flight: Option<Compared>,
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
            in_flight: None,
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

    /// [`InputBefore::reference`] as the harness compares with it: a
    /// generated case's values are not made whole.
    pub(crate) fn reference_view<'a>(&'a self, case: &'a Case) -> Option<ReferenceView<'a>> {
        match self {
            InputBefore::CaseValues => Some(case.expected()),
            InputBefore::Bytes(bytes) => Some(ReferenceView::Bytes(bytes)),
            InputBefore::Failed { .. } | InputBefore::NotReadable { .. } => None,
        }
    }

    /// [`InputBefore::reference`], shared rather than borrowed.
    pub(crate) fn shared_reference(&self, case: &Case) -> Option<Reference> {
        match self {
            InputBefore::CaseValues => Some(case.shared_values()),
            InputBefore::Bytes(bytes) => Some(Reference::Held(Arc::clone(bytes))),
            InputBefore::Failed { .. } | InputBefore::NotReadable { .. } => None,
        }
    }
}

impl From<ReadBack> for Compared {
    /// A read with nothing to compare it with: its image, or why not.
    fn from(read: ReadBack) -> Self {
        match read {
            ReadBack::Bytes(bytes) => Compared::Image(bytes),
            ReadBack::Failed { reason } => Compared::Failed { reason },
            ReadBack::NotReadable { reason } => Compared::NotReadable { reason },
        }
    }
}

impl Compared {
    /// A whole read (an adapter's `read_back`) compared with `reference`.
    pub(crate) fn of(read: ReadBack, reference: ReferenceView<'_>) -> Self {
        match read {
            ReadBack::Bytes(bytes) if reference.equals(&bytes) => Compared::Same,
            ReadBack::Bytes(bytes) => Compared::Image(bytes),
            ReadBack::Failed { reason } => Compared::Failed { reason },
            ReadBack::NotReadable { reason } => Compared::NotReadable { reason },
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
    /// Whether the run deferred its reads ([`crate::Rig::defer_output_reads`]):
    /// nothing was read at its end, and what it held is read after the
    /// next run, on that run's part.
    pub deferred: bool,
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
    if let Some(read) = read_through(source, input) {
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
    reference: ReferenceView<'_>,
) -> Compared {
    if let Some(read) = read_through(source, input) {
        return Compared::of(read, reference);
    }
    with_element!(input.dtype(), T => visit_backing::<T, _>(source, input, |values| compare_with::<T>(values, reference))
        .unwrap_or_else(|unread| Compared::of(unread, reference)), external => Compared::NotReadable {
        reason: "external dtypes have no byte image".to_owned(),
    })
}

/// `input`'s whole backing storage as `source`'s adapter reads it through
/// the device ([`Endpoint::read_back_input`]); `None` where it leaves the
/// reading to the harness.
fn read_through(source: &Endpoint, input: &TensorRead<'_>) -> Option<ReadBack> {
    source.read_back_input(input)
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
                    Err(error) => Err(refused(source, &error, "read_back")),
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
                    Err(error) => Err(refused(source, &error, "read_back_view")),
                }
            } else {
                Err(ReadBack::NotReadable {
                    reason: format!(
                        "the input is a view whose backing {} cannot map, and its adapter's `read_back_view` reads nothing back",
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
        return match reread_backing(source, input, case.expected()) {
            Compared::Same => InputBefore::CaseValues,
            Compared::Image(bytes) => InputBefore::Bytes(bytes.into()),
            Compared::Failed { reason } => InputBefore::Failed { reason },
            Compared::NotReadable { reason } => InputBefore::NotReadable { reason },
        };
    }
    match read_backing(source, input) {
        ReadBack::Bytes(bytes) => InputBefore::Bytes(bytes.into()),
        ReadBack::Failed { reason } => InputBefore::Failed { reason },
        ReadBack::NotReadable { reason } => InputBefore::NotReadable { reason },
    }
}

/// Why an input whose storage refused `map_read` with `error` was not
/// read: `method` is the adapter's method that would read it through the
/// device instead.
fn refused(source: &Endpoint, error: &HostAccessError, method: &str) -> ReadBack {
    match error {
        HostAccessError::Unsupported { .. } => ReadBack::NotReadable {
            reason: format!(
                "the input's memory on {} cannot be mapped to the host ({error}) and its adapter's `{method}` reads nothing back",
                source.name()
            ),
        },
        other => ReadBack::Failed {
            reason: format!("map_read of the input failed: {other}"),
        },
    }
}

/// A runtime output the rig holds, read again and compared with `bytes`,
/// what it held when it was returned, as it is read ([`read_output`]).
pub(crate) fn reread_output(
    destination: &Endpoint,
    tensor: &Tensor,
    bytes: ReferenceView<'_>,
) -> Compared {
    read_output(destination, &TensorRead::from_tensor(tensor), bytes)
}

/// How long a read of a runtime output that the device refuses while its
/// queued work still owns the memory (`GpuAccessInProgress`) is tried
/// again: an engine that queues its kernels and never says when they are
/// done ([`ExecutionEngine::synchronize`](tenferro_runtime::ExecutionEngine::synchronize)
/// answers at once) finishes them on its own.
const IN_PROGRESS_PATIENCE: Duration = Duration::from_secs(2);

/// A runtime output (the destination engine's, or the provider's that the
/// runtime holds) compared with `expected` as it is read: through the
/// destination's adapter where it reads the tensor back, else from its
/// mapped buffer, tried again while the device refuses the mapping because
/// queued work still owns the memory (the destination settled between
/// tries, up to [`IN_PROGRESS_PATIENCE`]): the engine's work is not the
/// provider's, and a caller waits for it.
pub(crate) fn read_output(
    destination: &Endpoint,
    read: &TensorRead<'_>,
    expected: ReferenceView<'_>,
) -> Compared {
    let read_back = match read {
        TensorRead::Tensor(tensor) => destination.adapter().read_back(tensor),
        TensorRead::View(_) => None,
    };
    if let Some(read_back) = read_back {
        return Compared::of(read_back, expected);
    }
    with_element!(read.dtype(), T => {
        once_ready(destination, || crate::values::compact::compare_compact::<T>(read, expected))
            .unwrap_or_else(|error| Compared::Failed { reason: error.to_string() })
    }, external => Compared::Failed { reason: "external dtype".to_owned() })
}

/// `read`, tried again while the device refuses host access because GPU
/// work still owns the memory, `endpoint` settled between tries, for up to
/// [`IN_PROGRESS_PATIENCE`]; the last refusal then says how long it waited.
fn once_ready<R>(
    endpoint: &Endpoint,
    mut read: impl FnMut() -> tenferro_tensor::Result<R>,
) -> Result<R, String> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match read() {
            Err(tenferro_tensor::Error::HostAccess {
                source: HostAccessError::GpuAccessInProgress,
                ..
            }) if started.elapsed() < IN_PROGRESS_PATIENCE => {
                endpoint.settle();
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(
                error @ tenferro_tensor::Error::HostAccess {
                    source: HostAccessError::GpuAccessInProgress,
                    ..
                },
            ) => {
                return Err(format!(
                    "{error} (still, after {} s of waiting for the device's queued work)",
                    IN_PROGRESS_PATIENCE.as_secs()
                ));
            }
            other => return other.map_err(|error| error.to_string()),
        }
    }
}
