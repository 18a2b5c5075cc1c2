//! The typed result model: one [`CaseRecord`] per case, with where it came
//! from ([`Origin`]) and what became of it ([`CaseOutcome`]). The runner's
//! result becomes a case's outcome through one conversion
//! (`runner::case_outcome`), and every report is computed from
//! records: the rows, the summary, each rule's verdict and every rendering
//! (table, JSON, Markdown, JUnit), so none of them can disagree.
//!
//! Which rules a case checked is part of its outcome, taken from the
//! oracle's judgement alone: a rule the oracle did not judge on a case
//! never counts as checked there, whatever path ran the case. A failed
//! record without a violation cannot be constructed:
//! [`CaseOutcome::Failed`] holds [`Violations`], which is never empty.
//!
//! This module is the bottom of the crate's result model: it imports no
//! other module of the crate but [`crate::coverage`], which classes cases.
//!
//! # Examples
//!
//! ```
//! use tenferro_transfer_conformance::harness::{Rule, Violation};
//! use tenferro_transfer_conformance::record::{CaseOutcome, Violations};
//!
//! assert!(Violations::new(Vec::new()).is_none());
//! let broken = Violations::new(vec![Violation { rule: Rule::Values, message: "1 of 2 elements differ".into() }]).unwrap();
//! let outcome = CaseOutcome::Failed { violations: broken, checked: vec![Rule::Values], unchecked: Vec::new() };
//! assert!(outcome.breaks(Rule::Values) && !outcome.breaks(Rule::Dtype));
//! // A rule the outcome does not list as checked was not checked.
//! assert!(outcome.checked(Rule::Values) && !outcome.checked(Rule::Dtype));
//! ```

use serde::{Deserialize, Serialize};

use crate::coverage::Coverage;
use tenferro_transfer_harness::strategy::{Profile, Recipe};
use tenferro_transfer_harness::{Judgement, KeptMemory, Rule, Unchecked, Violation};

/// The rule id a report row's violation carries when the harness itself
/// could not run the case (a [`CaseOutcome::NotSetUp`] record): a setup
/// failure, not a rule the provider broke. Only the renderings write it;
/// nothing reads it back.
pub const SETUP: &str = "setup";

/// A case's verdict.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every checked rule held.
    Pass,
    /// At least one rule was broken, or the case could not run.
    Fail,
    /// The case was not run; the reason is in the row. Never a pass.
    Skip,
}

/// What identifies a row.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
pub struct RowHead {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Dtype name.
    pub dtype: String,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// Layout label.
    pub layout: String,
}

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
    /// The pass that holds outputs alive (`output-stable`), or the memory
    /// its devices kept over it (`no-leak`).
    Held,
    /// Sequences against a provider's state: twins of the fixed cases,
    /// and inputs of mixed sizes moved in one run.
    State,
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

/// Why a rule counts as not checked on a judged case that neither checked
/// it nor said why (a record read back without its checks, say).
const NOT_JUDGED: &str = "the oracle did not judge it on this case";

