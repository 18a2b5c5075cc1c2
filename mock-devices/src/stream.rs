//! `SimStream`: a simulated device's command queue. A queued copy poisons
//! its destination and completes only later: when someone waits on its
//! token or on a later copy's of the same stream (a stream completes in
//! order), when the device releases it, or (in latency mode) once its due
//! time has passed and someone looks. The copy in flight itself, and its
//! token, are `copy_state`'s; a stream numbers and times copies and queues
//! them.

use std::sync::Arc;

use tenferro_tensor::{BackendStorage, Error, StorageBuffer, Tensor, TypedTensor};

use crate::copy_state::{CompletionMode, CopyHost, CopyOp, CopySpec, CopyToken, Memory};
use crate::{DeviceError, Element, SimDevice, SimStorage};

/// One command queue of a simulated device.
#[derive(Clone, Debug)]
pub struct SimStream {
    device: SimDevice,
    index: usize,
}

impl SimStream {
    fn new(device: SimDevice, index: usize) -> Self {
        Self { device, index }
    }

    /// The stream's index on its device.
    pub fn index(&self) -> usize {
        self.index
    }

    fn queue<T: Element>(
        &self,
        values: Vec<T>,
        memory: &Arc<Memory<T>>,
    ) -> Result<Arc<CopyOp>, DeviceError> {
        let len = values.len();
        self.queue_reading(len, Box::new(move || values), memory)
    }

    /// Queue a copy of the `len` values `read` gives when it lands.
    fn queue_reading<T: Element>(
        &self,
        len: usize,
        read: Box<dyn FnOnce() -> Vec<T> + Send>,
        memory: &Arc<Memory<T>>,
    ) -> Result<Arc<CopyOp>, DeviceError> {
        let core = self.device.core();
        let (number, plan, spike, never) = core.begin_copy(self.device.name())?;
        let due = match core.mode() {
            CompletionMode::Held => spike.map(|delay| core.now() + delay),
            CompletionMode::Latency { base, jitter, seed } => {
                let extra = jitter.mul_f64(unit_interval(seed, number));
                let due = core.now() + base + extra + spike.unwrap_or_default();
                // A stream completes in order.
                Some(core.in_stream_order(self.index, due))
            }
        };
        let spec = CopySpec {
            device: self.device.name().to_owned(),
            number,
            stream: self.index,
            due,
            never,
            plan,
        };
        let op = CopyOp::queue_reading(
            spec,
            Arc::clone(core) as Arc<dyn CopyHost>,
            len,
            read,
            memory,
        );
        core.track(&op);
        op.record_queued();
        Ok(op)
    }

    /// Allocate device memory for `shape`, poison it, and queue a copy of
    /// `values` into it. The returned tensor refuses reads until the token
    /// completes.
    ///
    /// # Errors
    ///
    /// A validation error when `values` does not fill `shape`, or the
    /// device's [`DeviceError`] (inside `Error::BackendSource`) when the
    /// fault plan fails the allocation or the device is lost.
    pub fn enqueue_copy<T: Element>(
        &self,
        shape: Vec<usize>,
        values: Vec<T>,
    ) -> tenferro_tensor::Result<(Tensor, CopyToken)> {
        let len = values.len();
        self.enqueue_fresh(
            "SimStream::enqueue_copy",
            shape,
            len,
            Box::new(move || values),
        )
    }

    /// Allocate device memory for `shape` and queue a kernel that copies
    /// `source`'s memory into it when it runs ([`crate::Kernels::Lazy`]):
    /// it holds the memory's cells, not a handle to its allocation, so
    /// whatever is written there before it runs is what it copies.
    pub(crate) fn enqueue_reading<T: Element>(
        &self,
        shape: Vec<usize>,
        source: &SimStorage<T>,
    ) -> tenferro_tensor::Result<(Tensor, CopyToken)> {
        let len = shape.iter().product::<usize>();
        let cells = Arc::clone(source.memory());
        let read = Box::new(move || cells.read().iter().take(len).cloned().collect());
        self.enqueue_fresh("SimStream::enqueue_reading", shape, len, read)
    }

