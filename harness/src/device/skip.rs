//! A visible skip for tests of a device that may be absent: the route when
//! its devices are here, else a `SKIP` line with the reason.

use std::io::Write as _;

use crate::{HarnessError, Route};

/// For tests: the route when its devices can run; `None` after printing a
/// visible `SKIP` line with the reason; the error when a device is
/// required or the route fails for another reason (the test then fails).
///
/// The line goes straight to the process's stderr, past libtest's output
/// capture, so `cargo test` shows it even for a test that returns early.
///
/// # Errors
///
/// Every error of `route` or of its [`gate`](Route::gate) but
/// [`HarnessError::Unavailable`].
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{Endpoint, Route, route_or_skip};
///
/// let absent = Endpoint::absent("npu0", "my-npu", "no driver").unwrap();
/// let route = Route::new(Endpoint::host("host").unwrap(), absent);
/// assert!(route_or_skip("my_test", route).unwrap().is_none());
/// ```
pub fn route_or_skip(
    test: &str,
    route: Result<Route, HarnessError>,
) -> Result<Option<Route>, HarnessError> {
    match route.and_then(|route| route.gate().map(|()| route)) {
        Ok(route) => Ok(Some(route)),
        Err(HarnessError::Unavailable { reason }) => {
            announce_skip(test, &reason);
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Print `SKIP <test>: <reason>` on stderr, unbuffered and uncaptured.
pub fn announce_skip(test: &str, reason: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIP {test}: {reason}");
}