/// What became of a case.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CaseOutcome {
    /// Judged: every rule checked held.
    Passed {
        /// The rules the oracle judged, in catalogue order.
        #[serde(default)]
        checked: Vec<Rule>,
        /// Rules not checked on the case, with why.
        unchecked: Vec<Unchecked>,
    },
    /// Judged: at least one rule was broken.
    Failed {
        /// The rules broken (never empty).
        violations: Violations,
        /// The rules the oracle judged, in catalogue order (the broken ones
        /// among them).
        #[serde(default)]
        checked: Vec<Rule>,
        /// Rules not checked on the case, with why.
        unchecked: Vec<Unchecked>,
    },
    /// The harness could not set the case (or the whole route) up: it
    /// fails every rule test of the route, with the message.
    NotSetUp {
        /// What went wrong, with its causes.
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
    /// without any; checked exactly where the oracle judged.
    pub fn judged(judgement: &Judgement) -> Self {
        Self::from_judged(
            judgement.violations().to_vec(),
            judgement.checked().to_vec(),
            judgement.unchecked().to_vec(),
        )
    }

    /// The outcome of a run of several judged cases summed up in one
    /// record (the generated run, the concurrent calls): a rule counts as
    /// checked where any of them checked it, and as unchecked, with the
    /// first reason, where none did. Violations are not summed: a failing
    /// case is a record of its own. `None` when no outcome was judged.
    pub fn summed<'a>(outcomes: impl IntoIterator<Item = &'a CaseOutcome>) -> Option<Self> {
        let mut checked: Vec<Rule> = Vec::new();
        let mut reasons: Vec<Unchecked> = Vec::new();
        let mut judged = false;
        for outcome in outcomes {
            let (CaseOutcome::Passed {
                checked: these,
                unchecked,
            }
            | CaseOutcome::Failed {
                checked: these,
                unchecked,
                ..
            }) = outcome
            else {
                continue;
            };
            judged = true;
            checked.extend(these);
            for item in unchecked {
                if !reasons.iter().any(|kept| kept.rule == item.rule) {
                    reasons.push(item.clone());
                }
            }
        }
        if !judged {
            return None;
        }
        checked.sort();
        checked.dedup();
        reasons.retain(|item| !checked.contains(&item.rule));
        Some(CaseOutcome::Passed {
            checked,
            unchecked: reasons,
        })
    }

    /// Whether the case was judged and every rule it checked held.
    pub fn passed(&self) -> bool {
        matches!(self, CaseOutcome::Passed { .. })
    }

    /// The rules broken, in catalogue order, without repeats.
    pub fn rules(&self) -> Vec<Rule> {
        Violation::rules_of(self.violations())
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

    /// Whether the oracle judged `rule` on this case (held or broken). A
    /// case skipped or not set up checked nothing.
    pub fn checked(&self, rule: Rule) -> bool {
        match self {
            CaseOutcome::Passed { checked, .. } | CaseOutcome::Failed { checked, .. } => {
                checked.contains(&rule)
            }
            _ => false,
        }
    }

    /// The rules checked on this case, in catalogue order.
    pub fn checked_rules(&self) -> &[Rule] {
        match self {
            CaseOutcome::Passed { checked, .. } | CaseOutcome::Failed { checked, .. } => checked,
            _ => &[],
        }
    }

    /// Why `rule` was not checked on this case, if it was not: unchecked
    /// by the oracle, or the case skipped. `None` for a rule checked, and
    /// for a case that was not set up (it fails every rule).
    pub fn why_unchecked(&self, rule: Rule) -> Option<&str> {
        match self {
            CaseOutcome::Passed { unchecked, .. } | CaseOutcome::Failed { unchecked, .. } => {
                if self.checked(rule) {
                    return None;
                }
                Some(
                    unchecked
                        .iter()
                        .find(|item| item.rule == rule)
                        .map_or(NOT_JUDGED, |item| item.reason.as_str()),
                )
            }
            CaseOutcome::Skipped { reason } => Some(reason),
            CaseOutcome::NotSetUp { .. } => None,
        }
    }

    /// Rules not checked on the case, as the oracle listed them (empty for
    /// a case not judged).
    pub fn unchecked(&self) -> &[Unchecked] {
        match self {
            CaseOutcome::Passed { unchecked, .. } | CaseOutcome::Failed { unchecked, .. } => {
                unchecked
            }
            _ => &[],
        }
    }

    /// Whether the oracle judged the case (it passed or failed), rather than
    /// it being skipped or not set up.
    pub fn is_judged(&self) -> bool {
        matches!(
            self,
            CaseOutcome::Passed { .. } | CaseOutcome::Failed { .. }
        )
    }

    /// Whether the harness could not set the case up.
    pub fn is_not_set_up(&self) -> bool {
        matches!(self, CaseOutcome::NotSetUp { .. })
    }

    /// Whether the case failed: a rule broken, or not set up.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            CaseOutcome::Failed { .. } | CaseOutcome::NotSetUp { .. }
        )
    }

    /// The verdict of the report's row.
    pub fn verdict(&self) -> Verdict {
        match self {
            CaseOutcome::Passed { .. } => Verdict::Pass,
            CaseOutcome::Failed { .. } | CaseOutcome::NotSetUp { .. } => Verdict::Fail,
            CaseOutcome::Skipped { .. } => Verdict::Skip,
        }
    }

    /// The outcome with only the rules `keep` admits judged: a violation
    /// of another rule is dropped, and the rule counts as unchecked for
    /// `reason` (a rule outside a pinned level). A failure left without a
    /// violation passes. Checks can only be taken away, never added.
    #[must_use]
    pub fn restricted(self, keep: impl Fn(Rule) -> bool, reason: &str) -> Self {
        let (violations, mut checked, mut unchecked) = match self.into_judged() {
            Ok(parts) => parts,
            Err(other) => return other,
        };
        let (violations, dropped): (Vec<Violation>, Vec<Violation>) = violations
            .into_iter()
            .partition(|violation| keep(violation.rule));
        let mut moved: Vec<Rule> = checked
            .iter()
            .copied()
            .filter(|rule| !keep(*rule))
            .collect();
        moved.extend(dropped.iter().map(|violation| violation.rule));
        moved.sort();
        moved.dedup();
        checked.retain(|rule| keep(*rule));
        for rule in moved {
            match unchecked.iter_mut().find(|item| item.rule == rule) {
                Some(item) => item.reason = reason.to_owned(),
                None => unchecked.push(Unchecked {
                    rule,
                    reason: reason.to_owned(),
                }),
            }
        }
        Self::from_judged(violations, checked, unchecked)
    }

    /// The outcome with `more` violations added: a judged outcome fails
    /// with them, their rules counted as checked. A case not judged (a
    /// skip, a setup failure) is left as it is: nothing of it was judged
    /// to add them to.
    #[must_use]
    pub(crate) fn with_violations(self, more: Vec<Violation>) -> Self {
        let (mut violations, mut checked, mut unchecked) = match self.into_judged() {
            Ok(parts) => parts,
            Err(other) => return other,
        };
        for violation in &more {
            if !checked.contains(&violation.rule) {
                checked.push(violation.rule);
            }
        }
        checked.sort();
        unchecked.retain(|item| !checked.contains(&item.rule));
        violations.extend(more);
        Self::from_judged(violations, checked, unchecked)
    }

    /// A judged outcome's violations, checked rules and unchecked rules;
    /// `Err(self)` for a case not judged.
    #[allow(clippy::type_complexity)]
    fn into_judged(self) -> Result<(Vec<Violation>, Vec<Rule>, Vec<Unchecked>), Self> {
        match self {
            CaseOutcome::Passed { checked, unchecked } => Ok((Vec::new(), checked, unchecked)),
            CaseOutcome::Failed {
                violations,
                checked,
                unchecked,
            } => Ok((violations.into(), checked, unchecked)),
            other => Err(other),
        }
    }

    /// A judged outcome: failed with `violations`, passed without any.
    fn from_judged(
        violations: Vec<Violation>,
        checked: Vec<Rule>,
        unchecked: Vec<Unchecked>,
    ) -> Self {
        match Violations::new(violations) {
            Some(violations) => CaseOutcome::Failed {
                violations,
                checked,
                unchecked,
            },
            None => CaseOutcome::Passed { checked, unchecked },
        }
    }

    /// Say better why `rule` was not checked; a rule that was checked
    /// stays checked, and a case not judged is left as it is.
    pub fn explain_unchecked(&mut self, rule: Rule, reason: &str) {
        if self.checked(rule) {
            return;
        }
        if let CaseOutcome::Passed { unchecked, .. } | CaseOutcome::Failed { unchecked, .. } = self
        {
            match unchecked.iter_mut().find(|item| item.rule == rule) {
                Some(item) => item.reason = reason.to_owned(),
                None => unchecked.push(Unchecked {
                    rule,
                    reason: reason.to_owned(),
                }),
            }
        }
    }

    /// The outcome with `note` added to every message of its failure (the
    /// line that replays it, say); a pass or a skip is left as it is.
    #[must_use]
    pub fn annotated(self, note: impl Fn(&str) -> String) -> Self {
        match self {
            CaseOutcome::Failed {
                violations,
                checked,
                unchecked,
            } => {
                let violations: Vec<Violation> = Vec::from(violations)
                    .into_iter()
                    .map(|violation| Violation {
                        message: note(&violation.message),
                        ..violation
                    })
                    .collect();
                Self::from_judged(violations, checked, unchecked)
            }
            CaseOutcome::NotSetUp { message } => CaseOutcome::NotSetUp {
                message: note(&message),
            },
            other => other,
        }
    }
}

