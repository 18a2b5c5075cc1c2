//! Deliberately broken providers: each wraps a correct provider and breaks
//! exactly one rule of the contract (or a chosen few), so they are the
//! living examples of what each rule means and the proof that the checker
//! catches what it claims to.
//!
//! One file past 600 lines on purpose: the `Fault` vocabulary and the one
//! provider that injects it are one idea, and each fault's rewrite is a few
//! lines over helpers they share (hostile storage lives in `hostile.rs`).

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, DType, Error, HostAccessError, HostReadGuard,
    HostWriteGuard, MemoryKind, Placement, StorageBuffer, Tensor, TensorRead, TypedTensor,
};

use super::hostile::{Hostility, hostile};
use crate::{
    AllocationLedger, Element, SIM_FAMILY, SimStorage, compact_strides, strided_positions,
    with_element,
};

/// Backend family a [`Fault::WrongFamily`] output claims.
pub const FORGED_FAMILY: &str = "tenferro-mock.forged";

/// One way to break the contract.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
#[non_exhaustive]
pub enum Fault {
    /// `dtype`: the output has another dtype (an f32 input comes back f64;
    /// f64 comes back f32, i32 as i64, i64 as i32, bool as i32, c32 as c64,
    /// c64 as c32).
    WrongDtype,
    /// `shape`: the output gains a trailing axis of extent one.
    RankChanged,
    /// `shape`: the output's dimensions are reversed.
    DimsPermuted,
    /// `buffer-length`: the output buffer reports one element more than it
    /// holds, after the tensor was built.
    LyingLength,
    /// `placement`: the output claims unpinned host memory on a device route.
    HostPlacement,
    /// `placement`: the output claims the next device ordinal.
    WrongOrdinal,
    /// `residency`: the destination's backend family over a foreign
    /// allocation domain.
    ForeignDomain,
    /// `residency`: the destination's allocation domain with a forged
    /// backend family.
    WrongFamily,
    /// `values`: element 0 is one unit in the last place off (its bits
    /// plus one; a bool is flipped).
    OneUlp,
    /// `values`: every NaN is replaced by the canonical quiet NaN, losing
    /// its payload.
    CanonicalNan,
    /// `values`: every `-0.0` becomes `+0.0`.
    NegativeZeroLost,
    /// `values`: element 0 is swapped with the first element whose bits
    /// differ from it.
    Swapped,
    /// `values`: a view is copied as if it were compact from its offset.
    IgnoreStrides,
    /// `values`: a view is copied with its strides but from offset zero.
    IgnoreOffset,
    /// `no-error`: returns `Err` for a valid input.
    ErrOnValid,
    /// `values`, in a narrow corner: element 0 is one ULP off, but only for
    /// C64 tensors of rank 2 or more whose last dimension is odd.
    CornerC64OddLastDim,
    /// `values`, in a narrow corner: only the last element is one ULP off,
    /// and only when the input is a view with a non-zero offset.
    CornerLastOfOffsetView,
    /// `values`, in a narrow corner: element 0 is one ULP off, but only when
    /// the tensor holds more than 4096 elements.
    CornerAbove4096,
    /// `no-panic`: panics.
    Panic,
    /// `completion`: returns after queueing the final copy into device
    /// memory, without waiting for it (the classic forgotten synchronize).
    /// Only device destinations can show it.
    EarlyReturn,
    /// `values`: only the first half of the elements arrive; the rest keep
    /// the device's poison.
    PartialCopy,
    /// `no-leak`: keeps a staging allocation of the transfer alive forever.
    Leaky,
    /// `deadline`: never returns until the harness's watchdog releases it.
    Hang,
    /// `no-panic`: queues a copy into device memory and panics while it is
    /// in flight (on host destinations, panics after the copy).
    PanicMidCopy,
    /// `no-panic`: the returned device storage panics in `map_read` (a
    /// plain host output has no storage of the provider's: unchanged).
    PanickingMapRead,
    /// `no-panic`: the returned device storage panics in `len` (host
    /// outputs unchanged).
    PanickingLen,
    /// `no-panic`: dropping the returned device storage panics (host
    /// outputs unchanged).
    PanickingDrop,
    /// `buffer-length`: the returned device storage's `len` is right the
    /// first time it is asked and one more every later time (host outputs
    /// unchanged).
    UnstableLength,
    /// `values`: the returned device storage's `map_read` hands out every
    /// element but the last, though `len` counts them all (host outputs
    /// unchanged).
    ShortMapRead,
}

