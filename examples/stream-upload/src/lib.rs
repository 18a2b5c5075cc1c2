//! An example provider crate: `StreamUpload` moves host tensors onto a
//! simulated device through the device's stream, and waits for the copy
//! before it returns, as a blocking transfer must. It carries the four
//! floating-point dtypes and refuses the others with a typed `Err`, which
//! is what it declares to the conformance suite (`tests/conformance.rs`).

use tenferro_mock_devices::{SimDevice, read_compact};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Complex, DType, Error, Tensor, TensorRead};

/// The dtypes `StreamUpload` carries.
pub const SERVED_DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::C32, DType::C64];

/// The largest tensor `StreamUpload` carries, in elements.
pub const MAX_ELEMENTS: usize = 1 << 20;

/// Host to a simulated device, through stream 1 of the device.
///
/// # Examples
///
/// ```
/// use example_stream_upload::StreamUpload;
/// use tenferro_mock_devices::SimDevice;
///
/// let upload = StreamUpload::new(SimDevice::new(0).unwrap());
/// assert_eq!(upload.device().name(), "sim0");
/// ```
#[derive(Debug)]
pub struct StreamUpload {
    device: SimDevice,
}

impl StreamUpload {
    /// Upload into `device`.
    pub fn new(device: SimDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    fn copy<T: tenferro_mock_devices::Element>(
        &self,
        input: &TensorRead<'_>,
    ) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "StreamUpload::transfer_blocking";
        // Compact the (possibly strided) host input, queue the copy, and
        // wait on its token: returning before the wait is the classic bug.
        let values = read_compact::<T>(input)?;
        let (tensor, token) = self
            .device
            .stream(1)
            .enqueue_copy(input.shape().to_vec(), values)?;
        token
            .wait()
            .map_err(|error| Error::backend_source(OP, error))?;
        Ok(tensor)
    }
}

impl TransferProvider for StreamUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "StreamUpload::transfer_blocking";
        if request.destination_engine_id() != self.device.engine_id() {
            return Err(Error::runtime_state(OP, "the request targets another engine").into());
        }
        let input = request.input();
        let count: usize = input.shape().iter().product();
        if count > MAX_ELEMENTS {
            return Err(Error::unsupported(
                OP,
                format!("StreamUpload carries at most {MAX_ELEMENTS} elements, not {count}"),
            )
            .into());
        }
        match input.dtype() {
            DType::F32 => self.copy::<f32>(input),
            DType::F64 => self.copy::<f64>(input),
            DType::C32 => self.copy::<Complex<f32>>(input),
            DType::C64 => self.copy::<Complex<f64>>(input),
            other => Err(Error::unsupported(
                OP,
                format!("StreamUpload carries floating-point dtypes only, not {other:?}"),
            )
            .into()),
        }
    }
}
