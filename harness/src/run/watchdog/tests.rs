//! The watchdog's own tests: which thread runs a case and its `then`, a
//! panic in `then`, a hung run judged on the caller, and the plans kept.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::thread::ThreadId;

use tenferro_runtime::TransferRequest;
use tenferro_tensor::Tensor;

use super::*;
use crate::hold;
use crate::{HostProvider, Oracle};

/// The host copy, remembering the thread of its last call.
#[derive(Debug, Default)]
struct RemembersThread(Mutex<Option<ThreadId>>);

impl TransferProvider for RemembersThread {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        *self.0.lock().unwrap() = Some(std::thread::current().id());
        HostProvider::new().transfer_blocking(request)
    }
}

fn thread_of_call(inline: bool) -> ThreadId {
    let route = Route::host_to_host().unwrap();
    let provider = Arc::new(RemembersThread::default());
    let shared = Arc::clone(&provider) as Arc<dyn TransferProvider>;
    let mut watchdog = if inline {
        Watchdog::inline(route.clone(), shared).unwrap()
    } else {
        Watchdog::new(route.clone(), shared, DEFAULT_DEADLINE).unwrap()
    };
    let case = Case::from_values(vec![3], vec![1.5_f32, -0.0, f32::NAN]).unwrap();
    let outcome = watchdog.run(&case).unwrap();
    assert!(Oracle.judge(&case, &route, &outcome).passed());
    provider.0.lock().unwrap().expect("the provider was called")
}

#[test]
fn an_inline_watchdog_calls_the_provider_on_the_calling_thread() {
    assert_eq!(thread_of_call(true), std::thread::current().id());
}

#[test]
fn a_watchdog_with_a_deadline_calls_the_provider_on_its_worker() {
    assert_ne!(thread_of_call(false), std::thread::current().id());
}

/// The threads of the provider's call and of `then`, and whether the
/// judgement `then` made passed.
fn threads_of_then(inline: bool) -> (ThreadId, ThreadId, bool) {
    let route = Route::host_to_host().unwrap();
    let provider = Arc::new(RemembersThread::default());
    let shared = Arc::clone(&provider) as Arc<dyn TransferProvider>;
    let mut watchdog = if inline {
        Watchdog::inline(route, shared).unwrap()
    } else {
        Watchdog::new(route, shared, DEFAULT_DEADLINE).unwrap()
    };
    let cases = [
        Case::from_values(vec![2], vec![1_i64, i64::MIN]).unwrap(),
        Case::from_values(vec![1], vec![-0.0_f64]).unwrap(),
    ];
    let judged = watchdog
        .run_together_then(&cases, |route, case, outcome| {
            let passed = Oracle.judge(case, route, &outcome).passed();
            (std::thread::current().id(), passed, case.shape().to_vec())
        })
        .unwrap();
    // One answer per input, in order.
    let shapes: Vec<_> = judged.iter().map(|(_, _, shape)| shape.clone()).collect();
    assert_eq!(shapes, vec![vec![2], vec![1]]);
    let call = provider.0.lock().unwrap().expect("the provider was called");
    (
        call,
        judged[0].0,
        judged.iter().all(|(_, passed, _)| *passed),
    )
}

#[test]
fn then_runs_on_the_worker_that_ran_the_case() {
    let (call, then, passed) = threads_of_then(false);
    assert!(passed);
    assert_eq!(then, call);
    assert_ne!(then, std::thread::current().id());
}

#[test]
fn then_runs_on_the_caller_of_an_inline_watchdog() {
    let (call, then, passed) = threads_of_then(true);
    assert!(passed);
    assert_eq!(
        (call, then),
        (std::thread::current().id(), std::thread::current().id())
    );
}

#[test]
fn a_panic_in_then_is_resumed_on_the_caller_and_the_watchdog_goes_on() {
    let route = Route::host_to_host().unwrap();
    let mut watchdog =
        Watchdog::new(route, Arc::new(HostProvider::new()), DEFAULT_DEADLINE).unwrap();
    let cases = [Case::from_values(vec![1], vec![3_i32]).unwrap()];
    let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
        watchdog.run_together_then(&cases, |_, _, _| -> () { panic!("then gave up") })
    }))
    .unwrap_err();
    assert_eq!(panicked.downcast_ref::<&str>(), Some(&"then gave up"));
    let outcomes = watchdog.run_together(&cases).unwrap();
    assert!(
        Oracle
            .judge(&cases[0], watchdog.route(), &outcomes[0])
            .passed()
    );
}