impl Fault {
    /// Every fault, in declaration order.
    pub const ALL: [Fault; 29] = [
        Fault::WrongDtype,
        Fault::RankChanged,
        Fault::DimsPermuted,
        Fault::LyingLength,
        Fault::HostPlacement,
        Fault::WrongOrdinal,
        Fault::ForeignDomain,
        Fault::WrongFamily,
        Fault::OneUlp,
        Fault::CanonicalNan,
        Fault::NegativeZeroLost,
        Fault::Swapped,
        Fault::IgnoreStrides,
        Fault::IgnoreOffset,
        Fault::ErrOnValid,
        Fault::CornerC64OddLastDim,
        Fault::CornerLastOfOffsetView,
        Fault::CornerAbove4096,
        Fault::Panic,
        Fault::EarlyReturn,
        Fault::PartialCopy,
        Fault::Leaky,
        Fault::Hang,
        Fault::PanicMidCopy,
        Fault::PanickingMapRead,
        Fault::PanickingLen,
        Fault::PanickingDrop,
        Fault::UnstableLength,
        Fault::ShortMapRead,
    ];

    /// A stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::WrongDtype => "wrong-dtype",
            Fault::RankChanged => "rank-changed",
            Fault::DimsPermuted => "dims-permuted",
            Fault::LyingLength => "lying-length",
            Fault::HostPlacement => "host-placement",
            Fault::WrongOrdinal => "wrong-ordinal",
            Fault::ForeignDomain => "foreign-domain",
            Fault::WrongFamily => "wrong-family",
            Fault::OneUlp => "one-ulp",
            Fault::CanonicalNan => "canonical-nan",
            Fault::NegativeZeroLost => "negative-zero-lost",
            Fault::Swapped => "swapped",
            Fault::IgnoreStrides => "ignore-strides",
            Fault::IgnoreOffset => "ignore-offset",
            Fault::ErrOnValid => "err-on-valid",
            Fault::CornerC64OddLastDim => "corner-c64-odd-last-dim",
            Fault::CornerLastOfOffsetView => "corner-last-of-offset-view",
            Fault::CornerAbove4096 => "corner-above-4096",
            Fault::Panic => "panic",
            Fault::EarlyReturn => "early-return",
            Fault::PartialCopy => "partial-copy",
            Fault::Leaky => "leaky",
            Fault::Hang => "hang",
            Fault::PanicMidCopy => "panic-mid-copy",
            Fault::PanickingMapRead => "panicking-map-read",
            Fault::PanickingLen => "panicking-len",
            Fault::PanickingDrop => "panicking-drop",
            Fault::UnstableLength => "unstable-length",
            Fault::ShortMapRead => "short-map-read",
        }
    }

    /// The fault called `name` (see [`Fault::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::providers::Fault;
    ///
    /// assert_eq!(Fault::from_name("one-ulp"), Some(Fault::OneUlp));
    /// assert_eq!(Fault::from_name("no-such-fault"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|fault| fault.name() == name)
    }

    fn corrupts_values(self) -> bool {
        matches!(
            self,
            Fault::OneUlp
                | Fault::CornerC64OddLastDim
                | Fault::CornerLastOfOffsetView
                | Fault::CornerAbove4096
                | Fault::CanonicalNan
                | Fault::NegativeZeroLost
                | Fault::Swapped
                | Fault::IgnoreStrides
                | Fault::IgnoreOffset
                | Fault::PartialCopy
        )
    }

    /// How the returned storage misbehaves, for the storage faults.
    fn hostility(self) -> Option<Hostility> {
        match self {
            Fault::PanickingMapRead => Some(Hostility::PanicInMapRead),
            Fault::PanickingLen => Some(Hostility::PanicInLen),
            Fault::PanickingDrop => Some(Hostility::PanicInDrop),
            Fault::UnstableLength => Some(Hostility::UnstableLength),
            Fault::ShortMapRead => Some(Hostility::ShortMapRead),
            _ => None,
        }
    }

    fn breaks_metadata(self) -> bool {
        matches!(
            self,
            Fault::WrongDtype
                | Fault::RankChanged
                | Fault::DimsPermuted
                | Fault::LyingLength
                | Fault::HostPlacement
                | Fault::WrongOrdinal
                | Fault::ForeignDomain
                | Fault::WrongFamily
        )
    }
}