    /// Allocate `len` elements of device memory, queue a copy of what
    /// `read` gives when it lands into them, and return them as a tensor of
    /// `shape` (which refuses reads until the copy lands), with the copy's
    /// token; `op` names the caller in errors.
    fn enqueue_fresh<T: Element>(
        &self,
        op: &'static str,
        shape: Vec<usize>,
        len: usize,
        read: Box<dyn FnOnce() -> Vec<T> + Send>,
    ) -> tenferro_tensor::Result<(Tensor, CopyToken)> {
        let (storage, memory) = self
            .device
            .allocate_for_copy::<T>(len)
            .map_err(|error| Error::backend_source(op, error))?;
        let copy = self
            .queue_reading(len, read, &memory)
            .map_err(|error| Error::backend_source(op, error))?;
        let tensor = TypedTensor::<T>::from_buffer_col_major(
            shape,
            StorageBuffer::Backend(Box::new(storage)),
            self.device.placement(),
        )
        .map(Tensor::from_typed)?;
        Ok((tensor, CopyToken::new(copy)))
    }

    /// Queue a copy of `values` into `target`, memory of this device that
    /// already exists (a block a caching allocator hands out again, a chunk
    /// of a larger allocation's tensor): from now until the copy lands,
    /// `target` and every alias of it hold poison and refuse reads, as a
    /// fresh [`Self::enqueue_copy`] does. The copy counts as one of the
    /// device's copies (its fault plan applies); it allocates nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_mock_devices::{SimDevice, StorageCompletion};
    /// use tenferro_tensor::BackendStorage;
    ///
    /// let device = SimDevice::new(0).unwrap();
    /// let block = device.allocate(vec![0.0_f32; 2]).unwrap();
    /// let token = device.stream(0).enqueue_copy_into(&block, vec![1.5, -0.0]).unwrap();
    /// assert!(matches!(block.completion(), StorageCompletion::Pending { .. }));
    /// assert!(block.map_read().is_err());
    /// token.wait().unwrap();
    /// assert_eq!(block.map_read().unwrap().to_vec(), vec![1.5, -0.0]);
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid-argument error when `values` does not fill `target` or
    /// `target` is not this device's memory, or the device's
    /// [`DeviceError`] (inside `Error::BackendSource`) when the fault plan
    /// fails the copy or the device is lost.
    pub fn enqueue_copy_into<T: Element>(
        &self,
        target: &SimStorage<T>,
        values: Vec<T>,
    ) -> tenferro_tensor::Result<CopyToken> {
        const OP: &str = "SimStream::enqueue_copy_into";
        if !target
            .device()
            .is_some_and(|device| device.same_device(&self.device))
        {
            return Err(Error::invalid_argument(
                OP,
                "target",
                format!("the target is not memory of {}", self.device.name()),
            ));
        }
        let len = BackendStorage::len(target);
        if values.len() != len {
            return Err(Error::invalid_argument(
                OP,
                "values",
                format!(
                    "{} values do not fill a target of {len} elements",
                    values.len()
                ),
            ));
        }
        let op = self
            .queue(values, target.memory())
            .map_err(|error| Error::backend_source(OP, error))?;
        Ok(CopyToken::new(op))
    }

    /// Queue a copy of `values` from this device into host memory, then
    /// wait for it: the device-to-host direction of a blocking transfer.
    ///
    /// # Errors
    ///
    /// The device's [`DeviceError`] when the copy fails.
    pub fn download<T: Element>(&self, values: Vec<T>) -> Result<Vec<T>, DeviceError> {
        let landing = Memory::new(Vec::new());
        let op = self.queue(values, &landing)?;
        CopyToken::new(op).wait()?;
        // The landed image is ours alone now: take it rather than copy it.
        Ok(landing.take())
    }
}

impl SimDevice {
    /// Command queue `index` of this device (queues are created on first
    /// use; copies on one queue complete in order).
    pub fn stream(&self, index: usize) -> SimStream {
        SimStream::new(self.clone(), index)
    }
}

/// A number in [0, 1) from a seed and a copy number (splitmix64).
fn unit_interval(seed: u64, number: u64) -> f64 {
    let mut z = seed ^ number.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1_u64 << 53) as f64
}

