//! The coverage map: for each route and rule, the cases the rule was
//! checked on, by dtype, layout (owned, each kind of view), size and
//! special values, summed from the records' [`Coverage`]; and the few
//! lines a reader must act on (a rule checked on no case, on no large case
//! where large cases ran, or on no view where views ran).

use std::fmt::Write as _;

use serde::Serialize;
use tenferro_transfer_harness::Rule;

use super::Report;
use super::text::Counted;
use crate::coverage::{LayoutClass, SizeClass};
use crate::record::CaseRecord;

/// The dtypes of the map, in its order.
const DTYPES: [&str; 7] = ["F32", "F64", "I32", "I64", "Bool", "C32", "C64"];

/// Cases of one kind (a dtype, a layout class, a size class).
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct KindCount {
    /// The kind's name (`F32`, `negative-step`, `large`).
    pub kind: String,
    /// How many cases.
    pub cases: usize,
}

/// Count `cases` more of `kind` in `counts`.
fn count(counts: &mut Vec<KindCount>, kind: &str, cases: usize) {
    match counts.iter_mut().find(|known| known.kind == kind) {
        Some(known) => known.cases += cases,
        None => counts.push(KindCount {
            kind: kind.to_owned(),
            cases,
        }),
    }
}

/// The cases of `kind` in `counts`.
fn cases_of(counts: &[KindCount], kind: &str) -> usize {
    counts
        .iter()
        .find(|known| known.kind == kind)
        .map_or(0, |known| known.cases)
}

/// One rule's coverage on one route. Kinds with no case are left out.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RuleCoverage {
    /// The rule's id.
    pub rule: String,
    /// Cases the rule was checked on.
    pub cases: usize,
    /// Of them, by dtype.
    pub dtypes: Vec<KindCount>,
    /// By layout: owned, or each kind of view (a view of two kinds counts
    /// in both).
    pub layouts: Vec<KindCount>,
    /// By size class.
    pub sizes: Vec<KindCount>,
    /// Those with special float values.
    pub specials: usize,
}

/// The coverage of one provider's route.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RouteCoverage {
    /// Provider name.
    pub provider: String,
    /// Route label.
    pub route: String,
    /// Cases judged on the route, of every kind.
    pub cases: usize,
    /// Each rule of the catalogue, in its order.
    pub rules: Vec<RuleCoverage>,
}

impl RouteCoverage {
    fn new(provider: &str, route: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            route: route.to_owned(),
            cases: 0,
            rules: Rule::ALL
                .into_iter()
                .map(|rule| RuleCoverage {
                    rule: rule.id().to_owned(),
                    ..RuleCoverage::default()
                })
                .collect(),
        }
    }

    fn add(&mut self, record: &CaseRecord) {
        for covered in record.coverage.covered() {
            self.cases += covered.cases;
            for rule in &covered.rules {
                let Some(index) = Rule::ALL.iter().position(|known| known == rule) else {
                    continue;
                };
                let counts = &mut self.rules[index];
                counts.cases += covered.cases;
                count(&mut counts.dtypes, &covered.kind.dtype, covered.cases);
                for layout in &covered.kind.layout {
                    count(&mut counts.layouts, layout.id(), covered.cases);
                }
                count(&mut counts.sizes, covered.kind.size.id(), covered.cases);
                if covered.kind.specials {
                    counts.specials += covered.cases;
                }
            }
        }
    }

    /// The coverage of `rule`.
    pub fn rule(&self, rule: Rule) -> Option<&RuleCoverage> {
        self.rules.iter().find(|counts| counts.rule == rule.id())
    }

    /// Cases of the route of `size` on which any rule was checked.
    fn ran_size(&self, size: SizeClass) -> bool {
        self.rules
            .iter()
            .any(|rule| cases_of(&rule.sizes, size.id()) > 0)
    }

    /// Whether any view ran on the route (any rule checked on one).
    fn ran_views(&self) -> bool {
        self.rules.iter().any(|rule| rule.views() > 0)
    }
}

impl RuleCoverage {
    /// Cases of `kind` (a dtype, a layout class's or a size class's id).
    pub fn cases_of(&self, kind: &str) -> usize {
        cases_of(&self.dtypes, kind) + cases_of(&self.layouts, kind) + cases_of(&self.sizes, kind)
    }

    /// View cases (every view class counted once per class it has).
    fn views(&self) -> usize {
        self.layouts
            .iter()
            .filter(|known| known.kind != LayoutClass::Owned.id())
            .map(|known| known.cases)
            .sum()
    }
}

/// A line of the footer a reader must act on.
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CoverageGap {
    /// The rule's id.
    pub rule: String,
    /// What is missing, and why.
    pub text: String,
}

