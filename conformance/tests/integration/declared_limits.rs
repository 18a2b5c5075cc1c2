//! A provider's declared limits are met at the limit: a rank above the
//! generator's (whose ranks stop at `MAX_RANK`) where the declared
//! maximum rank reaches it, and exactly the declared maximum element
//! count however small. Both bugs below passed every rule before the
//! fixed set had `rank-7`, `at-maximum-rank` and a small `at-maximum`.

use std::sync::Arc;

use tenferro_transfer_conformance::harness::{HostProvider, read_compact};
use tenferro_transfer_conformance::prelude::*;

/// Lays out F32 inputs of rank 7 or more in row-major order (as if the
/// input were C-ordered); copies the rest as the host provider does.
#[derive(Debug)]
struct RowMajorAboveSix;

impl TransferProvider for RowMajorAboveSix {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        if input.dtype() == DType::F32 && input.shape().len() > 6 {
            let values = read_compact::<f32>(input)?;
            return Ok(Tensor::from_vec_row_major(input.shape().to_vec(), values)?);
        }
        HostProvider::new().transfer_blocking(request)
    }
}

/// The host copy within limits: refuses a case of more than
/// `max_elements` elements (of `max_elements` or more with `early`, one
/// too early) or of more than `max_rank` axes.
#[derive(Debug)]
struct Limited {
    max_elements: usize,
    max_rank: usize,
    early: bool,
}

impl TransferProvider for Limited {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let shape = request.input().shape();
        let elements: usize = shape.iter().product();
        let over = elements > self.max_elements || (self.early && elements == self.max_elements);
        if over || shape.len() > self.max_rank {
            return Err(tenferro_tensor::Error::unsupported("Limited", "beyond its limits").into());
        }
        HostProvider::new().transfer_blocking(request)
    }
}

fn limited(early: bool) -> Limited {
    Limited {
        max_elements: 1000,
        max_rank: 9,
        early,
    }
}

#[test]
fn a_layout_bug_above_rank_six_and_an_off_by_one_at_a_small_maximum_are_caught() {
    let suite = ProviderSuite::new("limits", Level::V1)
        .route("high_rank", Route::host_to_host, |_| {
            Ok(Arc::new(RowMajorAboveSix) as _)
        })
        .route("limit", Route::host_to_host, |_| {
            Ok(Arc::new(limited(true)) as _)
        })
        .capabilities_for("limit", Capabilities::all().max_elements(1000).max_rank(9))
        .profile(Profile::Quick)
        .seed(5);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "high_rank", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("F32 [2, 3, 1, 2, 1, 1, 2]"), "{text}");
    let RuleVerdict::Fail(text) = suite.check(&report, "limit", Rule::NoError) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("[1000]"), "{text}");
}

#[test]
fn a_provider_that_keeps_its_declared_limits_passes_at_them() {
    let suite = ProviderSuite::new("limits", Level::V1)
        .route("host", Route::host_to_host, |_| {
            Ok(Arc::new(limited(false)) as _)
        })
        .capabilities_for("host", Capabilities::all().max_elements(1000).max_rank(9))
        .profile(Profile::Quick)
        .seed(5);
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    let table = report.to_table();
    assert!(table.contains("[1000]"), "{table}");
    assert!(table.contains("[2, 3, 1, 2, 1, 1, 2, 1, 1]"), "{table}");
}
