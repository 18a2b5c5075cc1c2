//! `CudaEndpoint`: one CUDA device of the rig, through tenferro-gpu's
//! `CudaEngine` and its runtime handle.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tenferro_gpu::cuda::{
    CudaDeviceId, CudaEngine, CudaRuntime, cuda_runtime_engine_registration, download_tensor,
    upload_tensor,
};
use tenferro_runtime::{
    CoreCapabilityBundle, EngineId, EngineRegistration, ExecutionContextIdentity, ExecutionEngine,
    StorageClass,
};
use tenferro_tensor::{
    AllocationDomainId, DeviceId, DeviceKind, GpuBackendKind, StorageBuffer, Tensor, TensorRead,
};
use tenferro_transfer_harness::{DeviceDescription, EngineRole, with_element};

use super::CudaError;
use super::stream::{StreamState, hold_stream, query_stream, synchronize_context};
use tenferro_transfer_harness::{
    Case, CompletionState, DeviceEndpoint, HarnessError, Layout, PlacementRule, ReadBack,
    StorageRule, stage_via_host,
};

/// Backend family of tenferro-gpu's CUDA storage.
pub const CUDA_FAMILY: &str = "cuda";

/// The engine of one rig and the runtime its providers must use.
///
/// tenferro allows one CUDA engine per runtime, and the engine's runtime
/// owns the allocation domain the destination checks, so the providers of
/// a route read the runtime of the engine the latest rig registered.
struct Slot {
    /// The engine not yet handed to a rig.
    engine: Option<CudaEngine>,
    /// The runtime of the engine last registered.
    runtime: CudaRuntime,
    /// That runtime's stream (`CUstream`), for the completion check.
    stream: u64,
}

/// A CUDA device as a route endpoint.
///
/// Opened only after [`crate::cuda_unavailable_reason`] said a device is
/// usable (tenferro-gpu panics without libcuda).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_cuda::{CudaEndpoint, CudaRoutes, CudaUpload};
/// use tenferro_transfer_harness::{Case, HarnessError, Layout, Oracle, Rig, Route};
/// use tenferro_tensor::DType;
///
/// match Route::host_to_cuda().and_then(|route| route.gate().map(|()| route)) {
///     Ok(route) => {
///         let device = route.destination().downcast::<CudaEndpoint>().unwrap().clone();
///         let mut rig = Rig::new(route.clone(), Arc::new(CudaUpload::new(device))).unwrap();
///         let case = Case::patterned(DType::F32, vec![3, 5], Layout::Owned).unwrap();
///         assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
///     }
///     // No driver or no device: a skip with its reason, never a pass.
///     Err(HarnessError::Unavailable { reason }) => println!("skipped: {reason}"),
///     Err(error) => panic!("{error}"),
/// }
/// ```
#[derive(Clone)]
pub struct CudaEndpoint {
    name: String,
    ordinal: u32,
    engine_id: EngineId,
    storage_class: StorageClass,
    slot: Arc<Mutex<Slot>>,
}

impl fmt::Debug for CudaEndpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CudaEndpoint")
            .field("name", &self.name)
            .field("ordinal", &self.ordinal)
            .finish_non_exhaustive()
    }
}

/// A freshly opened engine of device `ordinal`, and the slot that keeps its
/// runtime and stream (the engine itself is put in the slot by the caller).
fn open_slot(ordinal: u32) -> Result<(Slot, CudaEngine), CudaError> {
    let mut engine = CudaEngine::open(CudaDeviceId::from_ordinal(ordinal)).map_err(|source| {
        CudaError::Open {
            ordinal,
            source: Box::new(source),
        }
    })?;
    let stream = engine
        .with_raw("tenferro-transfer-harness.cuda.stream", |session| {
            Ok(session.stream().raw_handle())
        })
        .map_err(|source| CudaError::Tensor {
            operation: "opening a raw scope for the stream handle",
            dtype: tenferro_tensor::DType::F32,
            shape: Vec::new(),
            source: Box::new(source),
        })?;
    let slot = Slot {
        runtime: engine.runtime().clone(),
        engine: None,
        stream,
    };
    Ok((slot, engine))
}

impl CudaEndpoint {
    /// Open device `ordinal` as endpoint `cuda<ordinal>`.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Adapter`] (its source a [`CudaError`]) when tenferro-gpu cannot open the device, or
    /// [`HarnessError::Config`] when its registration is refused.
    pub fn open(ordinal: u32) -> Result<Self, HarnessError> {
        let context = format!("opening CUDA device {ordinal}");
        let (mut slot, engine) =
            open_slot(ordinal).map_err(|source| HarnessError::adapter(context.clone(), source))?;
        let stock = cuda_runtime_engine_registration(&engine)
            .map_err(|source| HarnessError::config(context.clone(), source))?;
        slot.engine = Some(engine);
        Ok(Self {
            name: format!("cuda{ordinal}"),
            ordinal,
            engine_id: stock.engine_id().clone(),
            storage_class: stock.default_storage_class().clone(),
            slot: Arc::new(Mutex::new(slot)),
        })
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The endpoint's name in reports (`cuda0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The engine id (tenferro-gpu's `tenferro.cuda.default.v1`).
    pub fn engine_id(&self) -> &EngineId {
        &self.engine_id
    }

