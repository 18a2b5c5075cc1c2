//! The CUDA endpoints and providers on a real device; without one, each
//! test prints a visible `SKIP` line with the reason and returns, and with
//! `TRANSFER_CONFORMANCE_REQUIRE_CUDA=1` it fails instead.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use tenferro_tensor::DType;
use tenferro_transfer_cuda::{CudaDownload, CudaEarlyReturn, CudaRoutes, CudaUpload, round_trip};
use tenferro_transfer_harness::PRESET_DTYPES;
use tenferro_transfer_harness::{
    Case, CompletionState, Endpoint, Layout, Oracle, ProviderResult, Rig, Route, Rule, ViewAxis,
    ViewSpec, route_or_skip,
};

fn device(endpoint: &Endpoint) -> tenferro_transfer_cuda::CudaEndpoint {
    match endpoint.downcast::<tenferro_transfer_cuda::CudaEndpoint>() {
        Some(device) => device.clone(),
        None => panic!("not a CUDA endpoint: {}", endpoint.name()),
    }
}

/// A 3 x 3 view of a 7 x 6 backing: an offset, a step of 2 and a negative step.
fn strided() -> Layout {
    let axis = |(first, step, len)| ViewAxis { first, step, len };
    Layout::View(ViewSpec {
        backing_shape: vec![7, 6],
        axes: [(1, 2, 3), (5, -2, 3)].into_iter().map(axis).collect(),
        permutation: vec![],
    })
}

#[test]
fn upload_passes_every_dtype_owned_and_strided() {
    let Some(route) = route_or_skip(
        "upload_passes_every_dtype_owned_and_strided",
        Route::host_to_cuda(),
    )
    .unwrap() else {
        return;
    };
    let provider = Arc::new(CudaUpload::new(device(route.destination())));
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    for dtype in PRESET_DTYPES {
        for (shape, layout) in [
            (vec![], Layout::Owned),
            (vec![3, 0, 2], Layout::Owned),
            (vec![7, 3], Layout::Owned),
            (vec![3, 3], strided()),
        ] {
            let case = Case::patterned(dtype, shape, layout).unwrap();
            let outcome = rig.run(&case).unwrap();
            let judgement = Oracle.judge(&case, &route, &outcome);
            assert!(judgement.passed(), "{dtype:?}: {judgement:?}");
            // The stream was asked, not skipped: completion is judged.
            assert!(
                !judgement
                    .unchecked()
                    .iter()
                    .any(|item| item.rule == Rule::Completion && !case.is_empty()),
                "{judgement:?}"
            );
        }
    }
}

#[test]
fn download_passes_every_dtype() {
    let Some(route) = route_or_skip("download_passes_every_dtype", Route::cuda_to_host()).unwrap()
    else {
        return;
    };
    let provider = Arc::new(CudaDownload::new(device(route.source())));
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    for dtype in PRESET_DTYPES {
        for shape in [vec![], vec![0], vec![5, 1, 3], vec![257]] {
            let case = Case::patterned(dtype, shape, Layout::Owned).unwrap();
            let judgement = Oracle.judge(&case, &route, &rig.run(&case).unwrap());
            assert!(judgement.passed(), "{dtype:?}: {judgement:?}");
        }
    }
}

#[test]
fn a_view_of_cuda_memory_is_a_skip_not_a_failure() {
    let Some(route) = route_or_skip(
        "a_view_of_cuda_memory_is_a_skip_not_a_failure",
        Route::cuda_to_host(),
    )
    .unwrap() else {
        return;
    };
    let mut rig = Rig::new(
        route.clone(),
        Arc::new(CudaDownload::new(device(route.source()))),
    )
    .unwrap();
    let case = Case::patterned(DType::F64, vec![3, 3], strided()).unwrap();
    assert!(rig.run(&case).unwrap_err().is_skip());
}

#[test]
fn early_return_is_caught_by_completion_alone() {
    let Some(route) = route_or_skip(
        "early_return_is_caught_by_completion_alone",
        Route::host_to_cuda(),
    )
    .unwrap() else {
        return;
    };
    let provider = Arc::new(CudaEarlyReturn::new(device(route.destination())));
    let mut rig = Rig::new(route.clone(), provider).unwrap();
    for shape in [vec![1], vec![1024, 1024]] {
        let case = Case::patterned(DType::F32, shape, Layout::Owned).unwrap();
        let outcome = rig.run(&case).unwrap();
        let Some(ProviderResult::Returned(returned)) =
            outcome.call().map(|call| call.result.clone())
        else {
            panic!("the provider returned no tensor: {outcome:?}");
        };
        assert!(
            matches!(returned.completion, CompletionState::Pending { .. }),
            "{:?}",
            returned.completion
        );
        assert_eq!(
            Oracle.judge(&case, &route, &outcome).rules(),
            vec![Rule::Completion]
        );
    }
}

#[test]
fn reduce_sum_of_a_sum_uploads_twice_and_downloads_once() {
    let Some(route) = route_or_skip(
        "reduce_sum_of_a_sum_uploads_twice_and_downloads_once",
        Route::host_to_cuda(),
    )
    .unwrap() else {
        return;
    };
    let endpoint = device(route.destination());
    let a: Vec<f64> = (0..24).map(f64::from).collect();
    let b: Vec<f64> = (0..24).map(|i| f64::from(i) * -3.0 + 0.5).collect();
    let expected: f64 = a.iter().zip(&b).map(|(x, y)| x + y).sum();
    let outcome = round_trip(&endpoint, &[4, 6], a, b).unwrap();
    assert_eq!(outcome.sum, expected);
    assert_eq!(outcome.uploads.len(), 2, "{outcome:?}");
    assert!(!outcome.downloads.is_empty(), "{outcome:?}");
    for call in outcome.uploads.iter().chain(&outcome.downloads) {
        assert!(
            matches!(call.result, ProviderResult::Returned(_)),
            "{call:?}"
        );
    }
}
