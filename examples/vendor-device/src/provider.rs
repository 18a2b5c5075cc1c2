//! Providers between the host and a [`VendorDevice`]: a correct upload and
//! download, and an upload with the classic asynchronous-copy bug.

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Error, Tensor, TensorRead};

use crate::VendorDevice;
use crate::copy_engine::CopyTicket;
use crate::scalar::{DeviceScalar, read_compact, unsupported_dtype, with_scalar};

/// The largest tensor the providers carry in one copy, in elements.
pub const MAX_ELEMENTS: usize = 1 << 18;

/// Host to a [`VendorDevice`]: gathers the input (any strides, offset or
/// axis order) into a compact staging buffer, queues the copy on the
/// device's copy engine, and waits for it to land before it returns, as a
/// blocking transfer must.
///
/// # Examples
///
/// ```
/// use example_vendor_device::{VendorDevice, VendorUpload};
///
/// let upload = VendorUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct VendorUpload {
    device: VendorDevice,
}

impl VendorUpload {
    /// Upload into `device`.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

impl TransferProvider for VendorUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let (tensor, ticket) =
            queue_upload(&self.device, &request, "VendorUpload::transfer_blocking")?;
        ticket.wait();
        Ok(tensor)
    }
}

/// A deliberately broken [`VendorUpload`]: it queues the copy and returns
/// the device tensor at once, without waiting for the copy to land. The
/// tensor has the right dtype, shape, placement and storage, and its values
/// arrive later; only the `completion` rule can see the bug.
///
/// # Examples
///
/// ```
/// use example_vendor_device::{EarlyReturnUpload, VendorDevice};
///
/// let upload = EarlyReturnUpload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(upload.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct EarlyReturnUpload {
    device: VendorDevice,
}

impl EarlyReturnUpload {
    /// Upload into `device`, without waiting.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The destination device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

impl TransferProvider for EarlyReturnUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        // The bug: the ticket is dropped, not waited on.
        let (tensor, _ticket) = queue_upload(
            &self.device,
            &request,
            "EarlyReturnUpload::transfer_blocking",
        )?;
        Ok(tensor)
    }
}

/// A [`VendorDevice`] to the host: waits for the copies into its input (a
/// tensor or any strided view of device memory) to land, then gathers its
/// values into a compact host tensor. The input is only read.
///
/// # Examples
///
/// ```
/// use example_vendor_device::{VendorDevice, VendorDownload};
///
/// let download = VendorDownload::new(VendorDevice::open(0).unwrap());
/// assert_eq!(download.device().name(), "npu0");
/// ```
#[derive(Debug)]
pub struct VendorDownload {
    device: VendorDevice,
}

impl VendorDownload {
    /// Download from `device`.
    pub fn new(device: VendorDevice) -> Self {
        Self { device }
    }

    /// The source device.
    pub fn device(&self) -> &VendorDevice {
        &self.device
    }
}

impl TransferProvider for VendorDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        download(&self.device, &request, "VendorDownload::transfer_blocking")
    }
}

/// Check a download request, and copy its input to the host.
pub(crate) fn download(
    device: &VendorDevice,
    request: &TransferRequest<'_>,
    op: &'static str,
) -> tenferro_runtime::Result<Tensor> {
    if request.source_engine_id() != device.engine_id() {
        return Err(Error::runtime_state(op, "the request comes from another engine").into());
    }
    let input = request.input();
    check_size(input, op)?;
    Ok(device.download(input)?)
}

/// Refuse an input larger than one copy carries.
fn check_size(input: &TensorRead<'_>, op: &'static str) -> tenferro_runtime::Result<()> {
    let count: usize = input.shape().iter().product();
    if count > MAX_ELEMENTS {
        return Err(Error::unsupported(
            op,
            format!(
                "the copy engine carries at most {MAX_ELEMENTS} elements in one copy, not {count}"
            ),
        )
        .into());
    }
    Ok(())
}

/// Check the request, stage its input and queue the copy.
fn queue_upload(
    device: &VendorDevice,
    request: &TransferRequest<'_>,
    op: &'static str,
) -> tenferro_runtime::Result<(Tensor, CopyTicket)> {
    let input = upload_input(device, request, op)?;
    with_scalar!(input.dtype(), T => upload::<T>(device, input),
        other => Err(unsupported_dtype(op, input.dtype()).into()))
}

/// The input of an upload request into `device`, once checked: the
/// request targets the device's engine, the input is plain host memory,
/// and one copy carries it.
pub(crate) fn upload_input<'r, 'a>(
    device: &VendorDevice,
    request: &'r TransferRequest<'a>,
    op: &'static str,
) -> tenferro_runtime::Result<&'r TensorRead<'a>> {
    if request.destination_engine_id() != device.engine_id() {
        return Err(Error::runtime_state(op, "the request targets another engine").into());
    }
    let input = request.input();
    if input.backend_family().is_some() {
        return Err(Error::unsupported(op, "the upload takes plain host memory only").into());
    }
    check_size(input, op)?;
    Ok(input)
}

fn upload<T: DeviceScalar>(
    device: &VendorDevice,
    input: &TensorRead<'_>,
) -> tenferro_runtime::Result<(Tensor, CopyTicket)> {
    let staging = read_compact::<T>(input)?;
    Ok(device.upload_async(input.shape().to_vec(), staging)?)
}
