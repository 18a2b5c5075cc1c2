//! What a provider declares it serves: dtypes, which kinds of strided view,
//! and the largest rank, element count and byte size. Strategies draw only
//! inside a declaration; capability honesty (`crate::honesty`) stages the
//! cases just outside each of its limits.
//!
//! # Examples
//!
//! ```
//! use tenferro_tensor::DType;
//! use tenferro_transfer_harness::strategy::{Capabilities, ViewKind, ViewKinds};
//!
//! let declared = Capabilities::all()
//!     .dtypes([DType::F32, DType::F64])
//!     .views([ViewKind::Offset, ViewKind::Gaps])
//!     .max_rank(4)
//!     .max_elements(1 << 20)
//!     .max_bytes(4 << 20);
//! assert!(declared.views.contains(ViewKind::Offset));
//! assert!(!declared.views.contains(ViewKind::Permutation));
//! assert_eq!(Capabilities::all().views, ViewKinds::ALL);
//! ```

use std::fmt;

use crate::{PRESET_DTYPES, element_width};
use tenferro_tensor::{DType, TensorRead};

use crate::{Case, Layout};

/// One property a strided view can have, which a provider may or may not
/// serve. A view that has none of them (compact, column-major, starting at
/// the first element of its memory) needs only views to be declared at all.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
#[non_exhaustive]
pub enum ViewKind {
    /// The view's memory starts past the first element of its buffer: the
    /// lowest element it reaches, which a negative step puts before the
    /// element its stored offset names.
    Offset,
    /// At least one axis steps backwards through memory.
    NegativeStep,
    /// The axes are not in column-major order of their strides.
    Permutation,
    /// The elements do not fill the memory they span: a step above one, or
    /// an axis sliced shorter than its backing.
    Gaps,
    /// At least one axis steps zero elements through memory, so the view
    /// repeats an element along it: a broadcast, as tenferro's
    /// `broadcast_in_dim_view` makes one.
    Broadcast,
}

impl ViewKind {
    /// Every kind, in declaration order.
    pub const ALL: [ViewKind; 5] = [
        ViewKind::Offset,
        ViewKind::NegativeStep,
        ViewKind::Permutation,
        ViewKind::Gaps,
        ViewKind::Broadcast,
    ];

    /// The kind's name, as reports print it (`negative-step`).
    pub fn id(self) -> &'static str {
        match self {
            ViewKind::Offset => "offset",
            ViewKind::NegativeStep => "negative-step",
            ViewKind::Permutation => "permutation",
            ViewKind::Gaps => "gaps",
            ViewKind::Broadcast => "broadcast",
        }
    }

    /// What a view of this kind is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            ViewKind::Offset => "views with an offset",
            ViewKind::NegativeStep => "views with negative steps",
            ViewKind::Permutation => "views with permuted axes",
            ViewKind::Gaps => "views with gaps between elements",
            ViewKind::Broadcast => "broadcast views (a zero step repeats an element)",
        }
    }

    fn bit(self) -> u8 {
        match self {
            ViewKind::Offset => 1,
            ViewKind::NegativeStep => 2,
            ViewKind::Permutation => 4,
            ViewKind::Gaps => 8,
            ViewKind::Broadcast => 16,
        }
    }
}

impl fmt::Display for ViewKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.id())
    }
}

/// A set of [`ViewKind`]s. Declared as capabilities, the empty set means
/// "no strided views at all"; any kind declared admits the views that have
/// no kind (compact ones) too.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::strategy::{ViewKind, ViewKinds};
///
/// // A 2x3 column-major tensor read transposed: strides [2, 1].
/// let kinds = ViewKinds::of(&[3, 2], &[2, 1], 0);
/// assert_eq!(kinds, ViewKinds::from([ViewKind::Permutation]));
/// // Every other element of six, from the end: strides [-2], offset 5.
/// let kinds = ViewKinds::of(&[3], &[-2], 5);
/// assert!(kinds.contains(ViewKind::NegativeStep) && kinds.contains(ViewKind::Gaps));
/// assert!(kinds.contains(ViewKind::Offset)); // its memory starts at element 1
/// // Three elements read twice each, as broadcast_in_dim_view makes it.
/// assert_eq!(ViewKinds::of(&[2, 3], &[0, 1], 0), ViewKinds::from([ViewKind::Broadcast]));
/// ```
#[derive(Clone, Copy, Default, Eq, Hash, PartialEq)]
pub struct ViewKinds(u8);

