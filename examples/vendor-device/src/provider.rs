//! Upload providers from the host into a [`VendorDevice`]: a correct one,
//! and one with the classic asynchronous-copy bug.

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Error, Tensor, TensorRead};

use crate::VendorDevice;
use crate::copy_engine::CopyTicket;
use crate::scalar::{DeviceScalar, read_compact, with_scalar};

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

/// Check the request, stage its input and queue the copy.
fn queue_upload(
    device: &VendorDevice,
    request: &TransferRequest<'_>,
    op: &'static str,
) -> tenferro_runtime::Result<(Tensor, CopyTicket)> {
    if request.destination_engine_id() != device.engine_id() {
        return Err(Error::runtime_state(op, "the request targets another engine").into());
    }
    let input = request.input();
    if input.backend_family().is_some() {
        return Err(Error::unsupported(op, "the upload takes plain host memory only").into());
    }
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
    with_scalar!(input.dtype(), T => upload::<T>(device, input),
        other => Err(Error::unsupported(op, format!("no {:?} on the vendor's device", input.dtype())).into()))
}

fn upload<T: DeviceScalar>(
    device: &VendorDevice,
    input: &TensorRead<'_>,
) -> tenferro_runtime::Result<(Tensor, CopyTicket)> {
    let staging = read_compact::<T>(input)?;
    Ok(device.upload_async(input.shape().to_vec(), staging)?)
}
