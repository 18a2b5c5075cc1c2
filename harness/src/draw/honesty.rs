//! Capability honesty: what a provider declares it serves, and what it must
//! refuse. Inputs just outside the declared [`Capabilities`] are staged on
//! purpose; the provider must answer them with a typed `Err`.

use std::sync::Arc;

use crate::{PRESET_DTYPES, element_width};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{DType, Error, Tensor, TensorRead};

use crate::judge::oracle::OUTPUT_RULES;
use crate::strategy::{Capabilities, Exceeded, Recipe, ValueSource, ViewKind};
use crate::{Case, HarnessError, Judgement, Layout, Oracle, Outcome, ProviderResult, Route, Rule};
use crate::{ViewAxis, ViewSpec};

/// The largest declared maximum the suite exceeds on purpose: one element
/// more than a larger maximum would cost more memory than it proves.
pub const MAX_EXCEEDED_ELEMENTS: usize = 1 << 22;

/// The largest declared byte size the suite exceeds on purpose.
pub const MAX_EXCEEDED_BYTES: usize = 1 << 26;

/// The largest declared maximum rank the suite exceeds on purpose.
pub const MAX_EXCEEDED_RANK: usize = 16;

/// A case outside the declared capabilities, and which capability it
/// exceeds.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct OutsideCase {
    /// The case.
    pub case: Case,
    /// Which declared capability it falls outside of, in words.
    pub why: String,
    /// Every declared limit it exceeds (never empty).
    pub exceeded: Vec<Exceeded>,
    /// The recipe that rebuilds the case, for a replay line.
    pub recipe: Recipe,
}

impl OutsideCase {
    /// The case of `recipe` when it falls outside `capabilities`, `None`
    /// inside.
    ///
    /// # Errors
    ///
    /// As [`Recipe::case`].
    pub fn of(recipe: Recipe, capabilities: &Capabilities) -> Result<Option<Self>, HarnessError> {
        let case = recipe.case()?;
        let exceeded = capabilities.exceeded(&case);
        if exceeded.is_empty() {
            return Ok(None);
        }
        let why = exceeded
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        Ok(Some(Self {
            case,
            why,
            exceeded,
            recipe,
        }))
    }
}

impl Capabilities {
    /// Cases just outside these capabilities, each exceeding exactly one
    /// declared limit: each undeclared preset dtype; a strided view when
    /// views are not declared, else a view of each undeclared
    /// [`ViewKind`]; one rank more than the declared maximum (up to
    /// [`MAX_EXCEEDED_RANK`]); one element more than the declared maximum
    /// (up to [`MAX_EXCEEDED_ELEMENTS`]); and one element more than fits
    /// the declared byte size (up to [`MAX_EXCEEDED_BYTES`]). A limit no
    /// case can exceed alone (elements beyond the byte size, say) gets
    /// none. Empty when the declaration covers every case the suite can
    /// draw.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidCase`] if a case cannot be built.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::strategy::{Capabilities, ViewKind, ViewKinds};
    ///
    /// assert!(Capabilities::all().outside_cases().unwrap().is_empty());
    /// let narrow = Capabilities::all().dtypes([DType::F64]).views(ViewKinds::NONE).max_elements(8);
    /// // Six undeclared dtypes, one view, one oversized case.
    /// assert_eq!(narrow.outside_cases().unwrap().len(), 8);
    /// // Views with offsets only: one view of each of the four other kinds.
    /// let offsets = Capabilities::all().views([ViewKind::Offset]).max_rank(3).max_bytes(1024);
    /// let whys: Vec<String> = offsets.outside_cases().unwrap().into_iter().map(|case| case.why).collect();
    /// assert_eq!(whys, [
    ///     "views with negative steps are not declared",
    ///     "views with permuted axes are not declared",
    ///     "views with gaps between elements are not declared",
    ///     "broadcast views (a zero step repeats an element) are not declared",
    ///     "rank 4 exceeds the declared maximum of 3",
    ///     "1040 bytes exceed the declared maximum of 1024",
    /// ]);
    /// ```
    pub fn outside_cases(&self) -> Result<Vec<OutsideCase>, HarnessError> {
        let mut by_width: Vec<DType> = self.dtypes.clone();
        by_width.sort_by_key(|dtype| element_width(*dtype).unwrap_or(usize::MAX));
        // (what the case must exceed alone, the candidates in order)
        let mut wanted: Vec<(Exceeded, Vec<Recipe>)> = self.undeclared_dtypes();
        wanted.extend(self.undeclared_views(&by_width));
        wanted.extend(self.oversized(&by_width));
        self.first_sole_cases(wanted)
    }

