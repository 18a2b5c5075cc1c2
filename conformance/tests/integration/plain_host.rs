//! The plain host route: a correct host-to-host provider written
//! the natural way, which reads only plain host data (tenferro's own
//! `to_col_major` of the input view) and refuses anything it cannot borrow
//! as host memory, passes every rule on `Route::host_to_host`, where the
//! source hands over what tenferro-cpu hands over.

use std::sync::Arc;

use tenferro_tensor::{Tensor, TensorView};
use tenferro_transfer_conformance::prelude::*;

/// A host-to-host copy that knows nothing of the harness: it copies the
/// input view into a compact owner with tenferro's `to_col_major`, which
/// refuses backend-only storage.
#[derive(Debug)]
struct PlainHostCopy;

impl TransferProvider for PlainHostCopy {
    fn transfer_blocking(
        &self,
        request: tenferro_runtime::TransferRequest<'_>,
    ) -> tenferro_runtime::Result<Tensor> {
        let copied = match request.input().clone().tensor_view() {
            TensorView::F32(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::F64(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::I32(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::I64(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::Bool(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::C32(view) => Tensor::from_typed(view.to_col_major()?),
            TensorView::C64(view) => Tensor::from_typed(view.to_col_major()?),
        };
        Ok(copied)
    }
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("plain-host-copy", Level::V1)
        .route("host", Route::host_to_host, |_| {
            Ok(Arc::new(PlainHostCopy) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
        .seed(17)
}

#[test]
fn a_provider_that_reads_only_plain_host_data_passes_every_rule_on_the_plain_host_route() {
    let suite = suite();
    let report = suite.run();
    assert_eq!(report.summary().failed, 0, "{}", report.to_table());
    assert!(report.summary().passed > 0, "{}", report.to_table());
    for rule in Level::V1.rules() {
        let verdict = suite.check(&report, "host", *rule);
        assert!(
            !matches!(verdict, RuleVerdict::Fail(_)),
            "{rule}: {verdict:?}\n{}",
            report.to_table()
        );
    }
    // What plain host memory cannot show is a skip with its reason, never
    // a pass: no completion state, no allocation ledger.
    for rule in [Rule::Completion, Rule::NoLeak] {
        let RuleVerdict::Skip(reason) = suite.check(&report, "host", rule) else {
            panic!("{rule} should be a skip on plain host memory");
        };
        assert!(!reason.is_empty());
    }
    assert!(suite.check(&report, "host", Rule::Values).is_pass());
}

#[test]
fn the_same_provider_is_refused_on_the_managed_route_which_it_cannot_read() {
    // The managed source hands over backend storage the provider cannot
    // borrow as host memory: a typed Err, which is `no-error` there. The
    // plain route above is where such a provider belongs.
    let suite = ProviderSuite::new("plain-host-copy", Level::V1)
        .route("managed", Route::managed_to_host, |_| {
            Ok(Arc::new(PlainHostCopy) as Arc<dyn TransferProvider>)
        })
        .profile(Profile::Quick)
        .seed(17);
    let report = suite.run();
    assert!(
        matches!(
            suite.check(&report, "managed", Rule::NoError),
            RuleVerdict::Fail(_)
        ),
        "{}",
        report.to_table()
    );
}
