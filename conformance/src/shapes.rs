//! The fixed shapes of the main job: the corners every provider must get
//! right, and one large tensor.

use tenferro_transfer_harness::{Layout, ViewAxis, ViewSpec};

/// One named shape and layout of the fixed set.
#[derive(Clone, Debug)]
pub struct FixedShape {
    /// Name in reports.
    pub name: &'static str,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// Source layout.
    pub layout: Layout,
}

/// Elements of the large fixed case (1024 x 1024).
pub const LARGE_ELEMENTS: usize = 1 << 20;

/// The fixed set: rank 0, a zero-length dimension, a single element, odd
/// sizes, rank 4, two strided views with offsets (one with a negative
/// stride, one permuted), and about a million elements.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::fixed_shapes;
///
/// let shapes = fixed_shapes(true);
/// assert!(shapes.iter().any(|shape| shape.name == "rank-0" && shape.shape.is_empty()));
/// assert!(fixed_shapes(false).len() < shapes.len());
/// ```
pub fn fixed_shapes(include_large: bool) -> Vec<FixedShape> {
    let mut shapes = vec![
        FixedShape {
            name: "rank-0",
            shape: vec![],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "zero-length",
            shape: vec![3, 0, 2],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "single",
            shape: vec![1],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "odd",
            shape: vec![7, 3],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "odd-prime",
            shape: vec![13],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "rank-4",
            shape: vec![2, 3, 1, 5],
            layout: Layout::Owned,
        },
        FixedShape {
            name: "strided-view",
            shape: vec![3, 3],
            layout: strided_view(),
        },
        FixedShape {
            name: "permuted-view",
            shape: vec![4, 3],
            layout: permuted_view(),
        },
    ];
    if include_large {
        shapes.push(FixedShape {
            name: "large",
            shape: vec![1024, 1024],
            layout: Layout::Owned,
        });
    }
    shapes
}

/// A 3x3 view of a 7x6 backing: every other row from row 1, every other
/// column walking backwards from column 5. Offset 36, strides [2, -14].
fn strided_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![7, 6],
        axes: vec![
            ViewAxis {
                first: 1,
                step: 2,
                len: 3,
            },
            ViewAxis {
                first: 5,
                step: -2,
                len: 3,
            },
        ],
        permutation: vec![],
    })
}

/// A transposed 3x4 window of a 5x6 backing starting at (2, 1).
fn permuted_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![5, 6],
        axes: vec![
            ViewAxis {
                first: 2,
                step: 1,
                len: 3,
            },
            ViewAxis {
                first: 1,
                step: 1,
                len: 4,
            },
        ],
        permutation: vec![1, 0],
    })
}
