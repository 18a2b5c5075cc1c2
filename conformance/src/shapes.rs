//! The fixed shapes of the main job: the corners every provider must get
//! right, and one large tensor; and the size classes every profile of a
//! `ProviderSuite` reaches: a tensor above 1 Mi elements, a view above
//! 4,096 elements, every rank, and every special float value in both signs.

use tenferro_tensor::DType;
use tenferro_transfer_harness::strategy::{Capabilities, MAX_RANK};
use tenferro_transfer_harness::{
    Case, HarnessError, Layout, MAX_EXCEEDED_RANK, ViewAxis, ViewSpec,
};

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
/// stride, one permuted), a compact view at offset 0 of a longer backing
/// (what a provider may copy as if it owned the whole storage), a whole
/// backing read transposed, a broadcast view (a zero stride, as tenferro's
/// `broadcast_in_dim_view` makes), and about a million elements.
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
        FixedShape {
            name: "compact-view",
            shape: vec![4, 3],
            layout: compact_view(),
        },
        FixedShape {
            name: "transposed-view",
            shape: vec![4, 3],
            layout: transposed_view(),
        },
        FixedShape {
            name: "broadcast-view",
            shape: vec![3, 2],
            layout: broadcast_view(),
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

/// Row 0 of a 3x4 backing, columns 0 and 1, each element read three times:
/// strides [0, 3], offset 0. Read as if the zero stride were compact
/// ([1, 3]), or as if an axis of stride zero did not move, it yields other
/// elements of the same backing, which is long enough for the copy.
fn broadcast_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![3, 4],
        axes: vec![
            ViewAxis {
                first: 0,
                step: 0,
                len: 3,
            },
            ViewAxis {
                first: 0,
                step: 1,
                len: 2,
            },
        ],
        permutation: vec![],
    })
}

/// The whole of a 3x4 backing read transposed (`x.t()`): strides [3, 1],
/// offset 0, no gap. Its strides sorted are compact ones: a layout check
/// that sorts them copies it as it lies, in the wrong order.
fn transposed_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![3, 4],
        axes: vec![
            ViewAxis {
                first: 0,
                step: 1,
                len: 3,
            },
            ViewAxis {
                first: 0,
                step: 1,
                len: 4,
            },
        ],
        permutation: vec![1, 0],
    })
}

/// The first 3 columns of a 4x5 backing (column-major): compact, at
/// offset 0, strides [1, 4], the backing's last 8 elements past its end.
fn compact_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![4, 5],
        axes: vec![
            ViewAxis {
                first: 0,
                step: 1,
                len: 4,
            },
            ViewAxis {
                first: 0,
                step: 1,
                len: 3,
            },
        ],
        permutation: vec![],
    })
}

/// Elements of the `above-1mi` size class: 1031 x 1019 (two primes, so a
/// copy that works in chunks of a power of two ends on a partial chunk).
pub const ABOVE_1MI_ELEMENTS: usize = 1031 * 1019;

/// The size classes every profile of a `ProviderSuite` reaches, as far as
/// `capabilities` admit them: the generated cases of the `quick` profile
/// stay at or under
/// [`Profile::max_elements`](tenferro_transfer_harness::strategy::Profile::max_elements)
/// (4,096), where real copy code has not yet switched strategy (chunks, staging buffers, several streams).
///
/// - `above-1mi`: 1031 x 1019 elements, when the declared maximum admits
///   it; else `at-maximum`, a vector of exactly the declared maximum;
/// - `large-view`: a strided view of 64 x 67 = 4,288 elements with an
///   offset and a negative step;
/// - `rank-5`, `rank-6` (owned) and `rank-6-view` (a permuted strided view),
///   so that every rank up to [`MAX_RANK`] is met alongside the fixed set's
///   ranks 0 to 4;
/// - `rank-7` and `at-maximum-rank` (owned): the next rank above the
///   generator's, and the declared maximum rank up to
///   [`MAX_EXCEEDED_RANK`] (16), where declared that high; and
///   `rank-7-view`, a view of rank 7 compact on its first six axes, its
///   only offset and gap on the seventh, and `rank-7-gapped-view`, seven
///   axes of two elements each two apart: no two of its axes merge, so a
///   copy that keeps six axes after merging what it can loses one.
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::{size_classes, ABOVE_1MI_ELEMENTS};
/// use tenferro_transfer_conformance::harness::strategy::Capabilities;
///
/// let classes = size_classes(&Capabilities::all());
/// let above = classes.iter().find(|shape| shape.name == "above-1mi").unwrap();
/// assert_eq!(above.shape.iter().product::<usize>(), ABOVE_1MI_ELEMENTS);
/// ```
pub fn size_classes(capabilities: &Capabilities) -> Vec<FixedShape> {
    let mut shapes = Vec::new();
    if capabilities.max_elements >= ABOVE_1MI_ELEMENTS {
        shapes.push(FixedShape {
            name: "above-1mi",
            shape: vec![1031, 1019],
            layout: Layout::Owned,
        });
    } else if capabilities.max_elements > 0 {
        // Exactly the declared maximum, however small: an off-by-one at
        // the limit refuses this case, inside the capabilities.
        shapes.push(FixedShape {
            name: "at-maximum",
            shape: vec![capabilities.max_elements],
            layout: Layout::Owned,
        });
    }
    shapes.push(FixedShape {
        name: "large-view",
        shape: vec![64, 67],
        layout: large_view(),
    });
    shapes.push(FixedShape {
        name: "rank-5",
        shape: vec![3, 1, 2, 5, 2],
        layout: Layout::Owned,
    });
    shapes.push(FixedShape {
        name: "rank-6",
        shape: vec![2, 3, 1, 2, 1, 3],
        layout: Layout::Owned,
    });
    shapes.push(FixedShape {
        name: "rank-6-view",
        shape: vec![2, 2, 3, 1, 2, 2],
        layout: rank_six_view(),
    });
    debug_assert!(shapes.iter().any(|shape| shape.shape.len() == MAX_RANK));
    // Above the generator's ranks, as far as the declared maximum goes: the
    // next rank, and the declared maximum (up to `MAX_EXCEEDED_RANK`).
    let highest = capabilities.max_rank.min(MAX_EXCEEDED_RANK);
    if highest > MAX_RANK {
        shapes.push(FixedShape {
            name: "rank-7",
            shape: high_rank_shape(MAX_RANK + 1),
            layout: Layout::Owned,
        });
        shapes.push(FixedShape {
            name: "rank-7-view",
            shape: high_rank_shape(MAX_RANK + 1),
            layout: rank_seven_view(),
        });
        shapes.push(FixedShape {
            name: "rank-7-gapped-view",
            shape: vec![2; MAX_RANK + 1],
            layout: rank_seven_gapped_view(),
        });
    }
    if highest > MAX_RANK + 1 {
        shapes.push(FixedShape {
            name: "at-maximum-rank",
            shape: high_rank_shape(highest),
            layout: Layout::Owned,
        });
    }
    shapes
}

