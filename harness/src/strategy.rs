//! proptest strategies for transfer cases.
//!
//! A strategy draws a [`Recipe`]: dtype, logical shape, layout and a value
//! seed. A recipe is small, shrinks well and serialises to one line of JSON,
//! so the shrunk failing case can be replayed exactly; [`Recipe::case`]
//! expands it into a [`Case`] with values drawn from per-dtype pools of
//! special values (NaN payloads, signalling NaNs, `±0`, `±inf`, subnormals,
//! MIN and MAX) mixed with random bits.
//!
//! # Examples
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! use tenferro_transfer_harness::strategy::{recipe, Capabilities, Profile};
//!
//! let strategy = recipe(Profile::Quick, &Capabilities::all());
//! let mut runner = TestRunner::deterministic();
//! let recipe = strategy.new_tree(&mut runner).unwrap().current();
//! let case = recipe.case().unwrap();
//! assert!(case.len() <= Profile::Quick.max_elements());
//! let replayed: tenferro_transfer_harness::strategy::Recipe = recipe.to_json().parse().unwrap();
//! assert_eq!(replayed.case().unwrap(), case);
//! ```

use std::fmt;
use std::str::FromStr;

use crate::PRESET_DTYPES;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use tenferro_tensor::DType;

pub use crate::capabilities::{Capabilities, Exceeded, ViewKind, ViewKinds};
use crate::case::{F32_SPECIALS, F64_SPECIALS, mix};
use crate::{Case, HarnessError, Layout, ViewAxis, ViewSpec};

/// How many cases to run, and how large they may be.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Profile {
    /// A downstream crate's CI: few, small cases (about 2 s per provider).
    Quick,
    /// The default: enough cases to find narrow corners.
    Default,
    /// 100,000 cases, up to about a million elements.
    Deep,
}

pub use crate::settings::PROFILE_ENV;

impl Profile {
    /// Cases per provider.
    pub fn cases(self) -> u32 {
        match self {
            Profile::Quick => 256,
            Profile::Default => 2048,
            Profile::Deep => 100_000,
        }
    }

    /// The largest element count a case may have.
    pub fn max_elements(self) -> usize {
        match self {
            Profile::Quick => 4096,
            Profile::Default => 1 << 16,
            Profile::Deep => 1 << 20,
        }
    }

    /// The profile named by [`PROFILE_ENV`], or `Default` when it is unset.
    ///
    /// # Errors
    ///
    /// [`HarnessError::Settings`] naming the bad value when a setting is
    /// not one the suite knows ([`crate::Settings::current`]).
    pub fn from_env() -> Result<Self, HarnessError> {
        Ok(crate::Settings::current()?
            .profile
            .unwrap_or(Profile::Default))
    }

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
            Profile::Deep => "deep",
        }
    }
}

impl FromStr for Profile {
    type Err = HarnessError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "quick" => Ok(Profile::Quick),
            "default" => Ok(Profile::Default),
            "deep" => Ok(Profile::Deep),
            other => Err(HarnessError::InvalidCase {
                reason: format!("unknown profile `{other}`; known profiles: quick, default, deep"),
            }),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

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

/// The highest rank drawn: the conformance suite's fixed cases reach every
/// rank up to it.
pub const MAX_RANK: usize = 6;

/// The largest dimension of the common, small shapes.
pub(crate) const SMALL_DIMENSION: usize = 8;

/// The most elements a common, small shape holds.
pub(crate) const SMALL_ELEMENTS: usize = 64;

/// The small primes a dimension is often drawn from: odd extents catch
/// off-by-one and alignment bugs.
pub(crate) const SMALL_PRIMES: [usize; 6] = [2, 3, 5, 7, 11, 13];

/// One dimension: zero and one, small primes, and anything up to `max`.
/// The small arms come first because proptest shrinks a union towards its
/// earlier arms.
fn dimension(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0_usize),
        2 => Just(1_usize),
        2 => prop::sample::select(SMALL_PRIMES.to_vec()),
        3 => 1..=max.max(1),
    ]
}

/// The element count of `shape` with zero extents counted as one: what
/// bounds the size of a view's backing even when the view is empty.
pub(crate) fn footprint(shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1_usize, |count, &extent| count.checked_mul(extent.max(1)))
}

