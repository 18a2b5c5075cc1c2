//! `Case`: one tensor to transfer: dtype, shape, layout and values.

use std::sync::Arc;

use crate::{Element, element_width};
use serde::{Deserialize, Serialize};
use tenferro_tensor::{Complex, DType};

use crate::HarnessError;

/// One axis of a strided view: the backing coordinate of its first element,
/// the step between elements (negative walks backwards) and its extent.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
pub struct ViewAxis {
    /// Backing coordinate of the view's first element on this axis.
    pub first: usize,
    /// Backing elements between neighbours; never zero.
    pub step: isize,
    /// Extent of the view on this axis.
    pub len: usize,
}

/// A strided view over a compact column-major backing tensor: each backing
/// axis sliced by a [`ViewAxis`], then the sliced axes permuted.
///
/// tenferro builds the view itself (`slice_view`, `transpose_view`), so every
/// layout a `ViewSpec` describes is one tenferro accepts.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
pub struct ViewSpec {
    /// Shape of the backing tensor.
    pub backing_shape: Vec<usize>,
    /// One slice per backing axis.
    pub axes: Vec<ViewAxis>,
    /// Output axis `j` is sliced axis `permutation[j]`; empty for identity.
    pub permutation: Vec<usize>,
}

impl ViewSpec {
    /// The logical shape of the view.
    pub fn shape(&self) -> Vec<usize> {
        let sliced: Vec<usize> = self.axes.iter().map(|axis| axis.len).collect();
        if self.permutation.is_empty() {
            sliced
        } else {
            self.permutation.iter().map(|&axis| sliced[axis]).collect()
        }
    }

    /// Strides of the view in elements, as tenferro reports them.
    pub fn strides(&self) -> Vec<isize> {
        let mut compact = 1_isize;
        let sliced: Vec<isize> = self
            .backing_shape
            .iter()
            .zip(&self.axes)
            .map(|(&extent, axis)| {
                let stride = compact * axis.step;
                compact *= extent as isize;
                stride
            })
            .collect();
        if self.permutation.is_empty() {
            sliced
        } else {
            self.permutation.iter().map(|&axis| sliced[axis]).collect()
        }
    }

    /// Offset of the view's first element in the backing buffer.
    pub fn offset(&self) -> isize {
        let mut compact = 1_isize;
        let mut offset = 0_isize;
        for (&extent, axis) in self.backing_shape.iter().zip(&self.axes) {
            offset += compact * axis.first as isize;
            compact *= extent as isize;
        }
        offset
    }

    /// Elements in the backing buffer.
    pub fn backing_len(&self) -> usize {
        self.backing_shape.iter().product()
    }