/// A correct provider with faults injected into what it returns.
///
/// Value faults rewrite the correct output in place; metadata faults then
/// rebuild it. Outputs must be plain host tensors or [`SimStorage`] (what
/// this crate's and the harness's reference providers return).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_mock_devices::providers::{Broken, Fault};
/// use tenferro_mock_devices::{SimDevice, SimUpload};
///
/// let device = SimDevice::new(0).unwrap();
/// let broken = Broken::new(Arc::new(SimUpload::new(device)), vec![Fault::WrongDtype, Fault::HostPlacement]);
/// assert_eq!(broken.name(), "wrong-dtype+host-placement");
/// ```
#[derive(Debug)]
pub struct Broken {
    name: String,
    inner: Arc<dyn TransferProvider>,
    faults: Vec<Fault>,
    leaked: Mutex<Vec<Box<dyn Any + Send + Sync>>>,
}

impl Broken {
    /// `inner` with `faults` injected.
    pub fn new(inner: Arc<dyn TransferProvider>, faults: Vec<Fault>) -> Self {
        let name = faults
            .iter()
            .map(|fault| fault.name())
            .collect::<Vec<_>>()
            .join("+");
        Self {
            name,
            inner,
            faults,
            leaked: Mutex::new(Vec::new()),
        }
    }

    /// The faults' names joined by `+`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The injected faults.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }
}

impl TransferProvider for Broken {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "Broken::transfer_blocking";
        if self.faults.contains(&Fault::Panic) {
            panic!("injected panic in broken provider `{}`", self.name);
        }
        if self.faults.contains(&Fault::Hang) {
            crate::hold::park_until_released();
            return Err(
                Error::runtime_state(OP, "injected hang was released by the harness").into(),
            );
        }
        if self.faults.contains(&Fault::ErrOnValid) {
            return Err(Error::runtime_state(OP, "injected failure on a valid input").into());
        }
        let input = request.input().clone();
        let mut output = self.inner.transfer_blocking(request)?;
        for &fault in self.faults.iter().filter(|fault| fault.corrupts_values()) {
            with_element!(output.dtype(), T => corrupt_values::<T>(fault, &input, &mut output)?,
                external => return Err(Error::unsupported(OP, "preset dtypes only").into()));
        }
        for &fault in self.faults.iter().filter(|fault| fault.breaks_metadata()) {
            output = with_element!(output.dtype(), T => break_metadata::<T>(fault, output)?,
                external => return Err(Error::unsupported(OP, "preset dtypes only").into()));
        }
        if let Some(hostility) = self.faults.iter().find_map(|fault| fault.hostility()) {
            output = with_element!(output.dtype(), T => {
                let values = values_of::<T>(&output)?;
                hostile::<T>(output, values, hostility)?
            }, external => return Err(Error::unsupported(OP, "preset dtypes only").into()));
        }
        if self.faults.contains(&Fault::Leaky) {
            let staging = with_element!(output.dtype(), T => staging::<T>(&input, &output),
                external => None);
            if let Some(staging) = staging {
                self.leaked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(staging);
            }
        }
        let requeue = self.faults.contains(&Fault::EarlyReturn);
        let panic_mid_copy = self.faults.contains(&Fault::PanicMidCopy);
        if requeue || panic_mid_copy {
            let pending = with_element!(output.dtype(), T => requeue_without_waiting::<T>(&output)?,
                external => None);
            if panic_mid_copy {
                let _in_flight = pending;
                panic!(
                    "injected panic in broken provider `{}` with a copy in flight",
                    self.name
                );
            }
            if let Some(pending) = pending {
                output = pending;
            }
        }
        Ok(output)
    }
}

/// A fresh copy of a device output, queued and not waited on (`None` for a
/// host output, which has no queue).
fn requeue_without_waiting<T: Element>(output: &Tensor) -> tenferro_tensor::Result<Option<Tensor>> {
    let Some(device) = sim_storage::<T>(output).and_then(SimStorage::device) else {
        return Ok(None);
    };
    let (tensor, token) = device
        .stream(0)
        .enqueue_copy(output.shape().to_vec(), values_of::<T>(output)?)?;
    // The bug: the token is dropped instead of waited on.
    drop(token);
    Ok(Some(tensor))
}

