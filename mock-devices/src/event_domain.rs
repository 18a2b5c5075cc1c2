//! The simulated devices' own event domains: a driver whose runs record
//! every launch in the case's trace and mark the launching domain on the
//! thread, so the harness can see which domain launched a transfer and
//! which tokens it waited on.

use std::any::Any;
use std::sync::Arc;

use tenferro_runtime::{
    EventDomainDriver, EventDomainError, EventDomainId, EventDomainOperation, EventDomainRun,
    EventToken,
};

use tenferro_transfer_harness::trace::{self, TraceEvent};

/// The event-domain driver of a [`crate::SimEngine`].
#[derive(Debug)]
pub struct SimEventDomainDriver {
    device: String,
}

impl SimEventDomainDriver {
    /// The driver of the device called `device`.
    pub fn new(device: impl Into<String>) -> Self {
        Self {
            device: device.into(),
        }
    }
}

impl EventDomainDriver for SimEventDomainDriver {
    fn begin_run(
        &self,
        domain: EventDomainId,
    ) -> tenferro_runtime::Result<Box<dyn EventDomainRun>> {
        trace::record(TraceEvent::BeginRun {
            device: self.device.clone(),
            domain,
        });
        Ok(Box::new(SimEventDomainRun {
            device: self.device.clone(),
            domain,
        }))
    }
}

#[derive(Debug)]
struct SimEventDomainRun {
    device: String,
    domain: EventDomainId,
}

/// A completed launch of a simulated domain: the engine runs each launch
/// to completion, so the token is ready when it is made.
#[derive(Debug)]
struct SimEventToken {
    origin: EventDomainId,
}

impl EventToken for SimEventToken {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn origin(&self) -> EventDomainId {
        self.origin
    }

    fn wait(&self) -> tenferro_runtime::Result<()> {
        Ok(())
    }
}

impl EventDomainRun for SimEventDomainRun {
    fn domain(&self) -> EventDomainId {
        self.domain
    }

    fn enqueue(
        &mut self,
        dependencies: &[Arc<dyn EventToken>],
        launch: &mut dyn FnMut() -> tenferro_runtime::Result<()>,
    ) -> tenferro_runtime::Result<Arc<dyn EventToken>> {
        let mut waited_on = Vec::with_capacity(dependencies.len());
        for dependency in dependencies {
            let origin = dependency.origin();
            if origin != self.domain {
                // The runtime bridges foreign completions on the host before
                // a transfer; a foreign token reaching a launch is its bug.
                return Err(EventDomainError::DependencyDomainMismatch {
                    operation: EventDomainOperation::Enqueue,
                    node_index: None,
                    expected: self.domain,
                    actual: origin,
                }
                .into());
            }
            dependency.wait()?;
            waited_on.push(origin);
        }
        trace::record(TraceEvent::Launch {
            device: self.device.clone(),
            domain: self.domain,
            waited_on,
        });
        let _restore = trace::launching(self.domain);
        launch()?;
        Ok(Arc::new(SimEventToken {
            origin: self.domain,
        }))
    }

    fn drain(&mut self) -> tenferro_runtime::Result<()> {
        trace::record(TraceEvent::Drain {
            device: self.device.clone(),
            domain: self.domain,
        });
        Ok(())
    }
}
