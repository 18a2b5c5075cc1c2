//! The watchdogs the fuzzers keep between inputs, rebuilt when worn out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::{HarnessError, Route, Watchdog};

/// Inputs a cached watchdog runs before it is rebuilt: bounds what a
/// watchdog keeps (prepared programs per signature, a leaky provider's
/// allocations). A leaky provider keeps at most one staging allocation per
/// case, up to 3 cases of at most 4,096 elements (64 KiB) an input, so a
/// watchdog keeps at most 48 MiB, and the pool, in the worst case of every
/// watchdog leaky with the largest cases, more than libFuzzer's 4 GiB
/// limit. Drawn inputs come nowhere near it: 10 million inputs of
/// `transfer_contract` peaked at 200 MiB (docs/fuzzing.md).
const WATCHDOG_LIFETIME: usize = 256;

/// Watchdogs kept at once; beyond this the one used least recently makes
/// room. Inputs draw their provider, faults and deadline afresh, so the
/// keys are many: a pool of 32 cleared whole when full rebuilt
/// a runtime, and prepared its programs again, for most inputs.
const WATCHDOG_CAPACITY: usize = 256;

/// Which watchdog an input needs: its provider's index, its faults, and
/// its deadline (`None`: run on the calling thread).
type WatchdogKey = (usize, Vec<Fault>, Option<Duration>);

/// A watchdog of the pool, with the number of inputs it ran and when it
/// ran the last (the pool's count of inputs then).
pub(super) struct Pooled {
    pub(super) watchdog: Watchdog,
    used: usize,
    last: u64,
}

/// Watchdogs kept between inputs, by provider, faults and deadline.
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

impl WatchdogPool {
    /// The watchdog for `provider` with `faults`, built when absent or worn
    /// out: under `deadline` on a worker thread, or with `None` on this
    /// thread ([`Watchdog::inline`]), for inputs that cannot hang (libFuzzer's
    /// `-timeout` bounds those, and the hand-off to a worker was a fifth of
    /// an input's time).
    pub(super) fn get(
        &mut self,
        provider: usize,
        faults: &[Fault],
        deadline: Option<Duration>,
        make: impl FnOnce() -> Result<(Route, Arc<dyn TransferProvider>), HarnessError>,
    ) -> Result<&mut Watchdog, HarnessError> {
        let key = (provider, faults.to_vec(), deadline);
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
                    .map(|(key, _)| key.clone());
                if let Some(least_recent) = least_recent {
                    self.watchdogs.remove(&least_recent);
                }
            }
            let (route, inner) = make()?;
            let provider: Arc<dyn TransferProvider> = if faults.is_empty() {
                inner
            } else {
                Arc::new(Broken::new(inner, faults.to_vec()))
            };
            let watchdog = match deadline {
                Some(deadline) => Watchdog::new(route, provider, deadline)?,
                None => Watchdog::inline(route, provider)?,
            };
            self.watchdogs.insert(
                key.clone(),
                Pooled {
                    watchdog,
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
        pooled.used += 1;
        pooled.last = self.inputs;
        Ok(&mut pooled.watchdog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenferro_transfer_harness::HostProvider;

    fn host() -> Result<(Route, Arc<dyn TransferProvider>), HarnessError> {
        Ok((Route::host_to_host()?, Arc::new(HostProvider::new())))
    }

    #[test]
    fn a_full_pool_drops_the_watchdog_used_least_recently_and_keeps_the_rest() {
        let mut pool = WatchdogPool {
            capacity: 2,
            ..WatchdogPool::default()
        };
        for provider in [0, 1, 0] {
            pool.get(provider, &[], None, host).unwrap();
        }
        // Full: 1 ran longest ago, so 2 takes its place and 0 stays warm.
        pool.get(2, &[], None, host).unwrap();
        let mut kept: Vec<usize> = pool.watchdogs.keys().map(|key| key.0).collect();
        kept.sort_unstable();
        assert_eq!(kept, vec![0, 2]);
        assert_eq!(pool.watchdogs[&(0, Vec::new(), None)].used, 2);
    }

    #[test]
    fn a_worn_watchdog_is_rebuilt() {
        let mut pool = WatchdogPool::default();
        for _ in 0..WATCHDOG_LIFETIME {
            pool.get(0, &[], None, host).unwrap();
        }
        assert_eq!(
            pool.watchdogs[&(0, Vec::new(), None)].used,
            WATCHDOG_LIFETIME
        );
        pool.get(0, &[], None, host).unwrap();
        assert_eq!(pool.watchdogs[&(0, Vec::new(), None)].used, 1);
    }
}