impl ViewKinds {
    /// No kind: as capabilities, no strided views at all.
    pub const NONE: ViewKinds = ViewKinds(0);
    /// Every kind.
    pub const ALL: ViewKinds = ViewKinds(0b1_1111);

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: ViewKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// The set with `kind` added.
    #[must_use]
    pub fn with(self, kind: ViewKind) -> Self {
        Self(self.0 | kind.bit())
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in [`ViewKind::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = ViewKind> {
        ViewKind::ALL
            .into_iter()
            .filter(move |kind| self.contains(*kind))
    }

    /// The kinds a strided view of `shape`, `strides` (in elements) and
    /// `offset` (of its first element) has, as tenferro describes a view.
    /// An empty view addresses no memory and has none.
    pub fn of(shape: &[usize], strides: &[isize], offset: isize) -> Self {
        if shape.contains(&0) {
            return Self::NONE;
        }
        // Axes of extent one move nowhere: their strides say nothing. An
        // axis of stride zero repeats: it makes a broadcast, and reaches no
        // memory the other axes do not, so the other kinds ignore it.
        let extended = |extent: &usize| *extent > 1;
        let broadcast = shape
            .iter()
            .zip(strides)
            .any(|(extent, stride)| extended(extent) && *stride == 0);
        let moving: Vec<(usize, isize)> = shape
            .iter()
            .zip(strides)
            .filter(|(extent, stride)| extended(extent) && **stride != 0)
            .map(|(extent, stride)| (*extent, *stride))
            .collect();
        let mut kinds = Self::NONE;
        if broadcast {
            kinds = kinds.with(ViewKind::Broadcast);
        }
        if moving.iter().any(|(_, stride)| *stride < 0) {
            kinds = kinds.with(ViewKind::NegativeStep);
        }
        let reach = |(extent, stride): &(usize, isize)| *stride * (*extent as isize - 1);
        let low: isize = offset + moving.iter().map(reach).filter(|r| *r < 0).sum::<isize>();
        let high: isize = offset + moving.iter().map(reach).filter(|r| *r > 0).sum::<isize>();
        if low > 0 {
            kinds = kinds.with(ViewKind::Offset);
        }
        let magnitudes: Vec<usize> = moving
            .iter()
            .map(|(_, stride)| stride.unsigned_abs())
            .collect();
        if magnitudes.windows(2).any(|pair| pair[0] >= pair[1]) {
            kinds = kinds.with(ViewKind::Permutation);
        }
        let count: usize = moving.iter().map(|(extent, _)| *extent).product();
        if usize::try_from(high - low + 1).is_ok_and(|span| span > count) {
            kinds = kinds.with(ViewKind::Gaps);
        }
        kinds
    }
}

impl fmt::Debug for ViewKinds {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_set().entries(self.iter()).finish()
    }
}

impl<const N: usize> From<[ViewKind; N]> for ViewKinds {
    fn from(kinds: [ViewKind; N]) -> Self {
        kinds.into_iter().collect()
    }
}

impl FromIterator<ViewKind> for ViewKinds {
    fn from_iter<I: IntoIterator<Item = ViewKind>>(kinds: I) -> Self {
        kinds.into_iter().fold(Self::NONE, Self::with)
    }
}

/// What a provider declares it handles on a route; strategies ask only for
/// that, and capability honesty stages the cases just outside it.
///
/// Built from [`Capabilities::all`] and narrowed with its builder methods;
/// `#[non_exhaustive]`, so a limit added later does not break a caller.
///
/// # Examples
///
/// ```
/// use tenferro_tensor::DType;
/// use tenferro_transfer_harness::Case;
/// use tenferro_transfer_harness::strategy::{Capabilities, ViewKinds};
///
/// let f32_only = Capabilities::all().dtypes([DType::F32]).views(ViewKinds::NONE).max_elements(16);
/// assert!(f32_only.admits(&Case::from_values(vec![2], vec![1.0_f32, 2.0]).unwrap()));
/// assert!(!f32_only.admits(&Case::from_values(vec![2], vec![1.0_f64, 2.0]).unwrap()));
/// ```
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Dtypes it carries.
    pub dtypes: Vec<DType>,
    /// The kinds of strided `TensorRead::View` input it accepts; empty for
    /// none at all.
    pub views: ViewKinds,
    /// The highest rank it accepts.
    pub max_rank: usize,
    /// The largest element count it accepts.
    pub max_elements: usize,
    /// The largest tensor it accepts, in bytes of its elements.
    pub max_bytes: usize,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self::all()
    }
}

/// One declared limit an input exceeds.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Exceeded {
    /// A dtype that is not declared.
    DType(DType),
    /// A strided view, where no views are declared.
    Views,
    /// A strided view of a kind that is not declared.
    ViewKind(ViewKind),
    /// A rank above the declared maximum.
    Rank {
        /// The input's rank.
        rank: usize,
        /// The declared maximum.
        max: usize,
    },
    /// More elements than the declared maximum.
    Elements {
        /// The input's element count.
        count: usize,
        /// The declared maximum.
        max: usize,
    },
    /// More bytes than the declared maximum.
    Bytes {
        /// The input's size in bytes.
        bytes: usize,
        /// The declared maximum.
        max: usize,
    },
}