/// Shrink a shape until its footprint is at most `max` elements, halving
/// its largest dimension; a deterministic map, so shrinking still works.
pub(crate) fn fit(mut shape: Vec<usize>, max: usize) -> Vec<usize> {
    while footprint(&shape).is_none_or(|count| count > max) {
        if let Some(largest) = shape.iter_mut().max() {
            *largest /= 2;
        }
    }
    shape
}

/// Shapes of rank 0 to 6 holding at most `max_elements` elements; most are
/// small, some reach the limit.
pub fn shape(max_elements: usize) -> impl Strategy<Value = Vec<usize>> {
    let large = max_elements.max(1);
    let small = large.min(SMALL_ELEMENTS);
    prop_oneof![
        9 => (0_usize..=MAX_RANK).prop_flat_map(move |rank| prop::collection::vec(dimension(SMALL_DIMENSION), rank)).prop_map(move |shape| fit(shape, small)),
        1 => (1_usize..=3).prop_flat_map(move |rank| prop::collection::vec(dimension(large), rank)).prop_map(move |shape| fit(shape, large)),
    ]
}

/// How one axis of a view is cut, independent of its length: a step
/// (mostly one, sometimes larger or negative) and padding before and after,
/// which makes offsets.
#[derive(Clone, Debug)]
pub(crate) struct AxisCut {
    pub(crate) step: isize,
    pub(crate) before: usize,
    pub(crate) after: usize,
}

fn axis_cut() -> impl Strategy<Value = AxisCut> {
    (
        prop_oneof![3 => Just(1_isize), 1 => Just(2_isize), 1 => Just(-1_isize), 1 => Just(3_isize), 1 => Just(-2_isize)],
        0_usize..=2,
        0_usize..=2,
    )
        .prop_map(|(step, before, after)| AxisCut { step, before, after })
}

/// The view of `sliced` extents that `cuts` and the permutation `keys`
/// describe (axes sorted by key; all-equal keys keep the identity).
fn view_of(sliced: &[usize], cuts: &[AxisCut], permuted: bool, keys: &[u8]) -> Layout {
    let (axes, backing_shape): (Vec<ViewAxis>, Vec<usize>) = sliced
        .iter()
        .zip(cuts)
        .map(|(&len, cut)| {
            let stride = cut.step.unsigned_abs();
            let span = if len == 0 { 1 } else { (len - 1) * stride + 1 };
            let first = if cut.step > 0 || len == 0 {
                cut.before
            } else {
                cut.before + (len - 1) * stride
            };
            (
                ViewAxis {
                    first,
                    step: cut.step,
                    len,
                },
                cut.before + span + cut.after,
            )
        })
        .unzip();
    let mut permutation: Vec<usize> = (0..sliced.len()).collect();
    permutation.sort_by_key(|&axis| keys[axis]);
    let identity = permutation
        .iter()
        .enumerate()
        .all(|(position, &axis)| position == axis);
    let permutation = if permuted && !identity {
        permutation
    } else {
        Vec::new()
    };
    Layout::View(ViewSpec {
        backing_shape,
        axes,
        permutation,
    })
}

/// The full recipe strategy for `profile`, inside `capabilities`.
///
/// Every part is drawn independently and combined by a plain map (no
/// `prop_flat_map`), so shrinking converges: towards an owned F32 tensor of
/// small dimensions with seed and density zero.
pub fn recipe(profile: Profile, capabilities: &Capabilities) -> BoxedStrategy<Recipe> {
    let max = profile.max_elements().min(capabilities.max_elements);
    let capabilities = capabilities.clone();
    // A dtype of which not one element fits the byte limit is not drawn
    // (unless no declared dtype fits one: then the cases fall outside).
    let fitting: Vec<DType> = capabilities
        .dtypes
        .iter()
        .copied()
        .filter(|dtype| capabilities.max_elements_of(*dtype) > 0)
        .collect();
    let drawn = if fitting.is_empty() {
        &capabilities.dtypes
    } else {
        &fitting
    };
    let dtypes: Vec<String> = drawn.iter().map(|dtype| format!("{dtype:?}")).collect();
    let view_choice = prop_oneof![3 => Just(false), 2 => Just(true)];
    let cuts = prop::collection::vec(axis_cut(), MAX_RANK);
    let keys = prop::collection::vec(any::<u8>(), MAX_RANK);
    // Seed and density first: proptest shrinks a tuple left to right, and
    // plain values make the shrunk case easiest to read.
    (
        any::<u64>(),
        any::<u8>(),
        prop::sample::select(dtypes),
        shape(max),
        view_choice,
        cuts,
        any::<bool>(),
        keys,
    )
        .prop_map(
            move |(seed, specials, dtype, sliced, view, cuts, permuted, keys)| {
                RecipeParts {
                    seed,
                    specials,
                    dtype,
                    sliced,
                    view,
                    cuts,
                    permuted,
                    keys,
                }
                .assemble(&capabilities)
            },
        )
        .boxed()
}

