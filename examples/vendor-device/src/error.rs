//! Errors of opening a device.

/// Why a [`crate::VendorDevice`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VendorError {
    /// tenferro rejected one of the device's identifiers.
    #[error("device {device}: tenferro rejected an identifier: {source}")]
    Identity {
        /// The device's name.
        device: String,
        /// tenferro's error.
        #[source]
        source: Box<tenferro_runtime::RuntimeConfigError>,
    },
    /// The copy engine's worker thread could not start.
    #[error("device {device}: the copy engine's thread could not start: {source}")]
    Spawn {
        /// The device's name.
        device: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}
