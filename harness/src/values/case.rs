//! `Case`: one tensor to transfer: dtype, shape, layout and values.

use std::borrow::Cow;
use std::sync::Arc;

use crate::{Element, element_width};
use tenferro_tensor::{Complex, DType};

use crate::HarnessError;
use crate::values::compared::{Reference, ReferenceView};
use crate::values::generated::{GENERATED_AT_ONCE, Generated, HELD_UP_TO_BYTES, twin_values};
use crate::values::layout::{Layout, ViewSpec};
use crate::values::patterns::pattern_bytes;

/// One transfer case: the tensor the source holds and the provider must
/// deliver bit-exactly.
///
/// Values are the little-endian images of the logical elements in
/// column-major order, so comparisons are bit-exact by construction.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{Case, Layout};
/// use tenferro_tensor::DType;
///
/// let case = Case::from_values(vec![2], vec![f64::NAN, -0.0]).unwrap();
/// assert_eq!(case.dtype(), DType::F64);
/// assert_eq!(case.len(), 2);
/// assert_eq!(case.layout(), &Layout::Owned);
/// ```
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Case {
    dtype: DType,
    shape: Vec<usize>,
    layout: Layout,
    /// Shared, not copied, between a case's clones: the rig's worker, the
    /// recent inputs and the suite's records hold the same bytes. A case
    /// past [`HELD_UP_TO_BYTES`] of seeded or patterned values holds none:
    /// they are made from the seed or the pattern where they are needed.
    values: Reference,
    /// A view's whole backing, where it was given whole
    /// ([`Case::view_of_backing`]); `None`: the values at their positions
    /// and a filler elsewhere ([`Case::backing_values`]).
    backing: Option<Arc<[u8]>>,
}

impl std::hash::Hash for Case {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.dtype.hash(state);
        self.shape.hash(state);
        self.layout.hash(state);
        // The same calls whether the values are held or made, as `Eq`
        // compares their bytes either way.
        state.write_usize(self.expected().byte_len());
        self.value_chunks().for_each(|part| state.write(&part));
        self.backing.hash(state);
    }
}

impl Case {
    /// A case from raw little-endian element images.
    ///
    /// # Errors
    ///
    /// Returns [`HarnessError::InvalidCase`] for an external dtype, a value
    /// length that does not match the shape, or a view that does not fit its
    /// backing tensor or whose shape differs from `shape`.
    pub fn new(
        dtype: DType,
        shape: Vec<usize>,
        layout: Layout,
        values: Vec<u8>,
    ) -> Result<Self, HarnessError> {
        let invalid = |reason: String| HarnessError::InvalidCase { reason };
        let bytes = Self::byte_len(dtype, &shape)?;
        if values.len() != bytes {
            return Err(invalid(format!(
                "shape {shape:?} holds {} elements ({bytes} bytes) but {} bytes were given",
                bytes / element_width(dtype).unwrap_or(1),
                values.len()
            )));
        }
        // A bool's only bit patterns are 0 and 1: any other byte cannot be
        // staged as a tensor, so the case could never be what it claims.
        if dtype == DType::Bool
            && let Some((index, byte)) = values.iter().enumerate().find(|(_, byte)| **byte > 1)
        {
            return Err(invalid(format!(
                "Bool element {index} is the byte {byte:#04x}, but a bool is 0x00 or 0x01"
            )));
        }
        Self::check_layout(&shape, &layout)?;
        let values = repeat_broadcast(dtype, &layout, values);
        Ok(Self {
            dtype,
            shape,
            layout,
            values: Reference::Held(values.into()),
            backing: None,
        })
    }

    /// A case whose values are generated from `generated` where they are
    /// compared, not held: `shape` and `layout` are checked as
    /// [`Case::new`] checks them.
    pub(crate) fn generated(
        shape: Vec<usize>,
        layout: Layout,
        generated: Generated,
    ) -> Result<Self, HarnessError> {
        let dtype = generated.dtype();
        let bytes = Self::byte_len(dtype, &shape)?;
        if bytes != generated.byte_len() {
            return Err(HarnessError::InvalidCase {
                reason: format!(
                    "shape {shape:?} holds {bytes} bytes but {} were generated",
                    generated.byte_len()
                ),
            });
        }
        Self::check_layout(&shape, &layout)?;
        if broadcasts(&layout) {
            // A broadcast view's elements repeat: held, so they can.
            let mut values = Vec::with_capacity(bytes);
            generated.fill(0, bytes / element_width(dtype).unwrap_or(1), &mut values);
            return Self::new(dtype, shape, layout, values);
        }
        Ok(Self {
            dtype,
            shape,
            layout,
            values: Reference::Generated(Arc::new(generated)),
            backing: None,
        })
    }