    /// Each undeclared preset dtype, with the owned shapes that may show it.
    fn undeclared_dtypes(&self) -> Vec<(Exceeded, Vec<Recipe>)> {
        let mut wanted = Vec::new();
        for dtype in PRESET_DTYPES {
            if !self.dtypes.contains(&dtype) {
                let shapes = [vec![3, 2], vec![1], vec![]];
                wanted.push((
                    Exceeded::DType(dtype),
                    shapes
                        .into_iter()
                        .map(|shape| patterned(dtype, shape, Layout::Owned))
                        .collect(),
                ));
            }
        }
        wanted
    }

    /// A strided view when views are not declared, else a view of each
    /// undeclared [`ViewKind`], in each declared dtype from the narrowest.
    fn undeclared_views(&self, by_width: &[DType]) -> Vec<(Exceeded, Vec<Recipe>)> {
        let views: Vec<(Exceeded, Layout)> = if self.views.is_empty() {
            vec![(Exceeded::Views, reversed_every_other())]
        } else {
            ViewKind::ALL
                .into_iter()
                .filter(|kind| !self.views.contains(*kind))
                .map(|kind| (Exceeded::ViewKind(kind), view_of_kind(kind)))
                .collect()
        };
        let mut wanted = Vec::new();
        for (exceeded, layout) in views {
            let shape = match &layout {
                Layout::View(spec) => spec.shape(),
                Layout::Owned => Vec::new(),
            };
            wanted.push((
                exceeded,
                by_width
                    .iter()
                    .map(|dtype| patterned(*dtype, shape.clone(), layout.clone()))
                    .collect(),
            ));
        }
        wanted
    }

    /// One rank, one element and one byte more than declared, each up to
    /// the suite's largest exceeded maximum.
    fn oversized(&self, by_width: &[DType]) -> Vec<(Exceeded, Vec<Recipe>)> {
        let mut wanted = Vec::new();
        if self.max_rank < MAX_EXCEEDED_RANK {
            let rank = self.max_rank + 1;
            wanted.push((
                Exceeded::Rank {
                    rank,
                    max: self.max_rank,
                },
                by_width
                    .iter()
                    .map(|dtype| patterned(*dtype, vec![1; rank], Layout::Owned))
                    .collect(),
            ));
        }
        if self.max_elements < MAX_EXCEEDED_ELEMENTS {
            let count = self.max_elements + 1;
            wanted.push((
                Exceeded::Elements {
                    count,
                    max: self.max_elements,
                },
                by_width
                    .iter()
                    .map(|dtype| patterned(*dtype, vec![count], Layout::Owned))
                    .collect(),
            ));
        }
        if self.max_bytes < MAX_EXCEEDED_BYTES {
            for dtype in by_width.iter().rev() {
                let Some(width) = element_width(*dtype) else {
                    continue;
                };
                let count = self.max_bytes / width + 1;
                wanted.push((
                    Exceeded::Bytes {
                        bytes: count * width,
                        max: self.max_bytes,
                    },
                    vec![patterned(*dtype, vec![count], Layout::Owned)],
                ));
            }
        }
        wanted
    }

    /// For each wanted limit, the first candidate that falls outside these
    /// capabilities by that limit alone (one byte limit in all).
    fn first_sole_cases(
        &self,
        wanted: Vec<(Exceeded, Vec<Recipe>)>,
    ) -> Result<Vec<OutsideCase>, HarnessError> {
        let mut cases: Vec<OutsideCase> = Vec::new();
        let mut bytes_found = false;
        for (exceeded, candidates) in wanted {
            if matches!(exceeded, Exceeded::Bytes { .. }) && bytes_found {
                continue;
            }
            for recipe in candidates {
                let shape_fits =
                    recipe.shape.iter().product::<usize>() <= MAX_EXCEEDED_ELEMENTS + 1;
                if !shape_fits {
                    continue;
                }
                match OutsideCase::of(recipe, self)? {
                    Some(outside)
                        if outside.exceeded.len() == 1
                            && same_limit(&outside.exceeded[0], &exceeded) =>
                    {
                        bytes_found |= matches!(exceeded, Exceeded::Bytes { .. });
                        cases.push(outside);
                        break;
                    }
                    _ => {}
                }
            }
        }
        Ok(cases)
    }
}

