//! `Spy`: wraps the provider under test, records what it was asked and
//! reads back what it returned before the runtime sees it.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_mock_devices::{Element, with_element};
use tenferro_runtime::{
    EngineId, EventDomainId, ProviderDeviceIdentity, StorageClass, TransferProvider,
    TransferRequest,
};
use tenferro_tensor::{AllocationDomainId, DType, Placement, StorageBuffer, Tensor, TensorRead};

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

/// What the provider returned, read before the runtime saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnedTensor {
    /// Output dtype.
    pub dtype: DType,
    /// Output shape.
    pub shape: Vec<usize>,
    /// Length the output buffer reports, as the runtime measures it.
    pub buffer_len: usize,
    /// Output placement.
    pub placement: Placement,
    /// Backend family, `None` for plain host storage.
    pub backend_family: Option<&'static str>,
    /// Allocation domain, `None` for plain host storage.
    pub allocation_domain: Option<AllocationDomainId>,
    /// Little-endian image of the whole buffer, or why it could not be read.
    pub bytes: Result<Vec<u8>, String>,
}

impl ReturnedTensor {
    fn of(tensor: &Tensor) -> Self {
        let read = TensorRead::from_tensor(tensor);
        let (buffer_len, bytes) = with_element!(tensor.dtype(), T => buffer_image::<T>(tensor),
            external => (0, Err("external dtypes have no byte image".to_owned())));
        Self {
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
            buffer_len,
            placement: tensor.placement().clone(),
            backend_family: read.backend_family(),
            allocation_domain: read.allocation_domain(),
            bytes,
        }
    }
}

fn buffer_image<T: Element>(tensor: &Tensor) -> (usize, Result<Vec<u8>, String>) {
    let Some(typed) = tensor.as_typed::<T>() else {
        return (0, Err("tensor does not hold its declared dtype".to_owned()));
    };
    let buffer = typed.buffer();
    let mut bytes = Vec::new();
    let image = match buffer {
        StorageBuffer::Host(values) => {
            T::extend_bytes(values, &mut bytes);
            Ok(bytes)
        }
        StorageBuffer::Backend(storage) => match storage.map_read() {
            Ok(values) => {
                T::extend_bytes(&values, &mut bytes);
                Ok(bytes)
            }
            Err(error) => Err(format!("map_read failed: {error}")),
        },
    };
    (buffer.len(), image)
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
    },
    /// It panicked; the Spy caught the unwind.
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
}

/// One call of the provider.
#[derive(Clone, Debug, PartialEq)]
pub struct SpyRecord {
    /// What was asked.
    pub request: RequestRecord,
    /// How it ended.
    pub result: ProviderResult,
}

/// Wraps the provider under test.
///
/// A panicking provider is caught here and turned into an `Err` for the
/// runtime, so the runtime never unwinds and the rig stays usable.
#[derive(Debug)]
pub struct Spy {
    inner: Arc<dyn TransferProvider>,
    records: Mutex<Vec<SpyRecord>>,
}

impl Spy {
    /// Spy on `inner`.
    pub fn new(inner: Arc<dyn TransferProvider>) -> Self {
        Self {
            inner,
            records: Mutex::new(Vec::new()),
        }
    }

    /// Take every record made since the last call.
    pub fn take(&self) -> Vec<SpyRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
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

/// Display of every error below `error` in its `source()` chain.
pub fn source_chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut chain = Vec::new();
    let mut next = error.source();
    while let Some(source) = next {
        chain.push(source.to_string());
        next = source.source();
    }
    chain
}

impl TransferProvider for Spy {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let asked = RequestRecord::of(&request);
        match catch_unwind(AssertUnwindSafe(|| self.inner.transfer_blocking(request))) {
            Ok(Ok(tensor)) => {
                self.push(SpyRecord {
                    request: asked,
                    result: ProviderResult::Returned(ReturnedTensor::of(&tensor)),
                });
                Ok(tensor)
            }
            Ok(Err(error)) => {
                self.push(SpyRecord {
                    request: asked,
                    result: ProviderResult::Failed {
                        message: error.to_string(),
                        chain: source_chain(&error),
                    },
                });
                Err(error)
            }
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                self.push(SpyRecord {
                    request: asked,
                    result: ProviderResult::Panicked {
                        message: message.clone(),
                    },
                });
                Err(tenferro_runtime::Error::Internal(format!(
                    "transfer provider panicked: {message}"
                )))
            }
        }
    }
}
