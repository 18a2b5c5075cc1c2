//! `VendorEngine`: the tenferro engine of a [`VendorDevice`], and its
//! runtime registration.
//!
//! It runs what consuming a transferred tensor needs (compaction and
//! reshape, and a download to the host); every other operation answers
//! with a typed `unsupported` error. Device work is ordered after the
//! copies queued before it, as on a real device's queue: an operation on
//! memory a copy is still writing waits for that copy first.

use std::any::Any;
use std::sync::Arc;

use tenferro_runtime::{
    CoreCapabilityBundle, CorePrepareContext, EngineRegistration, EngineRegistrationMetadata,
    EngineTarget, ExecutableEngineRegistrationConfig, ExecutionContextIdentity, ExecutionEngine,
    InputIngressContract, InputPlacementContract, InputSignatureContract, LayoutPrepareRequest,
    LayoutRuntime, PrepareCapability, PrepareError, PreparedOperation, PreparedOperationBinding,
    PreparedOperationPlan, ResidentOutputContract, RuntimeConfigError, RuntimeInputContract,
    SpecializationProjection, assemble_executable_engine_registration,
};
use tenferro_tensor::{
    CompareDir, DType, DotGeneralConfig, ElementwiseReadOp, Engine, Error, GatherConfig, PadConfig,
    Result, ScatterConfig, SessionCachedDot, SliceConfig, Tensor, TensorAnalytic, TensorBuffer,
    TensorDeviceTransfer, TensorDot, TensorElementwise, TensorFusion, TensorIndexing, TensorRead,
    TensorReduction, TensorStructural, TensorWrite,
};

use crate::scalar::{read_compact, unsupported_dtype, with_scalar};
use crate::{VENDOR_FAMILY, VendorDevice};

/// The engine of one [`VendorDevice`].
///
/// # Examples
///
/// ```
/// use example_vendor_device::VendorDevice;
/// use tenferro_tensor::{TensorRead, TensorStructural};
///
/// let device = VendorDevice::open(0).unwrap();
/// let mut engine = device.engine();
/// let x = device.tensor(vec![2, 2], vec![1_i32, 2, 3, 4]).unwrap();
/// assert_eq!(engine.reshape_read(TensorRead::from_tensor(&x), &[4]).unwrap().shape(), &[4]);
/// // A host tensor is not this device's memory.
/// let host = tenferro_tensor::Tensor::from_vec_col_major(vec![1], vec![1_i32]).unwrap();
/// assert!(engine.reshape_read(TensorRead::from_tensor(&host), &[1]).is_err());
/// ```
#[derive(Debug)]
pub struct VendorEngine {
    device: VendorDevice,
}

impl VendorEngine {
    /// The engine of `device`.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The device this engine runs on.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }

    /// A tensor in this device's memory with a new `shape` (same element
    /// count). An owned tensor whose copies have landed keeps its
    /// allocation (metadata only, as a device engine reshapes: whoever holds
    /// the result holds the allocation); a view, or memory a copy is still
    /// writing, is copied by the device into fresh compact memory once the
    /// copies into it have landed.
    fn reshape_resident(
        &self,
        op: &'static str,
        input: &TensorRead<'_>,
        shape: &[usize],
    ) -> Result<Tensor> {
        if !self.device.owns(input) {
            return Err(Error::runtime_state(
                op,
                "input is not in this device's memory",
            ));
        }
        if shape.iter().product::<usize>() != input.shape().iter().product::<usize>() {
            return Err(Error::invalid_argument(
                op,
                "shape",
                "the element count must not change",
            ));
        }
        with_scalar!(input.dtype(), T => {
            if !self.device.copying_kernels()
                && let Some(aliased) = self.device.alias_landed::<T>(input, shape)
            {
                return aliased;
            }
            self.device.settle(input);
            let values = read_compact::<T>(input)?;
            self.device.tensor(shape.to_vec(), values)
        }, other => Err(unsupported_dtype(op, input.dtype())))
    }
}

impl VendorDevice {
    /// The runtime registration of this device's engine: its ingress
    /// accepts exactly this device's tensors (so a host input must move
    /// through a transfer provider), and it prepares layout operations
    /// (the engine runs them).
    ///
    /// # Errors
    ///
    /// The runtime's [`RuntimeConfigError`] if it rejects the registration.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    ///
    /// let device = VendorDevice::open(0).unwrap();
    /// let registration = device.registration().unwrap();
    /// assert_eq!(registration.engine_id(), device.engine_id());
    /// ```
    pub fn registration(&self) -> std::result::Result<EngineRegistration, RuntimeConfigError> {
        let capabilities = self.capabilities();
        let metadata = EngineRegistrationMetadata::new(
            self.engine_id().clone(),
            self.provider_device_identity().clone(),
            self.hardware_class().clone(),
            Arc::from(vec![self.storage_class().clone()]),
            self.storage_class().clone(),
            capabilities,
        );
        assemble_executable_engine_registration(ExecutableEngineRegistrationConfig::new(
            metadata,
            ExecutionContextIdentity::of::<VendorEngine>(),
            self.ingress(),
        ))
    }

