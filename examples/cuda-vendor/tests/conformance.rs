//! The conformance suite over this crate's CUDA providers: one `#[test]`
//! per rule and route, run by `cargo test --features cuda`. Without a GPU
//! each test prints why its rule was skipped; with
//! `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1` that is a failure instead.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use example_cuda_vendor::{RuntimeSource, VendorDownload, VendorUpload};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::cuda::CudaEndpoint;
use tenferro_transfer_conformance::prelude::*;

/// The runtime of the suite's CUDA device, asked at each call: the suite
/// opens a fresh CUDA engine, with its own runtime, for each rig.
fn runtime_of(device: Option<&CudaEndpoint>) -> Result<RuntimeSource, BoxError> {
    let device = device.ok_or("the route has no CUDA device")?.clone();
    Ok(RuntimeSource::new(move || device.runtime()))
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("cuda-vendor", Level::V2)
        .route("upload", Route::host_to_cuda, |route| {
            let runtime = runtime_of(route.destination().downcast::<CudaEndpoint>())?;
            Ok(Arc::new(VendorUpload::new(runtime)) as Arc<dyn TransferProvider>)
        })
        .route("download", Route::cuda_to_host, |route| {
            let runtime = runtime_of(route.source().downcast::<CudaEndpoint>())?;
            Ok(Arc::new(VendorDownload::new(runtime)) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
}

tenferro_transfer_conformance::conformance_tests!(
    level = V2,
    suite = suite,
    routes = [upload, download]
);
