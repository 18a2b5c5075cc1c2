//! Reference providers: correct transfers between the host and simulated
//! devices, for every preset dtype, owned tensors and strided views. Each
//! queues its copy on the device's stream and waits on the copy's token
//! before it returns, as a blocking transfer must; a device error (from the
//! device's fault plan) comes back as a typed `Err`.

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{DType, Error, Tensor, TensorRead};

use crate::{SimDevice, read_compact, with_element};

fn unsupported_dtype(op: &'static str, dtype: DType) -> tenferro_runtime::Error {
    Error::unsupported(
        op,
        format!("reference providers carry the preset dtypes only, not {dtype:?}"),
    )
    .into()
}

fn check_destination(
    op: &'static str,
    request: &TransferRequest<'_>,
    device: &SimDevice,
) -> tenferro_runtime::Result<()> {
    if request.destination_engine_id() == device.engine_id() {
        Ok(())
    } else {
        Err(
            Error::runtime_state(op, "request targets an engine this provider does not serve")
                .into(),
        )
    }
}

/// Copy `input` into fresh memory of `device` and wait until it landed.
fn copy_to_device(
    op: &'static str,
    input: &TensorRead<'_>,
    device: &SimDevice,
) -> tenferro_runtime::Result<Tensor> {
    with_element!(input.dtype(), T => {
        let (tensor, token) = device
            .stream(0)
            .enqueue_copy(input.shape().to_vec(), read_compact::<T>(input)?)?;
        token.wait().map_err(|error| Error::backend_source(op, error))?;
        Ok(tensor)
    }, external => Err(unsupported_dtype(op, input.dtype())))
}

/// Host to simulated device.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, SimUpload};
///
/// let upload = SimUpload::new(SimDevice::new(0).unwrap());
/// assert_eq!(upload.device().name(), "sim0");
/// ```
#[derive(Debug)]
pub struct SimUpload {
    device: SimDevice,
}

impl SimUpload {
    /// Upload into `device`.
    pub fn new(device: SimDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }
}

impl TransferProvider for SimUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "SimUpload::transfer_blocking";
        check_destination(OP, &request, &self.device)?;
        if request.input().backend_family().is_some()
            && request.input().placement().memory_kind == tenferro_tensor::MemoryKind::Device
        {
            return Err(Error::runtime_state(OP, "input is device memory, not host memory").into());
        }
        copy_to_device(OP, request.input(), &self.device)
    }
}

/// Simulated device to host.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, SimDownload};
///
/// let download = SimDownload::new(SimDevice::new(0).unwrap());
/// assert_eq!(download.device().name(), "sim0");
/// ```
#[derive(Debug)]
pub struct SimDownload {
    device: SimDevice,
}

impl SimDownload {
    /// Download from `device`.
    pub fn new(device: SimDevice) -> Self {
        Self { device }
    }

    /// The source device.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }
}

impl TransferProvider for SimDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "SimDownload::transfer_blocking";
        let input = request.input();
        if !self.device.owns(input) {
            return Err(Error::runtime_state(
                OP,
                "input is not resident on this provider's device",
            )
            .into());
        }
        with_element!(input.dtype(), T => {
            let landed = self
                .device
                .stream(0)
                .download(read_compact::<T>(input)?)
                .map_err(|error| Error::backend_source(OP, error))?;
            Ok(Tensor::from_vec_col_major(input.shape().to_vec(), landed)?)
        }, external => Err(unsupported_dtype(OP, input.dtype())))
    }
}

/// One simulated device to another.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::{SimDevice, SimPeer};
///
/// let peer = SimPeer::new(SimDevice::new(0).unwrap(), SimDevice::new(1).unwrap());
/// assert_eq!(peer.destination().name(), "sim1");
/// ```
#[derive(Debug)]
pub struct SimPeer {
    source: SimDevice,
    destination: SimDevice,
}

impl SimPeer {
    /// Copy from `source` to `destination`.
    pub fn new(source: SimDevice, destination: SimDevice) -> Self {
        Self {
            source,
            destination,
        }
    }

    /// The source device.
    pub fn source(&self) -> &SimDevice {
        &self.source
    }

    /// The destination device.
    pub fn destination(&self) -> &SimDevice {
        &self.destination
    }
}

impl TransferProvider for SimPeer {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "SimPeer::transfer_blocking";
        check_destination(OP, &request, &self.destination)?;
        if !self.source.owns(request.input()) {
            return Err(Error::runtime_state(
                OP,
                "input is not resident on this provider's source device",
            )
            .into());
        }
        copy_to_device(OP, request.input(), &self.destination)
    }
}