    /// What the engine prepares: layout operations (reshape), as metadata
    /// plans the [`VendorEngine`] passed to `Runtime::run` then runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use example_vendor_device::VendorDevice;
    ///
    /// let capabilities = VendorDevice::open(0).unwrap().capabilities();
    /// # let _ = capabilities;
    /// ```
    pub fn capabilities(&self) -> CoreCapabilityBundle {
        let mut capabilities = CoreCapabilityBundle::builder();
        capabilities.layout(Arc::new(MetadataPreparer));
        capabilities.build()
    }

    fn ingress(&self) -> InputIngressContract {
        let storage = self.storage_class().clone();
        let (s1, s2, s3) = (storage.clone(), storage.clone(), storage.clone());
        let (d1, d2, d3, d4) = (self.clone(), self.clone(), self.clone(), self.clone());
        InputIngressContract::new(
            InputPlacementContract::new(move |placement, candidate| {
                candidate == &s1 && d1.accepts_placement(placement)
            }),
            InputSignatureContract::new(move |placement, family, domain, candidate| {
                candidate == &s2
                    && d2.accepts_placement(placement)
                    && family == Some(VENDOR_FAMILY)
                    && domain == Some(d2.allocation_domain())
            }),
            RuntimeInputContract::new(move |input: &TensorRead<'_>, candidate| {
                candidate == &s3 && d3.owns(input)
            }),
            ResidentOutputContract::new(move |input: &TensorRead<'_>, candidate| {
                candidate == &storage && d4.resident(input)
            }),
        )
    }
}

/// Prepares metadata-only plans: the runtime then calls the
/// [`VendorEngine`] passed to `Runtime::run` for each operation.
#[derive(Debug)]
struct MetadataPreparer;

#[derive(Debug)]
struct MetadataOperation {
    binding: PreparedOperationBinding,
    specialization: SpecializationProjection,
}

impl PreparedOperation for MetadataOperation {
    fn binding(&self) -> &PreparedOperationBinding {
        &self.binding
    }

    fn specialization(&self) -> &SpecializationProjection {
        &self.specialization
    }

    fn retained_bytes(&self) -> usize {
        0
    }
}

fn metadata_plan(context: &CorePrepareContext<'_>) -> PrepareCapability {
    PrepareCapability::Prepared(PreparedOperationPlan::metadata(Arc::new(
        MetadataOperation {
            binding: context.binding().clone(),
            specialization: context.specialization().clone(),
        },
    )))
}

impl LayoutRuntime for MetadataPreparer {
    fn prepare(
        &self,
        request: LayoutPrepareRequest<'_>,
    ) -> std::result::Result<PrepareCapability, PrepareError> {
        Ok(metadata_plan(request.context()))
    }
}

impl ExecutionEngine for VendorEngine {
    fn target(&self) -> EngineTarget {
        EngineTarget::new(
            self.device.engine_id().clone(),
            ExecutionContextIdentity::of::<VendorEngine>(),
            Some(self.device.allocation_domain()),
        )
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Operations the engine does not run, as typed `unsupported` errors.
macro_rules! unsupported_ops {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)+) => {
        $(
            fn $name(&mut self, $($arg: $ty),*) -> $ret {
                $(let _ = $arg;)*
                Err(Error::unsupported(
                    concat!("VendorEngine::", stringify!($name)),
                    "the vendor's engine runs only what consuming a transferred tensor needs",
                ))
            }
        )+
    };
}

impl TensorStructural for VendorEngine {
    fn to_contiguous_read(&mut self, input: TensorRead<'_>) -> Result<Tensor> {
        let shape = input.shape().to_vec();
        self.reshape_resident("VendorEngine::to_contiguous_read", &input, &shape)
    }

    fn reshape_read(&mut self, input: TensorRead<'_>, shape: &[usize]) -> Result<Tensor> {
        self.reshape_resident("VendorEngine::reshape_read", &input, shape)
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

impl TensorDeviceTransfer for VendorEngine {
    fn download_to_host(&mut self, tensor: TensorRead<'_>) -> Result<Tensor> {
        self.device.download(&tensor)
    }

    unsupported_ops! {
        fn upload_host_tensor(tensor: TensorRead<'_>) -> Result<Tensor>;
    }
}

impl TensorElementwise for VendorEngine {
    fn elementwise_read_into(
        &mut self,
        op: ElementwiseReadOp,
        inputs: &[TensorRead<'_>],
        out: TensorWrite<'_>,
    ) -> Result<()> {
        let _ = (op, inputs, out);
        Err(Error::unsupported(
            "VendorEngine::elementwise_read_into",
            "the vendor's engine runs only what consuming a transferred tensor needs",
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

impl TensorAnalytic for VendorEngine {
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

impl TensorReduction for VendorEngine {
    unsupported_ops! {
        fn reduce_sum_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_prod_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_max_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
        fn reduce_min_read(input: TensorRead<'_>, axes: &[usize]) -> Result<Tensor>;
    }
}

impl TensorIndexing for VendorEngine {
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

impl TensorDot for VendorEngine {
    unsupported_ops! {
        fn dot_general_read(lhs: TensorRead<'_>, rhs: TensorRead<'_>, config: &DotGeneralConfig) -> Result<Tensor>;
    }
}

impl TensorFusion for VendorEngine {}
impl TensorBuffer for VendorEngine {}
impl SessionCachedDot for VendorEngine {}
impl Engine for VendorEngine {}
