//! An upload cache that knows a view by its dtype, shape and the bytes of
//! its whole host backing, not by where the view lies in them: two
//! same-shape slices of one host buffer (row blocks of one batch) get the
//! first one's values. The state pass moves, for the first views of each
//! dtype, the view over a backing of seeded bits and the same view at
//! another offset over the same bytes right after it: `values` fails. The
//! same cache with the view's offset and strides in its key is the control.
//! Written as a vendor would, from the public API (blind probe 8's
//! `b-backing-key-cache-up`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tenferro_runtime::TransferRequest;
use tenferro_tensor::{BackendStorage, Error, Tensor};
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::harness::Element;
use tenferro_transfer_conformance::mock_devices::sim_storage_of;
use tenferro_transfer_conformance::prelude::*;

use crate::support::blocks::sim_upload;
use crate::support::verdicts::{no_rule_fails, replay_json};

/// A view's key: its shape, its backing's bytes, and where the view lies
/// in them where the key has it.
type BackingKey = (Vec<usize>, Vec<u8>, Option<(Vec<isize>, isize)>);

#[derive(Debug)]
struct BackingCache {
    inner: SimUpload,
    layout_in_key: bool,
    /// The values uploaded for each key.
    kept: Mutex<HashMap<BackingKey, Vec<f32>>>,
}

impl BackingCache {
    fn key(&self, request: &TransferRequest<'_>) -> Option<BackingKey> {
        let view = f32::typed_view(request.input().clone().tensor_view())?;
        let backing = view.host_storage().ok()?;
        let mut bytes = Vec::new();
        f32::extend_bytes(backing, &mut bytes);
        let layout = (view.strides().to_vec(), view.offset());
        Some((
            view.shape().to_vec(),
            bytes,
            self.layout_in_key.then_some(layout),
        ))
    }
}

impl TransferProvider for BackingCache {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        let key = self.key(&request);
        let output = self.inner.transfer_blocking(request)?;
        let (Some(key), Some(block)) = (key, sim_storage_of::<f32>(&output)) else {
            return Ok(output);
        };
        let access = |error| Error::host_access("BackingCache", error);
        let mut kept = self.kept.lock().unwrap();
        match kept.get(&key) {
            Some(values) => block
                .alias()
                .map_write()
                .map_err(access)?
                .copy_from_slice(values)
                .map_err(access)?,
            None => {
                let values = block.map_read().map_err(access)?.to_vec();
                kept.insert(key, values);
            }
        }
        Ok(output)
    }
}

fn cache(layout_in_key: bool) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> {
    move |route| {
        Ok(Arc::new(BackingCache {
            inner: sim_upload(route)?,
            layout_in_key,
            kept: Mutex::default(),
        }))
    }
}

#[test]
fn a_cache_keyed_on_the_backing_bytes_alone_fails_values_and_one_keyed_on_the_view_does_not() {
    let suite = ProviderSuite::new("backing-cache", Level::V1)
        .route("backing_only", Route::host_to_sim, cache(false))
        .route("with_layout", Route::host_to_sim, cache(true))
        .capabilities(Capabilities::all().dtypes([DType::F32]))
        .profile(Profile::Quick)
        .seed(5);
    let report = suite.run();
    let RuleVerdict::Fail(text) = suite.check(&report, "backing_only", Rule::Values) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("over the same backing bytes"), "{text}");
    // The replay line moves the pair again, and fails again.
    let json = replay_json(&text);
    assert!(json.contains("whole-backing"), "{json}");
    assert!(suite.replay(json).summary().failed > 0, "{json}");
    // Every rule but capability-honesty: the caches serve the dtypes left
    // out of the capabilities too.
    let rules = Level::V1.rules().iter();
    no_rule_fails(
        &suite,
        &report,
        "with_layout",
        rules.filter(|rule| **rule != Rule::CapabilityHonesty),
    );
}
