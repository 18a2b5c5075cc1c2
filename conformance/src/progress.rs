//! Progress of a long run: a trait the suite reports to. The CLI
//! (`tenferro-transfer-conformance-cli`) draws it as a progress bar on
//! stderr; the library itself draws nothing.

use crate::CaseResult;

/// Told about each case as a run goes. `()` ignores everything.
pub trait Progress {
    /// The run is about to judge `total` cases.
    fn start(&mut self, total: u64) {
        let _ = total;
    }

    /// One case was judged.
    fn case_done(&mut self, result: &CaseResult) {
        let _ = result;
    }

    /// The run ended.
    fn finish(&mut self) {}
}

impl Progress for () {}
