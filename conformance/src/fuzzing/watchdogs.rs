//! The watchdogs the fuzzers keep between inputs, rebuilt when worn out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::{HarnessError, Route, Watchdog};

/// Inputs a pooled provider (one set of faults) runs before a fresh one
/// takes its place: bounds what a provider keeps (a leaky provider keeps
/// at most one staging allocation per case, up to 3 cases of at most
/// 4,096 elements (64 KiB) an input: 48 MiB).
const PROVIDER_LIFETIME: usize = 256;

/// Providers a pooled watchdog keeps, by their faults; past this many they
/// all make room for fresh ones. In the worst case, every one leaky with
/// the largest cases, that is more than libFuzzer's memory limit; drawn
/// inputs come nowhere near it (docs/fuzzing.md).
const PROVIDERS_KEPT: usize = 512;

/// Inputs a pooled watchdog runs before it is rebuilt, with its runtime,
/// its devices and its plans: bounds what a provider left on the devices.
/// A rebuild prepares every plan again; at 256 inputs, when each watchdog
/// had one set of faults, that was most of the fuzz targets' time.
const WATCHDOG_LIFETIME: usize = 16_384;

/// Watchdogs kept at once; beyond this the one used least recently makes
/// room. The fuzzers' keys are fewer (8 and 1), so none is dropped there.
const WATCHDOG_CAPACITY: usize = 16;

/// Which watchdog an input needs: its provider's index and its deadline
/// (`None`: run on the calling thread). The faults are not part of it: a
/// watchdog runs inputs of other faults by replacing its provider
/// ([`Watchdog::replace_provider`]), which keeps the runtime and the plans
/// it prepared; a watchdog per set of faults prepared its plans again for
/// most inputs (the faults are drawn afresh, and their sets are many).
type WatchdogKey = (usize, Option<Duration>);

/// A watchdog of the pool, with the faults its provider has now, the
/// providers it ran so far by their faults, each with the inputs it ran
/// (a provider meets the inputs of its faults again with what it kept,
/// and the watchdog remembers which of its runs leaked), the number of
/// inputs it ran and when it ran the last (the pool's count of inputs
/// then).
pub(super) struct Pooled {
    pub(super) watchdog: Watchdog,
    faults: Vec<Fault>,
    providers: HashMap<Vec<Fault>, (Arc<dyn TransferProvider>, usize)>,
    used: usize,
    last: u64,
}

/// Watchdogs kept between inputs, by provider and deadline.
pub(super) struct WatchdogPool {
    pub(super) watchdogs: HashMap<WatchdogKey, Pooled>,
    inputs: u64,
    capacity: usize,
}

impl Default for WatchdogPool {
    fn default() -> Self {
        Self {
            watchdogs: HashMap::new(),
            inputs: 0,
            capacity: WATCHDOG_CAPACITY,
        }
    }
}

/// How a pooled watchdog's route and its reference provider are made.
pub(super) struct Making<R, P> {
    /// A fresh route.
    pub(super) route: R,
    /// The reference provider of a route.
    pub(super) reference: P,
}

impl WatchdogPool {
    /// The watchdog for `provider` with `faults` injected into its
    /// reference provider: built when absent or worn out, its provider
    /// replaced when it last ran other faults; under `deadline` on a
    /// worker thread, or with `None` on this thread ([`Watchdog::inline`]),
    /// for inputs that cannot hang (libFuzzer's `-timeout` bounds those,
    /// and the hand-off to a worker was a fifth of an input's time).
    pub(super) fn get<R, P>(
        &mut self,
        provider: usize,
        faults: &[Fault],
        deadline: Option<Duration>,
        making: Making<R, P>,
    ) -> Result<&mut Watchdog, HarnessError>
    where
        R: FnOnce() -> Result<Route, HarnessError>,
        P: Fn(&Route) -> Result<Arc<dyn TransferProvider>, HarnessError>,
    {
        let key = (provider, deadline);
        let worn = self
            .watchdogs
            .get(&key)
            .is_none_or(|pooled| pooled.used >= WATCHDOG_LIFETIME);
        if worn {
            self.watchdogs.remove(&key);
            if self.watchdogs.len() >= self.capacity {
                let least_recent = self
                    .watchdogs
                    .iter()
                    .min_by_key(|(_, pooled)| pooled.last)
                    .map(|(key, _)| *key);
                if let Some(least_recent) = least_recent {
                    self.watchdogs.remove(&least_recent);
                }
            }
            let route = (making.route)()?;
            let provider = with_faults((making.reference)(&route)?, faults);
            let watchdog = match deadline {
                Some(deadline) => Watchdog::new(route, Arc::clone(&provider), deadline)?,
                None => Watchdog::inline(route, Arc::clone(&provider))?,
            };
            self.watchdogs.insert(
                key,
                Pooled {
                    watchdog,
                    faults: faults.to_vec(),
                    providers: HashMap::from([(faults.to_vec(), (provider, 0))]),
                    used: 0,
                    last: 0,
                },
            );
        }
        self.inputs += 1;
        let pooled = self
            .watchdogs
            .get_mut(&key)
            .ok_or_else(|| HarnessError::InvalidRoute {
                reason: "the watchdog just built is missing from the pool".to_owned(),
            })?;
        let worn = pooled
            .providers
            .get(faults)
            .is_none_or(|(_, ran)| *ran >= PROVIDER_LIFETIME);
        if worn {
            if pooled.providers.len() >= PROVIDERS_KEPT {
                pooled.providers.clear();
            }
            let reference = (making.reference)(pooled.watchdog.route())?;
            pooled
                .providers
                .insert(faults.to_vec(), (with_faults(reference, faults), 0));
        }
        let (provider, ran) =
            pooled
                .providers
                .get_mut(faults)
                .ok_or_else(|| HarnessError::InvalidRoute {
                    reason: "the provider just made is missing from the pool".to_owned(),
                })?;
        if worn || pooled.faults != faults {
            pooled.watchdog.replace_provider(Arc::clone(provider));
            pooled.faults = faults.to_vec();
        }
        *ran += 1;
        pooled.used += 1;
        pooled.last = self.inputs;
        Ok(&mut pooled.watchdog)
    }
}

