//! `Spy`: wraps the provider under test, records what it was asked and
//! reads back what it returned before the runtime sees it.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::trace::current_launch_domain;
use crate::trace::{self, TraceEvent};
use crate::{DeviceError, Element, with_element};
use tenferro_runtime::{
    EngineId, EventDomainId, ProviderDeviceIdentity, StorageClass, TransferProvider,
    TransferRequest,
};
use tenferro_tensor::{
    AllocationDomainId, DType, HostAccessError, Placement, StorageBuffer, Tensor, TensorRead,
};

use crate::Compared;
use crate::run::accounting::Sample;
use crate::run::effects::reread_backing;
use crate::values::compared::compare_as_read;
use crate::{CompletionState, Endpoint, ReadBack, source_chain};

/// What the runtime asked the provider for.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct RequestRecord {
    /// Source engine id.
    pub source_engine_id: EngineId,
    /// Source provider-device identity.
    pub source_provider_device_identity: ProviderDeviceIdentity,
    /// Source event domain.
    pub source_event_domain_id: EventDomainId,
    /// Source storage class.
    pub source_storage_class: StorageClass,
    /// Destination engine id.
    pub destination_engine_id: EngineId,
    /// Destination provider-device identity.
    pub destination_provider_device_identity: ProviderDeviceIdentity,
    /// Destination event domain.
    pub destination_event_domain_id: EventDomainId,
    /// Destination storage class.
    pub destination_storage_class: StorageClass,
    /// Input dtype.
    pub input_dtype: DType,
    /// Input shape.
    pub input_shape: Vec<usize>,
    /// Input strides in elements.
    pub input_strides: Vec<isize>,
    /// Input offset in elements.
    pub input_offset: isize,
    /// Whether the input arrived as a `TensorRead::View`.
    pub input_is_view: bool,
    /// The simulated event domain whose launch made the call, when a
    /// simulated domain launched it (host domains are not observable).
    pub launch_domain: Option<EventDomainId>,
}

impl RequestRecord {
    fn of(request: &TransferRequest<'_>) -> Self {
        let input = request.input();
        let (strides, offset) = layout_of(input);
        Self {
            source_engine_id: request.source_engine_id().clone(),
            source_provider_device_identity: request.source_provider_device_identity().clone(),
            source_event_domain_id: request.source_event_domain_id(),
            source_storage_class: request.source_storage_class().clone(),
            destination_engine_id: request.destination_engine_id().clone(),
            destination_provider_device_identity: request
                .destination_provider_device_identity()
                .clone(),
            destination_event_domain_id: request.destination_event_domain_id(),
            destination_storage_class: request.destination_storage_class().clone(),
            input_dtype: input.dtype(),
            input_shape: input.shape().to_vec(),
            input_strides: strides,
            input_offset: offset,
            input_is_view: matches!(input, TensorRead::View(_)),
            launch_domain: current_launch_domain(),
        }
    }
}

fn layout_of(input: &TensorRead<'_>) -> (Vec<isize>, isize) {
    with_element!(input.dtype(), T => {
        match T::typed_view(input.clone().tensor_view()) {
            Some(view) => (view.strides().to_vec(), view.offset()),
            None => (Vec::new(), 0),
        }
    }, external => (Vec::new(), 0))
}

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
    fn of(
        tensor: &Tensor,
        destination: Option<&Endpoint>,
        spy: Option<&Spy>,
        expected: Option<&[u8]>,
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
    expected: Option<&[u8]>,
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
        Some(expected) => compare_as_read::<T>(values, expected),
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

/// How the provider's call ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ProviderResult {
    /// It returned a tensor.
    Returned(ReturnedTensor),
    /// It returned `Err`.
    Failed {
        /// The error's Display.
        message: String,
        /// Display of each `source()` below it.
        chain: Vec<String>,
        /// The simulated device's error, when the `Err` carries one in its
        /// source chain (a provider passing a device failure on).
        device_error: Option<DeviceError>,
    },
    /// It panicked; the Spy caught the unwind.
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
    /// It had not returned when the watchdog's deadline passed.
    TimedOut {
        /// The deadline.
        limit: Duration,
    },
    /// It returned a tensor, and a call into that tensor's storage while
    /// the Spy read it back had not returned when the deadline passed.
    StorageHung {
        /// The storage method that hung, e.g. `map_read`.
        method: &'static str,
        /// The deadline.
        limit: Duration,
    },
}

