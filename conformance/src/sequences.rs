//! Sequences against state: a provider is an object with memory (a cache,
//! a pool, staging buffers kept between calls), so some cases are made to
//! meet what an earlier call left behind.
//!
//! Woven into a route's fixed cases ([`StatePass::after_fixed`]), and
//! gathered into one record per dtype ([`StatePass::finish`]):
//! - **twins**: right after each small fixed case, its twin (the same
//!   dtype and shape, a few interior elements changed, special values
//!   among them), and after the next case of the dtype, another twin of
//!   it; a provider that answers from what it kept of an earlier input
//!   returns the wrong values, and the `values` failure names that input;
//! - **inputs of mixed sizes in one run**: the small fixed cases of the
//!   dtype moved by one program, each output held by the runtime until the
//!   program ends and read again then;
//! - **views at another offset**: right after each small view, the same
//!   view (shape and strides) with its first element moved by one; a
//!   provider that keeps a plan per layout without the offset in its key
//!   reads the old positions; and for the first two views of a dtype, the
//!   pair again over one backing of seeded bits, so that both are staged
//!   from the same bytes: a cache that knows an input by its backing's
//!   bytes alone answers the second from the first;
//! - **inputs equal as numbers, not in bits** (float dtypes): a pair whose
//!   zeros differ in sign, and a pair whose NaNs differ in payload, each
//!   second input right after the first; a cache that compares inputs with
//!   `==` answers the second from the first;
//! - **zeros after values**: the dtype's largest small case, then the same
//!   case with every element zero; a provider that skips sending zeros
//!   into memory it takes for zeroed hands back a reused block's values.
//!
//! A failing record replays as one run of the pair that failed (the case
//! and its twin moved together), which meets the same state.

use tenferro_transfer_harness::strategy::{Recipe, ValueSource, ViewKinds};
use tenferro_transfer_harness::{
    Judgement, Layout, NEGATIVE_ZEROS, OTHER_NAN_PAYLOAD, Route, ViewSpec, WITH_NANS, Watchdog,
    describe_error,
};

use crate::coverage::Coverage;
use crate::record::{CaseOutcome, CaseRecord, Origin, RowHead};
use crate::runner::{JudgedAs, input_label, run_cases};

/// The largest case twinned, in elements: twins are about state, not size.
pub const TWIN_MAX_ELEMENTS: usize = 1 << 12;

/// The most inputs of the run of mixed sizes.
const MIXED_INPUTS: usize = 4;

/// The seeds of a case's two twins: right after it, and after the next.
const TWIN_SEEDS: [u64; 2] = [0x7477_696e, 0x0061_6674_6572];

/// The seed of the bits filling the backing that two views of a dtype
/// read at two offsets.
const WHOLE_BACKING_SEED: u64 = 0x0062_6163_6b69_6e67;

/// How many small views of a dtype are also moved twice over one backing.
const SAME_BACKING_VIEWS: usize = 2;

/// What one dtype's twins and run of mixed sizes found.
#[derive(Default)]
struct Dtype {
    name: String,
    /// Its small fixed cases, in the order they ran.
    small: Vec<Recipe>,
    parts: Vec<(String, Judgement)>,
    coverage: Coverage,
    not_run: Option<String>,
    /// The first run that failed, as one recipe that replays it.
    replay: Option<Recipe>,
    /// Views moved again at another offset.
    shifted: usize,
    /// Views moved again at another offset over the same backing bytes.
    same_backing: usize,
}

/// The same view at another offset: `recipe`'s view with its first element
/// moved by one along the first backing axis where the whole view still
/// fits and keeps its kinds (so that it stays inside the capabilities the
/// view itself was inside: a view without an offset is not given one), the
/// strides and shape unchanged. A provider that keeps a plan per layout but
/// leaves the offset out of its key reads the old positions. `None` for an
/// owned case, or a view with no such move.
fn shifted(recipe: &Recipe) -> Option<Recipe> {
    let Layout::View(spec) = &recipe.layout else {
        return None;
    };
    let kinds = |spec: &ViewSpec| ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset());
    let original = kinds(spec);
    for (index, axis) in spec.axes.iter().enumerate() {
        let extent = isize::try_from(*spec.backing_shape.get(index)?).ok()?;
        let first = isize::try_from(axis.first).ok()?;
        let span = axis.step * isize::try_from(axis.len.checked_sub(1)?).ok()?;
        let (low, high) = (first.min(first + span), first.max(first + span));
        for delta in [1, -1] {
            if low + delta >= 0 && high + delta < extent {
                let mut moved = spec.clone();
                moved.axes[index].first = usize::try_from(first + delta).ok()?;
                if kinds(&moved) == original {
                    return Some(Recipe {
                        layout: Layout::View(moved),
                        ..recipe.clone().untwinned()
                    });
                }
            }
        }
    }
    None
}