    /// The bytes `shape` holds of `dtype`, or why it holds none.
    pub(crate) fn byte_len(dtype: DType, shape: &[usize]) -> Result<usize, HarnessError> {
        let invalid = |reason: String| HarnessError::InvalidCase { reason };
        let width = element_width(dtype).ok_or_else(|| {
            invalid(format!(
                "dtype {dtype:?} is not one of the seven preset dtypes"
            ))
        })?;
        shape
            .iter()
            .try_fold(width, |bytes, &extent| bytes.checked_mul(extent))
            .ok_or_else(|| invalid(format!("shape {shape:?} overflows")))
    }

    /// Whether a view fits its backing tensor and has the case's shape.
    fn check_layout(shape: &[usize], layout: &Layout) -> Result<(), HarnessError> {
        let invalid = |reason: String| HarnessError::InvalidCase { reason };
        if let Layout::View(spec) = layout {
            spec.validate().map_err(invalid)?;
            let backing = spec
                .backing_shape
                .iter()
                .try_fold(1_usize, |count, &extent| count.checked_mul(extent));
            if backing.is_none_or(|count| count > MAX_BACKING_ELEMENTS) {
                return Err(invalid(format!(
                    "view backing {:?} exceeds {MAX_BACKING_ELEMENTS} elements",
                    spec.backing_shape
                )));
            }
            if spec.shape() != shape {
                return Err(invalid(format!(
                    "view shape {:?} differs from case shape {shape:?}",
                    spec.shape()
                )));
            }
        }
        Ok(())
    }

    /// A view case whose backing is given whole: `backing` holds the
    /// little-endian images of every element of `spec`'s backing tensor,
    /// column-major, and the case's values are those the view reads there.
    /// Two views of one backing at other offsets (or with other strides)
    /// are staged from the same bytes, and read different values: a
    /// provider that knows an input by its backing's bytes alone answers
    /// the second from the first.
    ///
    /// # Errors
    ///
    /// As [`Case::new`], and for a `backing` that is not the view's
    /// backing tensor's size.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::{Case, ViewAxis, ViewSpec};
    ///
    /// let backing: Vec<u8> = [1.0_f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// let view = |first| ViewSpec {
    ///     backing_shape: vec![4],
    ///     axes: vec![ViewAxis { first, step: 1, len: 3 }],
    ///     permutation: vec![],
    /// };
    /// let left = Case::view_of_backing(DType::F32, view(0), backing.clone()).unwrap();
    /// let right = Case::view_of_backing(DType::F32, view(1), backing).unwrap();
    /// assert_eq!(left.backing_values::<f32>(), right.backing_values::<f32>());
    /// assert_eq!(right.typed_values::<f32>(), vec![2.0, 3.0, 4.0]);
    /// ```
    pub fn view_of_backing(
        dtype: DType,
        spec: ViewSpec,
        backing: Vec<u8>,
    ) -> Result<Self, HarnessError> {
        let invalid = |reason: String| HarnessError::InvalidCase { reason };
        let shape = spec.shape();
        let layout = Layout::View(spec);
        Self::check_layout(&shape, &layout)?;
        let Layout::View(spec) = &layout else {
            unreachable!("a view was built just above");
        };
        let width = element_width(dtype).ok_or_else(|| {
            invalid(format!(
                "dtype {dtype:?} is not one of the seven preset dtypes"
            ))
        })?;
        if backing.len() != spec.backing_len() * width {
            return Err(invalid(format!(
                "backing {:?} holds {} bytes of {dtype:?} but {} were given",
                spec.backing_shape,
                spec.backing_len() * width,
                backing.len()
            )));
        }
        if dtype == DType::Bool && backing.iter().any(|byte| *byte > 1) {
            return Err(invalid(
                "a Bool backing holds a byte that is neither 0x00 nor 0x01".to_owned(),
            ));
        }
        let mut values = Vec::with_capacity(shape.iter().product::<usize>() * width);
        for position in spec.positions() {
            values.extend_from_slice(&backing[position * width..(position + 1) * width]);
        }
        let mut case = Self::new(dtype, shape, layout, values)?;
        case.backing = Some(backing.into());
        Ok(case)
    }