/// One call of the provider.
#[derive(Clone, Debug, PartialEq)]
pub struct SpyRecord {
    /// What was asked.
    pub request: RequestRecord,
    /// How it ended.
    pub result: ProviderResult,
    /// The input's whole backing storage, read through the source as soon
    /// as the provider returned and compared with what it held before the
    /// call as it was read (`None` when the Spy was not told the source or
    /// what the input held, or the call never returned).
    pub input_after_return: Option<Compared>,
    /// Whether the destination's accounting (its ledger, or its counts
    /// where the route uses them) showed an allocation made during the
    /// call and alive at its return: the output it was handed. `None` where
    /// the destination accounts nothing, or nothing was returned.
    pub destination_saw_output: Option<bool>,
}

/// What the rig expects of one call of a run, for the Spy to compare its
/// reads with as it takes them ([`Spy::expect`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Expected {
    /// What the call's input held before the run (`input-intact`).
    pub(crate) input: Option<Arc<[u8]>>,
    /// The values its output must hold: the case's (`values`).
    pub(crate) output: Option<Arc<[u8]>>,
}

/// What each call of a run is expected to read, and how many of the run's
/// calls have started.
#[derive(Debug, Default)]
struct RunExpectations {
    calls: Vec<Expected>,
    started: usize,
}

/// Wraps the provider under test.
///
/// A panicking provider is caught here and turned into an `Err` for the
/// runtime, so the runtime never unwinds and the rig stays usable.
#[derive(Debug)]
pub struct Spy {
    inner: Arc<dyn TransferProvider>,
    destination: Option<Endpoint>,
    source: Option<Endpoint>,
    /// Whether the destination's counts of memory in use are sampled.
    counts_memory: bool,
    records: Mutex<Vec<SpyRecord>>,
    /// What each call of the next run is expected to read ([`Spy::expect`]).
    expected: Mutex<RunExpectations>,
    in_flight: Mutex<Option<RequestRecord>>,
    stage: Mutex<Option<&'static str>>,
}

impl Spy {
    /// Spy on `inner`; completion is not observed without a destination.
    pub fn new(inner: Arc<dyn TransferProvider>) -> Self {
        Self {
            inner,
            destination: None,
            source: None,
            counts_memory: false,
            records: Mutex::new(Vec::new()),
            expected: Mutex::new(RunExpectations::default()),
            in_flight: Mutex::new(None),
            stage: Mutex::new(None),
        }
    }

    /// Spy on `inner`, asking `destination` whether each returned tensor's
    /// copy has completed.
    pub fn with_destination(inner: Arc<dyn TransferProvider>, destination: Endpoint) -> Self {
        Self {
            destination: Some(destination),
            ..Self::new(inner)
        }
    }

    /// Spy on `inner` on `route`: completion asked of its destination, the
    /// input read back through its source after each call
    /// (`input-intact`), and the destination's accounting sampled around
    /// each call (the evidence `no-leak` needs).
    pub fn on_route(inner: Arc<dyn TransferProvider>, route: &crate::Route) -> Self {
        Self {
            destination: Some(route.destination().clone()),
            source: Some(route.source().clone()),
            counts_memory: route.counts_memory(),
            ..Self::new(inner)
        }
    }

    /// The request of a call that has not returned yet, if one is running.
    pub fn in_flight(&self) -> Option<RequestRecord> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The storage method of the returned tensor that the Spy is calling
    /// right now, while it reads a returned tensor back (the request is
    /// still [`Spy::in_flight`] then).
    pub fn stage(&self) -> Option<&'static str> {
        *self.stage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_stage(&self, stage: Option<&'static str>) {
        *self.stage.lock().unwrap_or_else(PoisonError::into_inner) = stage;
    }

