//! `SimEngine`: the executable engine of a simulated device.
//!
//! It runs only what consuming a transferred value needs (compaction,
//! reshape, host download and upload); every other `Engine` operation answers
//! with a typed `unsupported` error. A reshape or compaction of an owned
//! compact tensor in its own, completed memory is metadata only, as on a
//! real device: the result is a new tensor over the same allocation
//! ([`SimStorage::alias`]), so whoever holds it holds that allocation. It refuses any tensor that is not in its
//! own device's memory, so a transfer that lands elsewhere fails loudly, and
//! memory a copy is still writing (a typed host-access error), so a transfer
//! that returned too early fails loudly too. Its event domain is simulated
//! ([`crate::SimEventDomainDriver`]), so every launch is traced.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_runtime::{
    EngineTarget, EventDomainDriver, ExecutionContextIdentity, ExecutionEngine,
};
use tenferro_tensor::{
    BackendStorage, CompareDir, DType, DotGeneralConfig, ElementwiseReadOp, Engine, Error,
    GatherConfig, HostAccessError, PadConfig, Result, ScatterConfig, SessionCachedDot, SliceConfig,
    StorageBuffer, Tensor, TensorAnalytic, TensorBuffer, TensorDeviceTransfer, TensorDot,
    TensorElementwise, TensorFusion, TensorIndexing, TensorRead, TensorReduction, TensorStructural,
    TensorWrite,
};

use crate::{
    CopyToken, Element, Kernels, SimDevice, SimEventDomainDriver, SimStorage, StorageCompletion,
    is_compact, read_compact, with_element,
};

/// The stream a [`Kernels::Queued`] engine queues its kernels on: a queue
/// of its own, apart from the providers' copies.
const KERNEL_STREAM: usize = 31;

/// The execution engine of one [`SimDevice`].
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, SimEngine};
/// use tenferro_tensor::{TensorRead, TensorStructural};
///
/// let device = SimDevice::new(0).unwrap();
/// let mut engine = SimEngine::new(device.clone());
/// let x = device.tensor(vec![2, 2], vec![1_i32, 2, 3, 4]).unwrap();
/// let y = engine.reshape_read(TensorRead::from_tensor(&x), &[4]).unwrap();
/// assert_eq!(y.shape(), &[4]);
/// // A metadata-only reshape: `y` is the same allocation as `x`.
/// assert_eq!(device.ledger().live(), 1);
/// drop(x);
/// assert_eq!(device.ledger().live(), 1);
/// // A host tensor is not this device's memory.
/// let host = tenferro_tensor::Tensor::from_vec_col_major(vec![1], vec![1_i32]).unwrap();
/// assert!(engine.reshape_read(TensorRead::from_tensor(&host), &[1]).is_err());
/// ```
#[derive(Debug)]
pub struct SimEngine {
    device: SimDevice,
    /// The kernels queued and not yet waited for ([`Kernels::Queued`]).
    queued: Mutex<Vec<CopyToken>>,
}

impl SimEngine {
    /// The engine of `device`.
    pub fn new(device: SimDevice) -> Self {
        Self {
            device,
            queued: Mutex::new(Vec::new()),
        }
    }

