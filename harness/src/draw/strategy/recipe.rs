//! [`Recipe`]: one generated case, small enough to print and replay, and
//! the inputs moved with it in the same run; and the values it expands
//! into (seeded bits, specials, and a twin's few changed elements).

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tenferro_tensor::DType;

use crate::PRESET_DTYPES;
use crate::values::generated::{Generated, HELD_UP_TO_BYTES};
use crate::{Case, HarnessError, Layout};

/// A generated case, small enough to print and replay.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    /// Dtype name, e.g. `C64`.
    pub dtype: String,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// Source layout.
    pub layout: Layout,
    /// Seed of the values.
    pub seed: u64,
    /// Out of 256, how often an element is a special value.
    pub specials: u8,
    /// Where the values come from: `seed` and `specials` drawn by the
    /// generator (the default, left out of the JSON), or the fixed cases'
    /// pattern or special values.
    #[serde(default, skip_serializing_if = "ValueSource::is_seeded")]
    pub values: ValueSource,
    /// A twin: the values of this recipe without `twin`, with a few
    /// interior elements changed (special values among them), chosen by
    /// this seed. A provider that answers from what it kept of an earlier
    /// input of the same dtype and shape (a cache that compares a few
    /// sampled elements) returns the wrong ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<u64>,
    /// Further inputs moved through the provider in the same run, after
    /// this one ([`crate::Rig::run_together`]): the runtime holds every
    /// transferred value until the program ends. Empty: a run of one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<Recipe>,
}

/// Where a [`Recipe`]'s element values come from.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ValueSource {
    /// Seeded random bits mixed with special values (the recipe's `seed`
    /// and `specials`): what the generator draws.
    #[default]
    Seeded,
    /// The fixed cases' deterministic pattern ([`Case::patterned`]).
    Patterned,
    /// Every special value of a float dtype in both signs
    /// ([`Case::special_values`]); the recipe's shape must be its shape.
    SpecialValues,
    /// Values of a float dtype equal as numbers across the variants the
    /// recipe's `seed` names, not in bits: zeros of either sign, NaNs of
    /// either payload ([`Case::equal_as_numbers`]).
    EqualAsNumbers,
    /// Seeded bits (the recipe's `seed` and `specials`) over the whole
    /// backing of a view, which the view reads where it lies
    /// ([`Case::view_of_backing`]): views of one backing shape and seed at
    /// other offsets are staged from the same bytes. An owned layout: as
    /// `Seeded`. Held whole, so at most 256 KiB of backing; no twin.
    WholeBacking,
    /// Every element all zero bytes ([`Case::zeros`]).
    Zeros,
    /// Runs of one value, 1 to 65,537 elements long ([`Case::runs`]).
    Runs,
}

impl ValueSource {
    /// Whether the values are the generator's seeded ones.
    pub fn is_seeded(&self) -> bool {
        *self == ValueSource::Seeded
    }
}

impl Recipe {
    /// The dtype.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidCase`] for an unknown dtype name.
    pub fn dtype(&self) -> Result<DType, HarnessError> {
        PRESET_DTYPES
            .into_iter()
            .find(|dtype| format!("{dtype:?}") == self.dtype)
            .ok_or_else(|| HarnessError::InvalidCase {
                reason: format!("unknown dtype `{}`", self.dtype),
            })
    }

    /// Expand into a case.
    ///
    /// # Errors
    ///
    /// As [`Case::new`], or an unknown dtype.
    pub fn case(&self) -> Result<Case, HarnessError> {
        let dtype = self.dtype()?;
        if self.values.is_seeded() {
            return self.seeded_case(dtype);
        }
        let case = self.untwinned_case()?;
        match self.twin {
            None => Ok(case),
            Some(_) if self.values == ValueSource::WholeBacking => Err(HarnessError::InvalidCase {
                reason: "a view over a whole backing has no twin".to_owned(),
            }),
            Some(seed) => case.twinned(seed),
        }
    }

    /// The case of seeded values: held up to [`HELD_UP_TO_BYTES`], made
    /// where they are compared past it.
    fn seeded_case(&self, dtype: DType) -> Result<Case, HarnessError> {
        let count = self
            .shape
            .iter()
            .try_fold(1_usize, |count, &extent| count.checked_mul(extent))
            .ok_or_else(|| HarnessError::InvalidCase {
                reason: format!("shape {:?} overflows", self.shape),
            })?;
        let generated =
            Generated::seeded(dtype, count, self.seed, self.specials).ok_or_else(|| {
                HarnessError::InvalidCase {
                    reason: format!("dtype {dtype:?} is not a preset dtype"),
                }
            })?;
        let generated = match self.twin {
            Some(seed) => generated.twinned(seed),
            None => generated,
        };
        if generated.byte_len() > HELD_UP_TO_BYTES {
            return Case::generated(self.shape.clone(), self.layout.clone(), generated);
        }
        let mut values = Vec::with_capacity(generated.byte_len());
        generated.fill(0, count, &mut values);
        Case::new(dtype, self.shape.clone(), self.layout.clone(), values)
    }

