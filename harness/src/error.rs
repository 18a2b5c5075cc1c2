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
    pub(crate) fn config(context: impl Into<String>, source: RuntimeConfigError) -> Self {
        Self::Config {
            context: context.into(),
            source: Box::new(source),
        }
    }
}