    /// Wait for every kernel queued so far (one queue, in order).
    fn drain(&self) -> Result<()> {
        let queued =
            std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner));
        for kernel in queued {
            kernel
                .wait()
                .map_err(|error| Error::backend_source("SimEngine::synchronize", error))?;
        }
        Ok(())
    }

    /// The device this engine runs on.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    fn require_resident(&self, op: &'static str, input: &TensorRead<'_>) -> Result<()> {
        if self.device.owns(input) {
            Ok(())
        } else {
            Err(Error::runtime_state(
                op,
                "input is not resident in this simulated device's memory",
            ))
        }
    }

    /// Reshape a resident tensor: without a copy where it can (see
    /// [`Self::alias_resident`]), else into fresh device memory.
    fn reshape_resident(
        &self,
        op: &'static str,
        input: &TensorRead<'_>,
        shape: &[usize],
    ) -> Result<Tensor> {
        self.require_resident(op, input)?;
        if self.device.kernels() == Kernels::Aliasing
            && shape.iter().product::<usize>() == input.shape().iter().product::<usize>()
        {
            let aliased = with_element!(input.dtype(), T => self.alias_resident::<T>(input, shape),
                external => None);
            if let Some(tensor) = aliased {
                return tensor;
            }
        }
        self.copy_resident(op, input, shape)
    }

    /// The buffer of `input` and the simulated storage behind it (the
    /// buffer itself, or what a wrapper around it answers from `as_any`),
    /// when `input` is an owned compact tensor over the whole of a storage
    /// of this device whose every copy has completed: what an aliasing
    /// reshape shares, and what a [`Kernels::Lazy`] kernel reads when it
    /// runs.
    fn whole_resident<'a, T: Element>(
        &self,
        input: &'a TensorRead<'_>,
    ) -> Option<(&'a dyn BackendStorage<T>, &'a SimStorage<T>)> {
        let TensorRead::Tensor(tensor) = input else {
            return None;
        };
        let typed = tensor.as_typed::<T>()?;
        let StorageBuffer::Backend(buffer) = typed.buffer() else {
            return None;
        };
        let storage = buffer.as_any().downcast_ref::<SimStorage<T>>()?;
        let view = typed.as_view();
        let whole = is_compact(view.shape(), view.strides())
            && view.offset() == 0
            && BackendStorage::len(storage) == view.shape().iter().product::<usize>();
        let resident = storage
            .device()
            .is_some_and(|device| device.same_device(&self.device))
            && storage.completion() == StorageCompletion::Complete;
        (whole && resident).then_some((buffer.as_ref(), storage))
    }

    /// A tensor of `shape` over the same allocation as `input`, when `input`
    /// is an owned compact tensor over the whole of a storage of this
    /// device whose every copy has completed ([`Self::whole_resident`]) and
    /// which hands out all its elements; `None` otherwise, and the caller
    /// copies (so pending, failed or misbehaving memory fails exactly as a
    /// copy's read of it fails).
    fn alias_resident<T: Element>(
        &self,
        input: &TensorRead<'_>,
        shape: &[usize],
    ) -> Option<Result<Tensor>> {
        let (buffer, storage) = self.whole_resident::<T>(input)?;
        let count = shape.iter().product::<usize>();
        // Read through the tensor's own buffer, as a copy would: a wrapper
        // around the simulated memory that misbehaves (panics, hands out
        // fewer elements) misbehaves here too, or is copied.
        let readable = buffer.map_read().is_ok_and(|values| values.len() == count);
        if !readable {
            return None;
        }
        Some(
            self.device
                .tensor_with(shape.to_vec(), storage.alias(), self.device.placement()),
        )
    }

    /// Copy a resident tensor into fresh device memory with a new shape.
    fn copy_resident(
        &self,
        op: &'static str,
        input: &TensorRead<'_>,
        shape: &[usize],
    ) -> Result<Tensor> {
        self.require_resident(op, input)?;
        let count: usize = shape.iter().product();
        if count != input.shape().iter().product::<usize>() {
            return Err(Error::invalid_argument(
                op,
                "shape",
                "element count must not change",
            ));
        }
        if !matches!(self.device.kernels(), Kernels::Queued | Kernels::Lazy) {
            return with_element!(input.dtype(), T => {
                let values = read_compact::<T>(input)?;
                self.device.tensor(shape.to_vec(), values)
            }, external => Err(unsupported_dtype(op, input.dtype())));
        }
        with_element!(input.dtype(), T => {
            if self.device.kernels() == Kernels::Lazy
                && let Some((_, source)) = self.whole_resident::<T>(input)
            {
                let (tensor, kernel) = self.device.stream(KERNEL_STREAM).enqueue_reading(shape.to_vec(), source)?;
                self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(kernel);
                return Ok(tensor);
            }
            // The kernel runs after the earlier ones: an input one of them
            // still writes is read once they are done.
            let values = match read_compact::<T>(input) {
                Err(Error::HostAccess { source: HostAccessError::GpuAccessInProgress, .. }) => {
                    self.drain()?;
                    read_compact::<T>(input)?
                }
                read => read?,
            };
            let (tensor, kernel) = self.device.stream(KERNEL_STREAM).enqueue_copy(shape.to_vec(), values)?;
            self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(kernel);
            Ok(tensor)
        }, external => Err(unsupported_dtype(op, input.dtype())))
    }
}

fn unsupported_dtype(op: &'static str, dtype: DType) -> Error {
    Error::unsupported(
        op,
        format!("simulated devices carry the preset dtypes only, not {dtype:?}"),
    )
}

impl ExecutionEngine for SimEngine {
    fn target(&self) -> EngineTarget {
        EngineTarget::new(
            self.device.engine_id().clone(),
            ExecutionContextIdentity::of::<SimEngine>(),
            Some(self.device.allocation_domain()),
        )
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn event_domain_driver(&self) -> Arc<dyn EventDomainDriver> {
        Arc::new(SimEventDomainDriver::new(self.device.name()))
    }

    fn synchronize(&mut self) -> tenferro_runtime::Result<()> {
        self.drain().map_err(tenferro_runtime::Error::from)
    }
}

/// Implements operations a simulated engine does not run as typed
/// `unsupported` errors.
macro_rules! unsupported_ops {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)+) => {
        $(
            fn $name(&mut self, $($arg: $ty),*) -> $ret {
                $(let _ = $arg;)*
                Err(Error::unsupported(
                    concat!("SimEngine::", stringify!($name)),
                    "simulated engines only run what consuming a transferred tensor needs",
                ))
            }
        )+
    };
}

impl TensorStructural for SimEngine {
    fn to_contiguous_read(&mut self, input: TensorRead<'_>) -> Result<Tensor> {
        let shape = input.shape().to_vec();
        self.reshape_resident("SimEngine::to_contiguous_read", &input, &shape)
    }