    /// Every input of the run: this recipe's case, then those of
    /// [`Recipe::with`], in order.
    ///
    /// # Errors
    ///
    /// As [`Recipe::case`]; [`HarnessError::InvalidCase`] for an input of
    /// `with` that has inputs of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::Layout;
    /// use tenferro_transfer_harness::strategy::{Recipe, ValueSource};
    ///
    /// let recipe = Recipe::fixed(DType::F64, vec![5], Layout::Owned, ValueSource::Patterned);
    /// let run = recipe.clone().moved_with(vec![recipe.twin(7)]);
    /// let cases = run.cases().unwrap();
    /// assert_eq!(cases.len(), 2);
    /// // A twin: the same dtype and shape, a few interior elements changed.
    /// assert_eq!(cases[0].shape(), cases[1].shape());
    /// assert_ne!(cases[0].values(), cases[1].values());
    /// assert_eq!(cases[0].values()[..8], cases[1].values()[..8]);
    /// let replayed: Recipe = run.to_json().parse().unwrap();
    /// assert_eq!(replayed, run);
    /// ```
    pub fn cases(&self) -> Result<Vec<Case>, HarnessError> {
        let mut cases = vec![self.case()?];
        for other in &self.with {
            if !other.with.is_empty() {
                return Err(HarnessError::InvalidCase {
                    reason: "an input moved with another cannot bring inputs of its own".to_owned(),
                });
            }
            cases.push(other.case()?);
        }
        Ok(cases)
    }

    /// This recipe's twin: the same dtype, shape, layout and values but a
    /// few interior elements, chosen by `seed` ([`Recipe::twin`]).
    #[must_use]
    pub fn twin(&self, seed: u64) -> Recipe {
        Recipe {
            twin: Some(seed),
            with: Vec::new(),
            ..self.clone()
        }
    }

    /// This recipe without a twin's changes.
    #[must_use]
    pub fn untwinned(mut self) -> Recipe {
        self.twin = None;
        self
    }

    /// This recipe with `others` moved after it in the same run.
    #[must_use]
    pub fn moved_with(mut self, others: Vec<Recipe>) -> Recipe {
        self.with = others;
        self
    }

    /// The case of the fixed values without the twin's changes; seeded
    /// values are [`Recipe::seeded_case`]'s, twin and all.
    fn untwinned_case(&self) -> Result<Case, HarnessError> {
        let dtype = self.dtype()?;
        match self.values {
            ValueSource::Seeded => self.seeded_case(dtype),
            ValueSource::Patterned => {
                Case::patterned(dtype, self.shape.clone(), self.layout.clone())
            }
            ValueSource::WholeBacking => self.whole_backing_case(dtype),
            ValueSource::Zeros => Case::zeros(dtype, self.shape.clone(), self.layout.clone()),
            ValueSource::Runs => Case::runs(dtype, self.shape.clone(), self.layout.clone()),
            ValueSource::EqualAsNumbers => {
                Case::equal_as_numbers(dtype, self.shape.clone(), self.layout.clone(), self.seed)?
                    .ok_or_else(|| HarnessError::InvalidCase {
                        reason: format!("dtype {dtype:?} has no float values"),
                    })
            }
            ValueSource::SpecialValues => match Case::special_values(dtype)? {
                Some(case) if case.shape() == self.shape && case.layout() == &self.layout => {
                    Ok(case)
                }
                Some(case) => Err(HarnessError::InvalidCase {
                    reason: format!(
                        "the special values of {dtype:?} are an owned tensor of shape {:?}",
                        case.shape()
                    ),
                }),
                None => Err(HarnessError::InvalidCase {
                    reason: format!("dtype {dtype:?} has no special float values"),
                }),
            },
        }
    }

    /// The case of [`ValueSource::WholeBacking`]: a view over seeded bits
    /// filling its whole backing.
    fn whole_backing_case(&self, dtype: DType) -> Result<Case, HarnessError> {
        let Layout::View(spec) = &self.layout else {
            return self.seeded_case(dtype);
        };
        let invalid = |reason: String| HarnessError::InvalidCase { reason };
        if spec.shape() != self.shape {
            return Err(invalid(format!(
                "view shape {:?} differs from case shape {:?}",
                spec.shape(),
                self.shape
            )));
        }
        let width = crate::element_width(dtype)
            .ok_or_else(|| invalid(format!("dtype {dtype:?} is not a preset dtype")))?;
        let count = spec
            .backing_shape
            .iter()
            .try_fold(1_usize, |count, &extent| count.checked_mul(extent))
            .filter(|count| count.checked_mul(width).is_some_and(|bytes| bytes <= HELD_UP_TO_BYTES))
            .ok_or_else(|| {
                invalid(format!(
                    "a whole backing is held: {:?} of {dtype:?} is more than {HELD_UP_TO_BYTES} bytes",
                    spec.backing_shape
                ))
            })?;
        let generated = Generated::seeded(dtype, count, self.seed, self.specials)
            .ok_or_else(|| invalid(format!("dtype {dtype:?} is not a preset dtype")))?;
        let mut backing = Vec::with_capacity(generated.byte_len());
        generated.fill(0, count, &mut backing);
        Case::view_of_backing(dtype, spec.clone(), backing)
    }

    /// The recipe of a fixed case: `dtype`, `shape` and `layout` with the
    /// values of `values` (seed and density zero).
    pub fn fixed(dtype: DType, shape: Vec<usize>, layout: Layout, values: ValueSource) -> Self {
        Self {
            dtype: format!("{dtype:?}"),
            shape,
            layout,
            seed: 0,
            specials: 0,
            values,
            twin: None,
            with: Vec::new(),
        }
    }

    /// One line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl FromStr for Recipe {
    type Err = HarnessError;

    fn from_str(json: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(json).map_err(|error| HarnessError::InvalidCase {
            reason: format!("not a case recipe: {error}"),
        })
    }
}
