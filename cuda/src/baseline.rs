//! The raw baseline of the bandwidth benchmark: cudarc's own memcpy, from
//! pageable (`Vec`) and from pinned host memory, into one preallocated
//! device buffer, each followed by a stream synchronise.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tenferro_gpu::cuda::cudarc::driver::{CudaContext, CudaSlice, CudaStream, PinnedHostSlice};

use super::CudaError;

fn cudarc(
    call: &'static str,
) -> impl Fn(tenferro_gpu::cuda::cudarc::driver::DriverError) -> CudaError {
    move |source| CudaError::Cudarc { call, source }
}

/// Preallocated host and device buffers of one size on one device.
pub struct RawCopies {
    stream: Arc<CudaStream>,
    device: CudaSlice<u8>,
    pageable: Vec<u8>,
    pinned: PinnedHostSlice<u8>,
}

impl std::fmt::Debug for RawCopies {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RawCopies")
            .field("bytes", &self.pageable.len())
            .finish_non_exhaustive()
    }
}

/// Which host memory a raw copy uses.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum HostMemory {
    /// A plain `Vec<u8>`: the driver stages it through its own pinned buffer.
    Pageable,
    /// Page-locked memory from `cuMemHostAlloc`: the DMA engine reads it directly.
    Pinned,
}

/// Which way a raw copy goes.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Direction {
    /// Host to device.
    Upload,
    /// Device to host.
    Download,
}

/// Page-locked host memory of `bytes` bytes, filled with `fill`.
#[allow(unsafe_code)]
fn pinned_buffer(
    context: &Arc<CudaContext>,
    bytes: usize,
    fill: u8,
) -> Result<PinnedHostSlice<u8>, CudaError> {
    // SAFETY: the allocation is uninitialised; it is fully written below
    // before anything reads it, and `u8` has no invalid bit patterns.
    let mut pinned = unsafe { context.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
        .map_err(cudarc("alloc_pinned_with_flags"))?;
    pinned
        .as_mut_slice()
        .map_err(cudarc("PinnedHostSlice::as_mut_slice"))?
        .fill(fill);
    Ok(pinned)
}

impl RawCopies {
    /// Buffers of `bytes` bytes on device `ordinal` (a cudarc context of
    /// its own, the primary context of that device).
    ///
    /// # Errors
    ///
    /// [`CudaError::Cudarc`] when cudarc cannot open the device or allocate.
    pub fn new(ordinal: usize, bytes: usize) -> Result<Self, CudaError> {
        let context = CudaContext::new(ordinal).map_err(cudarc("CudaContext::new"))?;
        let stream = context.default_stream();
        let device = stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(cudarc("alloc_zeros"))?;
        let pinned = pinned_buffer(&context, bytes, 0x5a)?;
        Ok(Self {
            stream,
            device,
            pageable: vec![0x5a; bytes.max(1)],
            pinned,
        })
    }

    /// One copy of the whole buffer, waited for; its wall time.
    ///
    /// # Errors
    ///
    /// [`CudaError::Cudarc`] when the copy or the wait fails.
    pub fn copy(
        &mut self,
        memory: HostMemory,
        direction: Direction,
    ) -> Result<Duration, CudaError> {
        let start = Instant::now();
        match (memory, direction) {
            (HostMemory::Pageable, Direction::Upload) => self
                .stream
                .memcpy_htod(&self.pageable, &mut self.device)
                .map_err(cudarc("memcpy_htod (pageable)"))?,
            (HostMemory::Pinned, Direction::Upload) => self
                .stream
                .memcpy_htod(&self.pinned, &mut self.device)
                .map_err(cudarc("memcpy_htod (pinned)"))?,
            (HostMemory::Pageable, Direction::Download) => self
                .stream
                .memcpy_dtoh(&self.device, &mut self.pageable)
                .map_err(cudarc("memcpy_dtoh (pageable)"))?,
            (HostMemory::Pinned, Direction::Download) => self
                .stream
                .memcpy_dtoh(&self.device, &mut self.pinned)
                .map_err(cudarc("memcpy_dtoh (pinned)"))?,
        }
        self.stream.synchronize().map_err(cudarc("synchronize"))?;
        Ok(start.elapsed())
    }
}