    /// An owned case from typed values.
    ///
    /// # Errors
    ///
    /// As [`Case::new`].
    pub fn from_values<T: Element>(
        shape: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Self, HarnessError> {
        let mut bytes = Vec::new();
        T::extend_bytes(&values, &mut bytes);
        Self::new(T::DTYPE, shape, Layout::Owned, bytes)
    }

    /// A case of `shape` filled with a deterministic pattern that mixes the
    /// dtype's special values (NaN payloads, `-0.0`, subnormals, infinities,
    /// integer extremes) with position-dependent bits.
    ///
    /// # Errors
    ///
    /// As [`Case::new`].
    pub fn patterned(
        dtype: DType,
        shape: Vec<usize>,
        layout: Layout,
    ) -> Result<Self, HarnessError> {
        let not_preset = || HarnessError::InvalidCase {
            reason: format!("dtype {dtype:?} is not a preset dtype"),
        };
        let width = element_width(dtype).ok_or_else(not_preset)?;
        let bytes = Self::byte_len(dtype, &shape)?;
        let count = bytes / width;
        if bytes > HELD_UP_TO_BYTES {
            let generated = Generated::patterned(dtype, count).ok_or_else(not_preset)?;
            return Self::generated(shape, layout, generated);
        }
        let values = pattern_bytes(dtype, count).ok_or_else(not_preset)?;
        Self::new(dtype, shape, layout, values)
    }

    /// A case of `dtype`, `shape` and `layout` whose every element is all
    /// zero bytes (`0`, `false`, `+0.0`): what a freshly zeroed tensor
    /// holds, and what a provider that skips sending zeros must still
    /// deliver into memory that held other values. Made, not held, past
    /// 256 KiB.
    ///
    /// # Errors
    ///
    /// As [`Case::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_tensor::DType;
    /// use tenferro_transfer_harness::{Case, Layout};
    ///
    /// let zeros = Case::zeros(DType::C32, vec![3, 2], Layout::Owned).unwrap();
    /// assert!(zeros.values().iter().all(|byte| *byte == 0));
    /// assert_eq!(zeros.values().len(), 6 * 8);
    /// ```
    pub fn zeros(dtype: DType, shape: Vec<usize>, layout: Layout) -> Result<Self, HarnessError> {
        let not_preset = || HarnessError::InvalidCase {
            reason: format!("dtype {dtype:?} is not a preset dtype"),
        };
        let width = element_width(dtype).ok_or_else(not_preset)?;
        let bytes = Self::byte_len(dtype, &shape)?;
        if bytes > HELD_UP_TO_BYTES {
            let generated = Generated::zeros(dtype, bytes / width).ok_or_else(not_preset)?;
            return Self::generated(shape, layout, generated);
        }
        Self::new(dtype, shape, layout, vec![0; bytes])
    }

    /// This case's twin: its values with a twin's few interior elements
    /// changed, chosen by `seed` (held or made, as this case's are).
    pub(crate) fn twinned(&self, seed: u64) -> Result<Self, HarnessError> {
        match self.expected() {
            ReferenceView::Bytes(bytes) => {
                let mut values = bytes.to_vec();
                twin_values(self.dtype, &mut values, seed);
                spread_changes(self.dtype, &self.layout, bytes, &mut values);
                Self::new(self.dtype, self.shape.clone(), self.layout.clone(), values)
            }
            ReferenceView::Generated(generated) => Self::generated(
                self.shape.clone(),
                self.layout.clone(),
                generated.remade().twinned(seed),
            ),
        }
    }

    /// The element dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The source layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Little-endian images of the logical elements, column-major.
    ///
    /// A case past [`HELD_UP_TO_BYTES`] of seeded values
    /// ([`Recipe::case`](crate::strategy::Recipe::case)) or of the pattern
    /// ([`Case::patterned`]) holds none: it makes them here the first time
    /// they are asked for and keeps them. The harness itself reads them a
    /// chunk at a time and never asks; so does [`Case::value_chunks`].
    pub fn values(&self) -> &[u8] {
        self.expected().bytes()
    }

    /// The values a chunk of whole elements at a time, in order: borrowed
    /// where the case holds them, made chunk by chunk where a large case
    /// does not, so that looking through them never holds the whole image.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::Case;
    ///
    /// let case = Case::from_values(vec![3], vec![1.0_f32, -0.0, 2.5]).unwrap();
    /// let bytes: Vec<u8> = case.value_chunks().flat_map(|chunk| chunk.to_vec()).collect();
    /// assert_eq!(bytes, case.values());
    /// ```
    pub fn value_chunks(&self) -> impl Iterator<Item = Cow<'_, [u8]>> + '_ {
        let width = element_width(self.dtype).unwrap_or(1);
        let chunk = GENERATED_AT_ONCE * width;
        let (held, generated) = match self.expected() {
            ReferenceView::Bytes(bytes) => (Some(bytes), None),
            ReferenceView::Generated(generated) => (None, Some(generated)),
        };
        let held = held
            .into_iter()
            .flat_map(move |bytes| bytes.chunks(chunk).map(Cow::Borrowed));
        let made = generated.into_iter().flat_map(move |generated| {
            (0..generated.byte_len() / width)
                .step_by(GENERATED_AT_ONCE)
                .map(move |first| {
                    let mut part = Vec::with_capacity(chunk);
                    generated.fill(first, GENERATED_AT_ONCE, &mut part);
                    Cow::Owned(part)
                })
        });
        held.chain(made)
    }

    /// What a read of the values is compared with: held, or generated a
    /// chunk at a time.
    pub(crate) fn expected(&self) -> ReferenceView<'_> {
        self.values.expected()
    }

