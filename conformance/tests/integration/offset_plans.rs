//! A provider that keeps a gather plan per layout but leaves the view's
//! offset out of the plan's key: a later view of the same shape and
//! strides at another offset is read at the first one's positions. The
//! state pass moves each small view again at another offset right after
//! it, so `values` fails; the same cache keyed on the offset too is the
//! control. Written as a vendor would, from the public API.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tenferro_runtime::TransferRequest;
use tenferro_tensor::{BackendStorage, Error, Tensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::harness::{Element, gather};
use tenferro_transfer_conformance::mock_devices::sim_storage_of;
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::sim_upload;
use crate::support::verdicts::no_rule_fails;

/// A layout's key: shape and strides, and the offset where the key has it.
type PlanKey = (Vec<usize>, Vec<isize>, Option<isize>);

#[derive(Debug)]
struct PlanCache {
    inner: SimUpload,
    offset_in_key: bool,
    /// The offset each plan was made for.
    plans: Mutex<HashMap<PlanKey, isize>>,
}

impl PlanCache {
    /// The input's values as the cached plan reads them, where the plan
    /// was made for another offset.
    fn planned(&self, request: &TransferRequest<'_>) -> Option<Vec<f32>> {
        let view = f32::typed_view(request.input().clone().tensor_view())?;
        let backing = view.host_storage().ok()?;
        let key = (
            view.shape().to_vec(),
            view.strides().to_vec(),
            self.offset_in_key.then_some(view.offset()),
        );
        let planned = *self
            .plans
            .lock()
            .unwrap()
            .entry(key)
            .or_insert(view.offset());
        if planned == view.offset() {
            return None;
        }
        gather(view.shape(), view.strides(), planned, backing).ok()
    }
}

impl TransferProvider for PlanCache {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let planned = self.planned(&request);
        let output = self.inner.transfer_blocking(request)?;
        if let (Some(values), Some(block)) = (planned, sim_storage_of::<f32>(&output)) {
            let access = |error| Error::host_access("PlanCache", error);
            block
                .alias()
                .map_write()
                .map_err(access)?
                .copy_from_slice(&values)
                .map_err(access)?;
        }
        Ok(output)
    }
}

fn plans(offset_in_key: bool) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        Ok(Arc::new(PlanCache {
            inner: sim_upload(route)?,
            offset_in_key,
            plans: Mutex::default(),
        }))
    }
}

#[test]
fn a_plan_cache_without_the_offset_in_its_key_fails_values_and_one_with_it_does_not() {
    let suite = ProviderSuite::new("plan-cache", Level::V1)
        .route("no_offset", Route::host_to_sim, plans(false))
        .route("full_key", Route::host_to_sim, plans(true))
        .capabilities(Capabilities::all().dtypes([DType::F32]))
        .profile(Profile::Quick)
        .seed(5);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "no_offset", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("at another offset"), "{text}");
    // Every rule but capability-honesty: the caches serve the dtypes left
    // out of the capabilities too.
    let rules = Level::V1.rules().iter();
    no_rule_fails(
        &suite,
        &report,
        "full_key",
        rules.filter(|rule| **rule != Rule::CapabilityHonesty),
    );
}
