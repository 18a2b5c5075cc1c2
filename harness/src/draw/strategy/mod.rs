//! proptest strategies for transfer cases.
//!
//! A strategy draws a [`Recipe`]: dtype, logical shape, layout and a value
//! seed. A recipe is small, shrinks well and serialises to one line of JSON,
//! so the shrunk failing case can be replayed exactly; [`Recipe::case`]
//! expands it into a [`Case`](crate::Case) with values drawn from per-dtype pools of
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

use crate::PRESET_DTYPES;
use proptest::prelude::*;
use tenferro_tensor::DType;

mod recipe;

pub use crate::draw::capabilities::{Capabilities, Exceeded, ViewKind, ViewKinds};
pub use crate::values::generated::HELD_UP_TO_BYTES;
use crate::{Layout, ViewAxis, ViewSpec};
pub use recipe::{Recipe, ValueSource};

pub use crate::settings::{PROFILE_ENV, Profile};

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
/// (mostly one, sometimes larger, negative or zero: a broadcast, taken as
/// one on an axis of fewer than two elements) and padding before and
/// after, which makes offsets.
#[derive(Clone, Debug)]
pub(crate) struct AxisCut {
    pub(crate) step: isize,
    pub(crate) before: usize,
    pub(crate) after: usize,
}

fn axis_cut() -> impl Strategy<Value = AxisCut> {
    (
        prop_oneof![3 => Just(1_isize), 1 => Just(2_isize), 1 => Just(-1_isize), 1 => Just(3_isize), 1 => Just(-2_isize), 1 => Just(0_isize)],
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
            // A broadcast axis repeats one element: it needs two to repeat.
            let step = if cut.step == 0 && len < 2 {
                1
            } else {
                cut.step
            };
            let stride = step.unsigned_abs();
            let span = if len == 0 { 1 } else { (len - 1) * stride + 1 };
            let first = if step >= 0 || len == 0 {
                cut.before
            } else {
                cut.before + (len - 1) * stride
            };
            (ViewAxis { first, step, len }, cut.before + span + cut.after)
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

/// The most elements of an input moved in a run of several
/// ([`Recipe::with`]): runs of several inputs are about state, not size,
/// and a run of three of the largest cases would hold three times the
/// memory of one (a deep run's peak is its largest case's images).
pub const MAX_RUN_ELEMENTS: usize = 1 << 16;

/// The full recipe strategy for `profile`, inside `capabilities`: one
/// input in three runs of four, and in the fourth one or two more inputs
/// moved in the same run ([`Recipe::with`]): its twin (the same values but
/// a few interior elements), one of the same dtype and shape with other
/// values, or another drawn case. An input of more than
/// [`MAX_RUN_ELEMENTS`] moves alone, and no companion that large joins
/// a run.
///
/// Every part is drawn independently and combined by a plain map (no
/// `prop_flat_map`), so shrinking converges: towards a run of one owned
/// F32 tensor of small dimensions with seed and density zero.
pub fn recipe(profile: Profile, capabilities: &Capabilities) -> BoxedStrategy<Recipe> {
    let single = single_recipe(profile, capabilities);
    let companion = prop_oneof![
        2 => any::<u64>().prop_map(Companion::Twin),
        1 => (any::<u64>(), any::<u8>()).prop_map(|(seed, specials)| Companion::SameShape { seed, specials }),
        1 => single.clone().prop_map(Companion::Other),
    ];
    let companions = prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec(companion, 1..=2),
    ];
    (single, companions)
        .prop_map(|(recipe, companions)| {
            let small = |recipe: &Recipe| {
                recipe
                    .shape
                    .iter()
                    .try_fold(1_usize, |count, &extent| count.checked_mul(extent))
                    .is_some_and(|count| count <= MAX_RUN_ELEMENTS)
            };
            if !small(&recipe) {
                return recipe;
            }
            let others = companions
                .into_iter()
                .map(|companion| match companion {
                    Companion::Twin(seed) => recipe.twin(seed),
                    Companion::SameShape { seed, specials } => Recipe {
                        seed,
                        specials,
                        values: ValueSource::Seeded,
                        ..recipe.twin(0)
                    }
                    .untwinned(),
                    Companion::Other(other) => other,
                })
                .filter(small)
                .collect();
            recipe.moved_with(others)
        })
        .boxed()
}

/// An input drawn to move in the same run as another.
#[derive(Clone, Debug)]
enum Companion {
    /// Its twin, with this seed.
    Twin(u64),
    /// Its dtype, shape and layout, with these seeded values.
    SameShape { seed: u64, specials: u8 },
    /// Another drawn case.
    Other(Recipe),
}

/// One input, drawn inside `capabilities` for `profile`.
fn single_recipe(profile: Profile, capabilities: &Capabilities) -> BoxedStrategy<Recipe> {
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
    /// undeclared kind is mapped away: steps made non-zero, positive or one, padding
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
            if !kinds.contains(ViewKind::Broadcast) && cut.step == 0 {
                cut.step = 1;
            }
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
            twin: None,
            with: Vec::new(),
        }
    }
}
