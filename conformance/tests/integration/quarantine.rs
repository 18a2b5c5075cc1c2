//! A provider whose caching allocator holds each freed block back for a
//! number of later frees of its size before it reuses one (as allocators
//! that wait for outstanding device work do): its memory grows a block a
//! call until the quarantine is full, then stops. Bounded, so kept memory,
//! not a leak, however deep the quarantine (up to what the suite repeats);
//! the same allocator that never reuses a block leaks. Written here as a
//! vendor would, from the simulated device's public API, on a device that
//! only counts its memory in use.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tenferro_tensor::BackendStorage;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{
    Element, SimStorage, sim_storage_of, with_element,
};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::{counting_route, output_in_block};

/// One block the allocator handed out: the storage, and when it was seen
/// free (the count of frees of its size then), if it was.
struct Block {
    storage: Box<dyn Any + Send + Sync>,
    freed_at: Option<usize>,
}

/// Per (element type, length): its blocks, and how many frees were seen.
type Sizes = HashMap<(TypeId, usize), (Vec<Block>, usize)>;

#[derive(Debug)]
struct QuarantineUpload {
    inner: Arc<dyn TransferProvider>,
    /// A freed block is reused only after this many later frees of its
    /// size; `None`: never (a leak).
    depth: Option<usize>,
    sizes: Mutex<Sizes>,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Block")
            .field("freed_at", &self.freed_at)
            .finish()
    }
}

impl QuarantineUpload {
    fn recycle<T: Element>(&self, output: Tensor) -> tenferro_tensor::Result<Tensor> {
        let Some(fresh) = sim_storage_of::<T>(&output) else {
            return Ok(output);
        };
        let key = (TypeId::of::<T>(), BackendStorage::len(fresh));
        let mut sizes = self.sizes.lock().unwrap();
        let (blocks, frees) = sizes.entry(key).or_default();
        // Blocks no tensor holds any more are freed now, in turn.
        for block in blocks.iter_mut() {
            let free = block
                .storage
                .downcast_ref::<SimStorage<T>>()
                .is_some_and(|storage| storage.handles() == 1);
            if free && block.freed_at.is_none() {
                block.freed_at = Some(*frees);
                *frees += 1;
            }
        }
        let ready = self.depth.and_then(|depth| {
            blocks
                .iter_mut()
                .filter(|block| block.freed_at.is_some_and(|at| *frees - at > depth))
                .min_by_key(|block| block.freed_at)
        });
        let Some(block) = ready else {
            blocks.push(Block {
                storage: Box::new(fresh.alias()),
                freed_at: None,
            });
            return Ok(output);
        };
        block.freed_at = None;
        let Some(reused) = block
            .storage
            .downcast_ref::<SimStorage<T>>()
            .map(SimStorage::alias)
        else {
            return Ok(output);
        };
        drop(sizes);
        output_in_block(output, reused)
    }
}

impl TransferProvider for QuarantineUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        Ok(with_element!(output.dtype(), T => self.recycle::<T>(output)?, external => output))
    }
}

fn quarantine(route: &Route, depth: Option<usize>) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("the upload serves a simulated destination")?;
    Ok(Arc::new(QuarantineUpload {
        inner: Arc::new(SimUpload::new(device.clone())),
        depth,
        sizes: Mutex::default(),
    }))
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("quarantine", Level::V2)
        .route(
            "depth_8",
            || counting_route(false),
            |route| quarantine(route, Some(8)),
        )
        .route(
            "never_reused",
            || counting_route(false),
            |route| quarantine(route, None),
        )
        .profile(Profile::Quick)
        .seed(13)
}

#[test]
fn a_quarantine_that_fills_is_kept_memory_and_one_that_never_reuses_leaks() {
    let suite = suite();
    let report = suite.run();
    for rule in Level::V2.rules() {
        assert!(
            !matches!(suite.check(&report, "depth_8", *rule), RuleVerdict::Fail(_)),
            "{rule}: {}",
            report.to_table()
        );
    }
    assert!(
        matches!(
            suite.check(&report, "depth_8", Rule::NoLeak),
            RuleVerdict::Pass { .. }
        ),
        "{}",
        report.to_table()
    );
    assert!(
        matches!(
            suite.check(&report, "never_reused", Rule::NoLeak),
            RuleVerdict::Fail(_)
        ),
        "{}",
        report.to_table()
    );
}