/// A staging allocation like the one a real provider makes: in the
/// output's memory when it is simulated, else in the input's.
fn staging<T: Element>(
    input: &TensorRead<'_>,
    output: &Tensor,
) -> Option<Box<dyn Any + Send + Sync>> {
    let len = output.shape().iter().product::<usize>();
    if let Some(storage) = sim_storage::<T>(output) {
        return Some(Box::new(storage.sibling(vec![T::POISON; len])));
    }
    let view = T::typed_view(input.clone().tensor_view())?;
    let storage = view
        .backend_buffer()?
        .as_any()
        .downcast_ref::<SimStorage<T>>()?;
    Some(Box::new(storage.sibling(vec![T::POISON; len])))
}

/// The values of a compact tensor, host or backend.
fn values_of<T: Element>(output: &Tensor) -> tenferro_tensor::Result<Vec<T>> {
    const OP: &str = "Broken::values_of";
    let typed = output
        .as_typed::<T>()
        .ok_or_else(|| Error::dtype_mismatch(OP, T::DTYPE, output.dtype()))?;
    match typed.buffer() {
        StorageBuffer::Host(values) => Ok(values.clone()),
        StorageBuffer::Backend(storage) => Ok(storage
            .map_read()
            .map_err(|error| Error::host_access(OP, error))?
            .to_vec()),
    }
}

fn write_values<T: Element>(output: &mut Tensor, values: &[T]) -> tenferro_tensor::Result<()> {
    const OP: &str = "Broken::write_values";
    let typed = output
        .as_typed_mut::<T>()
        .ok_or_else(|| Error::dtype_mismatch(OP, T::DTYPE, T::DTYPE))?;
    match typed.backend_buffer_mut() {
        Some(storage) => storage
            .map_write()
            .map_err(|error| Error::host_access(OP, error))?
            .copy_from_slice(values)
            .map_err(|error| Error::host_access(OP, error)),
        None => {
            typed.host_data_mut()?.copy_from_slice(values);
            Ok(())
        }
    }
}

fn corrupt_values<T: Element>(
    fault: Fault,
    input: &TensorRead<'_>,
    output: &mut Tensor,
) -> tenferro_tensor::Result<()> {
    let values = values_of::<T>(output)?;
    let mut bytes = Vec::new();
    T::extend_bytes(&values, &mut bytes);
    let width = T::WIDTH;
    match fault {
        Fault::OneUlp => bump_first(&mut bytes, T::DTYPE),
        Fault::CornerC64OddLastDim => {
            let shape = input.shape();
            if T::DTYPE == DType::C64
                && shape.len() >= 2
                && shape.last().is_some_and(|last| last % 2 == 1)
            {
                bump_first(&mut bytes, T::DTYPE);
            }
        }
        Fault::CornerLastOfOffsetView => {
            let offset = T::typed_view(input.clone().tensor_view()).map_or(0, |view| view.offset());
            if matches!(input, TensorRead::View(_)) && offset != 0 && !values.is_empty() {
                let last = (values.len() - 1) * width;
                bump_first(&mut bytes[last..], T::DTYPE);
            }
        }
        Fault::CornerAbove4096 => {
            if values.len() > 4096 {
                bump_first(&mut bytes, T::DTYPE);
            }
        }
        Fault::CanonicalNan => for_each_float_part(&mut bytes, T::DTYPE, canonicalise_nan),
        Fault::NegativeZeroLost => for_each_float_part(&mut bytes, T::DTYPE, lose_negative_zero),
        Fault::Swapped => {
            let other =
                (1..values.len()).find(|&j| bytes[j * width..(j + 1) * width] != bytes[..width]);
            if let Some(j) = other {
                let (head, tail) = bytes.split_at_mut(j * width);
                head[..width].swap_with_slice(&mut tail[..width]);
            }
        }
        Fault::PartialCopy => {
            let half = values.len() / 2;
            bytes.truncate(half * width);
            T::extend_bytes(&vec![T::POISON; values.len() - half], &mut bytes);
        }
        Fault::IgnoreStrides | Fault::IgnoreOffset => {
            let misread = misread_view::<T>(fault, input, &values)?;
            bytes.clear();
            T::extend_bytes(&misread, &mut bytes);
        }
        _ => {}
    }
    write_values(output, &T::from_bytes(&bytes))
}

