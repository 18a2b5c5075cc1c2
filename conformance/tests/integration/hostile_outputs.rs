//! Hostile outputs: a provider whose returned storage panics
//! after `transfer_blocking` returned is reported under `no-panic`, with
//! every other rule it breaks, through `ProviderSuite` alone.
//!
//! The providers here are written as a vendor would write them, with the
//! public API only: a host-route provider that returns F64 values in a
//! backend storage of its own (a family the plain host destination does not
//! accept, so `residency` is broken on every case), whose storage panics in
//! `map_read` or in `Drop`.

use std::any::Any;
use std::sync::Arc;

use tenferro_tensor::{
    AllocationDomainId, AllocationId, BackendStorage, HostAccessError, HostReadGuard,
    StorageBuffer, Tensor, TypedTensor,
};
use tenferro_transfer_conformance::mock_devices::read_compact;
use tenferro_transfer_conformance::prelude::*;

const MAX_ELEMENTS: usize = 1 << 20;

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Misbehaviour {
    PanicInMapRead,
    PanicInDrop,
}

/// A vendor's own storage family, holding its values on the host.
#[derive(Debug)]
struct VendorStorage {
    values: Vec<f64>,
    domain: AllocationDomainId,
    misbehaviour: Misbehaviour,
}

impl BackendStorage<f64> for VendorStorage {
    fn backend_family(&self) -> &'static str {
        "vendor.hostile"
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn allocation_domain(&self) -> Option<AllocationDomainId> {
        Some(self.domain)
    }

    fn allocation_id(&self) -> Option<AllocationId> {
        Some(AllocationId::from_backend_id(1))
    }

    fn map_read(&self) -> Result<HostReadGuard<'_, f64>, HostAccessError> {
        if self.misbehaviour == Misbehaviour::PanicInMapRead {
            panic!("vendor storage: map_read is not implemented yet");
        }
        Ok(HostReadGuard::new(self.values.as_slice()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for VendorStorage {
    fn drop(&mut self) {
        if self.misbehaviour == Misbehaviour::PanicInDrop && !std::thread::panicking() {
            panic!("vendor storage: double free detected in drop");
        }
    }
}

#[derive(Debug)]
struct VendorProvider {
    misbehaviour: Misbehaviour,
}

impl TransferProvider for VendorProvider {
    fn transfer_blocking(
        &self,
        request: tenferro_runtime::TransferRequest<'_>,
    ) -> tenferro_runtime::Result<Tensor> {
        let input = request.input();
        if input.dtype() != DType::F64 {
            return Err(tenferro_tensor::Error::unsupported("vendor", "F64 only").into());
        }
        if input.shape().iter().product::<usize>() > MAX_ELEMENTS {
            return Err(tenferro_tensor::Error::unsupported("vendor", "too large").into());
        }
        let values = read_compact::<f64>(input)?;
        let storage = VendorStorage {
            values,
            domain: AllocationDomainId::fresh(),
            misbehaviour: self.misbehaviour,
        };
        let typed = TypedTensor::<f64>::from_buffer_col_major(
            input.shape().to_vec(),
            StorageBuffer::Backend(Box::new(storage)),
            tenferro_tensor::Placement::default(),
        )?;
        Ok(Tensor::from_typed(typed))
    }
}

fn suite(misbehaviour: Misbehaviour) -> ProviderSuite {
    ProviderSuite::new("vendor-hostile", Level::V1)
        .route("host", Route::host_to_host, move |_| {
            Ok(Arc::new(VendorProvider { misbehaviour }) as Arc<dyn TransferProvider>)
        })
        .capabilities(
            Capabilities::all()
                .dtypes([DType::F64])
                .max_elements(MAX_ELEMENTS),
        )
        .profile(Profile::Quick)
        .seed(24)
}

fn failing_rules(suite: &ProviderSuite, report: &Report) -> Vec<Rule> {
    Level::V1
        .rules()
        .iter()
        .copied()
        .filter(|rule| matches!(suite.check(report, "host", *rule), RuleVerdict::Fail(_)))
        .collect()
}

#[test]
fn a_storage_that_panics_in_map_read_fails_no_panic_and_residency_and_the_runtime_agrees() {
    let suite = suite(Misbehaviour::PanicInMapRead);
    let report = suite.run();
    assert_eq!(
        failing_rules(&suite, &report),
        vec![Rule::Residency, Rule::NoPanic],
        "{}",
        report.to_table()
    );
    let RuleVerdict::Fail(text) = suite.check(&report, "host", Rule::NoPanic) else {
        unreachable!()
    };
    assert!(
        text.contains("the returned storage panicked in map_read: vendor storage: map_read is not implemented yet"),
        "{text}"
    );
    assert!(
        suite
            .check(&report, "host", Rule::RuntimeAgreement)
            .is_pass(),
        "{:?}",
        suite.check(&report, "host", Rule::RuntimeAgreement)
    );
}

#[test]
fn a_storage_that_panics_when_dropped_fails_no_panic() {
    let suite = suite(Misbehaviour::PanicInDrop);
    let report = suite.run();
    let failing = failing_rules(&suite, &report);
    assert!(failing.contains(&Rule::NoPanic), "{}", report.to_table());
    assert!(failing.contains(&Rule::Residency), "{}", report.to_table());
    let RuleVerdict::Fail(text) = suite.check(&report, "host", Rule::NoPanic) else {
        unreachable!()
    };
    assert!(
        text.contains("vendor storage: double free detected in drop"),
        "{text}"
    );
}
