//! A correct cache that fills a block a call, on a slow device: `no-leak`
//! repeats a case whose memory grew until the cache stops growing, and
//! each repetition is a call of its own, under a deadline of its own. The
//! repetitions together take longer than one call's deadline; a harness
//! that counted them against it would fail `deadline` for its own work.
//! Written as a vendor would, from the simulated device's public API.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tenferro_transfer_conformance::harness::{Case, LeakCheck, Oracle, Watchdog};
use tenferro_transfer_conformance::mock_devices::{SimStorage, sim_storage_of};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::{counting_route, output_in_block};

/// Blocks the cache holds back before it reuses the oldest: it grows a
/// block on each of its first calls of a size.
const HELD_BACK: usize = 12;
/// How long each call takes on the slow device.
const CALL: Duration = Duration::from_millis(30);
/// The deadline of a call: ten times a call, less than the repetitions.
const DEADLINE: Duration = Duration::from_millis(300);

/// Keeps the blocks of its outputs (one size, `f32`) and reuses the oldest
/// only once `HELD_BACK` are kept and the oldest is free (the device may
/// still read a block just freed); a block the caller still holds is never
/// written. Each call takes `CALL`.
#[derive(Debug)]
struct SlowFillingCache {
    inner: SimUpload,
    blocks: Mutex<VecDeque<SimStorage<f32>>>,
    calls: AtomicUsize,
}

impl TransferProvider for SlowFillingCache {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(CALL);
        let output = self.inner.transfer_blocking(request)?;
        let Some(fresh) = sim_storage_of::<f32>(&output) else {
            return Ok(output);
        };
        let mut blocks = self.blocks.lock().unwrap();
        if blocks.len() < HELD_BACK {
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

#[test]
fn a_cache_filling_a_block_a_call_on_a_slow_device_gets_a_deadline_per_repetition() {
    let route = counting_route(false).unwrap();
    let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    let provider = Arc::new(SlowFillingCache {
        inner: SimUpload::new(device),
        blocks: Mutex::default(),
        calls: AtomicUsize::new(0),
    });
    let mut watchdog = Watchdog::new(route.clone(), provider.clone(), DEADLINE).unwrap();
    let case = Case::from_values(vec![8, 8], (0..64).map(|value| value as f32).collect()).unwrap();
    let outcome = watchdog.run(&case).unwrap();
    let judgement = Oracle.judge(&case, &route, &outcome);
    let calls = provider.calls.load(Ordering::SeqCst);
    assert!(
        CALL * u32::try_from(calls).unwrap() > DEADLINE,
        "the case was repeated {calls} times: too few to overrun one deadline together"
    );
    assert!(judgement.passed(), "{:?}", judgement.violations());
    assert!(
        matches!(&outcome.leaks, LeakCheck::Kept(kept) if !kept.is_empty()),
        "the filled cache is kept memory: {:?}",
        outcome.leaks
    );
}