/// A recipe of patterned values of `dtype`, `shape` and `layout`.
fn patterned(dtype: DType, shape: Vec<usize>, layout: Layout) -> Recipe {
    Recipe::fixed(dtype, shape, layout, ValueSource::Patterned)
}

/// Whether `a` and `b` are the same declared limit (the counts of a byte
/// limit differ with the dtype).
fn same_limit(a: &Exceeded, b: &Exceeded) -> bool {
    match (a, b) {
        (Exceeded::Bytes { max: x, .. }, Exceeded::Bytes { max: y, .. }) => x == y,
        _ => a == b,
    }
}

/// Elements 3 and 1 of five, backwards: an offset, a negative step and a
/// gap; the view a provider that declares no views must refuse.
fn reversed_every_other() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![5],
        axes: vec![ViewAxis {
            first: 3,
            step: -2,
            len: 2,
        }],
        permutation: vec![],
    })
}

/// A small view that has `kind` and no other kind.
fn view_of_kind(kind: ViewKind) -> Layout {
    let axis = |first, step, len| ViewAxis { first, step, len };
    let (backing_shape, axes, permutation) = match kind {
        // Elements 1 and 2 of four.
        ViewKind::Offset => (vec![4], vec![axis(1, 1, 2)], vec![]),
        // All three elements, backwards.
        ViewKind::NegativeStep => (vec![3], vec![axis(2, -1, 3)], vec![]),
        // A 2x3 tensor read transposed.
        ViewKind::Permutation => (vec![2, 3], vec![axis(0, 1, 2), axis(0, 1, 3)], vec![1, 0]),
        // A column of three read twice: strides [1, 0].
        ViewKind::Broadcast => (vec![3, 1], vec![axis(0, 1, 3), axis(0, 0, 2)], vec![]),
        // Elements 0, 2 and 4 of five; a kind added later gets the same
        // until it has a view of its own (the sole-limit filter drops it).
        _ => (vec![5], vec![axis(0, 2, 3)], vec![]),
    };
    Layout::View(ViewSpec {
        backing_shape,
        axes,
        permutation,
    })
}

