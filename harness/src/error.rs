//! Typed errors of the harness itself (never of the provider under test:
//! those are outcomes).

use tenferro_mock_devices::MockError;
use tenferro_runtime::RuntimeConfigError;

/// A failure of the harness to set up or run a case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The case itself is malformed.
    #[error("invalid case: {reason}")]
    InvalidCase {
        /// What is wrong.
        reason: String,
    },
    /// The route is malformed.
    #[error("invalid route: {reason}")]
    InvalidRoute {
        /// What is wrong.
        reason: String,
    },
    /// tenferro rejected a registration or identifier.
    #[error("{context}: tenferro rejected the configuration")]
    Config {
        /// What was being configured.
        context: String,
        /// What tenferro said.
        #[source]
        source: Box<RuntimeConfigError>,
    },
    /// A simulated device could not be set up.
    #[error(transparent)]
    Device(#[from] MockError),
    /// A device adapter (yours, through [`crate::DeviceEndpoint`]) failed:
    /// its device could not be opened, registered or staged on. The
    /// device's own error is kept as the source.
    #[error("{context}")]
    Adapter {
        /// What the adapter was doing, e.g. "opening npu0".
        context: String,
        /// The device's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// tenferro rejected the case's input tensor or view.
    #[error("tenferro rejected the staged input")]
    Stage {
        /// What tenferro said.
        #[source]
        source: tenferro_tensor::Error,
    },
    /// The runtime refused to plan the route.
    #[error("the runtime refused to prepare route {route}: {message}")]
    Prepare {
        /// The route's label.
        route: String,
        /// The runtime's error.
        message: String,
        /// Its source chain.
        chain: Vec<String>,
    },
    /// The route cannot run here, and that is a skip, never a pass: no
    /// CUDA device, no driver, built without the `cuda` feature, or a case
    /// outside a route's known limits.
    #[error("not run here: {reason}")]
    Unavailable {
        /// Why not.
        reason: String,
    },
    /// CUDA cannot run here, and `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1`
    /// demands it: a failure.
    #[error("TRANSFER_CONFORMANCE_REQUIRE_CUDA=1, but {reason}")]
    CudaRequired {
        /// Why CUDA cannot run.
        reason: String,
    },
    /// A device is not available here, and the user requires it
    /// (`TRANSFER_CONFORMANCE_REQUIRE_DEVICES` names its kind): a failure.
    #[error(
        "{} requires the {kind} device, but {reason}",
        crate::REQUIRE_DEVICES_ENV
    )]
    DeviceRequired {
        /// The device kind required.
        kind: String,
        /// Why it is not available.
        reason: String,
    },
    /// A CUDA endpoint could not be set up.
    #[cfg(feature = "cuda")]
    #[error("{context}")]
    Cuda {
        /// What was being done.
        context: String,
        /// What failed.
        #[source]
        source: Box<crate::cuda::CudaError>,
    },
    /// Another runtime failure outside the provider.
    #[error("{context}: {message}")]
    Runtime {
        /// What the harness was doing.
        context: String,
        /// The runtime's error.
        message: String,
    },
}

impl HarnessError {
    /// A device adapter's failure, keeping the device's error as the
    /// source (see [`HarnessError::Adapter`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::HarnessError;
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no /dev/npu0");
    /// let error = HarnessError::adapter("opening npu0", io);
    /// assert_eq!(error.to_string(), "opening npu0");
    /// assert_eq!(std::error::Error::source(&error).unwrap().to_string(), "no /dev/npu0");
    /// ```
    pub fn adapter(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Adapter {
            context: context.into(),
            source: source.into(),
        }
    }

    /// Whether this error is a skip ([`HarnessError::Unavailable`]) rather
    /// than a failure.
    pub fn is_skip(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    pub(crate) fn config(context: impl Into<String>, source: RuntimeConfigError) -> Self {
        Self::Config {
            context: context.into(),
            source: Box::new(source),
        }
    }
}