impl fmt::Display for Exceeded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::DType(dtype) => write!(formatter, "dtype {dtype:?} is not declared"),
            Exceeded::Views => formatter.write_str("strided views are not declared"),
            Exceeded::ViewKind(kind) => write!(formatter, "{} are not declared", kind.describe()),
            Exceeded::Rank { rank, max } => {
                write!(
                    formatter,
                    "rank {rank} exceeds the declared maximum of {max}"
                )
            }
            Exceeded::Elements { count, max } => write!(
                formatter,
                "{count} elements exceed the declared maximum of {max}"
            ),
            Exceeded::Bytes { bytes, max } => {
                write!(
                    formatter,
                    "{bytes} bytes exceed the declared maximum of {max}"
                )
            }
        }
    }
}

impl Capabilities {
    /// Every preset dtype, every kind of view, any rank and size: what a
    /// provider that declares nothing is held to.
    pub fn all() -> Self {
        Self {
            dtypes: PRESET_DTYPES.to_vec(),
            views: ViewKinds::ALL,
            max_rank: usize::MAX,
            max_elements: usize::MAX,
            max_bytes: usize::MAX,
        }
    }

    /// Only these dtypes.
    #[must_use]
    pub fn dtypes(mut self, dtypes: impl IntoIterator<Item = DType>) -> Self {
        self.dtypes = dtypes.into_iter().collect();
        self
    }

    /// Only these kinds of strided view ([`ViewKinds::NONE`] for none).
    #[must_use]
    pub fn views(mut self, kinds: impl Into<ViewKinds>) -> Self {
        self.views = kinds.into();
        self
    }

    /// Ranks up to `max_rank`.
    #[must_use]
    pub fn max_rank(mut self, max_rank: usize) -> Self {
        self.max_rank = max_rank;
        self
    }

    /// Up to `max_elements` elements.
    #[must_use]
    pub fn max_elements(mut self, max_elements: usize) -> Self {
        self.max_elements = max_elements;
        self
    }

    /// Up to `max_bytes` bytes of elements.
    #[must_use]
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Whether `case` lies inside these capabilities.
    pub fn admits(&self, case: &Case) -> bool {
        self.exceeded(case).is_empty()
    }

    /// Which capability `case` falls outside of (the first, in words), or
    /// `None` inside.
    pub fn outside(&self, case: &Case) -> Option<String> {
        self.exceeded(case).first().map(ToString::to_string)
    }