    /// The storage class transfers use (`tenferro.storage.device.v1`).
    pub fn storage_class(&self) -> &StorageClass {
        &self.storage_class
    }

    /// The runtime the providers of this endpoint must use: that of the
    /// engine the latest rig registered.
    pub fn runtime(&self) -> CudaRuntime {
        self.slot().runtime.clone()
    }

    /// The raw `CUstream` of [`Self::runtime`].
    pub(crate) fn stream(&self) -> u64 {
        self.slot().stream
    }

    /// The device placement a tensor on this endpoint must have.
    pub fn placement_rule(&self) -> PlacementRule {
        PlacementRule::Device(DeviceId {
            kind: DeviceKind::Gpu(GpuBackendKind::Cuda),
            ordinal: self.ordinal as usize,
        })
    }

    /// The storage a tensor on this endpoint must use: CUDA storage in the
    /// current runtime's allocation domain.
    pub fn storage_rule(&self) -> StorageRule {
        StorageRule::domain(CUDA_FAMILY, self.allocation_domain())
    }

    /// The current runtime's allocation domain.
    pub fn allocation_domain(&self) -> AllocationDomainId {
        self.slot().runtime.allocation_domain_id()
    }

    /// The engine waiting to be handed to a rig, taken out of `slot`: the
    /// one there, or a fresh one (the last was handed to a rig), whose
    /// runtime and stream the slot then keeps.
    fn waiting_engine(&self, slot: &mut Slot) -> Result<CudaEngine, HarnessError> {
        match slot.engine.take() {
            Some(engine) => Ok(engine),
            None => {
                let (fresh, engine) = open_slot(self.ordinal).map_err(|source| {
                    HarnessError::adapter(format!("reopening CUDA device {}", self.ordinal), source)
                })?;
                *slot = fresh;
                Ok(engine)
            }
        }
    }

    /// The runtime registration of the waiting engine in `role`: the stock
    /// tenferro-gpu registration as a destination, the same identity with
    /// no capabilities as a source (so nothing runs there).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Adapter`] (its source a [`CudaError`]) when a fresh engine cannot be opened,
    /// [`HarnessError::Config`] when tenferro refuses the registration.
    pub fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        let context = format!("registration of `{}`", self.name);
        let config = |source| HarnessError::config(context.clone(), source);
        let mut slot = self.slot();
        let engine = self.waiting_engine(&mut slot)?;
        let engine = slot.engine.insert(engine);
        let stock = cuda_runtime_engine_registration(engine).map_err(config)?;
        if role != EngineRole::Source {
            return Ok(stock);
        }
        let rule = StorageRule::domain(CUDA_FAMILY, engine.runtime().allocation_domain_id());
        drop(slot);
        tenferro_transfer_harness::reregister(
            &stock,
            CoreCapabilityBundle::default(),
            ExecutionContextIdentity::of::<CudaEngine>(),
            self.placement_rule(),
            rule,
        )
        .map_err(config)
    }

    /// Hand the waiting engine to a rig (opening one if none waits).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Adapter`] (its source a [`CudaError`]) when a fresh engine cannot be opened.
    pub fn take_engine(&self) -> Result<CudaEngine, HarnessError> {
        let mut slot = self.slot();
        self.waiting_engine(&mut slot)
    }

    /// Upload a host tensor and wait for it: how a case's input is staged
    /// on a CUDA source.
    ///
    /// # Errors
    ///
    /// [`CudaError`] when tenferro-gpu refuses the upload or the wait.
    pub fn stage(&self, host: &Tensor) -> Result<Tensor, CudaError> {
        let runtime = self.runtime();
        let device = upload_tensor(&runtime, host).map_err(|source| CudaError::Tensor {
            operation: "staging upload",
            dtype: host.dtype(),
            shape: host.shape().to_vec(),
            source: Box::new(source),
        })?;
        runtime
            .synchronize()
            .map_err(|source| CudaError::Synchronize {
                source: Box::new(source),
            })?;
        Ok(device)
    }

    /// Whether the copy into `tensor`, just returned by a provider, has
    /// completed: the state of the runtime's stream (`cuStreamQuery`), then,
    /// for a copy on a stream of the provider's own, whether the output
    /// stays the same across a device-wide synchronize.
    pub fn completion_state(&self, tensor: &Tensor) -> CompletionState {
        let family = TensorRead::from_tensor(tensor).backend_family();
        if family != Some(CUDA_FAMILY) {
            return CompletionState::Unknown {
                reason: format!(
                    "the output is not CUDA memory (backend family {family:?}), so its completion cannot be observed"
                ),
            };
        }
        match query_stream(&self.runtime(), self.stream()) {
            Ok(StreamState::Idle) => self.settled_after_synchronize(tensor),
            Ok(StreamState::Busy) => CompletionState::Pending {
                detail: format!(
                    "cuStreamQuery on {}'s stream answered CUDA_ERROR_NOT_READY",
                    self.name
                ),
            },
            Ok(StreamState::Failed(status)) => CompletionState::Failed {
                detail: format!("cuStreamQuery on {}'s stream answered {status}", self.name),
            },
            Err(error) => CompletionState::Unknown {
                reason: format!("the stream could not be queried: {error}"),
            },
        }
    }

    /// Whether the output stays as it is across a device-wide synchronize.
    ///
    /// The runtime's stream being idle says nothing of a copy the provider
    /// queued on a stream of its own: the output is read now (a download on
    /// the runtime's stream, which does not wait for other streams), then
    /// again after `cuCtxSynchronize`; if the two images differ, a copy into
    /// it was still in flight when the provider returned.
    fn settled_after_synchronize(&self, tensor: &Tensor) -> CompletionState {
        let runtime = self.runtime();
        let before = self.image(tensor);
        if let Err(error) = synchronize_context(&runtime) {
            return CompletionState::Failed {
                detail: format!("the device-wide synchronize after the return failed: {error}"),
            };
        }
        match (before, self.image(tensor)) {
            (Some(Ok(before)), Some(Ok(after))) if before != after => CompletionState::Pending {
                detail: format!(
                    "{}'s stream was idle, but the output changed across a device-wide synchronize: a copy on a stream the harness does not own was still in flight",
                    self.name
                ),
            },
            (Some(Ok(_)), Some(Ok(_))) => CompletionState::Complete,
            (_, Some(Err(error))) | (Some(Err(error)), _) => CompletionState::Unknown {
                reason: format!(
                    "the output could not be read back to compare across a synchronize: {error}"
                ),
            },
            _ => CompletionState::Complete,
        }
    }

    /// The little-endian image of a CUDA tensor of this endpoint, read back
    /// with tenferro-gpu's download (which waits for the stream); `None`
    /// when `tensor` is not CUDA memory.
    pub fn image(&self, tensor: &Tensor) -> Option<Result<Vec<u8>, String>> {
        if TensorRead::from_tensor(tensor).backend_family() != Some(CUDA_FAMILY) {
            return None;
        }
        let host = match download_tensor(&self.runtime(), tensor) {
            Ok(host) => host,
            Err(error) => return Some(Err(format!("the CUDA download failed: {error}"))),
        };
        Some(with_element!(host.dtype(), T => {
            match host.as_typed::<T>().map(|typed| typed.buffer()) {
                Some(StorageBuffer::Host(values)) => {
                    let mut bytes = Vec::new();
                    <T as tenferro_transfer_harness::Element>::extend_bytes(values, &mut bytes);
                    Ok(bytes)
                }
                _ => Err("the download did not return host storage of its dtype".to_owned()),
            }
        }, external => Err("external dtypes have no byte image".to_owned())))
    }
}

