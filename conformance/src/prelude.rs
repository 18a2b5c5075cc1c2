//! What a provider crate's conformance test needs, in one import.
//!
//! ```
//! use tenferro_transfer_conformance::prelude::*;
//!
//! let suite = ProviderSuite::new("my-provider", Level::V1).profile(Profile::Quick);
//! assert_eq!(suite.level(), Level::V1);
//! ```

pub use crate::{Level, ProviderSuite, Report, RuleVerdict};
pub use tenferro_mock_devices::{SimDevice, SimDownload, SimPeer, SimRoutes, SimUpload};
pub use tenferro_runtime::{TransferProvider, TransferRequest};
pub use tenferro_tensor::{DType, Tensor};
pub use tenferro_transfer_cuda::CudaRoutes;
pub use tenferro_transfer_harness::strategy::{Capabilities, Profile, ViewKind, ViewKinds};
pub use tenferro_transfer_harness::{CapabilityGate, Endpoint, HostProvider, Route, Rule};