/// Read a view the wrong way; positions outside the backing keep the
/// correct element, so only the misread positions differ.
fn misread_view<T: Element>(
    fault: Fault,
    input: &TensorRead<'_>,
    correct: &[T],
) -> tenferro_tensor::Result<Vec<T>> {
    const OP: &str = "Broken::misread_view";
    let view = T::typed_view(input.clone().tensor_view())
        .ok_or_else(|| Error::dtype_mismatch(OP, T::DTYPE, input.dtype()))?;
    let backing: Vec<T> = match view.backend_buffer() {
        Some(storage) => storage
            .map_read()
            .map_err(|error| Error::host_access(OP, error))?
            .to_vec(),
        None => view.host_storage()?.to_vec(),
    };
    let shape = view.shape().to_vec();
    let (strides, offset) = match fault {
        Fault::IgnoreStrides => (compact_strides(&shape), view.offset()),
        _ => (view.strides().to_vec(), 0),
    };
    let mut out = correct.to_vec();
    for (slot, position) in out
        .iter_mut()
        .zip(strided_positions(&shape, &strides, offset))
    {
        if let Some(value) = usize::try_from(position).ok().and_then(|p| backing.get(p)) {
            *slot = *value;
        }
    }
    Ok(out)
}

fn bump_first(bytes: &mut [u8], dtype: DType) {
    match dtype {
        DType::Bool => {
            if let Some(first) = bytes.first_mut() {
                *first ^= 1;
            }
        }
        DType::F32 | DType::I32 | DType::C32 => {
            if let Some(chunk) = bytes.get_mut(..4) {
                let mut image = [0_u8; 4];
                image.copy_from_slice(chunk);
                chunk.copy_from_slice(&u32::from_le_bytes(image).wrapping_add(1).to_le_bytes());
            }
        }
        _ => {
            if let Some(chunk) = bytes.get_mut(..8) {
                let mut image = [0_u8; 8];
                image.copy_from_slice(chunk);
                chunk.copy_from_slice(&u64::from_le_bytes(image).wrapping_add(1).to_le_bytes());
            }
        }
    }
}

/// Apply `edit` to every float (or complex part) image; width 4 or 8.
fn for_each_float_part(bytes: &mut [u8], dtype: DType, edit: fn(&mut [u8])) {
    let part = match dtype {
        DType::F32 | DType::C32 => 4,
        DType::F64 | DType::C64 => 8,
        _ => return,
    };
    bytes.chunks_exact_mut(part).for_each(edit);
}

fn canonicalise_nan(part: &mut [u8]) {
    if part.len() == 4 {
        let mut image = [0_u8; 4];
        image.copy_from_slice(part);
        if f32::from_le_bytes(image).is_nan() {
            part.copy_from_slice(&f32::NAN.to_le_bytes());
        }
    } else {
        let mut image = [0_u8; 8];
        image.copy_from_slice(part);
        if f64::from_le_bytes(image).is_nan() {
            part.copy_from_slice(&f64::NAN.to_le_bytes());
        }
    }
}

fn lose_negative_zero(part: &mut [u8]) {
    let negative_zero_high = part.len() - 1;
    if part[negative_zero_high] == 0x80 && part[..negative_zero_high].iter().all(|&byte| byte == 0)
    {
        part[negative_zero_high] = 0;
    }
}

/// The dtype a [`Fault::WrongDtype`] output has.
pub fn wrong_dtype_of(dtype: DType) -> DType {
    match dtype {
        DType::F32 => DType::F64,
        DType::F64 => DType::F32,
        DType::I32 => DType::I64,
        DType::I64 | DType::Bool => DType::I32,
        DType::C32 => DType::C64,
        _ => DType::C32,
    }
}

/// Overrides for the storage identity of a rebuilt output.
#[derive(Default)]
struct Forgery {
    family: Option<&'static str>,
    domain: Option<AllocationDomainId>,
    placement: Option<Placement>,
    lie: bool,
}