    fn reshape_read(&mut self, input: TensorRead<'_>, shape: &[usize]) -> Result<Tensor> {
        self.reshape_resident("SimEngine::reshape_read", &input, shape)
    }

    unsupported_ops! {
        fn cast(input: &Tensor, to: DType) -> Result<Tensor>;
        fn extract_diagonal(input: &Tensor, axis_a: usize, axis_b: usize) -> Result<Tensor>;
        fn embed_diagonal(input: &Tensor, axis_a: usize, axis_b: usize) -> Result<Tensor>;
        fn tril(input: &Tensor, k: i64) -> Result<Tensor>;
        fn triu(input: &Tensor, k: i64) -> Result<Tensor>;
        fn transpose_read(input: TensorRead<'_>, perm: &[usize]) -> Result<Tensor>;
        fn broadcast_in_dim_read(input: TensorRead<'_>, shape: &[usize], dims: &[usize]) -> Result<Tensor>;
    }
}

impl TensorDeviceTransfer for SimEngine {
    fn download_to_host(&mut self, tensor: TensorRead<'_>) -> Result<Tensor> {
        const OP: &str = "SimEngine::download_to_host";
        self.require_resident(OP, &tensor)?;
        with_element!(tensor.dtype(), T => {
            Tensor::from_vec_col_major(tensor.shape().to_vec(), read_compact::<T>(&tensor)?)
        }, external => Err(unsupported_dtype(OP, tensor.dtype())))
    }

    fn upload_host_tensor(&mut self, tensor: TensorRead<'_>) -> Result<Tensor> {
        const OP: &str = "SimEngine::upload_host_tensor";
        if tensor.backend_family().is_some() {
            return Err(Error::runtime_state(OP, "input is not plain host memory"));
        }
        with_element!(tensor.dtype(), T => {
            self.device.tensor(tensor.shape().to_vec(), read_compact::<T>(&tensor)?)
        }, external => Err(unsupported_dtype(OP, tensor.dtype())))
    }
}

impl TensorElementwise for SimEngine {
    fn elementwise_read_into(
        &mut self,
        op: ElementwiseReadOp,
        inputs: &[TensorRead<'_>],
        out: TensorWrite<'_>,
    ) -> Result<()> {
        let _ = (op, inputs, out);
        Err(Error::unsupported(
            "SimEngine::elementwise_read_into",
            "simulated engines only run what consuming a transferred tensor needs",
        ))
    }

    unsupported_ops! {
        fn add_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn sub_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn mul_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn div_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn maximum_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn minimum_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn neg_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn conj_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn abs_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn sign_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn compare_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>, dir: &CompareDir) -> Result<Tensor>;
        fn select_read(pred: TensorRead<'_>, on_true: TensorRead<'_>, on_false: TensorRead<'_>) -> Result<Tensor>;
        fn clamp_read(input: TensorRead<'_>, lower: TensorRead<'_>, upper: TensorRead<'_>) -> Result<Tensor>;
    }
}

impl TensorAnalytic for SimEngine {
    unsupported_ops! {
        fn exp_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn log_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn sin_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn cos_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn tanh_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn sqrt_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn rsqrt_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn pow_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>) -> Result<Tensor>;
        fn expm1_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn log1p_read(input: TensorRead<'_>) -> Result<Tensor>;
        fn erf_read(input: TensorRead<'_>) -> Result<Tensor>;
    }
}

impl TensorReduction for SimEngine {
    unsupported_ops! {
        fn reduce_sum_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_prod_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_max_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_min_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
    }
}

impl TensorIndexing for SimEngine {
    unsupported_ops! {
        fn gather(operand: &Tensor, start_indices: &Tensor, config: &GatherConfig) -> Result<Tensor>;
        fn scatter(operand: &Tensor, scatter_indices: &Tensor, updates: &Tensor, config: &ScatterConfig) -> Result<Tensor>;
        fn slice(input: &Tensor, config: &SliceConfig) -> Result<Tensor>;
        fn dynamic_slice(input: &Tensor, starts: &Tensor, slice_sizes: &[usize]) -> Result<Tensor>;
        fn dynamic_update_slice(operand: &Tensor, update: &Tensor, starts: &Tensor) -> Result<Tensor>;
        fn pad(input: &Tensor, config: &PadConfig) -> Result<Tensor>;
        fn concatenate(inputs: &[&Tensor], axis: usize) -> Result<Tensor>;
        fn reverse(input: &Tensor, axes: &[usize]) -> Result<Tensor>;
    }
}

impl TensorDot for SimEngine {
    unsupported_ops! {
        fn dot_general_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>, config: &DotGeneralConfig) -> Result<Tensor>;
    }
}

impl TensorFusion for SimEngine {}
impl TensorBuffer for SimEngine {}
impl SessionCachedDot for SimEngine {}
impl Engine for SimEngine {}
