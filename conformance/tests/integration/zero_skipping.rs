//! An upload that keeps its output blocks in a pool and, for an input whose
//! every element is zero, skips the copy, taking the block for zeroed: a
//! reused block still holds the values of the case that used it before.
//! Tensors of zeros are common, yet no fixed case is all zeros; the state
//! pass moves each dtype's largest small case, then the same case of
//! zeros right after it, so `values` fails. The same pool that writes the
//! zeros is the control. Written as a vendor would, from the simulated
//! device's public API (blind probe 8 meant its `b-zero-skip-pool-up` to
//! ask this, and only a one-element `false` caught it).

use std::sync::{Arc, Mutex};

use tenferro_tensor::{BackendStorage, Error, StorageBuffer, Tensor, TypedTensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{SimStorage, sim_storage_of};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::{output_in_block, sim_upload};
use crate::support::verdicts::no_rule_fails;

#[derive(Debug)]
struct ZeroSkippingPool {
    inner: SimUpload,
    /// Whether an input of zeros is still written into a reused block.
    writes_zeros: bool,
    blocks: Mutex<Vec<SimStorage<f32>>>,
}

impl ZeroSkippingPool {
    /// A kept block of `len` elements no tensor holds any more.
    fn free_block(&self, len: usize) -> Option<SimStorage<f32>> {
        self.blocks
            .lock()
            .unwrap()
            .iter()
            .find(|block| block.len() == len && block.handles() == 1)
            .map(SimStorage::alias)
    }
}

impl TransferProvider for ZeroSkippingPool {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        let Some(fresh) = sim_storage_of::<f32>(&output) else {
            return Ok(output);
        };
        let access = |error| Error::host_access("ZeroSkippingPool", error);
        let zeros = fresh
            .map_read()
            .map_err(access)?
            .iter()
            .all(|value| value.to_bits() == 0);
        let Some(block) = self.free_block(fresh.len()) else {
            self.blocks.lock().unwrap().push(fresh.alias());
            return Ok(output);
        };
        if zeros && !self.writes_zeros {
            // The bug: the block is taken for zeroed, and nothing is sent.
            let (shape, placement) = (output.shape().to_vec(), output.placement().clone());
            drop(output);
            let typed = TypedTensor::<f32>::from_buffer_col_major(
                shape,
                StorageBuffer::Backend(Box::new(block)),
                placement,
            )?;
            return Ok(Tensor::from_typed(typed));
        }
        Ok(output_in_block(output, block)?)
    }
}

fn pool(writes_zeros: bool) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        Ok(Arc::new(ZeroSkippingPool {
            inner: sim_upload(route)?,
            writes_zeros,
            blocks: Mutex::default(),
        }))
    }
}

#[test]
fn a_pool_that_skips_sending_zeros_fails_values_and_one_that_writes_them_does_not() {
    let suite = ProviderSuite::new("zero-skipping", Level::V2)
        .route("skips_zeros", Route::host_to_sim, pool(false))
        .route("writes_zeros", Route::host_to_sim, pool(true))
        .capabilities(Capabilities::all().dtypes([DType::F32]))
        .profile(Profile::Quick)
        .seed(5);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "skips_zeros", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(
        text.contains("of zeros, right after values of its size"),
        "{text}"
    );
    // Every rule but capability-honesty: the pools serve the dtypes left
    // out of the capabilities too.
    let rules = Level::V2.rules().iter();
    no_rule_fails(
        &suite,
        &report,
        "writes_zeros",
        rules.filter(|rule| **rule != Rule::CapabilityHonesty),
    );
}
