//! The watchdogs the fuzzers keep between inputs, rebuilt when worn out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tenferro_mock_devices::providers::{Broken, Fault};
use tenferro_runtime::TransferProvider;
use tenferro_transfer_harness::{HarnessError, Route, Watchdog};

/// Cases a cached watchdog runs before it is rebuilt: bounds what a watchdog keeps
/// (prepared programs per signature, a leaky provider's allocations), so a
/// fuzzing run of hours stays within libFuzzer's memory limit.
const RIG_LIFETIME: usize = 256;

/// Watchdogs kept at once; beyond this the cache starts afresh.
const RIG_CAPACITY: usize = 32;

/// Which watchdog an input needs: its provider's index, its faults, and
/// its deadline (`None`: run on the calling thread).
type WatchdogKey = (usize, Vec<Fault>, Option<Duration>);

/// Watchdogs kept between inputs, by provider, faults and deadline, each
/// with the number of inputs it ran.
#[derive(Default)]
pub(super) struct WatchdogPool {
    pub(super) watchdogs: HashMap<WatchdogKey, (Watchdog, usize)>,
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
            .is_none_or(|(_, used)| *used >= RIG_LIFETIME);
        if worn {
            if self.watchdogs.len() >= RIG_CAPACITY {
                self.watchdogs.clear();
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
            self.watchdogs.insert(key.clone(), (watchdog, 0));
        }
        let (watchdog, used) =
            self.watchdogs
                .get_mut(&key)
                .ok_or_else(|| HarnessError::InvalidRoute {
                    reason: "the watchdog just built is missing from the pool".to_owned(),
                })?;
        *used += 1;
        Ok(watchdog)
    }
}