    /// Backing position of every logical element, in column-major order of
    /// the logical shape.
    pub fn positions(&self) -> Vec<usize> {
        let shape = self.shape();
        let count: usize = shape.iter().product();
        let mut backing_strides = Vec::with_capacity(self.backing_shape.len());
        let mut stride = 1_usize;
        for &extent in &self.backing_shape {
            backing_strides.push(stride);
            stride *= extent;
        }
        let sliced_axis = |logical: usize| {
            if self.permutation.is_empty() {
                logical
            } else {
                self.permutation[logical]
            }
        };
        let mut positions = Vec::with_capacity(count);
        let mut index = vec![0_usize; shape.len()];
        for _ in 0..count {
            let mut position = 0_isize;
            for (logical, &i) in index.iter().enumerate() {
                let axis = sliced_axis(logical);
                let spec = &self.axes[axis];
                let coordinate = spec.first as isize + spec.step * i as isize;
                position += coordinate * backing_strides[axis] as isize;
            }
            positions.push(position as usize);
            for axis in 0..shape.len() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        positions
    }

    fn validate(&self) -> Result<(), String> {
        if self.axes.len() != self.backing_shape.len() {
            return Err("one view axis per backing axis".into());
        }
        for (axis, (spec, &extent)) in self.axes.iter().zip(&self.backing_shape).enumerate() {
            if spec.step == 0 {
                return Err(format!("axis {axis}: step must not be zero"));
            }
            if spec.len == 0 {
                continue;
            }
            let last = spec.first as isize + spec.step * (spec.len as isize - 1);
            if spec.first >= extent || last < 0 || last >= extent as isize {
                return Err(format!(
                    "axis {axis}: view reaches outside the backing extent {extent}"
                ));
            }
        }
        if !self.permutation.is_empty() {
            let mut seen = self.permutation.clone();
            seen.sort_unstable();
            if seen != (0..self.axes.len()).collect::<Vec<_>>() {
                return Err("permutation must list every axis once".into());
            }
        }
        Ok(())
    }
}

/// How the input tensor is laid out on the source.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Layout {
    /// An owned compact column-major tensor.
    Owned,
    /// A strided view into a larger backing tensor.
    View(ViewSpec),
}

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
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub struct Case {
    dtype: DType,
    shape: Vec<usize>,
    layout: Layout,
    /// Shared, not copied, between a case's clones: the rig's worker, the
    /// recent inputs and the suite's records hold the same bytes.
    values: Arc<[u8]>,
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
        let width = element_width(dtype).ok_or_else(|| {
            invalid(format!(
                "dtype {dtype:?} is not one of the seven preset dtypes"
            ))
        })?;
        let count = shape
            .iter()
            .try_fold(1_usize, |count, &extent| count.checked_mul(extent))
            .ok_or_else(|| invalid(format!("shape {shape:?} overflows")))?;
        if values.len() != count * width {
            return Err(invalid(format!(
                "shape {shape:?} holds {count} elements ({} bytes) but {} bytes were given",
                count * width,
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
        if let Layout::View(spec) = &layout {
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
        Ok(Self {
            dtype,
            shape,
            layout,
            values: values.into(),
        })
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
        let count: usize = shape.iter().product();
        let values = pattern_bytes(dtype, count).ok_or_else(|| HarnessError::InvalidCase {
            reason: format!("dtype {dtype:?} is not a preset dtype"),
        })?;
        Self::new(dtype, shape, layout, values)
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
    pub fn values(&self) -> &[u8] {
        &self.values
    }

    /// The values, shared with the case rather than copied.
    pub(crate) fn shared_values(&self) -> Arc<[u8]> {
        Arc::clone(&self.values)
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
        T::from_bytes(&self.values)
    }

    /// The backing buffer of a view case: the logical values at their
    /// strided positions, and a filler that differs from them everywhere
    /// else, so a copy that ignores strides or offset reads wrong bits.
    pub fn backing_values<T: Element + Filler>(&self) -> Vec<T> {
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

impl Layout {
    /// A short description for reports, e.g. `owned` or
    /// `view(backing=[7, 6], first=[1, 5], step=[2, -2])`.
    pub fn label(&self) -> String {
        match self {
            Layout::Owned => "owned".to_owned(),
            Layout::View(spec) => {
                let steps: Vec<isize> = spec.axes.iter().map(|axis| axis.step).collect();
                let firsts: Vec<usize> = spec.axes.iter().map(|axis| axis.first).collect();
                let mut label = format!(
                    "view(backing={:?}, first={firsts:?}, step={steps:?}",
                    spec.backing_shape
                );
                if !spec.permutation.is_empty() {
                    label.push_str(&format!(", perm={:?}", spec.permutation));
                }
                label.push(')');
                label
            }
        }
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

pub(crate) const F32_SPECIALS: [u32; 10] = [
    0x3fc0_0000, // 1.5
    0x7fc0_1234, // quiet NaN with payload
    0x8000_0000, // -0.0
    0x0000_0001, // smallest subnormal
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x7fa0_0001, // signalling NaN
    0x7f7f_ffff, // MAX
    0xff7f_ffff, // MIN
    0x807f_ffff, // largest negative subnormal
];
pub(crate) const F64_SPECIALS: [u64; 10] = [
    0x3ff8_0000_0000_0000,
    0x7ff8_0000_dead_beef,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff4_0000_0000_0001,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
    0x800f_ffff_ffff_ffff,
];

/// A cheap, well-mixed 64-bit hash of an index (splitmix64).
pub(crate) fn mix(index: u64) -> u64 {
    let mut z = index.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Element `i` of the pattern: a special value every other element,
/// position-dependent bits in between.
fn pattern_bytes(dtype: DType, count: usize) -> Option<Vec<u8>> {
    let width = element_width(dtype)?;
    let mut out = Vec::with_capacity(count * width);
    for i in 0..count {
        let bits = mix(i as u64);
        let special = (i % 2 == 0).then_some(i / 2);
        match dtype {
            DType::F32 => out.extend_from_slice(&f32_bits(special, bits).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&f64_bits(special, bits).to_le_bytes()),
            DType::I32 => {
                let value = match special.map(|k| k % 4) {
                    Some(0) => 7,
                    Some(1) => i32::MIN,
                    Some(2) => i32::MAX,
                    Some(_) => -1,
                    None => bits as i32,
                };
                out.extend_from_slice(&value.to_le_bytes());
            }
            DType::I64 => {
                let value = match special.map(|k| k % 4) {
                    Some(0) => 7,
                    Some(1) => i64::MIN,
                    Some(2) => i64::MAX,
                    Some(_) => -1,
                    None => bits as i64,
                };
                out.extend_from_slice(&value.to_le_bytes());
            }
            // Index 0 is false so it differs from the backing filler.
            DType::Bool => out.push(u8::from(i % 3 == 1)),
            DType::C32 => {
                out.extend_from_slice(&f32_bits(special, bits).to_le_bytes());
                out.extend_from_slice(&f32_bits(special.map(|k| k + 3), bits >> 32).to_le_bytes());
            }
            DType::C64 => {
                out.extend_from_slice(&f64_bits(special, bits).to_le_bytes());
                out.extend_from_slice(
                    &f64_bits(special.map(|k| k + 3), bits.rotate_left(17)).to_le_bytes(),
                );
            }
            _ => return None,
        }
    }
    Some(out)
}

fn f32_bits(special: Option<usize>, bits: u64) -> u32 {
    match special {
        Some(k) => F32_SPECIALS[k % F32_SPECIALS.len()],
        None => bits as u32,
    }
}

fn f64_bits(special: Option<usize>, bits: u64) -> u64 {
    match special {
        Some(k) => F64_SPECIALS[k % F64_SPECIALS.len()],
        None => bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