/// The [`SimStorage`] behind a tensor, if it has one of element type `T`.
pub fn sim_storage_of<T: Element>(tensor: &Tensor) -> Option<&SimStorage<T>> {
    match tensor.as_typed::<T>()?.buffer() {
        StorageBuffer::Backend(storage) => storage.as_any().downcast_ref::<SimStorage<T>>(),
        StorageBuffer::Host(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultPlan, StorageCompletion};

    fn completion(tensor: &Tensor) -> StorageCompletion {
        sim_storage_of::<f32>(tensor).unwrap().completion()
    }

    #[test]
    fn a_wait_lands_the_earlier_copies_of_its_stream_only() {
        let device = SimDevice::new(0).unwrap();
        let (first, first_token) = device
            .stream(0)
            .enqueue_copy(vec![2], vec![1.0_f32, 2.0])
            .unwrap();
        let (other, _other_token) = device
            .stream(1)
            .enqueue_copy(vec![1], vec![3.0_f32])
            .unwrap();
        let (second, second_token) = device
            .stream(0)
            .enqueue_copy(vec![1], vec![4.0_f32])
            .unwrap();
        let first_number = first_token.copy_number();
        // The first copy's token is dropped unwaited: it stays in flight,
        // and says which copy it is.
        drop(first_token);
        assert_eq!(
            completion(&first),
            StorageCompletion::Pending {
                device: "sim0".to_owned(),
                copy: first_number,
            }
        );
        second_token.wait().unwrap();
        assert_eq!(completion(&second), StorageCompletion::Complete);
        assert_eq!(completion(&first), StorageCompletion::Complete);
        assert_eq!(
            sim_storage_of::<f32>(&first)
                .unwrap()
                .map_read()
                .unwrap()
                .to_vec(),
            vec![1.0, 2.0]
        );
        // Stream 1 is another queue: its copy is still in flight.
        assert!(matches!(
            completion(&other),
            StorageCompletion::Pending { .. }
        ));
    }

    #[test]
    fn a_copy_into_existing_memory_must_fill_it_on_its_own_device() {
        let device = SimDevice::new(0).unwrap();
        let other = SimDevice::new(1).unwrap();
        let block = device.allocate(vec![0.0_f32; 2]).unwrap();
        let short = device.stream(0).enqueue_copy_into(&block, vec![1.0]);
        assert!(
            short
                .unwrap_err()
                .to_string()
                .contains("1 values do not fill a target of 2")
        );
        let foreign = other.stream(0).enqueue_copy_into(&block, vec![1.0, 2.0]);
        assert!(
            foreign
                .unwrap_err()
                .to_string()
                .contains("not memory of sim1")
        );
        // Refused copies leave the block readable.
        assert_eq!(block.completion(), StorageCompletion::Complete);
        // A copy into it lands in order with the stream's others.
        device
            .stream(0)
            .enqueue_copy_into(&block, vec![3.0, 4.0])
            .unwrap();
        let (_, later) = device
            .stream(0)
            .enqueue_copy(vec![1], vec![5.0_f32])
            .unwrap();
        later.wait().unwrap();
        assert_eq!(block.map_read().unwrap().to_vec(), vec![3.0, 4.0]);
    }

    #[test]
    fn a_release_returns_once_every_copy_landed_whoever_lands_it() {
        // Threads that each queue a copy and release the device race to
        // land each other's copies: whoever returns from the release finds
        // its copy complete, as after a real device's synchronise.
        let device = SimDevice::new(0).unwrap();
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let device = device.clone();
                scope.spawn(move || {
                    for _ in 0..500 {
                        let (_tensor, token) = device
                            .stream(thread)
                            .enqueue_copy(vec![64], vec![1.0_f32; 64])
                            .unwrap();
                        device.release_all();
                        assert!(token.is_complete());
                    }
                });
            }
        });
    }

    #[test]
    fn a_copy_that_never_completes_holds_up_only_its_own_waiters() {
        let device = SimDevice::new(0).unwrap();
        device.install_faults(FaultPlan::new().never_complete(1));
        let (stuck, _stuck_token) = device
            .stream(0)
            .enqueue_copy(vec![1], vec![1.0_f32])
            .unwrap();
        let (later, later_token) = device
            .stream(0)
            .enqueue_copy(vec![1], vec![2.0_f32])
            .unwrap();
        later_token.wait().unwrap();
        assert_eq!(completion(&later), StorageCompletion::Complete);
        assert!(matches!(
            completion(&stuck),
            StorageCompletion::Pending { .. }
        ));
    }
}
