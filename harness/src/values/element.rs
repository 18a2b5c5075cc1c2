//! The seven preset element types, their dtypes and their exact byte images.
//!
//! Values travel through the harness as little-endian bytes so that a check is
//! bit-exact by construction: NaN payloads, `-0.0` and subnormals compare by
//! their bits, never by `==`.

use std::fmt::Debug;

use tenferro_tensor::{Complex, DType, TensorScalar, TensorView, TypedTensorView};

/// One of the seven preset scalar types a transfer must carry bit-exactly.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::Element;
///
/// let mut bytes = Vec::new();
/// f32::extend_bytes(&[-0.0_f32], &mut bytes);
/// assert_eq!(bytes, (-0.0_f32).to_le_bytes());
/// assert_eq!(f32::from_bytes(&bytes), vec![-0.0_f32]);
/// ```
pub trait Element: TensorScalar + Copy + Debug + Send + Sync + 'static {
    /// The tenferro dtype of this type.
    const DTYPE: DType;
    /// Bytes per element in the little-endian image.
    const WIDTH: usize;
    /// What simulated device memory holds before a copy lands in it: a
    /// pattern no correct transfer of the harness's values produces by
    /// accident (`0xdb` bytes; a negative NaN with a payload for floats).
    const POISON: Self;

    /// Append the little-endian image of `values` to `out`.
    fn extend_bytes(values: &[Self], out: &mut Vec<u8>);

    /// Decode a little-endian image; a trailing partial element is ignored.
    fn from_bytes(bytes: &[u8]) -> Vec<Self>;

    /// The typed view inside an erased view, if it holds this type.
    fn typed_view(view: TensorView<'_>) -> Option<TypedTensorView<'_, Self>>;

    /// Wrap a typed view back into the erased enum.
    fn erase_view(view: TypedTensorView<'_, Self>) -> TensorView<'_>;
}

/// The little-endian image of plain numbers (and complex pairs of them,
/// real part first): on a little-endian machine their memory is that
/// image, so one slice copy does; elsewhere each element is byte-swapped.
fn extend_pod_bytes<T: bytemuck::Pod + ToLe>(values: &[T], out: &mut Vec<u8>) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(values));
    } else {
        out.reserve(std::mem::size_of_val(values));
        for value in values {
            out.extend_from_slice(bytemuck::bytes_of(&value.to_le()));
        }
    }
}

/// Decode a little-endian image (a trailing partial element is ignored);
/// the bytes need not be aligned for `T`.
fn pod_from_bytes<T: bytemuck::Pod + ToLe>(bytes: &[u8]) -> Vec<T> {
    let whole = bytes.len() - bytes.len() % std::mem::size_of::<T>();
    let mut values = vec![T::zeroed(); whole / std::mem::size_of::<T>()];
    bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(&bytes[..whole]);
    if cfg!(target_endian = "big") {
        for value in &mut values {
            *value = value.to_le();
        }
    }
    values
}

/// Swap a value between native and little-endian byte order (a no-op on
/// little-endian machines; its own inverse).
trait ToLe: Copy {
    fn to_le(self) -> Self;
}

macro_rules! to_le_bits {
    ($($ty:ty => $bits:ty),*) => {$(
        impl ToLe for $ty {
            fn to_le(self) -> Self {
                <$ty>::from_bits(<$bits>::to_le(self.to_bits()))
            }
        }
    )*};
}
to_le_bits!(f32 => u32, f64 => u64);

impl ToLe for i32 {
    fn to_le(self) -> Self {
        i32::to_le(self)
    }
}

impl ToLe for i64 {
    fn to_le(self) -> Self {
        i64::to_le(self)
    }
}

impl<T: ToLe> ToLe for Complex<T> {
    fn to_le(self) -> Self {
        Complex::new(self.re.to_le(), self.im.to_le())
    }
}

