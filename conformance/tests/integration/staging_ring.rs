//! A provider whose blocks of a size run out: a ring of staging outputs
//! that, once every block of a size is held by the caller, writes the next
//! output into the oldest one anyway. It shows only when more outputs of
//! one size are held than it keeps blocks, so the held pass stacks
//! `HOLD_SAME_SIZE` outputs of a small case per dtype, and three of its
//! largest case of one dtype, and moves that small case again as one run
//! of more inputs than the ring has blocks (on a device whose kernels copy,
//! only the runtime holds the provider's outputs). Written here as a
//! vendor would, from the simulated device's public API; the correct
//! caching allocator with as many blocks is the control.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tenferro_tensor::BackendStorage;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::STACKED_RUN_INPUTS;
use tenferro_transfer_conformance::harness::{HOLD_SAME_SIZE, HarnessError};
use tenferro_transfer_conformance::mock_devices::providers::CachingAllocator;
use tenferro_transfer_conformance::mock_devices::{
    Element, Kernels, SimStorage, sim_storage_of, with_element,
};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::output_in_block;

/// Blocks of each size, and where the ring stands in each.
type Blocks = HashMap<(TypeId, usize), (Vec<Box<dyn Any + Send + Sync>>, usize)>;

/// Keeps up to `blocks` destination blocks a size of at least `min`
/// elements; a free one is refilled, and when all are held the next in the
/// ring is refilled anyway.
#[derive(Debug)]
struct StagingRing {
    inner: Arc<dyn TransferProvider>,
    blocks: usize,
    min: usize,
    ring: Mutex<Blocks>,
}

impl StagingRing {
    fn recycle<T: Element>(&self, output: Tensor) -> tenferro_tensor::Result<Tensor> {
        let Some(fresh) = sim_storage_of::<T>(&output) else {
            return Ok(output);
        };
        let key = (TypeId::of::<T>(), BackendStorage::len(fresh));
        if key.1 < self.min {
            return Ok(output);
        }
        let mut ring = self.ring.lock().unwrap();
        let (blocks, next) = ring.entry(key).or_default();
        let mine = |block: &Box<dyn Any + Send + Sync>| {
            block.downcast_ref::<SimStorage<T>>().map(SimStorage::alias)
        };
        let free = blocks
            .iter()
            .filter_map(|block| block.downcast_ref::<SimStorage<T>>())
            .find(|block| block.handles() == 1)
            .map(SimStorage::alias);
        let block = match free {
            Some(block) => block,
            None if blocks.len() < self.blocks => {
                blocks.push(Box::new(fresh.alias()));
                return Ok(output);
            }
            // Every block is held: the bug.
            None => {
                *next = (*next + 1) % blocks.len();
                match mine(&blocks[*next]) {
                    Some(block) => block,
                    None => return Ok(output),
                }
            }
        };
        drop(ring);
        output_in_block(output, block)
    }
}

impl TransferProvider for StagingRing {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        Ok(with_element!(output.dtype(), T => self.recycle::<T>(output)?, external => output))
    }
}

fn upload(route: &Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("the upload serves a simulated destination")?;
    Ok(Arc::new(SimUpload::new(device.clone())))
}

/// More blocks than the held pairs ever hold of one size, fewer than the
/// stacked runs hold.
const BLOCKS: usize = 8;

/// A ring's blocks a size: more than the caller holds across runs, fewer
/// than the held pass's long run moves in one run.
const DEEP_BLOCKS: usize = 48;

/// Host to a simulated device whose layout kernels copy.
fn copying_route() -> Result<Route, HarnessError> {
    let route = Route::host_to_sim()?;
    if let Some(device) = route.destination().downcast::<SimDevice>() {
        device.set_kernels(Kernels::Copying);
    }
    Ok(route)
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("staging-ring", Level::V2)
        .route("ring", Route::host_to_sim, |route| {
            Ok(Arc::new(StagingRing {
                inner: upload(route)?,
                blocks: BLOCKS,
                min: 0,
                ring: Mutex::default(),
            }) as _)
        })
        // One block for a million elements or more, as a pool of large
        // blocks kept apart from the small ones.
        .route("large_ring", Route::host_to_sim, |route| {
            Ok(Arc::new(StagingRing {
                inner: upload(route)?,
                blocks: 1,
                min: 1 << 20,
                ring: Mutex::default(),
            }) as _)
        })
        // The small ring on a device whose kernels write fresh memory: the
        // outputs held across runs are the kernels', so only a run that
        // holds more than its blocks of a size shows it.
        .route("ring_copying", copying_route, |route| {
            Ok(Arc::new(StagingRing {
                inner: upload(route)?,
                blocks: BLOCKS,
                min: 0,
                ring: Mutex::default(),
            }) as _)
        })
        // A ring deeper than the outputs the caller holds across runs: only
        // the held pass's long run, which the runtime holds, outnumbers it.
        .route("deep_ring", Route::host_to_sim, |route| {
            Ok(Arc::new(StagingRing {
                inner: upload(route)?,
                blocks: DEEP_BLOCKS,
                min: 0,
                ring: Mutex::default(),
            }) as _)
        })
        .route("caching", Route::host_to_sim, |route| {
            Ok(Arc::new(CachingAllocator::new(upload(route)?, BLOCKS)) as _)
        })
        .profile(Profile::Quick)
        .seed(11)
}

#[test]
fn rings_of_staging_outputs_small_and_large_break_output_stable_and_the_caching_allocator_does_not()
{
    const { assert!(BLOCKS < HOLD_SAME_SIZE) };
    const { assert!(HOLD_SAME_SIZE < DEEP_BLOCKS && DEEP_BLOCKS < STACKED_RUN_INPUTS) };
    let suite = suite();
    let report = suite.run();
    for (route, held_by) in [
        ("ring", "still held by the caller"),
        ("large_ring", "still held by the caller"),
        (
            "ring_copying",
            "which the runtime holds until the program ends",
        ),
        // Seen in the long run only (which also overwrites there the
        // outputs the caller holds from the runs before it).
        ("deep_ring", "of 65 moved in one run"),
    ] {
        let RuleVerdict::Fail(text) = suite.check(&report, route, Rule::OutputStable) else {
            panic!("{route}: {}", report.to_table());
        };
        assert!(text.contains(held_by), "{route}: {text}");
    }
    for rule in Level::V2.rules() {
        assert!(
            !matches!(suite.check(&report, "caching", *rule), RuleVerdict::Fail(_)),
            "{rule}: {:?}",
            suite.check(&report, "caching", *rule)
        );
    }
}
