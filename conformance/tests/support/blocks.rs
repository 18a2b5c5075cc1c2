//! What the tests' vendor-style providers on the simulated device share:
//! a route to a device that only counts its memory, and handing an output
//! out again in a block the provider keeps.

use tenferro_tensor::{BackendStorage, StorageBuffer, Tensor, TypedTensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::harness::{AdapterContext, HarnessError};
use tenferro_transfer_conformance::mock_devices::{
    Element, Kernels, SimDevice, SimStorage, sim_storage_of,
};
use tenferro_transfer_conformance::prelude::SimUpload;
use tenferro_transfer_conformance::prelude::{Endpoint, Route};

/// A route from the host to a simulated device that only counts its
/// memory in use, as real devices do, and whose layout kernels alias or
/// write fresh memory (`copying`).
pub fn counting_route(copying: bool) -> Result<Route, HarnessError> {
    let device = SimDevice::counting_only(0).adapter_context("opening sim0")?;
    if copying {
        device.set_kernels(Kernels::Copying);
    }
    Route::new(Endpoint::host("host")?, Endpoint::new(device))
}

/// The correct upload to `route`'s simulated destination, which a test's
/// provider wraps.
pub fn sim_upload(route: &Route) -> Result<SimUpload, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("a simulated destination")?;
    Ok(SimUpload::new(device.clone()))
}

/// `output`'s values written into `block` (a block the provider keeps and
/// hands out again), and a tensor of `output`'s shape and placement over
/// it; `output` is dropped.
pub fn output_in_block<T: Element>(
    output: Tensor,
    mut block: SimStorage<T>,
) -> tenferro_tensor::Result<Tensor> {
    let fresh = sim_storage_of::<T>(&output).unwrap();
    let values = fresh.map_read().unwrap().to_vec();
    block.map_write().unwrap().copy_from_slice(&values).unwrap();
    let (shape, placement) = (output.shape().to_vec(), output.placement().clone());
    drop(output);
    TypedTensor::<T>::from_buffer_col_major(
        shape,
        StorageBuffer::Backend(Box::new(block)),
        placement,
    )
    .map(Tensor::from_typed)
}

/// `values` copied onto `device` (its stream 0) as a tensor of `shape`,
/// the copy waited for where `wait` (a provider that returns at once
/// where not): what the tests' simple uploads and peer copies do.
pub fn copy_onto<T: Element>(
    device: &SimDevice,
    shape: Vec<usize>,
    values: Vec<T>,
    wait: bool,
    op: &'static str,
) -> tenferro_runtime::Result<Tensor> {
    let (tensor, copy) = device.stream(0).enqueue_copy(shape, values)?;
    if wait {
        copy.wait()
            .map_err(|error| tenferro_tensor::Error::backend_source(op, error))?;
    }
    Ok(tensor)
}
