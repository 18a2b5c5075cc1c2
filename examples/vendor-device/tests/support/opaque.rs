//! Reading back memory the host cannot map: a device whose memory is
//! opaque ([`VendorDevice::set_opaque_memory`], as a GPU's) refuses
//! `map_read`, so the adapter downloads its tensors into host memory and
//! hands the suite their little-endian image, as a CUDA adapter does.

use example_vendor_device::VendorDevice;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::{Element, read_compact, with_element};

/// `tensor`'s bytes, downloaded, where the device's memory is opaque;
/// `None` (the suite maps it) where the host can map it.
pub fn read_back(device: &VendorDevice, tensor: &Tensor) -> Option<ReadBack> {
    if !device.opaque_memory() {
        return None;
    }
    Some(match device.download(&TensorRead::from_tensor(tensor)) {
        Ok(host) => host_image(&host),
        Err(error) => ReadBack::Failed {
            reason: format!("the download failed: {error}"),
        },
    })
}

/// The little-endian image of a host tensor's values.
fn host_image(host: &Tensor) -> ReadBack {
    let read = TensorRead::from_tensor(host);
    with_element!(host.dtype(), T => match read_compact::<T>(&read) {
        Ok(values) => {
            let mut bytes = Vec::new();
            T::extend_bytes(&values, &mut bytes);
            ReadBack::Bytes(bytes)
        }
        Err(error) => ReadBack::Failed { reason: error.to_string() },
    }, external => ReadBack::NotReadable { reason: "an external dtype".to_owned() })
}
