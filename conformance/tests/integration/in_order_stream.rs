//! Providers that synchronise an in-order stream through a later event, as
//! a CUDA vendor may: the simulated device completes a stream in order, so
//! waiting on a later copy of the stream lands the earlier ones, and these
//! providers keep the contract. The twin that waits on another stream's
//! copy does not. Written here as a vendor would, from the simulated
//! device's public API.

use std::sync::{Arc, Mutex};

use tenferro_tensor::Error;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::mock_devices::{CopyToken, read_compact, with_element};
use tenferro_transfer_conformance::prelude::*;

/// Where the provider waits for its copy.
#[derive(Clone, Copy, Debug)]
enum Sync {
    /// On a one-byte marker copy queued after it on the same stream.
    Marker { stream: usize },
    /// On the stream's latest token, kept in a slot every call replaces
    /// (the previous token is dropped unwaited).
    LastEvent,
}

#[derive(Debug)]
struct LaterEventUpload {
    device: SimDevice,
    sync: Sync,
    last: Mutex<Option<CopyToken>>,
}

impl LaterEventUpload {
    fn wait(&self, token: CopyToken) -> Result<(), BoxError> {
        match self.sync {
            Sync::Marker { stream } => {
                drop(token);
                let (_marker, marker) = self
                    .device
                    .stream(stream)
                    .enqueue_copy(vec![1], vec![0_i32])?;
                marker.wait()?;
            }
            Sync::LastEvent => {
                let latest = {
                    let mut last = self.last.lock().unwrap();
                    *last = Some(token);
                    last.clone()
                };
                if let Some(latest) = latest {
                    latest.wait()?;
                }
            }
        }
        Ok(())
    }
}

impl TransferProvider for LaterEventUpload {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "LaterEventUpload::transfer_blocking";
        let input = request.input();
        with_element!(input.dtype(), T => {
            let (tensor, token) = self
                .device
                .stream(0)
                .enqueue_copy(input.shape().to_vec(), read_compact::<T>(input)?)?;
            self.wait(token)
                .map_err(|error| Error::runtime_state(OP, error.to_string()))?;
            Ok(tensor)
        }, external => Err(Error::unsupported(OP, "preset dtypes only").into()))
    }
}

fn provider(route: &Route, sync: Sync) -> Result<Arc<dyn TransferProvider>, BoxError> {
    let device = route
        .destination()
        .downcast::<SimDevice>()
        .ok_or("the upload serves a simulated destination")?;
    Ok(Arc::new(LaterEventUpload {
        device: device.clone(),
        sync,
        last: Mutex::default(),
    }))
}

fn suite() -> ProviderSuite {
    ProviderSuite::new("in-order-stream", Level::V2)
        .route("marker", Route::host_to_sim, |route| {
            provider(route, Sync::Marker { stream: 0 })
        })
        .route("last_event", Route::host_to_sim, |route| {
            provider(route, Sync::LastEvent)
        })
        .route("other_stream", Route::host_to_sim, |route| {
            provider(route, Sync::Marker { stream: 1 })
        })
        .profile(Profile::Quick)
        .seed(5)
}

#[test]
fn waiting_on_a_later_copy_of_the_stream_keeps_the_contract_and_another_streams_does_not() {
    let suite = suite();
    let report = suite.run();
    for route in ["marker", "last_event"] {
        for rule in Level::V2.rules() {
            assert!(
                !matches!(suite.check(&report, route, *rule), RuleVerdict::Fail(_)),
                "{route} {rule}: {}",
                report.to_table()
            );
        }
        assert!(
            matches!(
                suite.check(&report, route, Rule::Completion),
                RuleVerdict::Pass { .. }
            ),
            "{route}: {}",
            report.to_table()
        );
    }
    let RuleVerdict::Fail(text) = suite.check(&report, "other_stream", Rule::Completion) else {
        panic!("{}", report.to_table());
    };
    assert!(text.contains("on sim"), "{text}");
}