/// A shape of `rank` axes of extents 2, 3 and 1 (every third axis 2, the
/// second 3): a few hundred elements at most, laid out so that a copy that
/// takes the axes in the wrong order moves values.
fn high_rank_shape(rank: usize) -> Vec<usize> {
    (0..rank)
        .map(|axis| match axis {
            1 => 3,
            _ if axis % 3 == 0 => 2,
            _ => 1,
        })
        .collect()
}

/// Rows 1, 3, ..., 127 of a 130 x 70 backing, columns 67 down to 1
/// (column-major: offset 67 * 130 + 1, strides [2, -130]), 4,288 elements.
fn large_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![130, 70],
        axes: vec![
            ViewAxis {
                first: 1,
                step: 2,
                len: 64,
            },
            ViewAxis {
                first: 67,
                step: -1,
                len: 67,
            },
        ],
        permutation: vec![],
    })
}

/// A rank-7 view of [`high_rank_shape`]'s shape: compact on its first six
/// axes, its only offset and gap on the seventh, past the ranks the
/// generator draws (a layout check that stops at six axes takes it for
/// compact).
fn rank_seven_view() -> Layout {
    let axis = |first, step, len| ViewAxis { first, step, len };
    Layout::View(ViewSpec {
        backing_shape: vec![2, 3, 1, 2, 1, 1, 5],
        axes: vec![
            axis(0, 1, 2),
            axis(0, 1, 3),
            axis(0, 1, 1),
            axis(0, 1, 2),
            axis(0, 1, 1),
            axis(0, 1, 1),
            axis(1, 2, 2),
        ],
        permutation: vec![],
    })
}

/// Every other element of a 3x3x3x3x3x3x3 backing: seven axes of extent
/// two and step two, none of which merges with another.
fn rank_seven_gapped_view() -> Layout {
    Layout::View(ViewSpec {
        backing_shape: vec![3; MAX_RANK + 1],
        axes: vec![
            ViewAxis {
                first: 0,
                step: 2,
                len: 2,
            };
            MAX_RANK + 1
        ],
        permutation: vec![],
    })
}

/// A rank-6 view: steps of 2 and -1 on some axes, offsets on others, and
/// the axes permuted.
fn rank_six_view() -> Layout {
    let axis = |first, step, len| ViewAxis { first, step, len };
    Layout::View(ViewSpec {
        backing_shape: vec![3, 5, 4, 2, 3, 2],
        axes: vec![
            axis(1, 1, 2),
            axis(4, -2, 3),
            axis(0, 2, 2),
            axis(1, 1, 1),
            axis(0, 1, 2),
            axis(1, -1, 2),
        ],
        permutation: vec![2, 5, 1, 3, 0, 4],
    })
}

/// The `specials` case of a float dtype: [`Case::special_values`], every
/// special value of the dtype in both signs (20 elements). `None` for a
/// dtype with no special float values (integers, bool).
///
/// # Errors
///
/// As [`Case::new`].
///
/// # Examples
///
/// ```
/// use tenferro_transfer_conformance::special_values_case;
/// use tenferro_tensor::DType;
///
/// let case = special_values_case(DType::F32).unwrap().unwrap();
/// assert_eq!(case.shape(), [20]);
/// assert!(special_values_case(DType::I64).unwrap().is_none());
/// ```
pub fn special_values_case(dtype: DType) -> Result<Option<Case>, HarnessError> {
    Case::special_values(dtype)
}
