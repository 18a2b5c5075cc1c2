//! A rig or watchdog that replaces its provider (`Rig::replace_provider`,
//! `Watchdog::replace_provider`) keeps its runtime, devices and plans, and
//! judges the new provider as a fresh rig would: what it learned of the
//! provider before (runs shown to leak) counts again only for that same
//! provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rstest::rstest;
use tenferro_mock_devices::providers::{Broken, CachingAllocator, Fault};
use tenferro_mock_devices::{SimDevice, SimRoutes, SimUpload};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::Tensor;
use tenferro_transfer_harness::{Case, DEFAULT_DEADLINE, Oracle, Rig, Route, Rule, Watchdog};

/// A provider that counts its calls.
#[derive(Debug)]
struct Counted {
    inner: Arc<dyn TransferProvider>,
    calls: AtomicUsize,
}

impl Counted {
    fn new(inner: Arc<dyn TransferProvider>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            calls: AtomicUsize::new(0),
        })
    }

    fn calls(&self) -> usize {
        self.calls.swap(0, Ordering::SeqCst)
    }
}

impl TransferProvider for Counted {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.transfer_blocking(request)
    }
}

fn upload(route: &Route) -> Arc<dyn TransferProvider> {
    let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    Arc::new(SimUpload::new(device))
}

fn leaky(route: &Route) -> Arc<Counted> {
    Counted::new(Arc::new(Broken::new(upload(route), vec![Fault::Leaky])))
}

fn case(seed: u8, len: usize) -> Case {
    let values: Vec<f32> = (0..len).map(|i| f32::from(seed) + i as f32 / 8.0).collect();
    Case::from_values(vec![len], values).unwrap()
}

/// Run `case` on `rig`: its rules, and the calls `counted` saw (the run
/// and its repetitions, which tell memory kept from a leak).
fn run(rig: &mut Rig, route: &Route, counted: &Counted, case: &Case) -> (Vec<Rule>, usize) {
    let outcome = rig.run(case).unwrap();
    (Oracle.judge(case, route, &outcome).rules(), counted.calls())
}

#[test]
fn a_replaced_provider_is_judged_afresh_and_its_leaks_count_again_when_it_comes_back() {
    let route = Route::host_to_sim().unwrap();
    let first = leaky(&route);
    let mut rig = Rig::new(
        route.clone(),
        Arc::clone(&first) as Arc<dyn TransferProvider>,
    )
    .unwrap();
    let mut calls = Vec::new();
    for seed in 0..6 {
        let (rules, made) = run(&mut rig, &route, &first, &case(seed, 8));
        assert_eq!(rules, vec![Rule::NoLeak], "leaky run {seed}");
        calls.push(made);
    }
    // Repeated until the rig has seen runs leak, then judged at once.
    assert!(calls[0] > 1, "{calls:?}");
    assert_eq!(calls[5], 1, "{calls:?}");

    // A provider that keeps its blocks is no leak, though the one before
    // leaked: its growth is repeated and found to stop.
    let caching = Counted::new(Arc::new(CachingAllocator::new(upload(&route), 4)));
    rig.replace_provider(Arc::clone(&caching) as Arc<dyn TransferProvider>);
    let (rules, made) = run(&mut rig, &route, &caching, &case(10, 24));
    assert_eq!(rules, Vec::<Rule>::new());
    assert!(made > 1, "{made}");
    let prepared = rig.prepared_count();

    // The same leaky provider back: what the rig learned of it stands.
    rig.replace_provider(Arc::clone(&first) as Arc<dyn TransferProvider>);
    assert_eq!(
        run(&mut rig, &route, &first, &case(20, 8)),
        (vec![Rule::NoLeak], 1)
    );

    // Another leaky provider: its leaks are shown by repetition again.
    let second = leaky(&route);
    rig.replace_provider(Arc::clone(&second) as Arc<dyn TransferProvider>);
    let (rules, made) = run(&mut rig, &route, &second, &case(30, 8));
    assert_eq!(rules, vec![Rule::NoLeak]);
    assert!(made > 1, "{made}");

    // The plans stayed with the rig.
    assert_eq!(rig.prepared_count(), prepared);
}

#[rstest]
#[case::inline(true)]
#[case::worker(false)]
fn a_watchdog_runs_the_provider_it_was_given_last(#[case] inline: bool) {
    let route = Route::host_to_sim().unwrap();
    let broken: Arc<dyn TransferProvider> =
        Arc::new(Broken::new(upload(&route), vec![Fault::OneUlp]));
    let mut watchdog = if inline {
        Watchdog::inline(route.clone(), broken).unwrap()
    } else {
        Watchdog::new(route.clone(), broken, DEFAULT_DEADLINE).unwrap()
    };
    let case = case(1, 5);
    let judge = |watchdog: &mut Watchdog| {
        let outcome = watchdog.run(&case).unwrap();
        Oracle.judge(&case, &route, &outcome).rules()
    };
    assert_eq!(judge(&mut watchdog), vec![Rule::Values]);
    watchdog.replace_provider(upload(&route));
    assert_eq!(judge(&mut watchdog), Vec::<Rule>::new());
    watchdog.replace_provider(Arc::new(Broken::new(
        upload(&route),
        vec![Fault::WrongDtype],
    )));
    let rules = judge(&mut watchdog);
    assert!(
        rules.contains(&Rule::Dtype) && !rules.contains(&Rule::Values),
        "{rules:?}"
    );
}
