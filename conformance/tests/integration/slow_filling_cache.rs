//! A correct cache that fills a block a call, on a slow device: `no-leak`
//! repeats a case whose memory grew until the cache stops growing, and
//! each repetition is a call of its own, under a deadline of its own. The
//! repetitions together take longer than one call's deadline; a harness
//! that counted them against it would fail `deadline` for its own work.
//! Written as a vendor would, from the simulated device's public API.

use std::sync::Arc;
use std::time::Duration;

use tenferro_transfer_conformance::harness::{Case, LeakCheck, Oracle, Watchdog};
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::counting_route;
use crate::support::filling_cache::FillingCache;

/// Blocks the cache holds back before it reuses the oldest: it grows a
/// block on each of its first calls of a size.
const HELD_BACK: usize = 12;
/// How long each call takes on the slow device.
const CALL: Duration = Duration::from_millis(30);
/// The deadline of a call: ten times a call, less than the repetitions.
const DEADLINE: Duration = Duration::from_millis(300);

#[test]
fn a_cache_filling_a_block_a_call_on_a_slow_device_gets_a_deadline_per_repetition() {
    let route = counting_route(false).unwrap();
    let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    let provider = Arc::new(FillingCache::new(device, HELD_BACK, CALL));
    let mut watchdog = Watchdog::new(route.clone(), provider.clone(), DEADLINE).unwrap();
    let case = Case::from_values(vec![8, 8], (0..64).map(|value| value as f32).collect()).unwrap();
    let outcome = watchdog.run(&case).unwrap();
    let judgement = Oracle.judge(&case, &route, &outcome);
    let calls = provider.calls();
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
