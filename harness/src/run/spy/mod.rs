//! `Spy`: wraps the provider under test, records what it was asked and
//! reads back what it returned before the runtime sees it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use crate::trace::current_launch_domain;
use crate::trace::{self, TraceEvent};
use crate::{DeviceError, Element, with_element};
use tenferro_runtime::{
    EngineId, EventDomainId, ProviderDeviceIdentity, StorageClass, TransferProvider,
    TransferRequest,
};
use tenferro_tensor::{DType, Tensor, TensorRead};

use crate::Compared;
use crate::run::accounting::Sample;
use crate::run::effects::reread_backing;
use crate::values::compared::Reference;
use crate::{DEFERRED_READ_STALL, Endpoint, QUEUE_STALL, panic_message, source_chain};

mod in_flight;
mod returned;

pub use returned::{ReturnedTensor, StoragePanic};

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
#[non_exhaustive]
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
    /// The borrowed input as a reader beside the call saw it while the call
    /// was in flight (only where the rig asked for one,
    /// [`Rig::watch_inputs`](crate::Rig::watch_inputs)): `Same`, or the
    /// first image that differed; `None` when nothing was read in flight.
    pub input_in_flight: Option<Compared>,
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
    pub(crate) input: Option<Reference>,
    /// The values its output must hold: the case's (`values`).
    pub(crate) output: Option<Reference>,
    /// Stall the destination's queues as the call returns, once its output
    /// was read (a run whose outputs are read only after the next run,
    /// [`Rig::defer_output_reads`](crate::Rig::defer_output_reads)): the
    /// work the runtime queues on the output next (the destination
    /// engine's kernel) waits behind the stall, so it is still queued when
    /// the next run's call is made.
    pub(crate) stall_destination: bool,
    /// Stall the destination's queues just before the call (a run whose
    /// inputs reach the provider unread, [`Spy::hand_inputs_unread`]): the
    /// provider's own work on the destination waits behind the stall, so
    /// a provider that returns before that work has landed (it waited on
    /// another queue, or on the source's) is seen incomplete at return.
    pub(crate) stall_destination_first: bool,
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
    /// The provider under test: replaced only between runs
    /// ([`crate::Rig::replace_provider`]).
    inner: RwLock<Arc<dyn TransferProvider>>,
    destination: Option<Endpoint>,
    source: Option<Endpoint>,
    /// Whether the destination's counts of memory in use are sampled.
    counts_memory: bool,
    records: Mutex<Vec<SpyRecord>>,
    /// What each call of the next run is expected to read ([`Spy::expect`]).
    expected: Mutex<RunExpectations>,
    in_flight: Mutex<Option<Arc<RequestRecord>>>,
    stage: Mutex<Option<&'static str>>,
    /// Whether a reader beside each call reads the input while the call is
    /// in flight ([`Spy::watch_inputs`]).
    watching: AtomicBool,
    /// Whether the rig hands owned inputs to the provider as staged,
    /// unread ([`Spy::hand_inputs_unread`]).
    unread: AtomicBool,
    /// Whether the rig reads the runtime's outputs of a run only after the
    /// next run ([`Spy::defer_output_reads`]).
    defers: AtomicBool,
}