impl DeviceEndpoint for CudaEndpoint {
    fn describe(&self) -> DeviceDescription {
        DeviceDescription::new(
            CudaEndpoint::name(self),
            "cuda",
            CudaEndpoint::engine_id(self).clone(),
            CudaEndpoint::storage_class(self).clone(),
            CudaEndpoint::placement_rule(self),
            CudaEndpoint::storage_rule(self),
        )
    }

    fn registration(&self, role: EngineRole) -> Result<EngineRegistration, HarnessError> {
        CudaEndpoint::registration(self, role)
    }

    fn engine(&self, _role: EngineRole) -> Result<Box<dyn ExecutionEngine>, HarnessError> {
        Ok(Box::new(self.take_engine()?))
    }

    /// Owned cases are uploaded and waited for; strided views of CUDA
    /// memory are not staged (tenferro-gpu 0.9 downloads owned device
    /// tensors only).
    fn stage(
        &self,
        case: &Case,
        use_input: &mut dyn FnMut(TensorRead<'_>),
    ) -> Result<(), HarnessError> {
        if let Layout::View(_) = case.layout() {
            return Err(HarnessError::Unavailable {
                reason: "strided views of CUDA memory are not staged: tenferro-gpu 0.9 downloads owned device tensors only (a known limit)".to_owned(),
            });
        }
        stage_via_host(
            case,
            |host| {
                CudaEndpoint::stage(self, &host).map_err(|source| {
                    HarnessError::adapter(format!("staging the input on {}", self.name), source)
                })
            },
            use_input,
        )
    }

    fn stages_views(&self) -> bool {
        false
    }

    fn read_back(&self, tensor: &Tensor) -> Option<ReadBack> {
        self.image(tensor).map(|image| match image {
            Ok(bytes) => ReadBack::Bytes(bytes),
            Err(reason) => ReadBack::Failed { reason },
        })
    }

    fn completion(&self, tensor: &Tensor) -> CompletionState {
        self.completion_state(tensor)
    }

    /// A host function that sleeps `pause` on the runtime's stream, where
    /// `stage` writes and the engine's kernels run: everything queued
    /// there after it waits (a provider's own streams wait only where the
    /// provider makes them wait for the runtime's, as it must).
    fn stall_queues(&self, pause: Duration) -> bool {
        hold_stream(&self.runtime(), self.stream(), pause).is_ok()
    }
}
