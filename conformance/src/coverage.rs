//! What each rule was checked on: every judged case classed by dtype,
//! layout (owned, or each kind of view), size and whether it carries
//! special float values, with the rules the oracle judged on it. Records
//! carry it ([`crate::record::CaseRecord::coverage`]); the report's
//! coverage map ([`crate::Report::coverage`]) sums it per route and rule.

use serde::{Deserialize, Serialize};
use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::{ViewKind, ViewKinds};
use tenferro_transfer_harness::{Case, Judgement, Layout, Rule};

/// How a case's input is laid out: owned, or a view of each kind it has.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LayoutClass {
    /// An owned compact tensor.
    Owned,
    /// A view with no kind of its own (compact, in order, from the start).
    PlainView,
    /// A view whose memory starts past its buffer's first element.
    Offset,
    /// A view that steps backwards on an axis.
    NegativeStep,
    /// A view whose axes are permuted.
    Permutation,
    /// A view whose elements leave gaps in the memory they span.
    Gaps,
    /// A view that repeats an element along an axis (a zero step).
    Broadcast,
}

impl LayoutClass {
    /// Every class, in the map's order.
    pub const ALL: [LayoutClass; 7] = [
        LayoutClass::Owned,
        LayoutClass::PlainView,
        LayoutClass::Offset,
        LayoutClass::NegativeStep,
        LayoutClass::Permutation,
        LayoutClass::Gaps,
        LayoutClass::Broadcast,
    ];

    /// The column's name (`negative-step`).
    pub fn id(self) -> &'static str {
        match self {
            LayoutClass::Owned => "owned",
            LayoutClass::PlainView => "plain-view",
            LayoutClass::Offset => "offset",
            LayoutClass::NegativeStep => "negative-step",
            LayoutClass::Permutation => "permutation",
            LayoutClass::Gaps => "gaps",
            LayoutClass::Broadcast => "broadcast",
        }
    }

    /// Whether the class is a view's.
    pub fn is_view(self) -> bool {
        self != LayoutClass::Owned
    }

    /// The classes of `case`'s layout: owned, or each kind of view it has.
    pub fn of(case: &Case) -> Vec<LayoutClass> {
        let Layout::View(spec) = case.layout() else {
            return vec![LayoutClass::Owned];
        };
        let kinds = ViewKinds::of(&spec.shape(), &spec.strides(), spec.offset());
        let classes: Vec<LayoutClass> = kinds
            .iter()
            .map(|kind| match kind {
                ViewKind::Offset => LayoutClass::Offset,
                ViewKind::NegativeStep => LayoutClass::NegativeStep,
                ViewKind::Permutation => LayoutClass::Permutation,
                ViewKind::Broadcast => LayoutClass::Broadcast,
                _ => LayoutClass::Gaps,
            })
            .collect();
        if classes.is_empty() {
            vec![LayoutClass::PlainView]
        } else {
            classes
        }
    }
}

/// How many elements a case has, in classes that matter to a transfer.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SizeClass {
    /// No element.
    Empty,
    /// One element (rank 0 included).
    One,
    /// 2 to 4,096 elements.
    Small,
    /// 4,097 to 1,048,575 elements.
    Medium,
    /// At least 1,048,576 (1 Mi) elements.
    Large,
}

/// The fewest elements of a [`SizeClass::Large`] case.
pub const LARGE: usize = 1 << 20;

/// The most elements of a [`SizeClass::Small`] case.
pub const SMALL: usize = 1 << 12;

impl SizeClass {
    /// Every class, smallest first.
    pub const ALL: [SizeClass; 5] = [
        SizeClass::Empty,
        SizeClass::One,
        SizeClass::Small,
        SizeClass::Medium,
        SizeClass::Large,
    ];

    /// The class of `elements`.
    pub fn of(elements: usize) -> Self {
        match elements {
            0 => SizeClass::Empty,
            1 => SizeClass::One,
            2..=SMALL => SizeClass::Small,
            _ if elements < LARGE => SizeClass::Medium,
            _ => SizeClass::Large,
        }
    }

    /// The column's name (`large`).
    pub fn id(self) -> &'static str {
        match self {
            SizeClass::Empty => "empty",
            SizeClass::One => "one",
            SizeClass::Small => "small",
            SizeClass::Medium => "medium",
            SizeClass::Large => "large",
        }
    }
}

/// What kind of case a case is, for the coverage map.
#[derive(Clone, Debug, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseKind {
    /// The dtype (`F32`).
    pub dtype: String,
    /// Owned, or each kind of view the input is.
    pub layout: Vec<LayoutClass>,
    /// Its size class.
    pub size: SizeClass,
    /// Whether it carries special float values (NaN, infinities, `-0.0`,
    /// subnormals); never for an integer or bool dtype.
    pub specials: bool,
}

