//! The CUDA providers: host to CUDA (`CudaUpload`), CUDA to host
//! (`CudaDownload`), and the deliberately broken `CudaEarlyReturn`.

use std::time::Duration;

use tenferro_gpu::cuda::{download_tensor, upload_tensor};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Tensor, TensorRead};
use tenferro_transfer_harness::{read_compact, with_element};

use super::stream::hold_stream;
use super::{CUDA_FAMILY, CudaEndpoint, CudaError};

/// A provider's error for the runtime: a typed [`CudaError`] as the source
/// of a tenferro runtime-state error.
fn provider_error(op: &'static str, error: CudaError) -> tenferro_runtime::Error {
    tenferro_tensor::Error::runtime_state_source(op, error).into()
}

/// An owned host tensor holding `input`'s elements: `input` itself when it
/// already is one, otherwise a compact copy (strided views, backend host
/// storage), because tenferro-gpu uploads owned host tensors only.
fn upload_input(endpoint: &CudaEndpoint, input: &TensorRead<'_>) -> Result<Tensor, CudaError> {
    let tensor_error = |operation, source| CudaError::Tensor {
        operation,
        dtype: input.dtype(),
        shape: input.shape().to_vec(),
        source: Box::new(source),
    };
    let runtime = endpoint.runtime();
    match input {
        TensorRead::Tensor(tensor) if input.backend_family().is_none() => {
            upload_tensor(&runtime, tensor).map_err(|source| tensor_error("upload", source))
        }
        _ => {
            let compact = with_element!(input.dtype(), T => {
                read_compact::<T>(input)
                    .and_then(|values| Tensor::from_vec_col_major(input.shape().to_vec(), values))
            }, external => Err(tenferro_tensor::Error::unsupported(
                "CudaUpload",
                format!("dtype {:?} is not a preset dtype", input.dtype()),
            )))
            .map_err(|source| tensor_error("materialising the host input", source))?;
            upload_tensor(&runtime, &compact).map_err(|source| tensor_error("upload", source))
        }
    }
}

/// Host (tenferro-cpu) to CUDA: `upload_tensor`, then
/// `runtime.synchronize()`, because the upload only enqueues the copy.
/// Strided host views are materialised first.
#[derive(Clone, Debug)]
pub struct CudaUpload {
    endpoint: CudaEndpoint,
}

impl CudaUpload {
    /// The provider into `endpoint`.
    pub fn new(endpoint: CudaEndpoint) -> Self {
        Self { endpoint }
    }

    /// Upload `input` and wait until the copy has landed.
    ///
    /// # Errors
    ///
    /// [`CudaError`] when tenferro-gpu refuses the input, the upload or the
    /// wait.
    pub fn upload(&self, input: &TensorRead<'_>) -> Result<Tensor, CudaError> {
        let device = upload_input(&self.endpoint, input)?;
        self.endpoint
            .runtime()
            .synchronize()
            .map_err(|source| CudaError::Synchronize {
                source: Box::new(source),
            })?;
        Ok(device)
    }
}

impl TransferProvider for CudaUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.upload(request.input())
            .map_err(|error| provider_error("CudaUpload::transfer_blocking", error))
    }
}

/// CUDA to host (tenferro-cpu): `download_tensor`, which waits for the
/// copy. Owned device tensors only (tenferro-gpu 0.9 has no strided
/// download).
#[derive(Clone, Debug)]
pub struct CudaDownload {
    endpoint: CudaEndpoint,
}

impl CudaDownload {
    /// The provider out of `endpoint`.
    pub fn new(endpoint: CudaEndpoint) -> Self {
        Self { endpoint }
    }

    /// Download `input` into plain host memory.
    ///
    /// # Errors
    ///
    /// [`CudaError::DeviceView`] for a view, [`CudaError::NotDeviceMemory`]
    /// for an input that is not CUDA memory, [`CudaError::Tensor`] when the
    /// download fails.
    pub fn download(&self, input: &TensorRead<'_>) -> Result<Tensor, CudaError> {
        let family = input.backend_family();
        match input {
            TensorRead::View(_) => Err(CudaError::DeviceView),
            TensorRead::Tensor(_) if family != Some(CUDA_FAMILY) => {
                Err(CudaError::NotDeviceMemory { family })
            }
            TensorRead::Tensor(tensor) => download_tensor(&self.endpoint.runtime(), tensor)
                .map_err(|source| CudaError::Tensor {
                    operation: "download",
                    dtype: input.dtype(),
                    shape: input.shape().to_vec(),
                    source: Box::new(source),
                }),
        }
    }
}

impl TransferProvider for CudaDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.download(request.input())
            .map_err(|error| provider_error("CudaDownload::transfer_blocking", error))
    }
}

/// How long [`CudaEarlyReturn`] holds the stream before its copy.
pub const EARLY_RETURN_HOLD: Duration = Duration::from_millis(50);

/// Deliberately broken: uploads without `runtime.synchronize()`, so it
/// returns while the copy is still queued. So that the unfinished copy is
/// observable whatever the size and the bus speed, it first queues a host
/// function that holds the stream for [`EARLY_RETURN_HOLD`]; the copy
/// lands after that, which `completion` must catch.
#[derive(Clone, Debug)]
pub struct CudaEarlyReturn {
    endpoint: CudaEndpoint,
}

impl CudaEarlyReturn {
    /// The broken provider into `endpoint`.
    pub fn new(endpoint: CudaEndpoint) -> Self {
        Self { endpoint }
    }
}

impl TransferProvider for CudaEarlyReturn {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "CudaEarlyReturn::transfer_blocking";
        hold_stream(
            &self.endpoint.runtime(),
            self.endpoint.stream(),
            EARLY_RETURN_HOLD,
        )
        .map_err(|error| provider_error(OP, error))?;
        upload_input(&self.endpoint, request.input()).map_err(|error| provider_error(OP, error))
    }
}
