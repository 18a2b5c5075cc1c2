//! Typed errors of the harness itself (never of the provider under test:
//! those are outcomes).

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
    #[error("the runtime refused to prepare route {route}")]
    Prepare {
        /// The route's label.
        route: String,
        /// The runtime's error, with its own sources.
        #[source]
        source: Box<tenferro_runtime::Error>,
    },
    /// The route cannot run here, and that is a skip, never a pass: no
    /// device, no driver, built without a feature, or a case outside a
    /// route's known limits.
    #[error("not run here: {reason}")]
    Unavailable {
        /// Why not.
        reason: String,
    },
    /// A device is not available here, and the user requires it
    /// (`TRANSFER_CONFORMANCE_REQUIRE_DEVICES` names its kind, or its
    /// alias `TRANSFER_CONFORMANCE_REQUIRE_<KIND>=1` is set): a failure.
    #[error("{setting} requires the {kind} device, but {reason}")]
    DeviceRequired {
        /// The device kind required.
        kind: String,
        /// The setting that requires it, as the user wrote it
        /// (`TRANSFER_CONFORMANCE_REQUIRE_DEVICES=npu`).
        setting: String,
        /// Why it is not available.
        reason: String,
    },
    /// The runtime failed outside the provider: building the program, a
    /// snapshot, a run of the harness's own.
    #[error("{context}")]
    Runtime {
        /// What the harness was doing.
        context: String,
        /// tenferro's error, with its own sources.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A run of the harness's own returned no output.
    #[error("{context}: the run returned no output")]
    NoOutput {
        /// What the harness was doing.
        context: String,
    },
    /// A device adapter's `stage` returned `Ok` without handing an input
    /// over: the adapter's bug.
    #[error(
        "staging the input on {endpoint}: the adapter's stage returned Ok without handing an input over"
    )]
    NothingStaged {
        /// The source endpoint's name.
        endpoint: String,
    },
    /// The thread that runs cases could not be started.
    #[error("starting the case worker of route {route}")]
    Worker {
        /// The route's label.
        route: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A device adapter's method panicked where the harness called it to
    /// set a case up (its `stage`): the adapter's fault, not the
    /// provider's; the case is not run.
    #[error("the adapter of endpoint {endpoint} panicked in {method}: {message}")]
    AdapterPanicked {
        /// The endpoint's name.
        endpoint: String,
        /// The adapter's method.
        method: &'static str,
        /// The panic's message.
        message: String,
    },
    /// The thread that runs cases died (a panic the harness did not catch).
    #[error("the case worker of route {route} died")]
    WorkerDied {
        /// The route's label.
        route: String,
    },
    /// The harness lost track of a run (a provider call with no record, a
    /// panic before the transfer): the harness's fault, never the
    /// provider's or the runtime's.
    #[error("harness fault on route {route} (not the provider's, not the runtime's): {reason}")]
    HarnessFault {
        /// The route's label.
        route: String,
        /// What went wrong.
        reason: String,
    },
    /// A `TRANSFER_CONFORMANCE_*` setting has a value the suite does not
    /// know.
    #[error(transparent)]
    Settings(#[from] crate::SettingsError),
}

impl HarnessError {
    /// A device adapter's failure, keeping the device's error as the
    /// source (see [`HarnessError::Adapter`]): any error type, or a
    /// `String` or `&str` where the device has only a message.
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
    ///
    /// let refused = HarnessError::adapter("opening npu1", format!("{} queues busy", 4));
    /// assert_eq!(std::error::Error::source(&refused).unwrap().to_string(), "4 queues busy");
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

    /// A tensor could not be built where a case stages its input:
    /// [`HarnessError::Stage`], for an adapter's
    /// [`stage`](crate::DeviceEndpoint::stage).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::HarnessError;
    ///
    /// let refused = tenferro_tensor::Tensor::from_vec_col_major(vec![3], vec![1.0_f32]).unwrap_err();
    /// assert!(matches!(HarnessError::stage(refused), HarnessError::Stage { .. }));
    /// ```
    pub fn stage(source: tenferro_tensor::Error) -> Self {
        Self::Stage { source }
    }

    /// Whether this error is a skip ([`HarnessError::Unavailable`]) rather
    /// than a failure.
    pub fn is_skip(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// tenferro refused a registration or a runtime's configuration while
    /// an adapter (or the harness) set it up: [`HarnessError::Config`],
    /// with tenferro's error as the source.
    pub fn config(context: impl Into<String>, source: RuntimeConfigError) -> Self {
        Self::Config {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// A runtime failure of the harness's own (or an adapter's), keeping
    /// tenferro's error as the source: [`HarnessError::Runtime`].
    pub fn runtime(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Runtime {
            context: context.into(),
            source: Box::new(source),
        }
    }
}

/// `error` with every cause in its source chain, one per line: how a
/// report writes an error that kept its sources.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{HarnessError, describe_error};
///
/// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no /dev/npu0");
/// let error = HarnessError::adapter("opening npu0", io);
/// assert_eq!(describe_error(&error), "opening npu0\n  caused by: no /dev/npu0");
/// ```
pub fn describe_error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    for cause in source_chain(error) {
        text.push_str("\n  caused by: ");
        text.push_str(&cause);
    }
    text
}

/// Context for a device's own errors in an adapter: `.adapter_context("…")`
/// on any `Result` whose error is a standard error turns it into a
/// [`HarnessError::Adapter`] that keeps the device's error as its source
/// (the same as [`HarnessError::adapter`], in one call).
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::{AdapterContext, HarnessError};
///
/// fn open_npu() -> Result<u32, std::io::Error> {
///     Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no /dev/npu0"))
/// }
///
/// let error = open_npu().adapter_context("opening npu0").unwrap_err();
/// assert!(matches!(error, HarnessError::Adapter { .. }));
/// assert_eq!(error.to_string(), "opening npu0");
/// assert_eq!(std::error::Error::source(&error).unwrap().to_string(), "no /dev/npu0");
/// ```
pub trait AdapterContext<T> {
    /// The value, or the error as a [`HarnessError::Adapter`] with
    /// `context` (what the adapter was doing, e.g. "opening npu0").
    ///
    /// # Errors
    ///
    /// [`HarnessError::Adapter`] when `self` is an error.
    fn adapter_context(self, context: impl Into<String>) -> Result<T, HarnessError>;
}

impl<T, E> AdapterContext<T> for Result<T, E>
where
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    fn adapter_context(self, context: impl Into<String>) -> Result<T, HarnessError> {
        self.map_err(|source| HarnessError::adapter(context, source))
    }
}

/// Display of every error below `error` in its `source()` chain.
pub fn source_chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut chain = Vec::new();
    let mut next = error.source();
    while let Some(source) = next {
        chain.push(source.to_string());
        next = source.source();
    }
    chain
}

/// The text of a panic payload.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_harness::panic_message;
///
/// let payload = std::panic::catch_unwind(|| panic!("lost {}", 3)).unwrap_err();
/// assert_eq!(panic_message(payload.as_ref()), "lost 3");
/// ```
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}
