//! Built without the `cuda` feature there is nothing to test: one test says
//! so, visibly, and fails where `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1`
//! demands CUDA.
#![cfg(not(feature = "cuda"))]

use example_cuda_vendor::ENABLE_CUDA;
use tenferro_transfer_conformance::cuda::{REQUIRE_CUDA_ENV, cuda_required};
use tenferro_transfer_conformance::harness::announce_skip;

#[test]
fn cuda_providers_need_the_cuda_feature() {
    let reason = format!("the CUDA providers are not built: {ENABLE_CUDA}");
    assert!(!cuda_required(), "{REQUIRE_CUDA_ENV}=1, but {reason}");
    announce_skip("cuda_providers_need_the_cuda_feature", &reason);
}
