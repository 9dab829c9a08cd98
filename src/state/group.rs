//! Rows grouped by a small integer code, in row order within each group (a stable counting sort).
//!
//! The cwnd analysis gathers each data direction's segments, and the ACKs that reach its
//! sender, as one contiguous run per direction in frame order; one counting pass and one
//! placing pass over the packets replace a scan of every packet per direction.

use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// The rows `i` with `mask[i]` and `0 <= code[i] < groups`, grouped by code (ascending), in
/// row order within each group; and the number of rows per group.
pub fn group_rows(
    mask: &[bool],
    code: &[i32],
    groups: usize,
) -> Result<(Vec<i64>, Vec<i64>), String> {
    if mask.len() != code.len() {
        return Err("group_rows: mask and code of different lengths".into());
    }
    let of = |i: usize| -> Option<usize> {
        let c = usize::try_from(code[i]).ok()?;
        (mask[i] && c < groups).then_some(c)
    };
    let mut counts = vec![0i64; groups];
    for i in 0..code.len() {
        if let Some(c) = of(i) {
            counts[c] += 1;
        }
    }
    let mut next: Vec<usize> = counts
        .iter()
        .scan(0usize, |acc, &n| {
            let start = *acc;
            *acc += n as usize;
            Some(start)
        })
        .collect();
    let total = counts.iter().sum::<i64>() as usize;
    let mut idx = vec![0i64; total];
    for i in 0..code.len() {
        if let Some(c) = of(i) {
            idx[next[c]] = i as i64;
            next[c] += 1;
        }
    }
    Ok((idx, counts))
}

type Grouped<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>);

/// `(rows, counts)`: see [`group_rows`].
#[pyfunction]
#[pyo3(name = "group_rows")]
fn group_rows_py<'py>(
    py: Python<'py>,
    mask: PyReadonlyArray1<'py, bool>,
    code: PyReadonlyArray1<'py, i32>,
    groups: usize,
) -> PyResult<Grouped<'py>> {
    let (m, c) = (slice(&mask, "mask")?, slice(&code, "code")?);
    let (idx, counts) = py.detach(|| super::guard(|| group_rows(m, c, groups)))?;
    Ok((idx.into_pyarray(py), counts.into_pyarray(py)))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(group_rows_py, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_row_order() {
        let mask = [true, true, false, true, true, true];
        let code = [1, 0, 0, -1, 1, 3];
        let (idx, counts) = group_rows(&mask, &code, 3).unwrap();
        assert_eq!(idx, vec![1, 0, 4]); // code 3 is no group; row 2 is masked out
        assert_eq!(counts, vec![1, 2, 0]);
        assert!(group_rows(&mask, &code[..2], 3).is_err());
        assert_eq!(group_rows(&[], &[], 0).unwrap(), (vec![], vec![]));
    }
}