impl Oracle {
    /// Judge a case outside the provider's declared capabilities: a typed
    /// `Err` is the right answer; an `Ok` breaks `capability-honesty` (with
    /// whatever else was wrong with the output named in the message), and a
    /// panic breaks both `no-panic` and `capability-honesty`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::strategy::Capabilities;
    /// use tenferro_transfer_harness::{CapabilityGate, HostProvider, Oracle, Rig, Route, Rule};
    ///
    /// let route = Route::host_to_host().unwrap();
    /// let declared = Capabilities::all().dtypes([DType::F32]).max_elements(64);
    /// let outside = declared.outside_cases().unwrap().remove(0);
    ///
    /// // HostProvider serves every dtype: declared F32-only, it is dishonest.
    /// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
    /// let judgement = Oracle.judge_outside(&outside, &route, &rig.run(&outside.case).unwrap());
    /// assert_eq!(judgement.rules(), vec![Rule::CapabilityHonesty]);
    ///
    /// // Behind a gate that refuses what is not declared, it is honest.
    /// let gated = CapabilityGate::new(Arc::new(HostProvider::new()), declared);
    /// let mut rig = Rig::new(route.clone(), Arc::new(gated)).unwrap();
    /// assert!(Oracle.judge_outside(&outside, &route, &rig.run(&outside.case).unwrap()).passed());
    /// ```
    pub fn judge_outside(
        &self,
        outside: &OutsideCase,
        route: &Route,
        outcome: &Outcome,
    ) -> Judgement {
        let inside = self.judge(&outside.case, route, outcome);
        if let crate::RuntimeVerdict::Abandoned { .. } = outcome.runtime {
            // Not judged at all: every rule is unchecked, with why.
            return inside;
        }
        let mut violations = inside.violations().to_vec();
        let mut unchecked = inside.unchecked().to_vec();
        let mut judgement = Judgement::empty();
        judgement.expected_errors = inside.expected_errors().to_vec();
        let result = outcome.call().map(|call| &call.result);
        // Outside the capabilities an Err is the answer, not a violation:
        // no-error binds only inside them.
        violations.retain(|violation| violation.rule != Rule::NoError);
        unchecked.retain(|item| item.rule != Rule::NoError && item.rule != Rule::CapabilityHonesty);
        unchecked.push(crate::Unchecked {
            rule: Rule::NoError,
            reason: "outside the declared capabilities an Err is the right answer (capability-honesty judges it)".to_owned(),
        });
        let honesty = match result {
            Some(ProviderResult::Returned(_)) => {
                let wrong: Vec<String> = violations
                    .iter()
                    .filter(|violation| binds_output(violation.rule))
                    .map(|violation| format!("{}: {}", violation.rule, violation.message))
                    .collect();
                violations.retain(|violation| !binds_output(violation.rule));
                Some(if wrong.is_empty() {
                    format!(
                        "the provider returned Ok for an input outside its declared capabilities ({}); declare the capability, or refuse the input with a typed Err",
                        outside.why
                    )
                } else {
                    format!(
                        "the provider returned Ok with wrong data for an input outside its declared capabilities ({}) instead of a typed Err; what was wrong: {}",
                        outside.why,
                        wrong.join("; ")
                    )
                })
            }
            Some(ProviderResult::Panicked { .. }) => Some(format!(
                "the provider panicked on an input outside its declared capabilities ({}) instead of returning a typed Err",
                outside.why
            )),
            _ => None,
        };
        if let Some(message) = honesty {
            violations.push(crate::Violation {
                rule: Rule::CapabilityHonesty,
                message,
            });
        }
        // The output rules are folded into capability-honesty here: none of
        // them was judged on its own on this case, so none counts as a
        // check of its rule (a typed Err has no output to check at all).
        unchecked.retain(|item| !binds_output(item.rule));
        for rule in Rule::ALL.into_iter().filter(|rule| binds_output(*rule)) {
            unchecked.push(crate::Unchecked {
                rule,
                reason: "outside the declared capabilities the output is judged under capability-honesty, not rule by rule".to_owned(),
            });
        }
        // With no single call (a hang before the provider was reached),
        // there was no answer to judge.
        if outcome.call().is_none() {
            unchecked.push(crate::Unchecked {
                rule: Rule::CapabilityHonesty,
                reason: "there was no single provider call to judge".to_owned(),
            });
        }
        judgement.violations = violations;
        judgement.unchecked = unchecked;
        judgement.finish()
    }
}

/// Whether `rule` binds a provider's output only inside its capabilities
/// (the oracle's output rules and `completion`); outside, breaking one is a
/// `capability-honesty` violation.
fn binds_output(rule: Rule) -> bool {
    rule == Rule::Completion || OUTPUT_RULES.contains(&rule)
}

/// A provider wrapper that refuses, with a typed `Err`, every input outside
/// the declared capabilities and passes the rest to the inner provider:
/// the honest way to declare less than one serves.
#[derive(Debug)]
pub struct CapabilityGate {
    inner: Arc<dyn TransferProvider>,
    capabilities: Capabilities,
}

impl CapabilityGate {
    /// Gate `inner` by `capabilities`.
    pub fn new(inner: Arc<dyn TransferProvider>, capabilities: Capabilities) -> Self {
        Self {
            inner,
            capabilities,
        }
    }

    /// Why the input falls outside the capabilities, or `None` inside.
    fn refusal(&self, input: &TensorRead<'_>) -> Option<String> {
        let exceeded = self.capabilities.exceeded_by_input(input);
        (!exceeded.is_empty()).then(|| {
            exceeded
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

impl TransferProvider for CapabilityGate {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        if let Some(reason) = self.refusal(request.input()) {
            return Err(Error::unsupported("CapabilityGate::transfer_blocking", reason).into());
        }
        self.inner.transfer_blocking(request)
    }
}