impl Spy {
    /// Spy on `inner`; completion is not observed without a destination.
    pub fn new(inner: Arc<dyn TransferProvider>) -> Self {
        Self {
            inner: RwLock::new(inner),
            destination: None,
            source: None,
            counts_memory: false,
            records: Mutex::new(Vec::new()),
            expected: Mutex::new(RunExpectations::default()),
            in_flight: Mutex::new(None),
            stage: Mutex::new(None),
            watching: AtomicBool::new(false),
            unread: AtomicBool::new(false),
            defers: AtomicBool::new(false),
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

    /// Spy on `provider` from now on, forget what was recorded of the one
    /// before, and give that one back. Its calls in flight keep the
    /// provider they started with.
    pub(crate) fn replace_inner(
        &self,
        provider: Arc<dyn TransferProvider>,
    ) -> Arc<dyn TransferProvider> {
        let before = std::mem::replace(
            &mut *self.inner.write().unwrap_or_else(PoisonError::into_inner),
            provider,
        );
        self.take();
        before
    }

    /// The request of a call that has not returned yet, if one is running.
    pub fn in_flight(&self) -> Option<RequestRecord> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            .cloned()
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

    fn set_in_flight(&self, request: Option<Arc<RequestRecord>>) {
        *self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = request;
    }

    /// From now on, read each call's input on a thread beside the call
    /// for as long as the call is in flight ([`SpyRecord::input_in_flight`]),
    /// or stop (`false`, as a Spy starts). Only a Spy that knows its route's
    /// source ([`Spy::on_route`]) can read the input.
    pub fn watch_inputs(&self, watch: bool) {
        self.watching.store(watch, Ordering::Relaxed);
    }

    /// From now on, hand each call's owned input to the provider as the
    /// source staged it, unread, or read it through the source first
    /// (`false`, as a Spy starts): see [`Rig::hand_inputs_unread`](crate::Rig::hand_inputs_unread).
    pub fn hand_inputs_unread(&self, unread: bool) {
        self.unread.store(unread, Ordering::Relaxed);
    }

    /// From now on, read the runtime's outputs of a run that keeps its
    /// outputs only after the next run, the destination's queues stalled
    /// ([`Endpoint::stall_queues`], for [`DEFERRED_READ_STALL`]) as each of
    /// its calls returns (`false`, as a Spy starts): see
    /// [`Rig::defer_output_reads`](crate::Rig::defer_output_reads).
    pub fn defer_output_reads(&self, defer: bool) {
        self.defers.store(defer, Ordering::Relaxed);
    }

    /// Whether the runtime's outputs are read only after the next run
    /// ([`Spy::defer_output_reads`]).
    pub(crate) fn defers_output_reads(&self) -> bool {
        self.defers.load(Ordering::Relaxed)
    }

    /// Stall the destination's queues for `pause` where `asked` (by the
    /// run's [`Expected`]).
    fn stall_destination(&self, asked: bool, pause: Duration) {
        if asked && let Some(destination) = &self.destination {
            destination.stall_queues(pause);
        }
    }

    /// Whether owned inputs reach the provider unread ([`Spy::hand_inputs_unread`]).
    pub(crate) fn hands_inputs_unread(&self) -> bool {
        self.unread.load(Ordering::Relaxed)
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

    /// Whether a call was recorded since the last [`Spy::take`] (without
    /// copying the record, as [`Spy::last`] does).
    pub(crate) fn has_records(&self) -> bool {
        !self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// End the call that asked `asked`: its request leaves the in-flight
    /// slot (unless a call beside it took the slot since) and its record,
    /// made by `record`, joins the records, both under the in-flight lock,
    /// so that [`Spy::in_flight_and_records`] sees the call in exactly one
    /// of the two. `record` only assembles what was read before: no
    /// provider code runs under the locks, so a hung provider cannot hold
    /// them from the watchdog.
    fn end_call(&self, asked: Arc<RequestRecord>, record: impl FnOnce(RequestRecord) -> SpyRecord) {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if in_flight
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, &asked))
        {
            *in_flight = None;
        }
        let request = Arc::try_unwrap(asked).unwrap_or_else(|shared| (*shared).clone());
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record(request));
    }

    /// The request of the call in flight, if any, and a copy of every
    /// record made since the last [`Spy::take`], read together: a call
    /// that ends meanwhile is in one or the other, never in neither (the
    /// locks are taken in [`Spy::end_call`]'s order).
    pub(crate) fn in_flight_and_records(&self) -> (Option<RequestRecord>, Vec<SpyRecord>) {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let records = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        (in_flight.as_deref().cloned(), records)
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

/// What the provider under test's call returned (or its panic), and what
/// a reader beside it saw of the input, where the Spy reads one.
type InnerCall = (
    std::thread::Result<tenferro_runtime::Result<Tensor>>,
    Option<Compared>,
);

impl Spy {
    /// Call the provider under test with `request`, catching its panic, and
    /// with a reader beside the call where the Spy is watching inputs
    /// ([`Spy::watch_inputs`]) and knows what `input` held.
    fn call_inner(
        &self,
        request: TransferRequest<'_>,
        input: &TensorRead<'_>,
        expected: &Expected,
    ) -> InnerCall {
        let inner = Arc::clone(&self.inner.read().unwrap_or_else(PoisonError::into_inner));
        let call = || catch_unwind(AssertUnwindSafe(|| inner.transfer_blocking(request)));
        let watched = self
            .source
            .as_ref()
            .zip(expected.input.as_ref())
            .filter(|_| self.watching.load(Ordering::Relaxed));
        match watched {
            Some((source, before)) => {
                in_flight::read_beside(source, input, before.expected(), call)
            }
            None => (call(), None),
        }
    }
}

impl TransferProvider for Spy {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let asked = Arc::new(RequestRecord::of(&request));
        trace::record(TraceEvent::ProviderCalled {
            launch_domain: asked.launch_domain,
        });
        self.set_in_flight(Some(Arc::clone(&asked)));
        let input = request.input().clone();
        let expected = self.next_expected();
        let accounted = self
            .destination
            .as_ref()
            .map(|destination| Sample::of(destination, self.counts_memory))
            .filter(Sample::accounts);
        self.stall_destination(expected.stall_destination_first, QUEUE_STALL);
        let (result, input_in_flight) = self.call_inner(request, &input, &expected);
        // The borrowed input, read again as soon as the provider returned
        // (after the output's completion probe, which is asked before any
        // read through a device can complete a copy), and compared with
        // what it held as it is read.
        let read_input = || {
            self.source
                .as_ref()
                .zip(expected.input.as_ref())
                .map(|(source, before)| reread_backing(source, &input, before.expected()))
        };
        let destination_saw_output = match (&result, &accounted, &self.destination) {
            (Ok(Ok(_)), Some(before), Some(destination)) => {
                Some(before.shown_more_on(destination, self.counts_memory))
            }
            _ => None,
        };
        // The request stays in flight until its record is made (a hang
        // while the returned storage is read is the provider's too).
        let end = |result, input_after_return| {
            self.end_call(asked, |request| SpyRecord {
                request,
                result,
                input_after_return,
                input_in_flight,
                destination_saw_output,
            });
        };
        trace::record(TraceEvent::ProviderReturned {
            how: match &result {
                Ok(Ok(_)) => "ok",
                Ok(Err(_)) => "err",
                Err(_) => "panic",
            },
        });
        match result {
            Ok(Ok(tensor)) => {
                // The request stays in flight while the returned storage is
                // read: a hang there is the provider's too.
                let returned = ReturnedTensor::of(
                    &tensor,
                    self.destination.as_ref(),
                    Some(self),
                    expected.output.as_ref().map(Reference::expected),
                );
                end(ProviderResult::Returned(returned), read_input());
                self.stall_destination(expected.stall_destination, DEFERRED_READ_STALL);
                Ok(tensor)
            }
            Ok(Err(error)) => {
                end(
                    ProviderResult::Failed {
                        message: error.to_string(),
                        chain: source_chain(&error),
                        device_error: device_error_in(&error),
                    },
                    read_input(),
                );
                Err(error)
            }
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                end(
                    ProviderResult::Panicked {
                        message: message.clone(),
                    },
                    read_input(),
                );
                Err(tenferro_runtime::Error::Internal(format!(
                    "transfer provider panicked: {message}"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::{Case, HostProvider, Rig, Route};

    /// The host copy, noting what its Spy shows while the call runs.
    #[derive(Debug, Default)]
    struct LooksAtItsSpy {
        spy: OnceLock<Arc<Spy>>,
        seen: Mutex<Option<(bool, usize)>>,
    }

    impl TransferProvider for LooksAtItsSpy {
        fn transfer_blocking(
            &self,
            request: TransferRequest<'_>,
        ) -> tenferro_runtime::Result<Tensor> {
            if let Some(spy) = self.spy.get() {
                let (in_flight, records) = spy.in_flight_and_records();
                *self.seen.lock().unwrap() = Some((in_flight.is_some(), records.len()));
            }
            HostProvider::new().transfer_blocking(request)
        }
    }

    #[test]
    fn a_call_is_in_flight_while_it_runs_and_a_record_once_it_ended() {
        let provider = Arc::new(LooksAtItsSpy::default());
        let route = Route::host_to_host().unwrap();
        let mut rig = Rig::new(route, Arc::clone(&provider) as _).unwrap();
        provider.spy.set(Arc::clone(rig.spy())).unwrap();
        rig.spy().take();
        let case = Case::from_values(vec![2], vec![1_i32, 2]).unwrap();
        let outcome = rig.run(&case).unwrap();
        assert_eq!(outcome.calls.len(), 1);
        assert_eq!(*provider.seen.lock().unwrap(), Some((true, 0)));
        let (in_flight, records) = rig.spy().in_flight_and_records();
        assert!(in_flight.is_none());
        assert!(records.is_empty(), "the rig took the run's records");
    }
}
