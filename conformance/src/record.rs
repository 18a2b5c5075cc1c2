//! The typed result model under a `ProviderSuite`'s report: one
//! [`CaseRecord`] per case, with where it came from ([`Origin`]) and what
//! became of it ([`CaseOutcome`]). Rule verdicts (what each
//! `conformance_tests!` test asserts) are read from records; the report's
//! rows, its summary and every rendering (table, JSON, Markdown, JUnit) are
//! computed from them, so the two cannot disagree.
//!
//! A failed record without a violation cannot be constructed:
//! [`CaseOutcome::Failed`] holds [`Violations`], which is never empty.
//!
//! # Examples
//!
//! ```
//! use tenferro_transfer_conformance::harness::{Rule, Violation};
//! use tenferro_transfer_conformance::record::{CaseOutcome, Violations};
//!
//! assert!(Violations::new(Vec::new()).is_none());
//! let broken = Violations::new(vec![Violation { rule: Rule::Values, message: "1 of 2 elements differ".into() }]).unwrap();
//! let outcome = CaseOutcome::Failed { violations: broken, unchecked: Vec::new() };
//! assert!(outcome.breaks(Rule::Values) && !outcome.breaks(Rule::Dtype));
//! ```

use serde::{Deserialize, Serialize};
use tenferro_transfer_harness::strategy::Profile;
use tenferro_transfer_harness::{Judgement, Rule, Unchecked, Violation};

use crate::report::{CaseResult, RowHead, SETUP, Verdict, ViolationRow};

/// Where a case record came from.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Origin {
    /// The route as a whole: its declaration, building it or its provider.
    Route,
    /// A fixed case, a size class or a special-values case.
    Fixed,
    /// The generated run: its summary, or its (minimal) failing case.
    Generated {
        /// The generator's seed.
        seed: u64,
        /// The profile.
        profile: Profile,
    },
    /// A case just outside the declared capabilities.
    Outside {
        /// Which limit it exceeds, in words.
        why: String,
    },
    /// The concurrent and repeated calls, or one failing call among them.
    Concurrent {
        /// The run's seed.
        seed: u64,
    },
    /// A case replayed alone from its recipe.
    Replayed,
}

/// At least one violation: what a failed record holds.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Violation>", into = "Vec<Violation>")]
pub struct Violations(Vec<Violation>);

impl Violations {
    /// `violations`, or `None` when there is none.
    pub fn new(violations: Vec<Violation>) -> Option<Self> {
        (!violations.is_empty()).then_some(Self(violations))
    }

    /// The violations, in the order given (never empty).
    pub fn as_slice(&self) -> &[Violation] {
        &self.0
    }
}

impl TryFrom<Vec<Violation>> for Violations {
    type Error = &'static str;

    fn try_from(violations: Vec<Violation>) -> Result<Self, Self::Error> {
        Self::new(violations).ok_or("a failed case record holds at least one violation")
    }
}

impl From<Violations> for Vec<Violation> {
    fn from(violations: Violations) -> Self {
        violations.0
    }
}

/// What became of a case.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CaseOutcome {
    /// Judged: every rule checked held.
    Passed {
        /// Rules not checked on the case, with why.
        unchecked: Vec<Unchecked>,
    },
    /// Judged: at least one rule was broken.
    Failed {
        /// The rules broken (never empty).
        violations: Violations,
        /// Rules not checked on the case, with why.
        unchecked: Vec<Unchecked>,
    },
    /// The harness could not set the case (or the whole route) up: it
    /// fails every rule test of the route, with the message.
    NotSetUp {
        /// What went wrong.
        message: String,
    },
    /// Not run here: the reason. Never a pass.
    Skipped {
        /// Why.
        reason: String,
    },
}

impl CaseOutcome {
    /// A judged outcome: failed with the judgement's violations, passed
    /// without any.
    pub fn judged(judgement: Judgement) -> Self {
        match Violations::new(judgement.violations) {
            Some(violations) => CaseOutcome::Failed {
                violations,
                unchecked: judgement.unchecked,
            },
            None => CaseOutcome::Passed {
                unchecked: judgement.unchecked,
            },
        }
    }

    /// Whether the case broke `rule`.
    pub fn breaks(&self, rule: Rule) -> bool {
        self.violations()
            .iter()
            .any(|violation| violation.rule == rule)
    }

    /// The rules broken (empty unless failed).
    pub fn violations(&self) -> &[Violation] {
        match self {
            CaseOutcome::Failed { violations, .. } => violations.as_slice(),
            _ => &[],
        }
    }

    /// Why `rule` was not checked on this case, if it was not: unchecked
    /// by the oracle, or the case skipped. `None` for a case that was not
    /// set up (it fails every rule).
    pub fn why_unchecked(&self, rule: Rule) -> Option<&str> {
        match self {
            CaseOutcome::Passed { unchecked } | CaseOutcome::Failed { unchecked, .. } => unchecked
                .iter()
                .find(|item| item.rule == rule)
                .map(|item| item.reason.as_str()),
            CaseOutcome::Skipped { reason } => Some(reason),
            CaseOutcome::NotSetUp { .. } => None,
        }
    }

