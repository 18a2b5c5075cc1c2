//! A correct cache that fills a block a call: it keeps the blocks of its
//! outputs and reuses the oldest only once it holds a given number, a
//! vendor's deferred release (the device may still read a block just
//! freed). Written from the simulated device's public API.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::Tensor;
use tenferro_transfer_conformance::mock_devices::{SimDevice, SimStorage, sim_storage_of};
use tenferro_transfer_conformance::prelude::SimUpload;

use super::blocks::output_in_block;

/// Keeps the blocks of its outputs (one size, `f32`) and reuses the oldest
/// only once `held_back` are kept and the oldest is free; a block the
/// caller still holds is never written. Each call takes `call`.
#[derive(Debug)]
pub struct FillingCache {
    inner: SimUpload,
    held_back: usize,
    call: Duration,
    blocks: Mutex<VecDeque<SimStorage<f32>>>,
    calls: AtomicUsize,
}

impl FillingCache {
    /// An upload to `device` that holds `held_back` blocks back, each call
    /// taking `call`.
    pub fn new(device: SimDevice, held_back: usize, call: Duration) -> Self {
        Self {
            inner: SimUpload::new(device),
            held_back,
            call,
            blocks: Mutex::default(),
            calls: AtomicUsize::new(0),
        }
    }

    /// How many times the provider was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl TransferProvider for FillingCache {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.call);
        let output = self.inner.transfer_blocking(request)?;
        let Some(fresh) = sim_storage_of::<f32>(&output) else {
            return Ok(output);
        };
        let mut blocks = self.blocks.lock().unwrap();
        if blocks.len() < self.held_back {
            blocks.push_back(fresh.alias());
            return Ok(output);
        }
        if blocks.front().is_some_and(|oldest| oldest.handles() == 1) {
            let oldest = blocks.pop_front().unwrap();
            blocks.push_back(oldest.alias());
            drop(blocks);
            return Ok(output_in_block(output, oldest)?);
        }
        Ok(output)
    }
}