fn break_metadata<T: Element>(fault: Fault, output: Tensor) -> tenferro_tensor::Result<Tensor> {
    let shape = output.shape().to_vec();
    let values = values_of::<T>(&output)?;
    let placement = output.placement().clone();
    match fault {
        Fault::WrongDtype => with_element!(wrong_dtype_of(T::DTYPE), U => {
            let zeros = U::from_bytes(&vec![0_u8; U::WIDTH * values.len()]);
            rebuild::<T, U>(&output, shape, zeros, Forgery::default())
        }, external => Ok(output)),
        Fault::RankChanged => {
            let mut longer = shape;
            longer.push(1);
            rebuild::<T, T>(&output, longer, values, Forgery::default())
        }
        Fault::DimsPermuted => {
            let reversed: Vec<usize> = shape.into_iter().rev().collect();
            rebuild::<T, T>(&output, reversed, values, Forgery::default())
        }
        Fault::LyingLength => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                lie: true,
                ..Forgery::default()
            },
        ),
        Fault::HostPlacement => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                placement: Some(Placement::default()),
                ..Forgery::default()
            },
        ),
        Fault::WrongOrdinal => {
            let mut moved = placement;
            if let Some(device) = moved.device.as_mut() {
                device.ordinal += 1;
            } else {
                moved.memory_kind = MemoryKind::Device;
            }
            rebuild::<T, T>(
                &output,
                shape,
                values,
                Forgery {
                    placement: Some(moved),
                    ..Forgery::default()
                },
            )
        }
        Fault::ForeignDomain => {
            let family = sim_storage::<T>(&output).map_or(SIM_FAMILY, SimStorage::family);
            rebuild::<T, T>(
                &output,
                shape,
                values,
                Forgery {
                    family: Some(family),
                    domain: Some(AllocationDomainId::fresh()),
                    ..Forgery::default()
                },
            )
        }
        Fault::WrongFamily => rebuild::<T, T>(
            &output,
            shape,
            values,
            Forgery {
                family: Some(FORGED_FAMILY),
                ..Forgery::default()
            },
        ),
        _ => Ok(output),
    }
}

fn sim_storage<T: Element>(output: &Tensor) -> Option<&SimStorage<T>> {
    crate::sim_storage_of::<T>(output)
}

/// A tensor like `output` (same storage identity and placement unless
/// forged) holding `data` in `shape`.
fn rebuild<T: Element, U: Element>(
    output: &Tensor,
    shape: Vec<usize>,
    data: Vec<U>,
    forgery: Forgery,
) -> tenferro_tensor::Result<Tensor> {
    let placement = forgery
        .placement
        .clone()
        .unwrap_or_else(|| output.placement().clone());
    let original = sim_storage::<T>(output);
    let storage = match original {
        Some(storage) => Some(storage.rehome(
            data,
            forgery.family.unwrap_or(storage.family()),
            forgery.domain.unwrap_or(storage.domain()),
        )),
        None if forgery.family.is_some() || forgery.domain.is_some() || forgery.lie => {
            Some(SimStorage::new(
                data,
                forgery.family.unwrap_or(SIM_FAMILY),
                forgery.domain.unwrap_or_else(AllocationDomainId::fresh),
                Arc::new(AllocationLedger::default()),
            ))
        }
        None => {
            return TypedTensor::<U>::from_buffer_col_major(
                shape,
                StorageBuffer::Host(data),
                placement,
            )
            .map(Tensor::from_typed);
        }
    };
    let Some(storage) = storage else {
        return Err(Error::runtime_state(
            "Broken::rebuild",
            "no storage to rebuild",
        ));
    };
    if forgery.lie {
        let armed = Arc::new(AtomicBool::new(false));
        let lying = LyingStorage {
            inner: storage,
            armed: Arc::clone(&armed),
        };
        let tensor = TypedTensor::<U>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(lying)),
            placement,
        )?;
        armed.store(true, Ordering::SeqCst);
        return Ok(Tensor::from_typed(tensor));
    }
    TypedTensor::<U>::from_buffer_col_major(
        shape,
        StorageBuffer::Backend(Box::new(storage)),
        placement,
    )
    .map(Tensor::from_typed)
}

/// Storage that reports one element more than it holds once armed, after
/// tenferro validated it at construction.
#[derive(Debug)]
struct LyingStorage<T> {
    inner: SimStorage<T>,
    armed: Arc<AtomicBool>,
}

impl<T: Clone + std::fmt::Debug + Send + Sync + 'static> BackendStorage<T> for LyingStorage<T> {
    fn backend_family(&self) -> &'static str {
        self.inner.backend_family()
    }

    fn len(&self) -> usize {
        self.inner.len() + usize::from(self.armed.load(Ordering::SeqCst))
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        self.inner.allocation_domain()
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        self.inner.allocation_id()
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, T>, HostAccessError> {
        self.inner.map_read()
    }

    fn map_write(&mut self) -> Result<HostWriteGuard<'_, T>, HostAccessError> {
        self.inner.map_write()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
