//! A caching allocator on the simulated device that queues each copy into
//! a block it hands out again (`SimStream::enqueue_copy_into`): waiting on
//! the copy keeps the contract; returning the reused block before its copy
//! lands breaks `completion`, which only a copy left in flight into a
//! reused block can show. Written here as a vendor would, from the
//! simulated device's public API.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tenferro_tensor::{Error, StorageBuffer, TensorRead, TypedTensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{
    Element, SimStorage, read_compact, sim_storage_of, with_element,
};
use tenferro_transfer_conformance::prelude::*;

/// Blocks handed out, per element type and length.
type Blocks = HashMap<(TypeId, usize), Vec<Box<dyn Any + Send + Sync>>>;

#[derive(Debug)]
struct ReusingUpload {
    device: SimDevice,
    /// Wait on a copy into a reused block (the bug: it does not).
    wait_on_reuse: bool,
    blocks: Mutex<Blocks>,
}

impl ReusingUpload {
    fn upload<T: Element>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "ReusingUpload::transfer_blocking";
        let values = read_compact::<T>(input)?;
        let key = (TypeId::of::<T>(), values.len());
        let free = self.blocks.lock().unwrap().get(&key).and_then(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block.downcast_ref::<SimStorage<T>>())
                .find(|block| block.handles() == 1)
                .map(SimStorage::alias)
        });
        let Some(block) = free else {
            let (tensor, token) = self
                .device
                .stream(0)
                .enqueue_copy(input.shape().to_vec(), values)?;
            token
                .wait()
                .map_err(|error| Error::backend_source(OP, error))?;
            if let Some(storage) = sim_storage_of::<T>(&tensor) {
                let mut blocks = self.blocks.lock().unwrap();
                blocks
                    .entry(key)
                    .or_default()
                    .push(Box::new(storage.alias()));
            }
            return Ok(tensor);
        };
        let token = self.device.stream(0).enqueue_copy_into(&block, values)?;
        if self.wait_on_reuse {
            token
                .wait()
                .map_err(|error| Error::backend_source(OP, error))?;
        }
        Ok(TypedTensor::<T>::from_buffer_col_major(
            input.shape().to_vec(),
            StorageBuffer::Backend(Box::new(block)),
            self.device.placement(),
        )
        .map(Tensor::from_typed)?)
    }
}

impl TransferProvider for ReusingUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        with_element!(input.dtype(), T => self.upload::<T>(input),
            external => Err(Error::unsupported("ReusingUpload", "preset dtypes only").into()))
    }
}

fn provider(route: &Route, wait_on_reuse: bool) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("the upload serves a simulated destination")?;
    Ok(Arc::new(ReusingUpload {
        device: device.clone(),
        wait_on_reuse,
        blocks: Mutex::default(),
    }))
}

#[test]
fn a_copy_into_a_reused_block_must_be_waited_on() {
    let suite = ProviderSuite::new("reused-block", Level::V2)
        .route("waits", Route::host_to_sim, |route| provider(route, true))
        .route("returns_early", Route::host_to_sim, |route| {
            provider(route, false)
        })
        .profile(Profile::Quick)
        .seed(17);
    let report = suite.run();
    for rule in Level::V2.rules() {
        assert!(
            !matches!(suite.check(&report, "waits", *rule), RuleVerdict::Fail(_)),
            "{rule}: {}",
            report.to_table()
        );
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "returns_early", Rule::Completion) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("had not completed"), "{text}");
}
