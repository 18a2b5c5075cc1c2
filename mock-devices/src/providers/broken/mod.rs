//! Deliberately broken providers: each wraps a correct provider and breaks
//! exactly one rule of the contract (or a chosen few), so they are the
//! living examples of what each rule means and the proof that the checker
//! catches what it claims to.
//!
//! The [`Fault`] vocabulary is `faults.rs`; the one provider that injects
//! it, and the helpers its rewrites share, are here; value faults are
//! `values.rs`, metadata forgeries `metadata.rs`, faults on the input, on
//! earlier outputs and on the device's memory `effects.rs` (hostile
//! storage lives in `../hostile.rs`).

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Error, StorageBuffer, Tensor, TensorRead};

use super::hostile::hostile;
use crate::{Element, SimStorage, with_element};

mod effects;
mod faults;
mod metadata;
mod state;
mod values;

use effects::SideEffects;
pub use faults::Fault;
use metadata::break_metadata;
pub use metadata::{FORGED_FAMILY, wrong_dtype_of};
use state::KeptState;
use values::corrupt_values;

/// A correct provider with faults injected into what it returns.
///
/// Side-effect faults act first (on the input, the output pool, the
/// device's memory); value faults then rewrite the correct output in
/// place; metadata faults then rebuild it. Outputs must be plain host
/// tensors or [`SimStorage`] (what this crate's and the harness's reference
/// providers return).
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
    effects: SideEffects,
    kept: KeptState,
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
            effects: SideEffects::default(),
            kept: KeptState::default(),
        }
    }

    /// How long a call with [`Fault::SharedStagingSlot`] holds the shared
    /// slot before it copies out of it: the window in which a concurrent
    /// call of the same size overwrites it (1 ms unless set). A caller
    /// whose calls never overlap (a fuzz target, one case at a time) sets
    /// it to zero: no other call can come between, and the wait was most
    /// of each call's time.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tenferro_mock_devices::providers::{Broken, Fault};
    /// use tenferro_mock_devices::{SimDevice, SimUpload};
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// let broken = Broken::new(Arc::new(SimUpload::new(device)), vec![Fault::SharedStagingSlot])
    ///     .with_staging_window(Duration::ZERO);
    /// assert_eq!(broken.name(), "shared-staging-slot");
    /// ```
    #[must_use]
    pub fn with_staging_window(mut self, window: std::time::Duration) -> Self {
        self.kept.window = window;
        self
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
        output = self.effects.apply(&self.faults, &input, output)?;
        if self.faults.iter().any(|fault| fault.keeps_state()) {
            with_element!(output.dtype(), T => self.kept.apply::<T>(&self.faults, &mut output)?,
                external => return Err(Error::unsupported(OP, "preset dtypes only").into()));
        }
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
pub(super) fn values_of<T: Element>(output: &Tensor) -> tenferro_tensor::Result<Vec<T>> {
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

pub(super) fn write_values<T: Element>(
    output: &mut Tensor,
    values: &[T],
) -> tenferro_tensor::Result<()> {
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

fn sim_storage<T: Element>(output: &Tensor) -> Option<&SimStorage<T>> {
    crate::sim_storage_of::<T>(output)
}