impl CaseKind {
    /// The kind of `case`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_conformance::coverage::{CaseKind, LayoutClass, SizeClass};
    /// use tenferro_transfer_conformance::harness::Case;
    ///
    /// let kind = CaseKind::of(&Case::from_values(vec![3], vec![1.0_f32, -0.0, 2.0]).unwrap());
    /// assert_eq!((kind.size, kind.specials), (SizeClass::Small, true));
    /// assert_eq!(kind.layout, vec![LayoutClass::Owned]);
    /// ```
    pub fn of(case: &Case) -> Self {
        Self {
            dtype: format!("{:?}", case.dtype()),
            layout: LayoutClass::of(case),
            size: SizeClass::of(case.len()),
            specials: has_special_floats(case),
        }
    }
}

/// Whether a float (or complex) case holds a NaN, an infinity, `-0.0` or
/// a subnormal.
fn has_special_floats(case: &Case) -> bool {
    // Before any value is read: a large generated case's are made again
    // to be read, and an integer or bool case has none of these.
    if !matches!(
        case.dtype(),
        DType::F32 | DType::C32 | DType::F64 | DType::C64
    ) {
        return false;
    }
    let special32 = |bits: u32| {
        let exponent = bits & 0x7f80_0000;
        let mantissa = bits & 0x007f_ffff;
        exponent == 0x7f80_0000 || bits == 0x8000_0000 || (exponent == 0 && mantissa != 0)
    };
    let special64 = |bits: u64| {
        let exponent = bits & 0x7ff0_0000_0000_0000;
        let mantissa = bits & 0x000f_ffff_ffff_ffff;
        exponent == 0x7ff0_0000_0000_0000
            || bits == 0x8000_0000_0000_0000
            || (exponent == 0 && mantissa != 0)
    };
    // A chunk at a time: a large generated case's values are not made whole.
    case.value_chunks().any(|values| match case.dtype() {
        DType::F32 | DType::C32 => values
            .chunks_exact(4)
            .any(|part| special32(u32::from_le_bytes([part[0], part[1], part[2], part[3]]))),
        DType::F64 | DType::C64 => values.chunks_exact(8).any(|part| {
            let mut bytes = [0_u8; 8];
            bytes.copy_from_slice(part);
            special64(u64::from_le_bytes(bytes))
        }),
        _ => false,
    })
}

/// Cases of one kind on which the oracle judged the same rules.
#[derive(Clone, Debug, Eq, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Covered {
    /// The kind of the cases.
    pub kind: CaseKind,
    /// The rules judged on each of them (held or broken), in catalogue
    /// order.
    pub rules: Vec<Rule>,
    /// How many cases.
    pub cases: usize,
}

/// The coverage of a record: its judged cases, by kind and rules judged.
#[derive(Clone, Debug, Default, Eq, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Coverage(Vec<Covered>);

impl Coverage {
    /// The coverage of one judged case.
    pub fn of(case: &Case, judgement: &Judgement) -> Self {
        let mut coverage = Self::default();
        coverage.add(case, judgement);
        coverage
    }

    /// Count `case`, on which `judgement` judged its rules.
    pub fn add(&mut self, case: &Case, judgement: &Judgement) {
        self.add_kind(CaseKind::of(case), judgement.checked().to_vec(), 1);
    }

    pub(crate) fn add_kind(&mut self, kind: CaseKind, rules: Vec<Rule>, cases: usize) {
        match self
            .0
            .iter_mut()
            .find(|covered| covered.kind == kind && covered.rules == rules)
        {
            Some(covered) => covered.cases += cases,
            None => self.0.push(Covered { kind, rules, cases }),
        }
    }

    /// Everything `other` counted, counted here too.
    pub fn extend(&mut self, other: Coverage) {
        for covered in other.0 {
            self.add_kind(covered.kind, covered.rules, covered.cases);
        }
    }

    /// The same cases, with only the rules `keep` admits counted as judged
    /// (the rules of a pinned level).
    #[must_use]
    pub fn restricted(self, keep: impl Fn(Rule) -> bool) -> Self {
        let mut restricted = Self::default();
        for covered in self.0 {
            let rules = covered
                .rules
                .into_iter()
                .filter(|rule| keep(*rule))
                .collect();
            restricted.add_kind(covered.kind, rules, covered.cases);
        }
        restricted
    }

    /// Whether no case is counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The cases counted, by kind and rules judged.
    pub fn covered(&self) -> &[Covered] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use tenferro_transfer_harness::Layout;

    use super::*;

    /// One element of `dtype` whose every byte is `byte`.
    fn filled(dtype: DType, width: usize, byte: u8) -> Case {
        Case::new(dtype, vec![1], Layout::Owned, vec![byte; width]).unwrap()
    }

    #[test]
    fn special_floats_are_seen_in_every_float_dtype_and_never_in_an_integer_one() {
        // All ones is a NaN in either float width; all zeros is +0.0.
        for (dtype, width) in [
            (DType::F32, 4),
            (DType::C32, 8),
            (DType::F64, 8),
            (DType::C64, 16),
        ] {
            assert!(has_special_floats(&filled(dtype, width, 0xff)), "{dtype:?}");
            assert!(!has_special_floats(&filled(dtype, width, 0)), "{dtype:?}");
        }
        assert!(!has_special_floats(&filled(DType::I32, 4, 0xff)));
        assert!(!has_special_floats(&filled(DType::I64, 8, 0xff)));
        assert!(!has_special_floats(&filled(DType::Bool, 1, 1)));
    }
}