/// Hangs in the harness's simulated hold on its first call.
#[derive(Debug, Default)]
struct HangsOnce(std::sync::atomic::AtomicBool);

impl TransferProvider for HangsOnce {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            hold::park_until_released();
        }
        HostProvider::new().transfer_blocking(request)
    }
}

#[test]
fn then_judges_a_hung_run_on_the_caller() {
    let route = Route::host_to_host().unwrap();
    let mut watchdog = Watchdog::new(
        route,
        Arc::new(HangsOnce::default()),
        Duration::from_millis(50),
    )
    .unwrap();
    let cases = [Case::from_values(vec![2], vec![1_i32, 2]).unwrap()];
    let judge = |route: &Route, case: &Case, outcome: Outcome| {
        (
            std::thread::current().id(),
            Oracle.judge(case, route, &outcome).rules(),
        )
    };
    let hung = watchdog.run_together_then(&cases, judge).unwrap();
    assert_eq!(
        hung,
        vec![(std::thread::current().id(), vec![crate::Rule::Deadline])]
    );
    let next = watchdog.run_together_then(&cases, judge).unwrap();
    assert_ne!(next[0].0, std::thread::current().id());
    assert!(next[0].1.is_empty());
}

/// Three inputs of three signatures (dtype and rank).
fn three_signatures() -> [Case; 3] {
    [
        Case::from_values(vec![2], vec![1_i32, 2]).unwrap(),
        Case::from_values(vec![2, 1], vec![1.0_f64, 2.0]).unwrap(),
        Case::from_values(vec![1, 1, 1], vec![1.0_f32]).unwrap(),
    ]
}

#[test]
fn keep_plans_bounds_the_plans_kept_now_and_later() {
    let route = Route::host_to_host().unwrap();
    let mut watchdog = Watchdog::inline(route, Arc::new(HostProvider::new())).unwrap();
    let prepared = |watchdog: &Watchdog| watchdog.inline.as_ref().unwrap().prepared_count();
    for case in three_signatures() {
        watchdog.run(&case).unwrap();
    }
    assert_eq!(prepared(&watchdog), 3);
    watchdog.keep_plans(2);
    assert_eq!(prepared(&watchdog), 2);
    for case in three_signatures().iter().rev() {
        let outcome = watchdog.run(case).unwrap();
        assert!(Oracle.judge(case, watchdog.route(), &outcome).passed());
        assert!(prepared(&watchdog) <= 2);
    }
    watchdog.keep_plans(0);
    assert_eq!(prepared(&watchdog), 1, "at least one plan is kept");
}

/// The plans the worker's rig keeps now.
fn plans_on_the_worker(watchdog: &Watchdog) -> usize {
    let worker = watchdog.worker.as_ref().expect("a worker");
    worker.jobs.send(Job::CountPlans).unwrap();
    match receive(&worker.replies, Some(DEFAULT_DEADLINE)) {
        Ok(Message::Done(count)) => *count.downcast::<usize>().unwrap(),
        _ => panic!("the worker did not count its plans"),
    }
}

/// Sleeps through its first call (past any deadline of the tests and its
/// grace), then copies on the host.
#[derive(Debug, Default)]
struct SleepsOnce(std::sync::atomic::AtomicBool);

impl TransferProvider for SleepsOnce {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(2));
        }
        HostProvider::new().transfer_blocking(request)
    }
}

#[test]
fn keep_plans_reaches_the_worker_and_one_started_after_a_hang() {
    let route = Route::host_to_host().unwrap();
    let mut watchdog = Watchdog::new(
        route,
        Arc::new(SleepsOnce::default()),
        Duration::from_millis(50),
    )
    .unwrap();
    // The first call overruns the deadline and its grace: the worker is
    // given up for lost, and the next run starts another.
    let hung = watchdog.run(&three_signatures()[0]).unwrap();
    assert!(
        matches!(hung.runtime, RuntimeVerdict::TimedOut { .. }),
        "{:?}",
        hung.runtime
    );
    assert_eq!(watchdog.lost_workers(), 1);
    assert!(watchdog.worker.is_none());
    watchdog.keep_plans(2);
    for case in three_signatures() {
        let outcome = watchdog.run(&case).unwrap();
        assert!(Oracle.judge(&case, watchdog.route(), &outcome).passed());
    }
    assert_eq!(
        plans_on_the_worker(&watchdog),
        2,
        "the limit reached the new worker"
    );
    watchdog.keep_plans(1);
    assert_eq!(plans_on_the_worker(&watchdog), 1, "and the running one");
}
