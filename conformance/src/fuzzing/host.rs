//! The `host_provider` fuzz target's checks ([`HostFuzzer`]): a decoded
//! tensor or view whose values are the input's own bytes, through the real
//! [`HostProvider`].

use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use tenferro_runtime::TransferProvider;
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::Recipe;
use tenferro_transfer_harness::{
    Case, Compared, HarnessError, HostProvider, Route, RuntimeVerdict,
};

use super::{FuzzFailure, Making, WatchdogPool, agrees_with_runtime};
use crate::runner::{JudgedAs, run_cases_keeping};

/// The `host_provider` fuzz target: a decoded tensor or view, with values
/// taken straight from the input's remaining bytes, through the real
/// [`HostProvider`]; the values must arrive bit-exactly.
#[derive(Default)]
pub struct HostFuzzer {
    pool: WatchdogPool,
}

impl std::fmt::Debug for HostFuzzer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("HostFuzzer").finish_non_exhaustive()
    }
}

impl HostFuzzer {
    /// A fuzzer with no watchdog yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `data` into a case and check it.
    ///
    /// # Errors
    ///
    /// A [`FuzzFailure`] when the case is invalid, the harness fails, the
    /// oracle finds any violation, or the runtime's output differs from the
    /// case's values in any bit.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::fuzzing::HostFuzzer;
    ///
    /// HostFuzzer::new().run(&[3, 7, 0xff, 0x80]).unwrap();
    /// ```
    pub fn run(&mut self, data: &[u8]) -> Result<(), FuzzFailure> {
        let mut u = Unstructured::new(data);
        let recipe = Recipe::arbitrary(&mut u).unwrap_or_else(|_| {
            Recipe::fixed(
                tenferro_tensor::DType::F32,
                Vec::new(),
                tenferro_transfer_harness::Layout::Owned,
                tenferro_transfer_harness::strategy::ValueSource::Seeded,
            )
        });
        let invalid = |source| FuzzFailure::InvalidRecipe {
            recipe: recipe.to_json(),
            source,
        };
        let mut cases = recipe.cases().map_err(invalid)?;
        // The first input takes the rest of the bytes as its values; the
        // inputs moved with it keep their seeded ones.
        cases[0] = with_raw_values(cases[0].clone(), u.take_rest()).map_err(invalid)?;
        // Written out only for a failure.
        let context = HostContext {
            recipe: &recipe,
            case: &cases[0],
        };
        let watchdog = self
            .pool
            .get(
                0,
                &[],
                None,
                Making {
                    route: Route::host_to_host,
                    reference: |_: &Route| {
                        Ok(Arc::new(HostProvider::new()) as Arc<dyn TransferProvider>)
                    },
                },
            )
            .map_err(|source| FuzzFailure::Harness {
                context: context.to_string(),
                source,
            })?;
        let route = watchdog.route().clone();
        for run in run_cases_keeping(watchdog, &route, &cases, JudgedAs::Inside, None, Box::new) {
            let (judgement, outcome) = match run {
                Ok((judgement, outcome)) => (judgement, *outcome),
                // Plain host memory stages every case; a skip here would be
                // the harness's, and is not a finding of this target.
                Err(skip) if skip.is_skip() => continue,
                Err(source) => {
                    return Err(FuzzFailure::Harness {
                        context: context.to_string(),
                        source,
                    });
                }
            };
            agrees_with_runtime(judgement.violations(), &context)?;
            if let Some(violation) = judgement.violations().first() {
                return Err(FuzzFailure::HostValues {
                    context: context.to_string(),
                    message: format!("{}: {}", violation.rule, violation.message),
                });
            }
            match &outcome.runtime {
                RuntimeVerdict::Accepted(output) if output.bytes == Compared::Same => {}
                other => {
                    return Err(FuzzFailure::HostValues {
                        context: context.to_string(),
                        message: format!(
                            "the runtime's output is not the case's values bit for bit: {other:?}"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// What a failure names of an input: its recipe (as JSON) and the first
/// case's first bytes.
struct HostContext<'a> {
    recipe: &'a Recipe,
    case: &'a Case,
}

impl std::fmt::Display for HostContext<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} with values {}",
            self.recipe.to_json(),
            hex(self.case.values())
        )
    }
}

/// `case` with its values replaced by `raw` repeated to the case's length
/// (so the fuzzer picks every bit; for `Bool` the low bit, since a bool is
/// 0 or 1), or unchanged when `raw` is empty.
fn with_raw_values(case: Case, raw: &[u8]) -> Result<Case, HarnessError> {
    if raw.is_empty() {
        return Ok(case);
    }
    let mask = if case.dtype() == DType::Bool { 1 } else { 0xff };
    let values: Vec<u8> = raw
        .iter()
        .map(|byte| byte & mask)
        .cycle()
        .take(case.values().len())
        .collect();
    Case::new(
        case.dtype(),
        case.shape().to_vec(),
        case.layout().clone(),
        values,
    )
}

/// The first bytes of `bytes` in hex, for a failure's context.
fn hex(bytes: &[u8]) -> String {
    const SHOWN: usize = 64;
    let mut text: String = bytes
        .iter()
        .take(SHOWN)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    if bytes.len() > SHOWN {
        text.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_replace_the_seeded_ones_cyclically() {
        let case = Case::from_values(vec![3], vec![0_i32; 3]).unwrap();
        let raw = with_raw_values(case, &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(raw.values(), &[1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2]);
    }

    #[test]
    fn raw_bool_values_keep_only_the_low_bit() {
        let case = Case::from_values(vec![4], vec![false; 4]).unwrap();
        let raw = with_raw_values(case, &[0xc0, 0x01, 0x80, 0xff]).unwrap();
        assert_eq!(raw.values(), &[0, 1, 0, 1]);
    }
}