/// `recipe`'s view and `shifted`'s, both over one backing of seeded bits.
fn over_one_backing(recipe: &Recipe, shifted: &Recipe) -> (Recipe, Recipe) {
    let first = Recipe {
        values: ValueSource::WholeBacking,
        seed: WHOLE_BACKING_SEED,
        specials: 0,
        ..recipe.clone().untwinned()
    };
    let second = Recipe {
        layout: shifted.layout.clone(),
        ..first.clone()
    };
    (first, second)
}

/// The twins of a route's fixed cases, run as the fixed cases run, and the
/// runs of mixed sizes after them.
#[derive(Default)]
pub(crate) struct StatePass {
    dtypes: Vec<Dtype>,
}

/// `F32 [7, 3] owned`: a recipe's case in words.
fn words(recipe: &Recipe) -> String {
    format!(
        "{} {:?} {}",
        recipe.dtype,
        recipe.shape,
        recipe.layout.label()
    )
}

impl StatePass {
    /// Right after the fixed case of `recipe` ran on `watchdog`: its twin, and
    /// the later twin of the dtype's case before it (another case, this
    /// one, ran in between). Cases that are empty or larger than
    /// [`TWIN_MAX_ELEMENTS`] have none.
    pub(crate) fn after_fixed(&mut self, watchdog: &mut Watchdog, route: &Route, recipe: &Recipe) {
        let small = recipe.with.is_empty()
            && recipe
                .case()
                .is_ok_and(|case| !case.is_empty() && case.len() <= TWIN_MAX_ELEMENTS);
        if !small {
            return;
        }
        let index = match self
            .dtypes
            .iter()
            .position(|dtype| dtype.name == recipe.dtype)
        {
            Some(index) => index,
            None => {
                self.dtypes.push(Dtype {
                    name: recipe.dtype.clone(),
                    ..Dtype::default()
                });
                self.dtypes.len() - 1
            }
        };
        let dtype = &mut self.dtypes[index];
        let twin = recipe.twin(TWIN_SEEDS[0]);
        dtype.run(
            watchdog,
            route,
            &twin,
            &format!("the twin of {}, right after it", words(recipe)),
            recipe.clone().moved_with(vec![twin.clone()]),
        );
        if let Some(shifted) = shifted(recipe) {
            dtype.shifted += 1;
            dtype.run(
                watchdog,
                route,
                &shifted,
                &format!(
                    "{} at another offset ({}), right after it",
                    words(recipe),
                    shifted.layout.label()
                ),
                recipe.clone().moved_with(vec![shifted.clone()]),
            );
            if dtype.same_backing < SAME_BACKING_VIEWS {
                dtype.same_backing += 1;
                dtype.over_one_backing(watchdog, route, recipe, &shifted);
            }
        }
        if let Some(previous) = dtype.small.last().cloned() {
            let late = previous.twin(TWIN_SEEDS[1]);
            dtype.run(
                watchdog,
                route,
                &late,
                &format!(
                    "the twin of {}, after {} ran in between",
                    words(&previous),
                    words(recipe)
                ),
                previous.moved_with(vec![late.clone()]),
            );
        }
        dtype.small.push(recipe.clone());
    }

    /// Each dtype's small cases of mixed sizes moved in one run, then one
    /// record per dtype: its twins and that run, every input judged on
    /// every rule.
    pub(crate) fn finish(
        self,
        watchdog: &mut Watchdog,
        route: &Route,
        name: &str,
        head: &RowHead,
    ) -> Vec<CaseRecord> {
        self.dtypes
            .into_iter()
            .map(|dtype| dtype.record(watchdog, route, name, head))
            .collect()
    }
}

