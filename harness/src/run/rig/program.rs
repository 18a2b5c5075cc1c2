//! The programs a rig runs: identity reshapes on the destination, which
//! can only run once their inputs have moved through the provider, and
//! which leave the values exactly as they arrived.
//!
//! A program of one input is `y = x.reshape(shape of x)`. A program of
//! several inputs reshapes each input as it arrives (`y_i`), and, once
//! every input has moved, reshapes each of them again (`z_i`, with an
//! axis of extent one appended): the
//! runtime keeps every transferred value in its slots until the program
//! ends, so `z_i` reads what the provider's `i`-th output holds after the
//! later transfers of the run, as a real program that moves several
//! inputs to a device would.

use tenferro_ops::ShapeExtent;
use tenferro_ops::dim_expr::DimExpr;
use tenferro_runtime::program::{CoreSemanticOp, ProgramInputSpec, ProgramValueMetadata};
use tenferro_runtime::{CompiledGraph, GraphCompiler, TraceContext, TracedTensor};
use tenferro_tensor::DType;

use crate::HarnessError;

/// The extents of a program's inputs: symbolic (one program serves every
/// shape of the inputs' ranks) or the exact shapes of one run.
pub(super) enum Extents<'a> {
    /// Every extent symbolic: `(dtype, rank)` per input.
    Symbolic(&'a [(DType, usize)]),
    /// Every extent exact: `(dtype, shape)` per input.
    Exact(&'a [(DType, &'a [usize])]),
}

impl Extents<'_> {
    fn len(&self) -> usize {
        match self {
            Extents::Symbolic(inputs) => inputs.len(),
            Extents::Exact(inputs) => inputs.len(),
        }
    }

    fn dtype(&self, input: usize) -> DType {
        match self {
            Extents::Symbolic(inputs) => inputs[input].0,
            Extents::Exact(inputs) => inputs[input].0,
        }
    }

    fn rank(&self, input: usize) -> usize {
        match self {
            Extents::Symbolic(inputs) => inputs[input].1,
            Extents::Exact(inputs) => inputs[input].1.len(),
        }
    }

    /// Extent `axis` of `input`, as the program's inputs declare it.
    fn declared(&self, input: usize, axis: usize) -> DimExpr {
        match self {
            Extents::Symbolic(_) => DimExpr::InputDim {
                input_idx: input,
                axis,
            },
            Extents::Exact(inputs) => DimExpr::Const(inputs[input].1[axis]),
        }
    }

    /// Extent `axis` of a reshape's one input, as its target names it.
    fn target(&self, input: usize, axis: usize) -> DimExpr {
        match self {
            Extents::Symbolic(_) => DimExpr::InputDim { input_idx: 0, axis },
            Extents::Exact(inputs) => DimExpr::Const(inputs[input].1[axis]),
        }
    }

    fn words(&self) -> String {
        match self {
            Extents::Symbolic(inputs) => inputs
                .iter()
                .map(|(dtype, rank)| format!("{dtype:?} of rank {rank}"))
                .collect::<Vec<_>>()
                .join(", "),
            Extents::Exact(inputs) => inputs
                .iter()
                .map(|(dtype, shape)| format!("{dtype:?} {shape:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The identity program of `extents`: `y_i = x_i.reshape(..)` for every
/// input in order and, with two inputs or more, `z_i` the same again once
/// every input has moved. Outputs: `y_1..y_k`, then `z_1..z_k`.
pub(super) fn identity_program(extents: &Extents<'_>) -> Result<CompiledGraph, HarnessError> {
    if let Extents::Exact([(dtype, shape)]) = extents {
        return single_exact(*dtype, shape);
    }
    let context = || format!("building the identity program for {}", extents.words());
    let build = |error| HarnessError::runtime(context(), error);
    let mut trace = TraceContext::new();
    let mut inputs = Vec::with_capacity(extents.len());
    for input in 0..extents.len() {
        let declared =
            (0..extents.rank(input)).map(|axis| ShapeExtent::Exact(extents.declared(input, axis)));
        inputs.push(
            trace
                .input(ProgramInputSpec::from_metadata(
                    ProgramValueMetadata::from_extents(extents.dtype(input), declared),
                ))
                .map_err(build)?,
        );
    }
    // The first reshape keeps the input's shape, its first symbolic
    // extent written `d0 * 1`: tenferro's compiler drops a reshape whose
    // extents are literally its input's own, which would hand the input
    // back without a transfer. The second appends an axis of extent one,
    // so it is never the same operation as the first (the same values, in
    // the same column-major order).
    let reshape = |trace: &mut TraceContext, input: usize, again: bool| {
        let mut to_shape: Vec<DimExpr> = (0..extents.rank(input))
            .map(|axis| {
                let extent = extents.target(input, axis);
                match (axis, &extent) {
                    (0, DimExpr::InputDim { .. }) if !again => {
                        DimExpr::Mul(Box::new(extent), Box::new(DimExpr::Const(1)))
                    }
                    _ => extent,
                }
            })
            .collect();
        if again {
            to_shape.push(DimExpr::Const(1));
        }
        trace
            .add_op(CoreSemanticOp::Reshape { to_shape }, &[inputs[input]])
            .map_err(build)
    };
    let mut outputs = Vec::with_capacity(2 * extents.len());
    for input in 0..extents.len() {
        outputs.extend(reshape(&mut trace, input, false)?.iter().copied());
    }
    if extents.len() > 1 {
        for input in 0..extents.len() {
            outputs.extend(reshape(&mut trace, input, true)?.iter().copied());
        }
    }
    let graph = trace
        .finish(&outputs)
        .map_err(|error| HarnessError::runtime(context(), error))?;
    GraphCompiler::new()
        .compile_traced_graph(&graph)
        .map_err(|error| HarnessError::runtime(context(), error))
}

/// `x.reshape(shape)` for one input of exactly `dtype` and `shape`.
fn single_exact(dtype: DType, shape: &[usize]) -> Result<CompiledGraph, HarnessError> {
    let build = |error: tenferro_runtime::Error| {
        HarnessError::runtime(
            format!("building the identity program for {dtype:?} {shape:?}"),
            error,
        )
    };
    let x = TracedTensor::input_concrete_shape(dtype, shape).map_err(build)?;
    let y = x.reshape(shape.to_vec()).map_err(build)?;
    GraphCompiler::new()
        .compile_with_input_specs(&y, &[(&x, dtype, shape)])
        .map_err(build)
}
