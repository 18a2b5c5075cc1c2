//! Reading back memory the host cannot map: a device whose memory is
//! opaque ([`VendorDevice::set_opaque_memory`], as a GPU's) refuses
//! `map_read`, so the adapter downloads its tensors into host memory and
//! hands the suite their little-endian image, as a CUDA adapter does; a
//! view input's whole backing storage it reads on the device.

use example_vendor_device::{VendorDevice, VendorStorage};
use tenferro_transfer_conformance::adapter::*;

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

/// The whole storage a view reaches into (its gaps too), read on the
/// device, where its memory is opaque; `None` (the suite maps it) where
/// the host can map it.
pub fn read_back_view(device: &VendorDevice, view: &TensorView<'_>) -> Option<ReadBack> {
    if !device.opaque_memory() {
        return None;
    }
    Some(with_element!(view.dtype(), T => backing_image::<T>(view),
        external => ReadBack::NotReadable { reason: "an external dtype".to_owned() }))
}

/// The little-endian image of the device storage behind `view`.
fn backing_image<T: Element>(view: &TensorView<'_>) -> ReadBack {
    let storage = T::typed_view(view.clone()).and_then(|typed| {
        typed
            .backend_buffer()
            .and_then(|buffer| buffer.as_any().downcast_ref::<VendorStorage<T>>())
            .map(VendorStorage::alias)
    });
    let Some(storage) = storage else {
        return ReadBack::NotReadable {
            reason: "the view is not over this device's storage".to_owned(),
        };
    };
    match storage.read_on_device() {
        Ok(values) => {
            let mut bytes = Vec::new();
            T::extend_bytes(&values, &mut bytes);
            ReadBack::Bytes(bytes)
        }
        Err(error) => ReadBack::Failed {
            reason: format!("the device could not read the view's storage: {error}"),
        },
    }
}