impl Dtype {
    /// `recipe`'s view over a backing of seeded bits, then the same view
    /// at `shifted`'s offset over the same bytes, right after it: a
    /// provider that knows an input by its backing's bytes, not by where
    /// the view lies in them, answers the second from the first.
    fn over_one_backing(
        &mut self,
        watchdog: &mut Watchdog,
        route: &Route,
        recipe: &Recipe,
        shifted: &Recipe,
    ) {
        let (first, second) = over_one_backing(recipe, shifted);
        self.run(
            watchdog,
            route,
            &first,
            &format!("{} over a backing of seeded bits", words(recipe)),
            first.clone(),
        );
        self.run(
            watchdog,
            route,
            &second,
            &format!(
                "{} at another offset ({}) over the same backing bytes, right after it",
                words(recipe),
                shifted.layout.label()
            ),
            first.moved_with(vec![second.clone()]),
        );
    }

    /// The dtype's largest small case (an owned one where there is one),
    /// then the same case with every element zero, in runs of their own:
    /// a provider that skips sending zeros (into memory it assumes zeroed)
    /// hands back a reused block's old values. Whether it ran.
    fn zeros_after_values(&mut self, watchdog: &mut Watchdog, route: &Route) -> bool {
        let largest = |owned: bool| {
            self.small
                .iter()
                .filter(|recipe| !owned || matches!(recipe.layout, Layout::Owned))
                .max_by_key(|recipe| recipe.shape.iter().product::<usize>())
                .cloned()
        };
        let Some(values) = largest(true).or_else(|| largest(false)) else {
            return false;
        };
        let values = values.untwinned();
        let zeros = Recipe {
            values: ValueSource::Zeros,
            ..values.clone()
        };
        self.run(
            watchdog,
            route,
            &values,
            &format!("{}, before zeros of its size", words(&values)),
            values.clone(),
        );
        self.run(
            watchdog,
            route,
            &zeros,
            &format!(
                "{} of zeros, right after values of its size",
                words(&values)
            ),
            values.moved_with(vec![zeros.clone()]),
        );
        true
    }

    /// For a float dtype, two pairs of its first small case of at least
    /// four elements, each the second one moved right after the first, in
    /// runs of their own: equal as numbers and not in bits, by the sign of
    /// their zeros, then by the payload of their NaNs. A cache that
    /// compares inputs with `==` (or takes every NaN for equal) answers the
    /// second from the first, with the wrong bits. Whether they ran.
    fn equal_as_numbers(&mut self, watchdog: &mut Watchdog, route: &Route) -> bool {
        let Some(small) = self
            .small
            .iter()
            .find(|recipe| recipe.case().is_ok_and(|case| case.len() >= 4))
            .cloned()
        else {
            return false;
        };
        let variant = |seed: u64| Recipe {
            values: ValueSource::EqualAsNumbers,
            seed,
            specials: 0,
            ..small.clone().untwinned()
        };
        if variant(0).case().is_err() {
            return false;
        }
        for (first, second, differ) in [
            (0, NEGATIVE_ZEROS, "the sign of its zeros"),
            (
                WITH_NANS,
                WITH_NANS | OTHER_NAN_PAYLOAD,
                "the payload of its NaNs",
            ),
        ] {
            let (first, second) = (variant(first), variant(second));
            let case = words(&first);
            self.run(
                watchdog,
                route,
                &first,
                &format!("{case}, equal as numbers"),
                first.clone(),
            );
            self.run(
                watchdog,
                route,
                &second,
                &format!("{case} equal as numbers to the input right before it, but for {differ}"),
                first.moved_with(vec![second.clone()]),
            );
        }
        true
    }

    /// Run the inputs of `run` in one run; `label` says where in the
    /// sequence it stands; `replay` replays it (with what it met).
    fn run(
        &mut self,
        watchdog: &mut Watchdog,
        route: &Route,
        run: &Recipe,
        label: &str,
        replay: Recipe,
    ) {
        let cases = match run.cases() {
            Ok(cases) => cases,
            Err(error) => {
                self.not_run.get_or_insert(describe_error(&error));
                return;
            }
        };
        let total = cases.len();
        for (index, result) in run_cases(watchdog, route, &cases, JudgedAs::Inside, None)
            .into_iter()
            .enumerate()
        {
            let input = if total > 1 {
                format!("{label}, {}", input_label(index, total, &cases[index]))
            } else {
                label.to_owned()
            };
            match result {
                Ok((judgement, _)) => {
                    if !judgement.passed() && self.replay.is_none() {
                        self.replay = Some(replay.clone());
                    }
                    self.coverage.add(&cases[index], &judgement);
                    self.parts.push((input, judgement));
                }
                Err(skip) if skip.is_skip() => {}
                Err(error) => {
                    self.not_run
                        .get_or_insert(format!("{input}: {}", describe_error(&error)));
                }
            }
        }
    }