    /// The values, shared with the case rather than copied.
    pub(crate) fn shared_values(&self) -> Reference {
        self.values.clone()
    }

    /// Number of logical elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logical values decoded as `T`.
    pub fn typed_values<T: Element>(&self) -> Vec<T> {
        match self.expected() {
            ReferenceView::Bytes(bytes) => T::from_bytes(bytes),
            // A chunk at a time: the image is never made whole.
            ReferenceView::Generated(generated) => {
                let mut values = Vec::with_capacity(self.len());
                generated.for_each_chunk(|chunk| values.extend(T::from_bytes(chunk)));
                values
            }
        }
    }

    /// The backing buffer of a view case: the logical values at their
    /// strided positions, and a filler that differs from them everywhere
    /// else, so a copy that ignores strides or offset reads wrong bits.
    /// A backing given whole ([`Case::view_of_backing`]) is that backing.
    pub fn backing_values<T: Element + Filler>(&self) -> Vec<T> {
        if let Some(backing) = &self.backing {
            return T::from_bytes(backing);
        }
        let values = self.typed_values::<T>();
        match &self.layout {
            Layout::Owned => values,
            Layout::View(spec) => {
                let mut backing = vec![T::FILLER; spec.backing_len()];
                for (value, position) in values.into_iter().zip(spec.positions()) {
                    backing[position] = value;
                }
                backing
            }
        }
    }

    /// A short description of the layout for reports, e.g. `owned` or
    /// `view(backing=[5, 4], strides=[-2, 5], offset=4)`.
    pub fn layout_label(&self) -> String {
        self.layout.label()
    }
}

/// The largest backing tensor a view case may have (64 Mi elements).
pub const MAX_BACKING_ELEMENTS: usize = 1 << 26;

/// The value a view's backing buffer holds outside the view.
pub trait Filler {
    /// A bit pattern that no generated value uses at index 0.
    const FILLER: Self;
}

