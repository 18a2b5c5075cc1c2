//! The memory over a phase of many calls (`PhaseMemory`), told kept from
//! leaked by running the phase again: one run that adds about as much as
//! the phase did may be the calls' timing (a cache that met more of them
//! side by side) and is kept memory once a later run adds nothing; runs
//! that each add as much are a leak. Driven through the public API with
//! allocations made by hand on a simulated device.

use std::time::Duration;

use tenferro_transfer_conformance::harness::{
    LeakCheck, PhaseEvidence, PhaseMemory, RouteDeadline,
};
use tenferro_transfer_conformance::mock_devices::SimStorage;
use tenferro_transfer_conformance::prelude::*;

/// A phase that left 4 blocks in use, run again: the first run adds
/// `first`, each later run `later`.
fn judged(first: usize, later: usize) -> LeakCheck {
    let route = Route::host_to_sim().unwrap();
    let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    let mut blocks: Vec<SimStorage<i32>> = Vec::new();
    let phase = PhaseMemory::start(&route);
    for _ in 0..4 {
        blocks.push(device.allocate(vec![0_i32; 4]).unwrap());
    }
    let deadline = RouteDeadline::new(Duration::from_secs(60));
    let mut runs = 0;
    phase.finish_repeating(&route, PhaseEvidence::both(true), &deadline, || {
        runs += 1;
        let adds = if runs == 1 { first } else { later };
        for _ in 0..adds {
            blocks.push(device.allocate(vec![0_i32; 4]).unwrap());
        }
    })
}

#[test]
fn one_run_that_adds_as_much_as_the_phase_then_none_is_kept_memory() {
    assert!(
        matches!(judged(2, 0), LeakCheck::Kept(_)),
        "{:?}",
        judged(2, 0)
    );
    assert!(matches!(judged(0, 0), LeakCheck::Kept(_)));
}

#[test]
fn runs_that_each_add_as_much_as_the_phase_are_a_leak() {
    assert!(
        matches!(judged(4, 4), LeakCheck::Checked(leaks) if !leaks.is_empty()),
        "{:?}",
        judged(4, 4)
    );
    assert!(matches!(judged(2, 2), LeakCheck::Checked(leaks) if !leaks.is_empty()));
}
