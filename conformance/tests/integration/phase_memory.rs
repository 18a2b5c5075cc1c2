//! The memory over a phase of many calls (`PhaseMemory`), told kept from
//! leaked by running the phase again: one run that adds about as much as
//! the phase did may be the calls' timing (a cache that met more of them
//! side by side) and is kept memory once a later run adds nothing; runs
//! that each add as much are a leak. Driven through the public API with
//! allocations made by hand on a simulated device.

use std::sync::Arc;
use std::time::Duration;

use tenferro_transfer_conformance::harness::{
    Case, Leak, LeakCheck, Oracle, PhaseEvidence, PhaseMemory, RouteDeadline, Watchdog,
};
use tenferro_transfer_conformance::mock_devices::SimStorage;
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::counting_route;
use crate::support::filling_cache::FillingCache;

/// A phase that left 4 blocks in use, run again: the first run adds
/// `first`, each later run `later`.
fn judged(first: usize, later: usize) -> LeakCheck {
    judged_runs(|run| if run == 1 { first } else { later })
}

/// A phase that left 4 blocks in use, run again: run `n` adds `adds(n)`.
fn judged_runs(adds: impl Fn(usize) -> usize) -> LeakCheck {
    judged_on(Route::host_to_sim().unwrap(), adds)
}

/// As [`judged_runs`], on `route` (to a simulated device).
fn judged_on(route: Route, adds: impl Fn(usize) -> usize) -> LeakCheck {
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
        for _ in 0..adds(runs) {
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

/// Blocks freed whose bytes the device still counts, behind a cache the
/// phase filled (blind probe 10's mutant 10): each run adds far less than
/// the phase kept, but every run adds. A cache still filling as the calls'
/// timing allows stops adding within a few runs.
#[test]
fn runs_that_each_add_less_than_the_phase_but_never_stop_are_a_leak() {
    let steady = judged(8, 1);
    assert!(
        matches!(&steady, LeakCheck::Checked(leaks) if !leaks.is_empty()),
        "{steady:?}"
    );
    // A device that only counts: the leak shows where the memory stood
    // after each run.
    let counting = Endpoint::new(SimDevice::counting_only(0).unwrap());
    let route = Route::new(Endpoint::host("host").unwrap(), counting).unwrap();
    let steady = judged_on(route, |run| if run == 1 { 8 } else { 1 });
    let LeakCheck::Checked(leaks) = &steady else {
        panic!("{steady:?}");
    };
    let Some(Leak::Growth { repeated, .. }) = leaks.first() else {
        panic!("{leaks:?}");
    };
    let allocations: Vec<Option<i64>> = repeated.iter().map(|run| run.allocations).collect();
    let expected: Vec<Option<i64>> = (12..24).map(Some).collect();
    assert_eq!(allocations, expected);
    for stops_after in [3, 5, 11] {
        let filled = judged_runs(|run| usize::from(run <= stops_after));
        assert!(
            matches!(filled, LeakCheck::Kept(_)),
            "{stops_after}: {filled:?}"
        );
    }
}

/// A route whose case was seen filling a cache a block a call over 20
/// calls (a correct deferred release): a phase whose runs meet the size
/// once each fills such a cache as slowly, and runs that each add a block
/// for 18 runs, then stop, are kept memory; runs that never stop are still
/// a leak, after as many runs as the case's repetitions grew, plus two.
#[test]
fn a_route_seen_filling_a_cache_over_many_calls_gives_its_phases_as_many_runs() {
    let route = counting_route(false).unwrap();
    let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    let provider = Arc::new(FillingCache::new(device, 20, Duration::ZERO));
    let mut watchdog =
        Watchdog::new(route.clone(), provider.clone(), Duration::from_secs(60)).unwrap();
    let case = Case::from_values(vec![4, 4], (0..16).map(|value| value as f32).collect()).unwrap();
    let outcome = watchdog.run(&case).unwrap();
    let judgement = Oracle.judge(&case, &route, &outcome);
    assert!(judgement.passed(), "{:?}", judgement.violations());
    assert!(
        matches!(&outcome.leaks, LeakCheck::Kept(_)),
        "the filled cache is kept memory: {:?}",
        outcome.leaks
    );

    let filled = judged_on(route.clone(), |run| usize::from(run <= 18));
    assert!(matches!(filled, LeakCheck::Kept(_)), "{filled:?}");
    let steady = judged_on(route, |_| 1);
    let LeakCheck::Checked(leaks) = &steady else {
        panic!("{steady:?}");
    };
    let Some(Leak::Growth { repeated, .. }) = leaks.first() else {
        panic!("{leaks:?}");
    };
    // The case grew on each of its 19 repetitions: the phase runs 21 times.
    assert_eq!(repeated.len(), 21, "{repeated:?}");
}