impl Filler for f32 {
    const FILLER: Self = f32::from_bits(0x7fa5_a5a5);
}
impl Filler for f64 {
    const FILLER: Self = f64::from_bits(0x7ff5_a5a5_a5a5_a5a5);
}
impl Filler for i32 {
    const FILLER: Self = 0x5a5a_5a5a;
}
impl Filler for i64 {
    const FILLER: Self = 0x5a5a_5a5a_5a5a_5a5a;
}
impl Filler for bool {
    const FILLER: Self = true;
}
impl Filler for Complex<f32> {
    const FILLER: Self = Complex::new(f32::FILLER, f32::FILLER);
}
impl Filler for Complex<f64> {
    const FILLER: Self = Complex::new(f64::FILLER, f64::FILLER);
}

/// Whether `layout` is a view that repeats elements (a zero step).
fn broadcasts(layout: &Layout) -> bool {
    matches!(layout, Layout::View(spec) if spec.broadcasts())
}

/// `values` where every element a broadcast view reads again from the same
/// backing position holds the value of its first reading: what the view
/// shows, since one backing element can hold one value. Other layouts'
/// values are returned as they are.
fn repeat_broadcast(dtype: DType, layout: &Layout, mut values: Vec<u8>) -> Vec<u8> {
    let (Layout::View(spec), Some(width)) = (layout, element_width(dtype)) else {
        return values;
    };
    if !broadcasts(layout) {
        return values;
    }
    let mut first_reading = std::collections::HashMap::new();
    for (index, position) in spec.positions().into_iter().enumerate() {
        let first = *first_reading.entry(position).or_insert(index);
        if first != index {
            values.copy_within(first * width..(first + 1) * width, index * width);
        }
    }
    values
}

/// A broadcast view's twin: each element the twin changed (in `twin`,
/// against `case`) is changed in every reading of its backing element, so
/// the twin differs from its case wherever it changed one reading; a
/// change to the backing element of the first or the last element is
/// undone, as a twin keeps those.
fn spread_changes(dtype: DType, layout: &Layout, case: &[u8], twin: &mut [u8]) {
    let (Layout::View(spec), Some(width)) = (layout, element_width(dtype)) else {
        return;
    };
    if !broadcasts(layout) {
        return;
    }
    let positions = spec.positions();
    let (Some(first), Some(last)) = (positions.first(), positions.last()) else {
        return;
    };
    let mut changed = std::collections::HashMap::new();
    for (index, position) in positions.iter().enumerate() {
        let element = index * width..(index + 1) * width;
        if case[element.clone()] != twin[element] && position != first && position != last {
            changed.entry(*position).or_insert(index);
        }
    }
    for (index, position) in positions.iter().enumerate() {
        let element = index * width..(index + 1) * width;
        match changed.get(position) {
            Some(&source) => twin.copy_within(source * width..(source + 1) * width, index * width),
            None => twin[element.clone()].copy_from_slice(&case[element]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(case: &Case) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        case.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn a_made_case_equals_and_hashes_as_its_values_held() {
        let shape = vec![HELD_UP_TO_BYTES / 8 + 5];
        let made = Case::patterned(DType::F64, shape.clone(), Layout::Owned).unwrap();
        assert!(matches!(made.values, Reference::Generated(_)));
        let bytes = Case::patterned(DType::F64, shape.clone(), Layout::Owned)
            .unwrap()
            .values()
            .to_vec();
        let held = Case::new(DType::F64, shape.clone(), Layout::Owned, bytes.clone()).unwrap();
        assert_eq!(made, held);
        assert_eq!(hash_of(&made), hash_of(&held));
        let mut changed = bytes;
        changed[8 * 4096 + 3] ^= 1;
        let changed = Case::new(DType::F64, shape, Layout::Owned, changed).unwrap();
        assert_ne!(made, changed);
        assert_ne!(hash_of(&made), hash_of(&changed));
    }

    #[test]
    fn a_bool_byte_other_than_zero_or_one_is_an_invalid_case() {
        let error = Case::new(DType::Bool, vec![3], Layout::Owned, vec![0, 1, 0xc0]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("Bool element 2 is the byte 0xc0, but a bool is 0x00 or 0x01"),
            "{error}"
        );
        assert!(Case::new(DType::Bool, vec![3], Layout::Owned, vec![0, 1, 1]).is_ok());
    }
}