impl Report {
    /// The coverage map: each provider's route, each rule's cases by kind.
    pub fn coverage(&self) -> Vec<RouteCoverage> {
        let mut routes: Vec<RouteCoverage> = Vec::new();
        for record in self.records() {
            let found = routes.iter().position(|route| {
                route.provider == record.head.provider && route.route == record.head.route
            });
            let index = match found {
                Some(index) => index,
                None => {
                    routes.push(RouteCoverage::new(
                        &record.head.provider,
                        &record.head.route,
                    ));
                    routes.len() - 1
                }
            };
            routes[index].add(record);
        }
        routes.retain(|route| route.cases > 0);
        routes
    }

    /// What a reader must act on, once per rule: a rule checked on no case
    /// at all; or on some route, on no case of it; or, on a route where
    /// such cases ran, on no case of a million elements or more, or on no
    /// view. Each names the routes and the reasons the records give.
    ///
    /// Records that carry no coverage (built by hand with
    /// [`CaseRecord::new`] and nothing added) say nothing either way: a
    /// report with no coverage at all has no gaps to show.
    pub fn coverage_gaps(&self) -> Vec<CoverageGap> {
        let coverage = self.coverage();
        let mut gaps = Vec::new();
        if coverage.is_empty() {
            return gaps;
        }
        for rule in Rule::ALL {
            if coverage.iter().all(|route| checked(route, rule) == 0) {
                let why = self.reasons(rule, |_| true);
                gaps.push(CoverageGap {
                    rule: rule.id().to_owned(),
                    text: format!("checked on no case: {why}"),
                });
                continue;
            }
            let parts: Vec<String> = [
                self.unchecked_routes(rule, &coverage),
                self.no_large_case(rule, &coverage),
                self.no_view(rule, &coverage),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !parts.is_empty() {
                gaps.push(CoverageGap {
                    rule: rule.id().to_owned(),
                    text: parts.join("; "),
                });
            }
        }
        gaps
    }

    /// The routes where `rule` was checked on no case, and why; `None`
    /// when it was checked on every route.
    fn unchecked_routes(&self, rule: Rule, coverage: &[RouteCoverage]) -> Option<String> {
        let nowhere: Vec<&RouteCoverage> = coverage
            .iter()
            .filter(|route| checked(route, rule) == 0)
            .collect();
        if nowhere.is_empty() {
            return None;
        }
        let why = self.reasons(rule, |record| in_routes(&nowhere, record));
        Some(format!(
            "checked on no case on {} ({why})",
            route_labels(&nowhere)
        ))
    }

    /// The routes where cases of a million elements or more ran but `rule`
    /// was checked on none of them, and why; `None` where there is none.
    fn no_large_case(&self, rule: Rule, coverage: &[RouteCoverage]) -> Option<String> {
        let no_large: Vec<&RouteCoverage> = coverage
            .iter()
            .filter(|route| {
                checked(route, rule) > 0
                    && route.ran_size(SizeClass::Large)
                    && route
                        .rule(rule)
                        .is_some_and(|counts| cases_of(&counts.sizes, SizeClass::Large.id()) == 0)
            })
            .collect();
        if no_large.is_empty() {
            return None;
        }
        let why = self.reasons(rule, |record| {
            in_routes(&no_large, record)
                && record
                    .coverage
                    .covered()
                    .iter()
                    .any(|covered| covered.kind.size == SizeClass::Large)
        });
        Some(format!(
            "checked on no case of a million elements or more on {} ({why})",
            route_labels(&no_large)
        ))
    }

    /// The routes where views ran but `rule` was checked on none of them,
    /// and why; `None` where there is none.
    fn no_view(&self, rule: Rule, coverage: &[RouteCoverage]) -> Option<String> {
        let no_view: Vec<&RouteCoverage> = coverage
            .iter()
            .filter(|route| {
                checked(route, rule) > 0
                    && route.ran_views()
                    && route.rule(rule).is_some_and(|counts| counts.views() == 0)
            })
            .collect();
        if no_view.is_empty() {
            return None;
        }
        let why = self.reasons(rule, |record| {
            in_routes(&no_view, record)
                && record
                    .coverage
                    .covered()
                    .iter()
                    .any(|covered| covered.kind.layout.iter().any(|layout| layout.is_view()))
        });
        Some(format!(
            "checked on no view on {} ({why})",
            route_labels(&no_view)
        ))
    }

    /// Why `rule` was not checked on the records of judged cases `which`
    /// picks (a phase's memory row judged no case): their reasons, the most
    /// frequent first, at most three.
    fn reasons(&self, rule: Rule, which: impl Fn(&CaseRecord) -> bool) -> String {
        let mut counted = Counted::default();
        for record in self
            .records()
            .iter()
            .filter(|record| !record.coverage.is_empty() && which(record))
        {
            if let Some(reason) = record.outcome.why_unchecked(rule) {
                counted.add(reason);
            }
        }
        let mut reasons: Vec<(&str, usize)> = counted.iter().collect();
        reasons.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
        if reasons.is_empty() {
            return "no case of that kind ran".to_owned();
        }
        reasons
            .into_iter()
            .take(3)
            .map(|(reason, _)| reason)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The coverage map as aligned text: per route, one row per rule, the
    /// cases it was checked on by dtype, layout, size and special values
    /// (`.` where none), then the lines a reader must act on.
    pub(super) fn coverage_text(&self) -> String {
        let mut out = String::new();
        for route in self.coverage() {
            let _ = writeln!(
                out,
                "\ncoverage of {} on {} ({} cases judged): the cases each rule was checked on; . is none",
                route.provider, route.route, route.cases
            );
            let headers = map_headers();
            let mut rows: Vec<Vec<String>> = vec![headers];
            for counts in &route.rules {
                rows.push(map_row(counts));
            }
            let columns = rows[0].len();
            let widths: Vec<usize> = (0..columns)
                .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
                .collect();
            for row in rows {
                let mut line = String::from("   ");
                for (column, (cell, width)) in row.iter().zip(&widths).enumerate() {
                    if column == 0 {
                        let _ = write!(line, " {cell:<width$}");
                    } else {
                        let separator = if GROUP_STARTS.contains(&column) {
                            " |"
                        } else {
                            ""
                        };
                        let _ = write!(line, "{separator} {cell:>width$}");
                    }
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
        let gaps = self.coverage_gaps();
        if !gaps.is_empty() {
            let _ = writeln!(out, "\nto act on (never counted as a pass):");
            for gap in gaps {
                let _ = writeln!(out, "    {}: {}", gap.rule, gap.text);
            }
        }
        out
    }
}

/// The cases `rule` was checked on on `route`.
fn checked(route: &RouteCoverage, rule: Rule) -> usize {
    route.rule(rule).map_or(0, |counts| counts.cases)
}

/// The labels of `routes`, joined by commas.
fn route_labels(routes: &[&RouteCoverage]) -> String {
    routes
        .iter()
        .map(|route| route.route.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `record` is of one of `routes`.
fn in_routes(routes: &[&RouteCoverage], record: &CaseRecord) -> bool {
    routes
        .iter()
        .any(|route| route.provider == record.head.provider && route.route == record.head.route)
}

/// The columns where a group of the map starts (after the rule and its
/// count): dtypes, layouts, sizes, specials.
const GROUP_STARTS: [usize; 4] = [
    2,
    2 + DTYPES.len(),
    2 + DTYPES.len() + LayoutClass::ALL.len(),
    2 + DTYPES.len() + LayoutClass::ALL.len() + SizeClass::ALL.len(),
];

/// The map's header row.
fn map_headers() -> Vec<String> {
    let mut headers = vec!["rule".to_owned(), "cases".to_owned()];
    headers.extend(DTYPES.iter().map(|dtype| (*dtype).to_owned()));
    headers.extend(
        LayoutClass::ALL
            .iter()
            .map(|layout| short_layout(*layout).to_owned()),
    );
    headers.extend(SizeClass::ALL.iter().map(|size| size.id().to_owned()));
    headers.push("specials".to_owned());
    headers
}

/// A layout class's column head, short.
fn short_layout(layout: LayoutClass) -> &'static str {
    match layout {
        LayoutClass::Owned => "owned",
        LayoutClass::PlainView => "view",
        LayoutClass::Offset => "offset",
        LayoutClass::NegativeStep => "neg",
        LayoutClass::Permutation => "perm",
        LayoutClass::Gaps => "gaps",
        LayoutClass::Broadcast => "bcast",
    }
}

/// One rule's row of the map.
fn map_row(counts: &RuleCoverage) -> Vec<String> {
    let cell = |count: usize| {
        if count == 0 {
            ".".to_owned()
        } else {
            count.to_string()
        }
    };
    let mut row = vec![counts.rule.clone(), cell(counts.cases)];
    row.extend(
        DTYPES
            .iter()
            .map(|dtype| cell(cases_of(&counts.dtypes, dtype))),
    );
    row.extend(
        LayoutClass::ALL
            .iter()
            .map(|layout| cell(cases_of(&counts.layouts, layout.id()))),
    );
    row.extend(
        SizeClass::ALL
            .iter()
            .map(|size| cell(cases_of(&counts.sizes, size.id()))),
    );
    row.push(cell(counts.specials));
    row
}

/// The map's header and rows as Markdown table lines, for the Markdown
/// report.
pub(super) fn markdown_rows(route: &RouteCoverage) -> Vec<String> {
    let headers = map_headers();
    let mut lines = vec![
        format!("| {} |", headers.join(" | ")),
        format!("|---|{}", ":-:|".repeat(headers.len() - 1)),
    ];
    for counts in &route.rules {
        let row = map_row(counts);
        lines.push(format!("| `{}` | {} |", row[0], row[1..].join(" | ")));
    }
    lines
}