    /// The run of mixed sizes, then the dtype's record.
    fn record(
        mut self,
        watchdog: &mut Watchdog,
        route: &Route,
        name: &str,
        head: &RowHead,
    ) -> CaseRecord {
        let mut mixed: Vec<Recipe> = Vec::new();
        for recipe in &self.small {
            if mixed.len() < MIXED_INPUTS && !mixed.iter().any(|kept| kept.shape == recipe.shape) {
                mixed.push(recipe.clone());
            }
        }
        let sizes = mixed.len();
        if sizes > 1 {
            let first = mixed.remove(0);
            let run = first.moved_with(mixed);
            self.run(
                watchdog,
                route,
                &run,
                "inputs of mixed sizes in one run",
                run.clone(),
            );
        }
        let pairs = self.equal_as_numbers(watchdog, route);
        let zeros = self.zeros_after_values(watchdog, route);
        let judged = match (self.not_run, self.parts.is_empty()) {
            (Some(message), _) => Err(CaseOutcome::NotSetUp { message }),
            (None, true) => Err(CaseOutcome::Skipped {
                reason: "no twin or run of several inputs could run on this route".to_owned(),
            }),
            (None, false) => Ok(Judgement::merged(self.parts)),
        };
        let head = RowHead {
            dtype: self.name.clone(),
            layout: format!(
                "state: {} cases each followed by its twin and by another after the next case, {} views at another offset ({} over the same backing bytes), and {} sizes in one run{}{}",
                self.small.len(),
                self.shifted,
                self.same_backing,
                if sizes > 1 { sizes } else { 0 },
                if pairs {
                    ", then two pairs equal as numbers, not in bits"
                } else {
                    ""
                },
                if zeros {
                    ", and zeros after values of their size"
                } else {
                    ""
                }
            ),
            ..head.clone()
        };
        let record = match judged {
            Ok(judgement) => CaseRecord::judged(name, Origin::State, head, &judgement)
                .with_coverage(self.coverage),
            Err(outcome) => CaseRecord::new(name, Origin::State, head, outcome),
        };
        match &self.replay {
            Some(recipe) => record.with_replay(recipe),
            None => record,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenferro_tensor::DType;
    use tenferro_transfer_harness::ViewAxis;
    use tenferro_transfer_harness::strategy::ViewKind;

    fn view(first: usize) -> Recipe {
        Recipe::fixed(
            DType::F32,
            vec![2],
            Layout::View(ViewSpec {
                backing_shape: vec![5],
                axes: vec![ViewAxis {
                    first,
                    step: 2,
                    len: 2,
                }],
                permutation: Vec::new(),
            }),
            ValueSource::Patterned,
        )
    }

    fn offset(recipe: &Recipe) -> usize {
        match &recipe.layout {
            Layout::View(spec) => spec.axes[0].first,
            _ => panic!("a view"),
        }
    }

    #[test]
    fn a_view_moves_to_another_offset_only_where_it_keeps_its_kinds() {
        // Elements 1 and 3 of five: moved to 2 and 4, still an offset.
        let moved = shifted(&view(1)).unwrap();
        assert_eq!(offset(&moved), 2);
        // Elements 0 and 2: moving them would give the view an offset, a
        // kind the capabilities may leave out; it stays where it is.
        let kinds = |recipe: &Recipe| match &recipe.layout {
            Layout::View(spec) => ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset()),
            _ => ViewKinds::NONE,
        };
        assert!(!kinds(&view(0)).contains(ViewKind::Offset));
        assert!(shifted(&view(0)).is_none());
        assert!(
            shifted(&Recipe::fixed(
                DType::F32,
                vec![2],
                Layout::Owned,
                ValueSource::Patterned
            ))
            .is_none()
        );
    }

    #[test]
    fn a_view_and_the_view_at_another_offset_over_one_backing_share_its_bytes_not_their_values() {
        let recipe = view(1);
        let (first, second) = over_one_backing(&recipe, &shifted(&recipe).unwrap());
        let (first, second) = (first.case().unwrap(), second.case().unwrap());
        assert_eq!(
            first.backing_values::<f32>(),
            second.backing_values::<f32>()
        );
        assert_ne!(first.values(), second.values());
        assert_ne!(first.layout(), second.layout());
        // A twin of a whole backing would no longer be that backing.
        let (whole, _) = over_one_backing(&recipe, &recipe);
        assert!(whole.twin(1).case().is_err());
    }
}