/// `Element` for a plain-old-data type of `$width` bytes: its bytes are
/// its little-endian image, and tenferro views it as `TensorView::$dtype`.
macro_rules! pod_element {
    ($ty:ty, $dtype:ident, $width:expr, $poison:expr) => {
        impl Element for $ty {
            const DTYPE: DType = DType::$dtype;
            const WIDTH: usize = $width;
            const POISON: Self = $poison;

            fn extend_bytes(values: &[Self], out: &mut Vec<u8>) {
                extend_pod_bytes(values, out);
            }

            fn from_bytes(bytes: &[u8]) -> Vec<Self> {
                pod_from_bytes(bytes)
            }

            fn typed_view(view: TensorView<'_>) -> Option<TypedTensorView<'_, Self>> {
                match view {
                    TensorView::$dtype(view) => Some(view),
                    _ => None,
                }
            }

            fn erase_view(view: TypedTensorView<'_, Self>) -> TensorView<'_> {
                TensorView::$dtype(view)
            }
        }
    };
}

pod_element!(f32, F32, 4, f32::from_bits(0xffdb_dbdb));
pod_element!(f64, F64, 8, f64::from_bits(0xffdb_dbdb_dbdb_dbdb));
pod_element!(i32, I32, 4, 0xdbdb_dbdb_u32 as i32);
pod_element!(i64, I64, 8, 0xdbdb_dbdb_dbdb_dbdb_u64 as i64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const WIDTH: usize = 1;
    const POISON: Self = true;

    fn extend_bytes(values: &[Self], out: &mut Vec<u8>) {
        out.extend(values.iter().map(|&value| u8::from(value)));
    }

    fn from_bytes(bytes: &[u8]) -> Vec<Self> {
        bytes.iter().map(|&byte| byte != 0).collect()
    }

    fn typed_view(view: TensorView<'_>) -> Option<TypedTensorView<'_, Self>> {
        match view {
            TensorView::Bool(view) => Some(view),
            _ => None,
        }
    }

    fn erase_view(view: TypedTensorView<'_, Self>) -> TensorView<'_> {
        TensorView::Bool(view)
    }
}

// A complex element is two parts of its real type, side by side.
pod_element!(Complex<f32>, C32, 8, Complex::new(f32::POISON, f32::POISON));
pod_element!(
    Complex<f64>,
    C64,
    16,
    Complex::new(f64::POISON, f64::POISON)
);

/// The seven preset dtypes, in a fixed order used by every report.
pub const PRESET_DTYPES: [DType; 7] = [
    DType::F32,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::Bool,
    DType::C32,
    DType::C64,
];

/// Bytes per element of a preset dtype, `None` for an external dtype.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::element_width;
/// use tenferro_tensor::DType;
///
/// assert_eq!(element_width(DType::C64), Some(16));
/// assert_eq!(element_width(DType::Bool), Some(1));
/// ```
pub fn element_width(dtype: DType) -> Option<usize> {
    match dtype {
        DType::F32 | DType::I32 => Some(4),
        DType::F64 | DType::I64 | DType::C32 => Some(8),
        DType::Bool => Some(1),
        DType::C64 => Some(16),
        _ => None,
    }
}

/// Run `$body` with `$T` bound to the Rust type of a preset dtype; an
/// external dtype evaluates `$external` instead.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{with_element, Element};
/// use tenferro_tensor::DType;
///
/// let width = with_element!(DType::I64, T => T::WIDTH, external => 0);
/// assert_eq!(width, 8);
/// ```
#[macro_export]
macro_rules! with_element {
    ($dtype:expr, $T:ident => $body:expr, external => $external:expr) => {
        match $dtype {
            $crate::reexports::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::reexports::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::reexports::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::reexports::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::reexports::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::reexports::DType::C32 => {
                type $T = $crate::reexports::Complex<f32>;
                $body
            }
            $crate::reexports::DType::C64 => {
                type $T = $crate::reexports::Complex<f64>;
                $body
            }
            _ => $external,
        }
    };
}
