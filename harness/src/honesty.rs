//! Capability honesty: what a provider declares it serves, and what it must
//! refuse. Inputs just outside the declared [`Capabilities`] are staged on
//! purpose; the provider must answer them with a typed `Err`.

use std::sync::Arc;

use tenferro_mock_devices::PRESET_DTYPES;
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Error, Tensor, TensorRead};

use crate::oracle::OUTPUT_RULES;
use crate::strategy::Capabilities;
use crate::{Case, HarnessError, Judgement, Layout, Oracle, Outcome, ProviderResult, Route, Rule};
use crate::{ViewAxis, ViewSpec};

/// The largest declared maximum the suite exceeds on purpose: one element
/// more than a larger maximum would cost more memory than it proves.
pub const MAX_EXCEEDED_ELEMENTS: usize = 1 << 22;

/// A case outside the declared capabilities, and which capability it
/// exceeds, in words.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct OutsideCase {
    /// The case.
    pub case: Case,
    /// Which declared capability it falls outside of.
    pub why: String,
}

impl Capabilities {
    /// Whether `case` lies inside these capabilities.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::Case;
    /// use tenferro_transfer_harness::strategy::Capabilities;
    ///
    /// let f32_only = Capabilities { dtypes: vec![DType::F32], views: false, max_elements: 16 };
    /// assert!(f32_only.admits(&Case::from_values(vec![2], vec![1.0_f32, 2.0]).unwrap()));
    /// assert!(!f32_only.admits(&Case::from_values(vec![2], vec![1.0_f64, 2.0]).unwrap()));
    /// ```
    pub fn admits(&self, case: &Case) -> bool {
        self.outside(case).is_none()
    }

    /// Which capability `case` falls outside of, or `None` inside.
    pub fn outside(&self, case: &Case) -> Option<String> {
        if !self.dtypes.contains(&case.dtype()) {
            return Some(format!("dtype {:?} is not declared", case.dtype()));
        }
        if !self.views && matches!(case.layout(), Layout::View(_)) {
            return Some("strided views are not declared".to_owned());
        }
        if case.len() > self.max_elements {
            return Some(format!(
                "{} elements exceed the declared maximum of {}",
                case.len(),
                self.max_elements
            ));
        }
        None
    }

    /// Cases just outside these capabilities: each undeclared preset dtype,
    /// a strided view when views are not declared, and one element more than
    /// the declared maximum (when that maximum is at most
    /// [`MAX_EXCEEDED_ELEMENTS`]). Empty when the declaration covers every
    /// case the suite can draw.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidCase`] if a case cannot be built.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::strategy::Capabilities;
    ///
    /// assert!(Capabilities::all().outside_cases().unwrap().is_empty());
    /// let narrow = Capabilities { dtypes: vec![DType::F64], views: false, max_elements: 8 };
    /// // Six undeclared dtypes, one view, one oversized case.
    /// assert_eq!(narrow.outside_cases().unwrap().len(), 8);
    /// ```
    pub fn outside_cases(&self) -> Result<Vec<OutsideCase>, HarnessError> {
        let mut cases = Vec::new();
        let declared = self.dtypes.first().copied();
        for dtype in PRESET_DTYPES {
            if !self.dtypes.contains(&dtype) {
                let shape = if self.max_elements >= 6 {
                    vec![3, 2]
                } else {
                    vec![1]
                };
                cases.push(Case::patterned(dtype, shape, Layout::Owned)?);
            }
        }
        if let Some(dtype) = declared {
            if !self.views && self.max_elements >= 2 {
                let view = Layout::View(ViewSpec {
                    backing_shape: vec![5],
                    axes: vec![ViewAxis {
                        first: 3,
                        step: -2,
                        len: 2,
                    }],
                    permutation: vec![],
                });
                cases.push(Case::patterned(dtype, vec![2], view)?);
            }
            if self.max_elements < MAX_EXCEEDED_ELEMENTS {
                cases.push(Case::patterned(
                    dtype,
                    vec![self.max_elements + 1],
                    Layout::Owned,
                )?);
            }
        }
        Ok(cases
            .into_iter()
            .filter_map(|case| self.outside(&case).map(|why| OutsideCase { case, why }))
            .collect())
    }
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
    /// use tenferro_mock_devices::{SimDevice, SimUpload};
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::strategy::Capabilities;
    /// use tenferro_transfer_harness::{CapabilityGate, Oracle, Rig, Route, Rule};
    ///
    /// let route = Route::host_to_sim().unwrap();
    /// let device = route.destination().downcast::<SimDevice>().unwrap().clone();
    /// let declared = Capabilities { dtypes: vec![DType::F32], views: true, max_elements: 64 };
    /// let outside = declared.outside_cases().unwrap().remove(0);
    ///
    /// // SimUpload serves every dtype: declared F32-only, it is dishonest.
    /// let mut rig = Rig::new(route.clone(), Arc::new(SimUpload::new(device.clone()))).unwrap();
    /// let judgement = Oracle.judge_outside(&outside, &route, &rig.run(&outside.case).unwrap());
    /// assert_eq!(judgement.rules(), vec![Rule::CapabilityHonesty]);
    ///
    /// // Behind a gate that refuses what is not declared, it is honest.
    /// let gated = CapabilityGate::new(Arc::new(SimUpload::new(device)), declared);
    /// let mut rig = Rig::new(route.clone(), Arc::new(gated)).unwrap();
    /// assert!(Oracle.judge_outside(&outside, &route, &rig.run(&outside.case).unwrap()).passed());
    /// ```
    pub fn judge_outside(
        &self,
        outside: &OutsideCase,
        route: &Route,
        outcome: &Outcome,
    ) -> Judgement {
        let mut judgement = self.judge(&outside.case, route, outcome);
        let result = outcome.call().map(|call| &call.result);
        // Outside the capabilities an Err is the answer, not a violation.
        judgement
            .violations
            .retain(|violation| violation.rule != Rule::NoError);
        let honesty = match result {
            Some(ProviderResult::Returned(_)) => {
                let wrong: Vec<String> = judgement
                    .violations
                    .iter()
                    .filter(|violation| binds_output(violation.rule))
                    .map(|violation| format!("{}: {}", violation.rule, violation.message))
                    .collect();
                judgement
                    .violations
                    .retain(|violation| !binds_output(violation.rule));
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
            judgement.violations.push(crate::Violation {
                rule: Rule::CapabilityHonesty,
                message,
            });
        }
        // The output rules are folded into capability-honesty here: none of
        // them was judged on its own on this case, so none counts as a
        // check of its rule (a typed Err has no output to check at all).
        judgement
            .unchecked
            .retain(|unchecked| !binds_output(unchecked.rule));
        for rule in Rule::ALL.into_iter().filter(|rule| binds_output(*rule)) {
            judgement.unchecked.push(crate::Unchecked {
                rule,
                reason: "outside the declared capabilities the output is judged under capability-honesty, not rule by rule".to_owned(),
            });
        }
        judgement.violations.sort_by_key(|violation| violation.rule);
        judgement
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
        if !self.capabilities.dtypes.contains(&input.dtype()) {
            return Some(format!("dtype {:?} is not served", input.dtype()));
        }
        if !self.capabilities.views && matches!(input, TensorRead::View(_)) {
            return Some("strided views are not served".to_owned());
        }
        let count: usize = input.shape().iter().product();
        if count > self.capabilities.max_elements {
            return Some(format!(
                "{count} elements exceed the maximum of {}",
                self.capabilities.max_elements
            ));
        }
        None
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
