//! The two driver calls on the runtime's stream: a non-blocking query
//! (the completion check) and a host function that holds the stream (how
//! the early-return broken provider makes its unfinished copy observable).
//! The only unsafe code of the harness besides the raw baseline.

use std::ffi::c_void;
use std::time::Duration;

use tenferro_gpu::cuda::CudaRuntime;
use tenferro_gpu::cuda::cudarc::driver::sys::{
    CUresult, CUstream_st, cuCtxSynchronize, cuLaunchHostFunc, cuStreamQuery,
};

use super::CudaError;

/// What `cuStreamQuery` said.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) enum StreamState {
    /// Every operation queued on the stream has completed.
    Idle,
    /// Work is still queued (`CUDA_ERROR_NOT_READY`).
    Busy,
    /// The stream reported an error (a failed copy or kernel).
    Failed(String),
}

fn as_stream(handle: u64) -> *mut CUstream_st {
    handle as usize as *mut CUstream_st
}

/// Ask the driver whether `stream` (the runtime's own) has finished its
/// work, without waiting.
///
/// # Errors
///
/// [`CudaError::Tensor`] when the runtime's context cannot be made current.
#[allow(unsafe_code)]
pub(crate) fn query_stream(runtime: &CudaRuntime, stream: u64) -> Result<StreamState, CudaError> {
    let status = runtime
        .with_current_context("tenferro-transfer-harness.cuda.query", || {
            // SAFETY: `stream` is the runtime's own stream, read from its raw
            // scope; the runtime (and so the stream) is alive while `runtime`
            // is borrowed, and its context is current inside this closure.
            // cuStreamQuery neither reads nor writes memory.
            unsafe { cuStreamQuery(as_stream(stream)) }
        })
        .map_err(context_error)?;
    Ok(match status {
        CUresult::CUDA_SUCCESS => StreamState::Idle,
        CUresult::CUDA_ERROR_NOT_READY => StreamState::Busy,
        other => StreamState::Failed(format!("{other:?}")),
    })
}

fn context_error(source: tenferro_tensor::Error) -> CudaError {
    CudaError::Tensor {
        operation: "making the CUDA context current",
        dtype: tenferro_tensor::DType::F32,
        shape: Vec::new(),
        source: Box::new(source),
    }
}

/// A host function the driver runs in stream order: it sleeps for the
/// number of milliseconds carried in its argument (never dereferenced).
/// It calls no CUDA API, as host functions must not.
extern "C" fn sleep_in_stream(milliseconds: *mut c_void) {
    std::thread::sleep(Duration::from_millis(milliseconds.addr() as u64));
}

/// Queue a host function that keeps `stream` busy for `hold`: everything
/// queued after it is still in flight until `hold` has passed.
///
/// # Errors
///
/// [`CudaError::Driver`] when the driver refuses the host function.
#[allow(unsafe_code)]
pub(crate) fn hold_stream(
    runtime: &CudaRuntime,
    stream: u64,
    hold: Duration,
) -> Result<(), CudaError> {
    let milliseconds = usize::try_from(hold.as_millis()).unwrap_or(usize::MAX);
    let status = runtime
        .with_current_context("tenferro-transfer-harness.cuda.hold", || {
            // SAFETY: `stream` is the runtime's own live stream and its
            // context is current here. The host function takes its argument
            // by value (a count smuggled in the pointer, never dereferenced),
            // so no memory must outlive the call, and it makes no CUDA call.
            unsafe {
                cuLaunchHostFunc(
                    as_stream(stream),
                    Some(sleep_in_stream),
                    std::ptr::without_provenance_mut(milliseconds),
                )
            }
        })
        .map_err(context_error)?;
    if status == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::Driver {
            call: "cuLaunchHostFunc",
            status: format!("{status:?}"),
        })
    }
}

/// Wait until every stream of the runtime's context (the provider's own
/// streams included) has finished its work: `cuCtxSynchronize`.
///
/// # Errors
///
/// [`CudaError::Driver`] when the driver reports an error.
#[allow(unsafe_code)]
pub(crate) fn synchronize_context(runtime: &CudaRuntime) -> Result<(), CudaError> {
    let status = runtime
        .with_current_context("tenferro-transfer-harness.cuda.synchronize", || {
            // SAFETY: the runtime's context is current inside this closure
            // and alive while `runtime` is borrowed; cuCtxSynchronize only
            // waits for the context's queued work and touches no memory of
            // ours.
            unsafe { cuCtxSynchronize() }
        })
        .map_err(context_error)?;
    if status == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::Driver {
            call: "cuCtxSynchronize",
            status: format!("{status:?}"),
        })
    }
}
