//! The providers, on tenferro-gpu's `upload_tensor` and `download_tensor`.

use std::fmt;
use std::sync::Arc;

use tenferro_gpu::cuda::{CudaDeviceError, CudaRuntime, download_tensor, upload_tensor};
use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{DType, Tensor, TensorRead, TensorView};

/// Where a provider finds the CUDA runtime of the engine it serves, at each
/// call: the runtime owns the stream the copy goes on and the allocation
/// domain the destination engine checks.
///
/// In an application this is the runtime of the one `CudaEngine` registered
/// with the tenferro runtime ([`RuntimeSource::fixed`]). Under the
/// conformance suite it is the harness's device, which opens a fresh engine
/// (and runtime) for each rig, so the tests ask it at each call.
#[derive(Clone)]
pub struct RuntimeSource(Arc<dyn Fn() -> CudaRuntime + Send + Sync>);

impl RuntimeSource {
    /// Ask `current` for the runtime at each call.
    pub fn new(current: impl Fn() -> CudaRuntime + Send + Sync + 'static) -> Self {
        Self(Arc::new(current))
    }

    /// Always `runtime` (that of the engine registered with the tenferro
    /// runtime).
    pub fn fixed(runtime: CudaRuntime) -> Self {
        Self::new(move || runtime.clone())
    }

    /// The runtime now.
    pub fn runtime(&self) -> CudaRuntime {
        (self.0)()
    }
}

impl fmt::Debug for RuntimeSource {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("RuntimeSource(..)")
    }
}

/// Why a transfer failed; the runtime sees it as the source of its error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VendorError {
    /// A strided host view could not be copied into a compact host tensor.
    #[error("materialising the {dtype:?} host view {shape:?} failed")]
    Materialise {
        /// The input's dtype.
        dtype: DType,
        /// The input's shape.
        shape: Vec<usize>,
        /// tenferro's error.
        #[source]
        source: Box<tenferro_tensor::Error>,
    },
    /// tenferro-gpu refused or failed the upload.
    #[error("the upload of {dtype:?} {shape:?} failed")]
    Upload {
        /// The input's dtype.
        dtype: DType,
        /// The input's shape.
        shape: Vec<usize>,
        /// tenferro-gpu's error.
        #[source]
        source: Box<tenferro_tensor::Error>,
    },
    /// Waiting for the enqueued upload failed.
    #[error("waiting for the upload failed")]
    Synchronize {
        /// tenferro-gpu's error.
        #[source]
        source: Box<CudaDeviceError>,
    },
    /// The input to download is a view of device memory: tenferro-gpu 0.9
    /// downloads owned device tensors only.
    #[error(
        "views of CUDA memory are not downloaded (tenferro-gpu 0.9 downloads owned tensors only)"
    )]
    DeviceView,
    /// tenferro-gpu refused or failed the download.
    #[error("the download of {dtype:?} {shape:?} failed")]
    Download {
        /// The input's dtype.
        dtype: DType,
        /// The input's shape.
        shape: Vec<usize>,
        /// tenferro-gpu's error.
        #[source]
        source: Box<tenferro_tensor::Error>,
    },
}

impl VendorError {
    /// The error a provider hands the runtime: this error as the source of
    /// a tenferro runtime-state error.
    fn into_runtime(self, op: &'static str) -> tenferro_runtime::Error {
        tenferro_tensor::Error::runtime_state_source(op, self).into()
    }
}