/// One case of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseRecord {
    /// The declared route's name (`upload`), or the provider's name in the
    /// CLI's fixed suite.
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
    /// Memory the devices kept in use after the case that repeating it did
    /// not grow: what the provider keeps and reuses, reported, not a leak.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_memory: Vec<KeptMemory>,
    /// The cases judged for this record, by kind and the rules judged on
    /// each: what the coverage map sums. Empty where no case was judged
    /// (a skip, a setup failure, a phase's memory).
    #[serde(default, skip_serializing_if = "Coverage::is_empty")]
    pub coverage: Coverage,
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
            kept_memory: Vec::new(),
            coverage: Coverage::default(),
        }
    }

    /// A record of a judged case: its outcome, the device failures the
    /// provider passed on as a typed `Err`, and the memory it kept.
    pub fn judged(route: &str, origin: Origin, head: RowHead, judgement: &Judgement) -> Self {
        Self {
            expected_errors: judgement.expected_errors().to_vec(),
            kept_memory: judgement.kept_memory().to_vec(),
            ..Self::new(route, origin, head, CaseOutcome::judged(judgement))
        }
    }

    /// The record with the device failures the provider passed on as a
    /// typed `Err` (expected errors, not violations).
    #[must_use]
    pub fn with_expected_errors(mut self, errors: Vec<String>) -> Self {
        self.expected_errors = errors;
        self
    }

    /// The record with the cases it judged, for the coverage map.
    #[must_use]
    pub fn with_coverage(mut self, coverage: Coverage) -> Self {
        self.coverage = coverage;
        self
    }

    /// The record with the recipe that replays its case alone.
    #[must_use]
    pub fn with_replay(mut self, recipe: &Recipe) -> Self {
        self.replay = Some(recipe.to_json());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(rule: Rule, checked: Vec<Rule>) -> CaseOutcome {
        CaseOutcome::Failed {
            violations: Violations::new(vec![Violation {
                rule,
                message: "m".into(),
            }])
            .unwrap(),
            checked,
            unchecked: Vec::new(),
        }
    }

    #[test]
    fn a_failed_outcome_without_a_violation_does_not_deserialize() {
        let empty = r#"{"result":"failed","violations":[],"unchecked":[]}"#;
        let error = serde_json::from_str::<CaseOutcome>(empty).unwrap_err();
        assert!(
            error.to_string().contains("at least one violation"),
            "{error}"
        );
        let broken = r#"{"result":"failed","violations":[{"rule":"values","message":"m"}],"checked":["values"],"unchecked":[]}"#;
        let outcome: CaseOutcome = serde_json::from_str(broken).unwrap();
        assert!(outcome.breaks(Rule::Values) && outcome.failed());
        assert_eq!(outcome.verdict(), Verdict::Fail);
    }

    #[test]
    fn violations_added_to_a_pass_fail_it_and_count_their_rule_as_checked() {
        let passed = CaseOutcome::Passed {
            checked: vec![Rule::Values],
            unchecked: vec![Unchecked {
                rule: Rule::OutputStable,
                reason: "nothing held".into(),
            }],
        };
        let violation = Violation {
            rule: Rule::OutputStable,
            message: "changed".into(),
        };
        let failed = passed.with_violations(vec![violation]);
        assert!(failed.breaks(Rule::OutputStable) && failed.checked(Rule::OutputStable));
        assert!(failed.checked(Rule::Values) && failed.unchecked().is_empty());
        let skipped = CaseOutcome::Skipped {
            reason: "absent".into(),
        };
        assert_eq!(skipped.clone().with_violations(Vec::new()), skipped);
    }

    #[test]
    fn a_rule_not_listed_as_checked_was_not_checked() {
        let outcome = failed(Rule::Values, vec![Rule::Values]);
        assert!(outcome.checked(Rule::Values));
        assert!(!outcome.checked(Rule::NoLeak));
        assert_eq!(outcome.why_unchecked(Rule::NoLeak), Some(NOT_JUDGED));
        assert_eq!(outcome.why_unchecked(Rule::Values), None);
        let skipped = CaseOutcome::Skipped {
            reason: "no device".into(),
        };
        assert!(!skipped.checked(Rule::Values));
        assert_eq!(skipped.why_unchecked(Rule::Values), Some("no device"));
    }

    #[test]
    fn restricting_takes_checks_away_and_never_adds_one() {
        let outcome = failed(Rule::NoLeak, vec![Rule::Values, Rule::NoLeak]);
        let restricted = outcome.restricted(|rule| rule != Rule::NoLeak, "not in the level");
        assert_eq!(restricted.verdict(), Verdict::Pass);
        assert_eq!(restricted.checked_rules(), &[Rule::Values]);
        assert_eq!(
            restricted.why_unchecked(Rule::NoLeak),
            Some("not in the level")
        );
        let unchecked = CaseOutcome::Passed {
            checked: Vec::new(),
            unchecked: Vec::new(),
        };
        let restricted = unchecked.restricted(|_| true, "never");
        assert!(restricted.checked_rules().is_empty());
    }

    #[test]
    fn a_sum_checks_a_rule_any_case_checked_and_no_other() {
        let one = CaseOutcome::Passed {
            checked: vec![Rule::Values],
            unchecked: vec![Unchecked {
                rule: Rule::NoLeak,
                reason: "no ledger".into(),
            }],
        };
        let two = CaseOutcome::Passed {
            checked: vec![Rule::Dtype],
            unchecked: Vec::new(),
        };
        let skipped = CaseOutcome::Skipped { reason: "x".into() };
        let sum = CaseOutcome::summed([&one, &two, &skipped]).unwrap();
        assert_eq!(sum.checked_rules(), &[Rule::Dtype, Rule::Values]);
        assert_eq!(sum.why_unchecked(Rule::NoLeak), Some("no ledger"));
        assert!(CaseOutcome::summed([&skipped]).is_none());
    }
}
