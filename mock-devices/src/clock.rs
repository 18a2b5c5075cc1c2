//! A simulated device's clock: the wall clock plus the time its waits
//! skipped. Waiting for a copy that is due later advances this clock to the
//! copy's due time at once instead of sleeping, so a modelled latency costs
//! no wall time; a copy nobody waits for stays pending until the clock
//! reaches its due time, exactly as on the wall clock.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The clock of one simulated device (shared by its streams).
#[derive(Debug, Default)]
pub(crate) struct SimClock {
    skipped: Mutex<Duration>,
}

impl SimClock {
    /// The device's time now.
    pub(crate) fn now(&self) -> Instant {
        Instant::now() + *self.skipped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait until `due`: skip ahead to it rather than sleep.
    pub(crate) fn advance_to(&self, due: Instant) {
        let mut skipped = self.skipped.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now() + *skipped;
        if due > now {
            *skipped += due - now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_skips_ahead_without_sleeping_and_time_never_runs_backwards() {
        let clock = SimClock::default();
        let start = clock.now();
        let wall = Instant::now();
        clock.advance_to(start + Duration::from_secs(3600));
        assert!(clock.now() >= start + Duration::from_secs(3600));
        // An hour of device time, and (far) less than an hour of wall time.
        assert!(wall.elapsed() < Duration::from_secs(3600));
        let later = clock.now();
        clock.advance_to(start);
        assert!(clock.now() >= later);
    }
}
