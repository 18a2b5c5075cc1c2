//! `Layout`: how a case's tensor lies in memory: owned and compact, or a
//! strided view ([`ViewSpec`]) over a larger backing tensor.

use serde::{Deserialize, Serialize};

/// One axis of a strided view: the backing coordinate of its first element,
/// the step between elements (negative walks backwards, zero repeats the
/// element at `first`: a broadcast axis) and its extent.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
pub struct ViewAxis {
    /// Backing coordinate of the view's first element on this axis.
    pub first: usize,
    /// Backing elements between neighbours. Zero repeats the element at
    /// `first` along the axis, as tenferro's `broadcast_in_dim_view` does,
    /// and then needs at least two elements (`len`): an axis of one element
    /// or none has no step to speak of.
    pub step: isize,
    /// Extent of the view on this axis.
    pub len: usize,
}

/// A strided view over a compact column-major backing tensor: each backing
/// axis sliced by a [`ViewAxis`], then the sliced axes permuted.
///
/// tenferro builds the view itself (`slice_view`, `transpose_view`, and
/// `broadcast_in_dim_view` for an axis of step zero: sliced to its one
/// element, then broadcast), so every layout a `ViewSpec` describes is one
/// tenferro accepts.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
pub struct ViewSpec {
    /// Shape of the backing tensor.
    pub backing_shape: Vec<usize>,
    /// One slice per backing axis.
    pub axes: Vec<ViewAxis>,
    /// Output axis `j` is sliced axis `permutation[j]`; empty for identity.
    pub permutation: Vec<usize>,
}

impl ViewSpec {
    /// The logical shape of the view.
    pub fn shape(&self) -> Vec<usize> {
        let sliced: Vec<usize> = self.axes.iter().map(|axis| axis.len).collect();
        if self.permutation.is_empty() {
            sliced
        } else {
            self.permutation.iter().map(|&axis| sliced[axis]).collect()
        }
    }

    /// Strides of the view in elements, as tenferro reports them.
    pub fn strides(&self) -> Vec<isize> {
        let mut compact = 1_isize;
        let sliced: Vec<isize> = self
            .backing_shape
            .iter()
            .zip(&self.axes)
            .map(|(&extent, axis)| {
                let stride = compact * axis.step;
                compact *= extent as isize;
                stride
            })
            .collect();
        if self.permutation.is_empty() {
            sliced
        } else {
            self.permutation.iter().map(|&axis| sliced[axis]).collect()
        }
    }

    /// Offset of the view's first element in the backing buffer.
    pub fn offset(&self) -> isize {
        let mut compact = 1_isize;
        let mut offset = 0_isize;
        for (&extent, axis) in self.backing_shape.iter().zip(&self.axes) {
            offset += compact * axis.first as isize;
            compact *= extent as isize;
        }
        offset
    }

    /// Whether the view repeats elements: an axis of step zero (a
    /// broadcast).
    ///
    /// # Examples
    ///
    /// ```
    /// use tenferro_transfer_harness::{ViewAxis, ViewSpec};
    ///
    /// // Element 1 of three, read four times.
    /// let spec = ViewSpec {
    ///     backing_shape: vec![3],
    ///     axes: vec![ViewAxis { first: 1, step: 0, len: 4 }],
    ///     permutation: vec![],
    /// };
    /// assert!(spec.broadcasts());
    /// assert_eq!(spec.positions(), [1, 1, 1, 1]);
    /// ```
    pub fn broadcasts(&self) -> bool {
        self.axes.iter().any(|axis| axis.step == 0)
    }

    /// Elements in the backing buffer.
    pub fn backing_len(&self) -> usize {
        self.backing_shape.iter().product()
    }

    /// Backing position of every logical element, in column-major order of
    /// the logical shape.
    pub fn positions(&self) -> Vec<usize> {
        let shape = self.shape();
        let count: usize = shape.iter().product();
        let mut backing_strides = Vec::with_capacity(self.backing_shape.len());
        let mut stride = 1_usize;
        for &extent in &self.backing_shape {
            backing_strides.push(stride);
            stride *= extent;
        }
        let sliced_axis = |logical: usize| {
            if self.permutation.is_empty() {
                logical
            } else {
                self.permutation[logical]
            }
        };
        let mut positions = Vec::with_capacity(count);
        let mut index = vec![0_usize; shape.len()];
        for _ in 0..count {
            let mut position = 0_isize;
            for (logical, &i) in index.iter().enumerate() {
                let axis = sliced_axis(logical);
                let spec = &self.axes[axis];
                let coordinate = spec.first as isize + spec.step * i as isize;
                position += coordinate * backing_strides[axis] as isize;
            }
            positions.push(position as usize);
            for axis in 0..shape.len() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        positions
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.axes.len() != self.backing_shape.len() {
            return Err("one view axis per backing axis".into());
        }
        for (axis, (spec, &extent)) in self.axes.iter().zip(&self.backing_shape).enumerate() {
            if spec.step == 0 && spec.len < 2 {
                return Err(format!(
                    "axis {axis}: a zero step (a broadcast) needs at least two elements, not {}",
                    spec.len
                ));
            }
            if spec.len == 0 {
                continue;
            }
            let last = spec.first as isize + spec.step * (spec.len as isize - 1);
            if spec.first >= extent || last < 0 || last >= extent as isize {
                return Err(format!(
                    "axis {axis}: view reaches outside the backing extent {extent}"
                ));
            }
        }
        if !self.permutation.is_empty() {
            let mut seen = self.permutation.clone();
            seen.sort_unstable();
            if seen != (0..self.axes.len()).collect::<Vec<_>>() {
                return Err("permutation must list every axis once".into());
            }
        }
        Ok(())
    }
}

/// How the input tensor is laid out on the source.
#[derive(Clone, Debug, Eq, Hash, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Layout {
    /// An owned compact column-major tensor.
    Owned,
    /// A strided view into a larger backing tensor.
    View(ViewSpec),
}

impl Layout {
    /// A short description for reports, e.g. `owned` or
    /// `view(backing=[7, 6], first=[1, 5], step=[2, -2])`.
    pub fn label(&self) -> String {
        match self {
            Layout::Owned => "owned".to_owned(),
            Layout::View(spec) => {
                let steps: Vec<isize> = spec.axes.iter().map(|axis| axis.step).collect();
                let firsts: Vec<usize> = spec.axes.iter().map(|axis| axis.first).collect();
                let mut label = format!(
                    "view(backing={:?}, first={firsts:?}, step={steps:?}",
                    spec.backing_shape
                );
                if !spec.permutation.is_empty() {
                    label.push_str(&format!(", perm={:?}", spec.permutation));
                }
                label.push(')');
                label
            }
        }
    }
}
