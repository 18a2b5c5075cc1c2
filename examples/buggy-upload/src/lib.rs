//! An example provider crate with a deliberate, classic bug: `MemcpyUpload`
//! copies the first `len` elements of the input's storage, as if every
//! input were compact. Owned tensors arrive intact; strided views (with an
//! offset, a step or a permutation) arrive with the wrong values. The
//! conformance suite catches it under the `values` rule and nowhere else.

use tenferro_mock_devices::{Element, SimDevice, read_compact};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Complex, DType, Error, Tensor, TensorRead};

/// Host to a simulated device, with the bug described above.
///
/// # Examples
///
/// ```
/// use example_buggy_upload::MemcpyUpload;
/// use tenferro_mock_devices::SimDevice;
///
/// let upload = MemcpyUpload::new(SimDevice::new(0).unwrap());
/// assert_eq!(upload.device().name(), "sim0");
/// ```
#[derive(Debug)]
pub struct MemcpyUpload {
    device: SimDevice,
}

impl MemcpyUpload {
    /// Upload into `device`.
    pub fn new(device: SimDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    fn copy<T: Element>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "MemcpyUpload::transfer_blocking";
        let count: usize = input.shape().iter().product();
        let values = match input {
            TensorRead::View(_) => {
                let view = T::typed_view(input.clone().tensor_view())
                    .ok_or_else(|| Error::runtime_state(OP, "the view's dtype is not T"))?;
                // The bug: the storage's first `count` elements, ignoring
                // the view's offset and strides.
                let storage = view.host_storage()?;
                storage
                    .get(..count)
                    .ok_or_else(|| {
                        Error::runtime_state(OP, "the storage is shorter than the view")
                    })?
                    .to_vec()
            }
            _ => read_compact::<T>(input)?,
        };
        let (tensor, token) = self
            .device
            .stream(0)
            .enqueue_copy(input.shape().to_vec(), values)?;
        token
            .wait()
            .map_err(|error| Error::backend_source(OP, error))?;
        Ok(tensor)
    }
}

impl TransferProvider for MemcpyUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        match input.dtype() {
            DType::F32 => self.copy::<f32>(input),
            DType::F64 => self.copy::<f64>(input),
            DType::I32 => self.copy::<i32>(input),
            DType::I64 => self.copy::<i64>(input),
            DType::Bool => self.copy::<bool>(input),
            DType::C32 => self.copy::<Complex<f32>>(input),
            DType::C64 => self.copy::<Complex<f64>>(input),
            other => Err(Error::unsupported(
                "MemcpyUpload::transfer_blocking",
                format!("no {other:?}"),
            )
            .into()),
        }
    }
}
