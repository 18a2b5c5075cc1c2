//! Typed failures of the CUDA endpoints and providers.

use tenferro_gpu::cuda::{CudaDeviceError, CudaEngineError};
use tenferro_tensor::DType;

/// A failure of a CUDA endpoint, provider or baseline copy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The CUDA engine could not be opened.
    #[error("cannot open the CUDA engine on device {ordinal}")]
    Open {
        /// The device ordinal.
        ordinal: u32,
        /// What tenferro-gpu said.
        #[source]
        source: Box<CudaEngineError>,
    },
    /// tenferro-gpu refused or failed a tensor operation (upload, download,
    /// raw scope, host materialisation).
    #[error("{operation} of a {dtype:?} {shape:?} tensor failed")]
    Tensor {
        /// What was being done.
        operation: &'static str,
        /// The tensor's dtype.
        dtype: DType,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// What tenferro said.
        #[source]
        source: Box<tenferro_tensor::Error>,
    },
    /// The CUDA runtime could not wait for its stream.
    #[error("the CUDA runtime could not synchronise its stream")]
    Synchronize {
        /// What tenferro-gpu said.
        #[source]
        source: Box<CudaDeviceError>,
    },
    /// A driver call returned an error status.
    #[error("{call} returned {status}")]
    Driver {
        /// The driver entry point.
        call: &'static str,
        /// The status it returned, as the driver names it.
        status: String,
    },
    /// A cudarc call of the raw baseline failed.
    #[error("cudarc {call} failed")]
    Cudarc {
        /// The cudarc call.
        call: &'static str,
        /// What cudarc said.
        #[source]
        source: tenferro_gpu::cuda::cudarc::driver::DriverError,
    },
    /// The input is a view of device memory: tenferro-gpu downloads owned
    /// tensors only (a known limit of this suite's CUDA routes).
    #[error(
        "the input is a strided view of device memory; tenferro-gpu 0.9 downloads owned device tensors only"
    )]
    DeviceView,
    /// The input is not device memory of this endpoint.
    #[error("the input is not CUDA memory of this endpoint (backend family {family:?})")]
    NotDeviceMemory {
        /// The input's backend family, `None` for plain host memory.
        family: Option<&'static str>,
    },
}
