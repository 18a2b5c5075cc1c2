//! Memory the providers keep and reuse between calls, gathered from the
//! records: per provider, route and device, the most kept after any case
//! and on how many cases. Reported, never a failure.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Report;

/// The memory one provider kept on one device of a route, over the run.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KeptSummary {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// The device (endpoint) whose memory stayed in use.
    pub endpoint: String,
    /// The most live allocations kept after a case, where counted.
    pub allocations: Option<i64>,
    /// The most bytes kept after a case, where counted.
    pub bytes: Option<i64>,
    /// On how many cases memory stayed.
    pub cases: usize,
}

impl KeptSummary {
    /// `npu0 keeps up to +4 allocation(s), +8192 bytes (after 12 cases)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(count) = self.allocations {
            parts.push(format!("{count:+} allocation(s)"));
        }
        if let Some(count) = self.bytes {
            parts.push(format!("{count:+} bytes"));
        }
        format!(
            "{} keeps up to {} ({} case(s)): reused, not grown with calls",
            self.endpoint,
            parts.join(", "),
            self.cases
        )
    }
}

impl Report {
    /// The memory each provider kept and reused, by route and device: what
    /// repeating its cases showed does not grow with calls (not a leak).
    pub fn kept_memory(&self) -> Vec<KeptSummary> {
        let mut summaries: Vec<KeptSummary> = Vec::new();
        for record in self.records() {
            for kept in &record.kept_memory {
                let key = (&record.head.provider, &record.head.route, &kept.endpoint);
                let found = summaries
                    .iter_mut()
                    .find(|summary| (&summary.provider, &summary.route, &summary.endpoint) == key);
                let most = |now: Option<i64>, more: Option<i64>| match (now, more) {
                    (Some(now), Some(more)) => Some(now.max(more)),
                    (now, more) => now.or(more),
                };
                match found {
                    Some(summary) => {
                        summary.allocations = most(summary.allocations, kept.growth.allocations);
                        summary.bytes = most(summary.bytes, kept.growth.bytes);
                        summary.cases += 1;
                    }
                    None => summaries.push(KeptSummary {
                        provider: record.head.provider.clone(),
                        route: record.head.route.clone(),
                        endpoint: kept.endpoint.clone(),
                        allocations: kept.growth.allocations,
                        bytes: kept.growth.bytes,
                        cases: 1,
                    }),
                }
            }
        }
        summaries
    }

    /// The table's and the Markdown's section on kept memory (empty where
    /// no provider kept any).
    pub(super) fn kept_memory_section(&self, bullet: &str) -> String {
        let kept = self.kept_memory();
        if kept.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\nmemory kept between calls and reused (reported, not a leak: repeating the cases did not grow it):\n",
        );
        for summary in kept {
            let _ = writeln!(
                out,
                "{bullet}{} on {}: {}",
                summary.provider,
                summary.route,
                summary.describe()
            );
        }
        out
    }
}