    fn set_in_flight(&self, request: Option<RequestRecord>) {
        *self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = request;
    }

    /// What the calls of the next run are expected to read, in the order
    /// the runtime makes them (the `i`th call moves the `i`th input): its
    /// input again when it returns, compared with what it held before, and
    /// the output it returns, compared with the case's values. Empty: the
    /// Spy reads no input again and keeps every output's image.
    pub(crate) fn expect(&self, calls: Vec<Expected>) {
        *self.expected.lock().unwrap_or_else(PoisonError::into_inner) =
            RunExpectations { calls, started: 0 };
    }

    /// What the call starting now is expected to read.
    fn next_expected(&self) -> Expected {
        let mut run = self.expected.lock().unwrap_or_else(PoisonError::into_inner);
        let expected = run.calls.get(run.started).cloned().unwrap_or_default();
        run.started += 1;
        expected
    }

    /// Take every record made since the last call.
    pub fn take(&self) -> Vec<SpyRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A copy of every record made since the last [`Spy::take`], leaving
    /// them in place.
    pub fn records(&self) -> Vec<SpyRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A copy of the latest record, leaving the records in place.
    pub fn last(&self) -> Option<SpyRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
    }

    fn push(&self, record: SpyRecord) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
    }
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// The simulated device's error in `error`'s source chain, if any.
fn device_error_in(error: &(dyn std::error::Error + 'static)) -> Option<DeviceError> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(device) = current.downcast_ref::<DeviceError>() {
            return Some(device.clone());
        }
        next = current.source();
    }
    None
}

impl TransferProvider for Spy {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let asked = RequestRecord::of(&request);
        trace::record(TraceEvent::ProviderCalled {
            launch_domain: asked.launch_domain,
        });
        self.set_in_flight(Some(asked.clone()));
        let input = request.input().clone();
        let expected = self.next_expected();
        let accounted = self
            .destination
            .as_ref()
            .map(|destination| Sample::of(destination, self.counts_memory))
            .filter(Sample::accounts);
        let result = catch_unwind(AssertUnwindSafe(|| self.inner.transfer_blocking(request)));
        // The borrowed input, read again before anything else runs, and
        // compared with what it held as it is read.
        let input_after_return = self
            .source
            .as_ref()
            .zip(expected.input)
            .map(|(source, before)| reread_backing(source, &input, &before));
        let destination_saw_output = match (&result, &accounted, &self.destination) {
            (Ok(Ok(_)), Some(before), Some(destination)) => {
                Some(before.shown_more_on(destination, self.counts_memory))
            }
            _ => None,
        };
        let effects = move |request, result| SpyRecord {
            request,
            result,
            input_after_return,
            destination_saw_output,
        };
        trace::record(TraceEvent::ProviderReturned {
            how: match &result {
                Ok(Ok(_)) => "ok",
                Ok(Err(_)) => "err",
                Err(_) => "panic",
            },
        });
        let outcome = match result {
            Ok(Ok(tensor)) => {
                // The request stays in flight while the returned storage is
                // read: a hang there is the provider's too.
                let returned = ReturnedTensor::of(
                    &tensor,
                    self.destination.as_ref(),
                    Some(self),
                    expected.output.as_deref(),
                );
                self.push(effects(asked, ProviderResult::Returned(returned)));
                Ok(tensor)
            }
            Ok(Err(error)) => {
                self.push(effects(
                    asked,
                    ProviderResult::Failed {
                        message: error.to_string(),
                        chain: source_chain(&error),
                        device_error: device_error_in(&error),
                    },
                ));
                Err(error)
            }
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                self.push(effects(
                    asked,
                    ProviderResult::Panicked {
                        message: message.clone(),
                    },
                ));
                Err(tenferro_runtime::Error::Internal(format!(
                    "transfer provider panicked: {message}"
                )))
            }
        };
        self.set_in_flight(None);
        outcome
    }
}
