//! An upload with a fast path for compact inputs, whose layout check a
//! test can get wrong in the ways vendors do: it copies the backing
//! straight from the view's offset where it takes the layout to be
//! compact, and gathers otherwise.

use std::sync::Arc;

use tenferro_tensor::TypedTensorView;
use tenferro_transfer_conformance::BoxError;
use tenferro_transfer_conformance::adapter::*;
use tenferro_transfer_conformance::harness::{Element, compact_strides};

/// How the fast path's layout check looks at the axes.
#[derive(Clone, Copy, Debug)]
pub struct LayoutCheck {
    /// How many leading axes it looks at (six where the author only met
    /// ranks up to six).
    pub axes_checked: usize,
    /// Whether it takes a zero stride for an axis that moves nowhere, as it
    /// rightly takes an axis of extent one (where the author never met a
    /// broadcast view).
    pub zero_stride_is_still: bool,
    /// Whether it sorts the strides before it compares them with compact
    /// ones (so a transpose looks compact).
    pub sorts_strides: bool,
    /// How many axes of more than one element its own gather keeps (six
    /// where the author's plan had six slots); past that, it leaves
    /// gathering to the suite's `read_compact`, which keeps every axis.
    pub plan_axes: usize,
}

impl LayoutCheck {
    /// The check that looks at every axis and knows a broadcast.
    pub const RIGHT: LayoutCheck = LayoutCheck {
        axes_checked: usize::MAX,
        zero_stride_is_still: false,
        sorts_strides: false,
        plan_axes: usize::MAX,
    };
}

/// The upload, copying onto the simulated device's stream 0 and waiting.
#[derive(Debug)]
pub struct CompactFastPath {
    device: SimDevice,
    check: LayoutCheck,
}

impl CompactFastPath {
    /// A suite (V2, quick, seed 1) of two routes to a simulated device:
    /// `right`, whose check is [`LayoutCheck::RIGHT`], and `broken`, whose
    /// check is `check`.
    pub fn suite(broken: &str, check: LayoutCheck) -> ProviderSuite {
        ProviderSuite::new("fast-path", Level::V2)
            .route(
                "right",
                Route::host_to_sim,
                Self::factory(LayoutCheck::RIGHT),
            )
            .route(broken, Route::host_to_sim, Self::factory(check))
            .profile(Profile::Quick)
            .seed(1)
    }

    /// A provider factory for [`ProviderSuite::route`] with this `check`.
    pub fn factory(
        check: LayoutCheck,
    ) -> impl Fn(&Route) -> Result<Arc<dyn TransferProvider>, BoxError> + Send + Sync + 'static
    {
        move |route: &Route| -> Result<Arc<dyn TransferProvider>, BoxError> {
            let device = route
                .destination()
                .downcast::<SimDevice>()
                .ok_or("a simulated destination")?;
            Ok(Arc::new(CompactFastPath {
                device: device.clone(),
                check,
            }))
        }
    }

    fn values<T: Element>(&self, input: &TensorRead<'_>) -> tenferro_runtime::Result<Vec<T>> {
        let Some(view) = T::typed_view(input.clone().tensor_view()) else {
            return Ok(read_compact::<T>(input)?);
        };
        let (mut shape, mut strides) = (view.shape().to_vec(), view.strides().to_vec());
        if self.check.sorts_strides {
            let mut axes: Vec<(isize, usize)> =
                strides.iter().copied().zip(shape.iter().copied()).collect();
            axes.sort_unstable();
            (strides, shape) = axes.into_iter().unzip();
        }
        let compact = compact_strides(&shape);
        let looked_at = shape.len().min(self.check.axes_checked);
        let still = |axis: usize| {
            shape[axis] <= 1 || (self.check.zero_stride_is_still && strides[axis] == 0)
        };
        let fast = (0..looked_at).all(|axis| still(axis) || strides[axis] == compact[axis]);
        let count = shape.iter().product::<usize>();
        match (fast, usize::try_from(view.offset())) {
            (true, Ok(offset)) => {
                let backing = view.host_storage()?;
                Ok(backing.iter().skip(offset).take(count).copied().collect())
            }
            _ if shape.iter().filter(|extent| **extent > 1).count() > self.check.plan_axes => {
                self.gather_planned(&view)
            }
            _ => Ok(read_compact::<T>(input)?),
        }
    }
}

impl CompactFastPath {
    /// The view's elements in column-major order, walked along only the
    /// first [`LayoutCheck::plan_axes`] axes of more than one element:
    /// every later axis stays at its first index.
    fn gather_planned<T: Element>(
        &self,
        view: &TypedTensorView<'_, T>,
    ) -> tenferro_runtime::Result<Vec<T>> {
        let backing = view.host_storage()?;
        let (shape, strides) = (view.shape(), view.strides());
        let planned: Vec<usize> = (0..shape.len())
            .filter(|axis| shape[*axis] > 1)
            .take(self.check.plan_axes)
            .collect();
        let count = shape.iter().product::<usize>();
        let mut index = vec![0_usize; shape.len()];
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            let position = planned.iter().fold(view.offset(), |position, &axis| {
                position + strides[axis] * index[axis] as isize
            });
            values.push(backing[position as usize]);
            for axis in 0..shape.len() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(values)
    }
}

impl TransferProvider for CompactFastPath {
    fn transfer_blocking(&self, request: TransferRequest<'_>) -> tenferro_runtime::Result<Tensor> {
        const OP: &str = "CompactFastPath::transfer_blocking";
        let input = request.input();
        with_element!(input.dtype(), T => {
            let values = self.values::<T>(input)?;
            let (output, copy) = self.device.stream(0).enqueue_copy(input.shape().to_vec(), values)?;
            copy.wait().map_err(|error| tenferro_tensor::Error::backend_source(OP, error))?;
            Ok(output)
        }, external => Err(tenferro_tensor::Error::unsupported(OP, "preset dtypes only").into()))
    }
}
