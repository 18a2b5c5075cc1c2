//! Typed errors of the simulated devices.

use tenferro_runtime::RuntimeConfigError;

/// A failure to set up a simulated device.
///
/// # Examples
///
/// ```
/// use tenferro_mock_devices::SimDevice;
///
/// // Device names become identifier components, which must be lowercase.
/// assert!(SimDevice::named("Not Valid", 0).is_err());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MockError {
    /// A tenferro identifier or registration was rejected.
    #[error("simulated device `{device}`: tenferro rejected its configuration")]
    Config {
        /// The device being configured.
        device: String,
        /// What tenferro said.
        #[source]
        source: Box<RuntimeConfigError>,
    },
}
