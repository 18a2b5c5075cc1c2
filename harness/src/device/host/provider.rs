//! The real host-to-host provider: it copies any host-mappable tensor or
//! strided view into plain host memory.

use tenferro_runtime::{TransferProvider, TransferRequest};
use tenferro_tensor::{Error, MemoryKind, Tensor};

use crate::{read_compact, with_element};

/// The real host-to-host provider: copies any host-mappable tensor or
/// strided view (plain host, or managed host memory of a domain) into
/// plain host memory, which is what a tenferro-cpu engine runs on.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tenferro_transfer_harness::{Case, Endpoint, HostProvider, Oracle, Rig, Route};
///
/// let route = Route::host_to_host().unwrap();
/// let mut rig = Rig::new(route.clone(), Arc::new(HostProvider::new())).unwrap();
/// let case = Case::from_values(vec![2, 2], vec![1_i64, i64::MIN, i64::MAX, -1]).unwrap();
/// assert!(Oracle.judge(&case, &route, &rig.run(&case).unwrap()).passed());
/// ```
#[derive(Debug, Default)]
pub struct HostProvider;

impl HostProvider {
    /// The provider.
    pub fn new() -> Self {
        Self
    }
}

impl TransferProvider for HostProvider {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "HostProvider::transfer_blocking";
        let input = request.input();
        if input.placement().memory_kind == MemoryKind::Device {
            return Err(Error::runtime_state(OP, "input is device memory, not host memory").into());
        }
        with_element!(input.dtype(), T => {
            Ok(Tensor::from_vec_col_major(input.shape().to_vec(), read_compact::<T>(input)?)?)
        }, external => Err(Error::unsupported(OP, format!("dtype {:?} is not a preset dtype", input.dtype())).into()))
    }
}
