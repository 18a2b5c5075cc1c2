//! A cache of destination blocks per calling thread that, when its own
//! cache has no free block of a size, takes the oldest block of another
//! thread's without asking whether a tensor still holds it. On one thread
//! it never steals; beside other threads it writes into an output another
//! caller still holds. That shows only if the caller holds its outputs
//! while other threads call the provider, and reads them again: the
//! concurrent phase holds each thread's recent outputs and reads them
//! after each of its calls, so the overwrite breaks `output-stable` and
//! names the concurrent calls. The same cache that takes only free blocks
//! is the control. Written here as a vendor would, from the simulated
//! device's public API, on a device that only counts its memory and on
//! one with a ledger; on a device whose layout kernels write fresh memory
//! the caller holds the kernels' copies, so only the control runs there.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use tenferro_tensor::BackendStorage;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{
    Element, SimStorage, sim_storage_of, with_element,
};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::{counting_route, output_in_block};

/// A block the provider handed out, and the thread whose cache it is in.
struct Block {
    thread: ThreadId,
    storage: Box<dyn Any + Send + Sync>,
}

/// Per (element type, length): the blocks handed out, oldest first.
type Blocks = HashMap<(TypeId, usize), Vec<Block>>;

/// A cache of destination blocks per calling thread; a thread whose own
/// cache has no free block of the size takes one from another thread's.
#[derive(Debug)]
struct CachingUpload {
    inner: Arc<dyn TransferProvider>,
    /// Whether a block is taken from another thread's cache without asking
    /// whether a tensor still holds it (the bug).
    racy: bool,
    blocks: Mutex<Blocks>,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Block")
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

impl CachingUpload {
    fn new(inner: Arc<dyn TransferProvider>, racy: bool) -> Self {
        Self {
            inner,
            racy,
            blocks: Mutex::default(),
        }
    }

    fn recycle<T: Element>(&self, output: Tensor) -> tenferro_tensor::Result<Tensor> {
        let Some(fresh) = sim_storage_of::<T>(&output) else {
            return Ok(output);
        };
        let key = (TypeId::of::<T>(), BackendStorage::len(fresh));
        let me = std::thread::current().id();
        let mut blocks = self.blocks.lock().unwrap();
        let list = blocks.entry(key).or_default();
        let own = list.iter().position(|block| {
            block.thread == me && storage::<T>(block).is_some_and(|block| block.handles() == 1)
        });
        let stolen = || {
            list.iter().position(|block| {
                block.thread != me
                    && storage::<T>(block).is_some_and(|block| self.racy || block.handles() == 1)
            })
        };
        let taken = own.or_else(stolen).and_then(|index| {
            list[index].thread = me;
            storage::<T>(&list[index]).map(SimStorage::alias)
        });
        match taken {
            Some(block) => {
                drop(blocks);
                output_in_block(output, block)
            }
            None => {
                list.push(Block {
                    thread: me,
                    storage: Box::new(fresh.alias()),
                });
                Ok(output)
            }
        }
    }
}

fn storage<T: Element>(block: &Block) -> Option<&SimStorage<T>> {
    block.storage.downcast_ref::<SimStorage<T>>()
}

impl TransferProvider for CachingUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let output = self.inner.transfer_blocking(request)?;
        Ok(with_element!(output.dtype(), T => self.recycle::<T>(output)?, external => output))
    }
}

fn upload(route: &Route, racy: bool) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("the upload serves a simulated destination")?;
    Ok(Arc::new(CachingUpload::new(
        Arc::new(SimUpload::new(device.clone())),
        racy,
    )))
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("concurrent-reuse", Level::V2)
        .route(
            "racy_counting",
            || counting_route(false),
            |route| upload(route, true),
        )
        .route("racy_ledger", Route::host_to_sim, |route| {
            upload(route, true)
        })
        .route(
            "careful_counting",
            || counting_route(false),
            |route| upload(route, false),
        )
        .route(
            "careful_copying",
            || counting_route(true),
            |route| upload(route, false),
        )
        .profile(Profile::Quick)
        .seed(3)
}

#[test]
fn a_block_taken_from_another_threads_cache_while_its_caller_holds_it_breaks_output_stable() {
    let suite = suite();
    let report = suite.run();
    for route in ["racy_counting", "racy_ledger"] {
        let RuleVerdict::Fail(text) = suite.check(&report, route, Rule::OutputStable) else {
            panic!("{route}: {}", report.to_table());
        };
        assert!(
            text.contains("still held by the caller") && text.contains("under concurrent calls"),
            "{route}: {text}"
        );
        // Its calls pass alone on one thread: each is replayed by its
        // schedule only, never by a replay of the case alone.
        assert!(
            text.contains("replayed alone on one thread: passed")
                && text.contains("TRANSFER_CONFORMANCE_ROUTES=")
                && !text.contains("TRANSFER_CONFORMANCE_REPLAY="),
            "{route}: {text}"
        );
    }
    for route in ["careful_counting", "careful_copying"] {
        for rule in Level::V2.rules() {
            assert!(
                !matches!(suite.check(&report, route, *rule), RuleVerdict::Fail(_)),
                "{route}, {rule}: {:?}",
                suite.check(&report, route, *rule)
            );
        }
    }
}
