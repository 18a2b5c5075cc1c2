//! [`Recipe`]: one generated case, small enough to print and replay, and
//! the inputs moved with it in the same run; and the values it expands
//! into (seeded bits, specials, and a twin's few changed elements).

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tenferro_tensor::DType;

use crate::PRESET_DTYPES;
use crate::values::case::{F32_SPECIALS, F64_SPECIALS, mix};
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
        let case = self.untwinned_case()?;
        match self.twin {
            None => Ok(case),
            Some(seed) => {
                let mut values = case.values().to_vec();
                twin_values(case.dtype(), &mut values, seed);
                Case::new(
                    case.dtype(),
                    case.shape().to_vec(),
                    case.layout().clone(),
                    values,
                )
            }
        }
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

    /// The case without the twin's changes.
    fn untwinned_case(&self) -> Result<Case, HarnessError> {
        let dtype = self.dtype()?;
        match self.values {
            ValueSource::Seeded => {
                let count: usize = self.shape.iter().product();
                Case::new(
                    dtype,
                    self.shape.clone(),
                    self.layout.clone(),
                    seeded_values(dtype, count, self.seed, self.specials),
                )
            }
            ValueSource::Patterned => {
                Case::patterned(dtype, self.shape.clone(), self.layout.clone())
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

/// Element images: a special value where the seeded hash falls under
/// `specials`, seeded random bits elsewhere.
fn seeded_values(dtype: DType, count: usize, seed: u64, specials: u8) -> Vec<u8> {
    let width = crate::element_width(dtype).unwrap_or(0);
    let mut out = Vec::with_capacity(count * width);
    let key = mix(seed);
    for i in 0..count as u64 {
        let bits = mix(key ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let special = ((bits & 0xff) as u8) < specials;
        let pick = (bits >> 8) as usize;
        let f32_part = |salt: u64| {
            if special {
                F32_SPECIALS[(pick + salt as usize) % F32_SPECIALS.len()]
            } else {
                (bits >> (16 + salt)) as u32
            }
        };
        let f64_part = |salt: u64| {
            if special {
                F64_SPECIALS[(pick + salt as usize) % F64_SPECIALS.len()]
            } else {
                mix(bits ^ salt)
            }
        };
        const INT_SPECIALS: [i64; 5] = [0, 1, -1, i64::MIN, i64::MAX];
        match dtype {
            DType::F32 => out.extend_from_slice(&f32_part(0).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&f64_part(0).to_le_bytes()),
            DType::I32 => {
                let value = if special {
                    [0, 1, -1, i32::MIN, i32::MAX][pick % 5]
                } else {
                    (bits >> 16) as i32
                };
                out.extend_from_slice(&value.to_le_bytes());
            }
            DType::I64 => {
                let value = if special {
                    INT_SPECIALS[pick % 5]
                } else {
                    mix(bits) as i64
                };
                out.extend_from_slice(&value.to_le_bytes());
            }
            DType::Bool => out.push(((bits >> 16) & 1) as u8),
            DType::C32 => {
                out.extend_from_slice(&f32_part(0).to_le_bytes());
                out.extend_from_slice(&f32_part(3).to_le_bytes());
            }
            DType::C64 => {
                out.extend_from_slice(&f64_part(0).to_le_bytes());
                out.extend_from_slice(&f64_part(3).to_le_bytes());
            }
            _ => {}
        }
    }
    out
}

/// How many elements a twin changes, at most.
const TWIN_CHANGES: u64 = 3;

/// Change one to three interior elements of `values` (little-endian images
/// of `dtype`), chosen by `seed`: the first to a special value of the
/// dtype, the others to seeded bits, each different from what it was. The
/// first and last elements stay: a cache that samples the ends matches.
pub(crate) fn twin_values(dtype: DType, values: &mut [u8], seed: u64) {
    let Some(width) = crate::element_width(dtype) else {
        return;
    };
    let count = values.len() / width;
    if count == 0 {
        return;
    }
    let key = mix(seed ^ 0x7477_696e);
    let changes = 1 + key % TWIN_CHANGES;
    for change in 0..changes {
        let bits = mix(key.wrapping_add(change + 1));
        let index = if count > 2 {
            1 + (bits as usize) % (count - 2)
        } else {
            (bits as usize) % count
        };
        let element = &mut values[index * width..(index + 1) * width];
        for attempt in 0..16_u64 {
            let candidate = twin_element(dtype, mix(bits ^ attempt), change == 0);
            if candidate.len() == width && candidate != element {
                element.copy_from_slice(&candidate);
                break;
            }
        }
    }
}

/// One element image of `dtype` from `bits`: a special value of the dtype
/// when `special`, else the bits themselves.
fn twin_element(dtype: DType, bits: u64, special: bool) -> Vec<u8> {
    let pick = (bits >> 8) as usize;
    let f32_part = |salt: usize| -> [u8; 4] {
        if special {
            F32_SPECIALS[(pick + salt) % F32_SPECIALS.len()].to_le_bytes()
        } else {
            ((bits >> (16 + salt)) as u32).to_le_bytes()
        }
    };
    let f64_part = |salt: usize| -> [u8; 8] {
        if special {
            F64_SPECIALS[(pick + salt) % F64_SPECIALS.len()].to_le_bytes()
        } else {
            mix(bits ^ salt as u64).to_le_bytes()
        }
    };
    let int = |specials: &[i64]| -> i64 {
        if special {
            specials[pick % specials.len()]
        } else {
            mix(bits) as i64
        }
    };
    match dtype {
        DType::F32 => f32_part(0).to_vec(),
        DType::F64 => f64_part(0).to_vec(),
        DType::I32 => (int(&[0, 1, -1, i64::from(i32::MIN), i64::from(i32::MAX)]) as i32)
            .to_le_bytes()
            .to_vec(),
        DType::I64 => int(&[0, 1, -1, i64::MIN, i64::MAX]).to_le_bytes().to_vec(),
        DType::Bool => vec![(bits & 1) as u8],
        DType::C32 => [f32_part(0), f32_part(3)].concat(),
        DType::C64 => [f64_part(0), f64_part(3)].concat(),
        _ => Vec::new(),
    }
}