/// `reference` with `faults` injected, or as it is without any.
fn with_faults(
    reference: Arc<dyn TransferProvider>,
    faults: &[Fault],
) -> Arc<dyn TransferProvider> {
    if faults.is_empty() {
        reference
    } else {
        // One case at a time: no call overlaps another, so a shared
        // staging slot's window would only wait.
        Arc::new(Broken::new(reference, faults.to_vec()).with_staging_window(Duration::ZERO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenferro_transfer_harness::{Case, HostProvider, Oracle, Rule};

    type MakeRoute = fn() -> Result<Route, HarnessError>;
    type MakeProvider = fn(&Route) -> Result<Arc<dyn TransferProvider>, HarnessError>;

    fn host_provider(_: &Route) -> Result<Arc<dyn TransferProvider>, HarnessError> {
        Ok(Arc::new(HostProvider::new()))
    }

    fn host() -> Making<MakeRoute, MakeProvider> {
        Making {
            route: Route::host_to_host,
            reference: host_provider,
        }
    }

    #[test]
    fn a_full_pool_drops_the_watchdog_used_least_recently_and_keeps_the_rest() {
        let mut pool = WatchdogPool {
            capacity: 2,
            ..WatchdogPool::default()
        };
        for provider in [0, 1, 0] {
            pool.get(provider, &[], None, host()).unwrap();
        }
        // Full: 1 ran longest ago, so 2 takes its place and 0 stays warm.
        pool.get(2, &[], None, host()).unwrap();
        let mut kept: Vec<usize> = pool.watchdogs.keys().map(|key| key.0).collect();
        kept.sort_unstable();
        assert_eq!(kept, vec![0, 2]);
        assert_eq!(pool.watchdogs[&(0, None)].used, 2);
    }

    #[test]
    fn a_worn_watchdog_is_rebuilt() {
        let mut pool = WatchdogPool::default();
        for _ in 0..WATCHDOG_LIFETIME {
            pool.get(0, &[], None, host()).unwrap();
        }
        assert_eq!(pool.watchdogs[&(0, None)].used, WATCHDOG_LIFETIME);
        pool.get(0, &[], None, host()).unwrap();
        assert_eq!(pool.watchdogs[&(0, None)].used, 1);
    }

    #[test]
    fn a_worn_provider_makes_room_for_a_fresh_one_on_the_same_watchdog() {
        let mut pool = WatchdogPool::default();
        let faults = [Fault::OneUlp];
        let provider = |pool: &WatchdogPool| {
            let (provider, ran) = &pool.watchdogs[&(0, None)].providers[&faults[..]];
            (Arc::clone(provider), *ran)
        };
        pool.get(0, &faults, None, host()).unwrap();
        let (first, _) = provider(&pool);
        for _ in 1..PROVIDER_LIFETIME {
            pool.get(0, &faults, None, host()).unwrap();
        }
        assert_eq!(provider(&pool).1, PROVIDER_LIFETIME);
        pool.get(0, &faults, None, host()).unwrap();
        let (fresh, ran) = provider(&pool);
        assert_eq!(ran, 1);
        assert!(!Arc::ptr_eq(&first, &fresh));
        assert_eq!(pool.watchdogs[&(0, None)].used, PROVIDER_LIFETIME + 1);
    }

    /// Other faults replace the provider of the same watchdog, and each
    /// input meets exactly the faults it names.
    #[test]
    fn other_faults_run_on_the_same_watchdog_with_their_own_provider() {
        let mut pool = WatchdogPool::default();
        let case = Case::from_values(vec![3], vec![1.5_f32, -0.0, 2.0]).unwrap();
        let mut rules = Vec::new();
        for faults in [vec![], vec![Fault::OneUlp], vec![Fault::WrongDtype], vec![]] {
            let watchdog = pool.get(0, &faults, None, host()).unwrap();
            let route = watchdog.route().clone();
            let outcome = watchdog.run(&case).unwrap();
            rules.push(Oracle.judge(&case, &route, &outcome).rules());
        }
        assert_eq!(pool.watchdogs.len(), 1);
        assert_eq!(pool.watchdogs[&(0, None)].used, 4);
        assert_eq!(rules[0], Vec::<Rule>::new());
        assert_eq!(rules[1], vec![Rule::Values]);
        assert!(rules[2].contains(&Rule::Dtype), "{:?}", rules[2]);
        assert!(!rules[2].contains(&Rule::Values), "{:?}", rules[2]);
        assert_eq!(rules[3], Vec::<Rule>::new());
    }
}
