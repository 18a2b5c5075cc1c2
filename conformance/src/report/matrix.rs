//! The rules x routes x dtypes matrix: how each rule fared on the cases of
//! each (provider, route, dtype) cell.
//!
//! A rule **passes** on a cell only when every case of the cell was judged
//! and the rule held on each; it **fails** when any case violated it. A rule
//! the oracle could not check on some cases, or a case that was skipped or
//! could not be set up, keeps the cell from passing: it is then **partly
//! checked** (held where it was checked) or **not checked** (checked on no
//! case). A setup failure is counted on its own, never against a rule.

use tenferro_transfer_harness::Rule;

use super::{Report, Verdict};
use crate::record::{CaseOutcome, CaseRecord};

/// The status of one rule on one cell (or on a group of cells).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Mark {
    /// Judged on every case, and held on each.
    Pass,
    /// Violated on at least one case.
    Fail,
    /// Never violated, but checked on only some of the cases. Not a pass.
    PartlyChecked,
    /// Checked on none of the cases. Not a pass.
    NotChecked,
}

/// How one rule fared on the cases of a cell.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct RuleTally {
    /// Cases in the cell.
    pub cases: usize,
    /// Cases judged on which the rule held.
    pub held: usize,
    /// Cases that violated the rule.
    pub violated: usize,
    /// Cases judged on which the oracle could not check the rule.
    pub unchecked: usize,
    /// Cases not judged at all: skipped, or the harness could not set them up.
    pub not_run: usize,
}

impl RuleTally {
    /// The cell's mark; `None` for a cell without cases.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::{Mark, RuleTally};
    ///
    /// let all_held = RuleTally { cases: 3, held: 3, ..RuleTally::default() };
    /// assert_eq!(all_held.mark(), Some(Mark::Pass));
    /// let one_unchecked = RuleTally { cases: 3, held: 2, unchecked: 1, ..RuleTally::default() };
    /// assert_eq!(one_unchecked.mark(), Some(Mark::PartlyChecked));
    /// assert_eq!(RuleTally::default().mark(), None);
    /// ```
    pub fn mark(&self) -> Option<Mark> {
        Some(if self.cases == 0 {
            return None;
        } else if self.violated > 0 {
            Mark::Fail
        } else if self.held == self.cases {
            Mark::Pass
        } else if self.held > 0 {
            Mark::PartlyChecked
        } else {
            Mark::NotChecked
        })
    }

    fn add(&mut self, other: &RuleTally) {
        self.cases += other.cases;
        self.held += other.held;
        self.violated += other.violated;
        self.unchecked += other.unchecked;
        self.not_run += other.not_run;
    }

    fn count(&mut self, outcome: &CaseOutcome, rule: Rule) {
        self.cases += 1;
        if !outcome.is_judged() {
            self.not_run += 1;
        } else if outcome.breaks(rule) {
            self.violated += 1;
        } else if outcome.checked(rule) {
            self.held += 1;
        } else {
            self.unchecked += 1;
        }
    }
}

/// One provider on one route: a row per rule, a column per dtype.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct RouteMatrix {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// `cells[rule][dtype]`, indexed as [`RuleMatrix::rules`] and
    /// [`RuleMatrix::dtypes`].
    pub cells: Vec<Vec<RuleTally>>,
    /// Per dtype column: cases the harness could not set up.
    pub setup_failures: Vec<usize>,
    /// Per dtype column: cases skipped.
    pub skipped: Vec<usize>,
}

impl RouteMatrix {
    /// The rule's tally over every dtype of this route; `None` for a rule
    /// the matrix does not have.
    pub fn rule_tally(&self, rule_index: usize) -> Option<RuleTally> {
        let row = self.cells.get(rule_index)?;
        let mut total = RuleTally::default();
        for cell in row {
            total.add(cell);
        }
        Some(total)
    }
}

/// The whole matrix of a report.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct RuleMatrix {
    /// Rule ids, in catalogue order.
    pub rules: Vec<String>,
    /// Dtype columns, in order of first appearance.
    pub dtypes: Vec<String>,
    /// One matrix per (provider, route), in order of first appearance.
    pub routes: Vec<RouteMatrix>,
}

impl RuleMatrix {
    /// The matrix of `report`, computed from its records.
    pub fn new(report: &Report) -> Self {
        let rules: Vec<Rule> = Rule::ALL.to_vec();
        let mut dtypes: Vec<String> = Vec::new();
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for record in report.records() {
            let head = &record.head;
            if !dtypes.contains(&head.dtype) {
                dtypes.push(head.dtype.clone());
            }
            let key = (head.provider.as_str(), head.route.as_str());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let routes = keys
            .into_iter()
            .map(|(provider, route)| {
                let mut matrix = RouteMatrix {
                    provider: provider.to_owned(),
                    route: route.to_owned(),
                    cells: vec![vec![RuleTally::default(); dtypes.len()]; rules.len()],
                    setup_failures: vec![0; dtypes.len()],
                    skipped: vec![0; dtypes.len()],
                };
                let of_cell = |record: &&CaseRecord| {
                    record.head.provider == provider && record.head.route == route
                };
                for record in report.records().iter().filter(of_cell) {
                    let Some(column) = dtypes.iter().position(|dtype| *dtype == record.head.dtype)
                    else {
                        continue;
                    };
                    for (rule, cells) in rules.iter().zip(&mut matrix.cells) {
                        cells[column].count(&record.outcome, *rule);
                    }
                    matrix.setup_failures[column] += usize::from(record.outcome.is_not_set_up());
                    matrix.skipped[column] +=
                        usize::from(record.outcome.verdict() == Verdict::Skip);
                }
                matrix
            })
            .collect();
        Self {
            rules: rules.iter().map(|rule| rule.id().to_owned()).collect(),
            dtypes,
            routes,
        }
    }

    /// The index of a rule id in [`RuleMatrix::rules`].
    pub fn rule_index(&self, rule: &str) -> Option<usize> {
        self.rules.iter().position(|known| known == rule)
    }

    /// Every cell's tally of one rule, route by route, dtype by dtype.
    pub fn cells_of(&self, rule_index: usize) -> impl Iterator<Item = &RuleTally> {
        self.routes
            .iter()
            .filter_map(move |route| route.cells.get(rule_index))
            .flatten()
    }

    /// Whether any case of the report could not be set up.
    pub fn has_setup_failures(&self) -> bool {
        self.routes
            .iter()
            .any(|route| route.setup_failures.iter().any(|&count| count > 0))
    }
}

impl Report {
    /// The rules x routes x dtypes matrix of this report.
    pub fn rule_matrix(&self) -> RuleMatrix {
        RuleMatrix::new(self)
    }
}