    /// Every declared limit `case` exceeds; empty inside.
    pub fn exceeded(&self, case: &Case) -> Vec<Exceeded> {
        let view = match case.layout() {
            Layout::Owned => None,
            Layout::View(spec) => {
                Some(ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset()))
            }
        };
        self.exceeded_by(case.dtype(), case.shape(), view)
    }

    /// Every declared limit a provider's `input` exceeds: what a provider
    /// that declares these capabilities must refuse with a typed `Err`.
    pub fn exceeded_by_input(&self, input: &TensorRead<'_>) -> Vec<Exceeded> {
        let view = match input {
            TensorRead::View(view) => {
                Some(ViewKinds::of(view.shape(), view.strides(), view.offset()))
            }
            TensorRead::Tensor(_) => None,
        };
        self.exceeded_by(input.dtype(), input.shape(), view)
    }

    /// Every declared limit an input of `dtype` and `shape` exceeds, read
    /// as a view of `view` kinds (`None` for an owned tensor).
    pub fn exceeded_by(
        &self,
        dtype: DType,
        shape: &[usize],
        view: Option<ViewKinds>,
    ) -> Vec<Exceeded> {
        let mut exceeded = Vec::new();
        if !self.dtypes.contains(&dtype) {
            exceeded.push(Exceeded::DType(dtype));
        }
        if let Some(kinds) = view {
            if self.views.is_empty() {
                exceeded.push(Exceeded::Views);
            } else {
                exceeded.extend(
                    kinds
                        .iter()
                        .filter(|kind| !self.views.contains(*kind))
                        .map(Exceeded::ViewKind),
                );
            }
        }
        if shape.len() > self.max_rank {
            exceeded.push(Exceeded::Rank {
                rank: shape.len(),
                max: self.max_rank,
            });
        }
        let count = shape
            .iter()
            .try_fold(1_usize, |count, extent| count.checked_mul(*extent))
            .unwrap_or(usize::MAX);
        if count > self.max_elements {
            exceeded.push(Exceeded::Elements {
                count,
                max: self.max_elements,
            });
        }
        let bytes = element_width(dtype).map_or(usize::MAX, |width| count.saturating_mul(width));
        if bytes > self.max_bytes {
            exceeded.push(Exceeded::Bytes {
                bytes,
                max: self.max_bytes,
            });
        }
        exceeded
    }

    /// The most elements of `dtype` a case inside these capabilities holds.
    pub fn max_elements_of(&self, dtype: DType) -> usize {
        let by_bytes = element_width(dtype).map_or(0, |width| self.max_bytes / width);
        self.max_elements.min(by_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_view_has_no_kind_and_each_property_is_its_own_kind() {
        assert_eq!(ViewKinds::of(&[2, 3], &[1, 2], 0), ViewKinds::NONE);
        assert_eq!(
            ViewKinds::of(&[2], &[1], 1),
            ViewKinds::from([ViewKind::Offset])
        );
        assert_eq!(
            ViewKinds::of(&[3], &[-1], 2),
            ViewKinds::from([ViewKind::NegativeStep])
        );
        assert_eq!(
            ViewKinds::of(&[3, 2], &[2, 1], 0),
            ViewKinds::from([ViewKind::Permutation])
        );
        assert_eq!(
            ViewKinds::of(&[3], &[2], 0),
            ViewKinds::from([ViewKind::Gaps])
        );
        // Axes of extent one and empty views say nothing.
        assert_eq!(ViewKinds::of(&[1, 4], &[7, 1], 0), ViewKinds::NONE);
        assert_eq!(ViewKinds::of(&[0, 4], &[-3, 2], 9), ViewKinds::NONE);
    }

    #[test]
    fn every_limit_is_reported_once() {
        let declared = Capabilities::all()
            .dtypes([DType::F32])
            .views(ViewKinds::NONE)
            .max_rank(1)
            .max_elements(3)
            .max_bytes(8);
        let exceeded = declared.exceeded_by(DType::F64, &[2, 2], Some(ViewKinds::NONE));
        assert_eq!(
            exceeded,
            vec![
                Exceeded::DType(DType::F64),
                Exceeded::Views,
                Exceeded::Rank { rank: 2, max: 1 },
                Exceeded::Elements { count: 4, max: 3 },
                Exceeded::Bytes { bytes: 32, max: 8 },
            ]
        );
        assert!(
            Capabilities::all()
                .exceeded_by(DType::C64, &[5, 5], Some(ViewKinds::ALL))
                .is_empty()
        );
    }
}