/// The independently drawn parts of a [`Recipe`], before they are combined.
/// The proptest strategy above and the `arbitrary` decoder
/// (`crate::arbitrary_impls`) both draw these and combine them here, so
/// they describe one space of cases.
pub(crate) struct RecipeParts {
    pub(crate) seed: u64,
    pub(crate) specials: u8,
    pub(crate) dtype: String,
    /// The shape before a view's axes are permuted.
    pub(crate) sliced: Vec<usize>,
    /// Whether to cut a view (honoured only for small enough footprints).
    pub(crate) view: bool,
    /// One cut per axis (at least as many as axes).
    pub(crate) cuts: Vec<AxisCut>,
    pub(crate) permuted: bool,
    /// Permutation sort keys, one per axis (at least as many as axes).
    pub(crate) keys: Vec<u8>,
}

/// The largest footprint of a tensor that is drawn as a view: a view's
/// backing is several times its size.
pub(crate) const MAX_VIEW_FOOTPRINT: usize = 1 << 14;

impl RecipeParts {
    /// The recipe inside `capabilities`: its rank cut to the declared
    /// maximum, its size fitted to the dtype's byte limit, and a view only
    /// where views are declared and the footprint is at most
    /// [`MAX_VIEW_FOOTPRINT`], cut with only the declared kinds (an
    /// undeclared kind is mapped away: steps made positive or one, padding
    /// dropped, the permutation undone). Every map is deterministic, so
    /// shrinking still converges; with [`Capabilities::all`] none applies.
    pub(crate) fn assemble(mut self, capabilities: &Capabilities) -> Recipe {
        let kinds = capabilities.views;
        self.sliced.truncate(capabilities.max_rank);
        if let Some(dtype) = PRESET_DTYPES
            .into_iter()
            .find(|dtype| format!("{dtype:?}") == self.dtype)
        {
            self.sliced = fit(self.sliced, capabilities.max_elements_of(dtype).max(1));
        }
        let view = self.view
            && !kinds.is_empty()
            && self.cuts.len() >= self.sliced.len()
            && self.keys.len() >= self.sliced.len()
            && footprint(&self.sliced).is_some_and(|count| count <= MAX_VIEW_FOOTPRINT);
        let last = self.sliced.len().saturating_sub(1);
        for (axis, cut) in self.cuts.iter_mut().enumerate() {
            if !kinds.contains(ViewKind::NegativeStep) {
                cut.step = cut.step.abs();
            }
            if !kinds.contains(ViewKind::Gaps) {
                cut.step = cut.step.signum();
                cut.after = 0;
                if axis != last {
                    cut.before = 0;
                }
            }
            if !kinds.contains(ViewKind::Offset) {
                cut.before = 0;
            }
        }
        let permuted = self.permuted && kinds.contains(ViewKind::Permutation);
        let layout = match view {
            true => view_of(&self.sliced, &self.cuts, permuted, &self.keys),
            false => Layout::Owned,
        };
        // What the maps above cannot rule out is drawn as an owned tensor.
        let layout = match layout {
            Layout::View(spec)
                if ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset())
                    .iter()
                    .any(|kind| !kinds.contains(kind)) =>
            {
                Layout::Owned
            }
            layout => layout,
        };
        let shape = match &layout {
            Layout::View(spec) => spec.shape(),
            Layout::Owned => self.sliced,
        };
        Recipe {
            dtype: self.dtype,
            shape,
            layout,
            seed: self.seed,
            specials: self.specials,
            values: ValueSource::Seeded,
        }
    }
}