    /// Rules not checked on the case (empty for a case not judged).
    pub fn unchecked(&self) -> &[Unchecked] {
        match self {
            CaseOutcome::Passed { unchecked } | CaseOutcome::Failed { unchecked, .. } => unchecked,
            _ => &[],
        }
    }

    /// Whether the case failed: a rule broken, or not set up.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            CaseOutcome::Failed { .. } | CaseOutcome::NotSetUp { .. }
        )
    }

    /// What failed, as the report's rows write it: each violation, or one
    /// [`SETUP`] row for a case not set up.
    pub fn violation_rows(&self) -> Vec<ViolationRow> {
        match self {
            CaseOutcome::Failed { violations, .. } => violations
                .as_slice()
                .iter()
                .map(ViolationRow::from)
                .collect(),
            CaseOutcome::NotSetUp { message } => vec![ViolationRow {
                rule: SETUP.to_owned(),
                message: message.clone(),
            }],
            _ => Vec::new(),
        }
    }

    /// The verdict of the report's row.
    pub fn verdict(&self) -> Verdict {
        match self {
            CaseOutcome::Passed { .. } => Verdict::Pass,
            CaseOutcome::Failed { .. } | CaseOutcome::NotSetUp { .. } => Verdict::Fail,
            CaseOutcome::Skipped { .. } => Verdict::Skip,
        }
    }
}

/// One case of a `ProviderSuite`'s run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseRecord {
    /// The declared route's name (`upload`).
    pub route: String,
    /// Where the case came from.
    pub origin: Origin,
    /// How the report's row names the case.
    pub head: RowHead,
    /// What became of it.
    pub outcome: CaseOutcome,
    /// Device failures the provider correctly passed on as a typed `Err`.
    pub expected_errors: Vec<String>,
    /// The recipe (one line of JSON) that replays the case alone, if any.
    pub replay: Option<String>,
}

impl CaseRecord {
    /// A record of `outcome`.
    pub fn new(route: &str, origin: Origin, head: RowHead, outcome: CaseOutcome) -> Self {
        Self {
            route: route.to_owned(),
            origin,
            head,
            outcome,
            expected_errors: Vec::new(),
            replay: None,
        }
    }

    /// A record of the oracle's `judgement`.
    pub fn judged(route: &str, origin: Origin, head: RowHead, judgement: Judgement) -> Self {
        let expected_errors = judgement.expected_errors.clone();
        Self {
            expected_errors,
            ..Self::new(route, origin, head, CaseOutcome::judged(judgement))
        }
    }

    /// The record with the recipe that replays its case alone.
    #[must_use]
    pub fn with_replay(mut self, recipe: &tenferro_transfer_harness::strategy::Recipe) -> Self {
        self.replay = Some(recipe.to_json());
        self
    }

    /// The report's row for this record.
    pub fn row(&self) -> CaseResult {
        let head = self.head.clone();
        let row = match &self.outcome {
            CaseOutcome::Passed { unchecked } | CaseOutcome::Failed { unchecked, .. } => {
                CaseResult::from_violations(head, self.outcome.violation_rows(), unchecked.clone())
            }
            CaseOutcome::NotSetUp { message } => CaseResult::setup_failure(head, message.clone()),
            CaseOutcome::Skipped { reason } => CaseResult::skipped(head, reason.clone()),
        };
        CaseResult {
            expected_errors: self.expected_errors.clone(),
            replay: self.replay.clone(),
            ..row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_outcome_without_a_violation_does_not_deserialize() {
        let empty = r#"{"result":"failed","violations":[],"unchecked":[]}"#;
        let error = serde_json::from_str::<CaseOutcome>(empty).unwrap_err();
        assert!(
            error.to_string().contains("at least one violation"),
            "{error}"
        );
        let broken =
            r#"{"result":"failed","violations":[{"rule":"values","message":"m"}],"unchecked":[]}"#;
        let outcome: CaseOutcome = serde_json::from_str(broken).unwrap();
        assert!(outcome.breaks(Rule::Values) && outcome.failed());
        assert_eq!(outcome.verdict(), Verdict::Fail);
    }

    #[test]
    fn a_record_renders_the_row_its_outcome_says() {
        let head = RowHead {
            provider: "p".into(),
            route: "upload (host->sim0)".into(),
            dtype: "F32".into(),
            shape: vec![2],
            layout: "owned".into(),
        };
        let skipped = CaseRecord::new(
            "upload",
            Origin::Fixed,
            head.clone(),
            CaseOutcome::Skipped {
                reason: "no device".into(),
            },
        );
        let row = skipped.row();
        assert_eq!(row.verdict, Verdict::Skip);
        assert_eq!(row.skip_reason.as_deref(), Some("no device"));
        let setup = CaseRecord::new(
            "upload",
            Origin::Route,
            head,
            CaseOutcome::NotSetUp {
                message: "no rig".into(),
            },
        );
        let row = setup.row();
        assert_eq!(row.verdict, Verdict::Fail);
        assert_eq!(row.violations[0].rule, SETUP);
        assert_eq!(setup.outcome.why_unchecked(Rule::Values), None);
    }
}