/// A compact host copy of a strided view (`upload_tensor` takes owned host
/// tensors only).
fn to_col_major(view: &TensorView<'_>) -> tenferro_tensor::Result<Tensor> {
    Ok(match view {
        TensorView::F32(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::F64(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::I32(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::I64(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::Bool(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::C32(view) => Tensor::from_typed(view.to_col_major()?),
        TensorView::C64(view) => Tensor::from_typed(view.to_col_major()?),
    })
}

/// Enqueue the upload of `input` on `runtime`'s stream and return the
/// device tensor at once, as tenferro-gpu's `upload_tensor` does.
fn enqueue_upload(runtime: &CudaRuntime, input: &TensorRead<'_>) -> Result<Tensor, VendorError> {
    let (dtype, shape) = (input.dtype(), input.shape().to_vec());
    let compact;
    let host = match input {
        TensorRead::Tensor(tensor) => *tensor,
        TensorRead::View(view) => {
            compact = to_col_major(view).map_err(|source| VendorError::Materialise {
                dtype,
                shape: shape.clone(),
                source: Box::new(source),
            })?;
            &compact
        }
    };
    upload_tensor(runtime, host).map_err(|source| VendorError::Upload {
        dtype,
        shape,
        source: Box::new(source),
    })
}

/// Host (tenferro-cpu) to CUDA: `upload_tensor`, then wait for the copy.
#[derive(Clone, Debug)]
pub struct VendorUpload {
    runtime: RuntimeSource,
}

impl VendorUpload {
    /// Upload on the runtime `runtime` gives.
    pub fn new(runtime: RuntimeSource) -> Self {
        Self { runtime }
    }

    /// Upload `input` and wait until the copy has landed.
    ///
    /// # Errors
    ///
    /// [`VendorError`] when the view cannot be materialised, or
    /// tenferro-gpu refuses the upload or the wait.
    pub fn upload(&self, input: &TensorRead<'_>) -> Result<Tensor, VendorError> {
        let runtime = self.runtime.runtime();
        let device = enqueue_upload(&runtime, input)?;
        // The upload was only enqueued: a blocking transfer returns once the
        // copy has landed.
        runtime
            .synchronize()
            .map_err(|source| VendorError::Synchronize {
                source: Box::new(source),
            })?;
        Ok(device)
    }
}

impl TransferProvider for VendorUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.upload(request.input())
            .map_err(|error| error.into_runtime("VendorUpload::transfer_blocking"))
    }
}

/// CUDA to host (tenferro-cpu): `download_tensor`, which waits for its copy.
#[derive(Clone, Debug)]
pub struct VendorDownload {
    runtime: RuntimeSource,
}

impl VendorDownload {
    /// Download on the runtime `runtime` gives.
    pub fn new(runtime: RuntimeSource) -> Self {
        Self { runtime }
    }

    /// Download `input` into plain host memory.
    ///
    /// # Errors
    ///
    /// [`VendorError::DeviceView`] for a view, [`VendorError::Download`]
    /// when tenferro-gpu refuses the input or the copy fails.
    pub fn download(&self, input: &TensorRead<'_>) -> Result<Tensor, VendorError> {
        match input {
            TensorRead::View(_) => Err(VendorError::DeviceView),
            TensorRead::Tensor(tensor) => {
                download_tensor(&self.runtime.runtime(), tensor).map_err(|source| {
                    VendorError::Download {
                        dtype: input.dtype(),
                        shape: input.shape().to_vec(),
                        source: Box::new(source),
                    }
                })
            }
        }
    }
}

impl TransferProvider for VendorDownload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        self.download(request.input())
            .map_err(|error| error.into_runtime("VendorDownload::transfer_blocking"))
    }
}

/// Deliberately wrong: host to CUDA through `upload_tensor` and nothing
/// else, so it returns while the copy is still queued on the stream. Values
/// read back later are right (the read waits on the same stream); what is
/// broken is the promise of a blocking transfer, which the suite's
/// `completion` rule checks.
#[derive(Clone, Debug)]
pub struct NaiveUpload {
    runtime: RuntimeSource,
}

impl NaiveUpload {
    /// Upload on the runtime `runtime` gives, without waiting.
    pub fn new(runtime: RuntimeSource) -> Self {
        Self { runtime }
    }
}

impl TransferProvider for NaiveUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        enqueue_upload(&self.runtime.runtime(), request.input())
            .map_err(|error| error.into_runtime("NaiveUpload::transfer_blocking"))
    }
}
