//! `flow_stats`: the per-direction flow statistics (`super`) for Python, numpy columns in and out.

use super::*;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type FlowArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Per data direction: `(key, t0, acked_t, ack_bytes, ack_t, iw_bytes, iw_segments,
/// max_rwnd, cwnd_share, rwnd_share, app_share)`; NaN / -2^62 for none.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(name = "flow_stats")]
fn flow_stats_py<'py>(
    py: Python<'py>,
    g: PyReadonlyArray1<'py, u32>,
    len: PyReadonlyArray1<'py, i64>,
    time: PyReadonlyArray1<'py, f64>,
    dend: PyReadonlyArray1<'py, i64>,
    new_ack: PyReadonlyArray1<'py, bool>,
    ack: PyReadonlyArray1<'py, i64>,
    win: PyReadonlyArray1<'py, i64>,
    hi_dend: PyReadonlyArray1<'py, i64>,
    r_hi_ack: PyReadonlyArray1<'py, i64>,
    r_win: PyReadonlyArray1<'py, i64>,
    est_rows: PyReadonlyArray1<'py, u32>,
    est_srtt: PyReadonlyArray1<'py, f64>,
    block: usize,
) -> PyResult<FlowArrays<'py>> {
    let r = Rows {
        g: slice(&g, "g")?,
        len: slice(&len, "len")?,
        time: slice(&time, "time")?,
        dend: slice(&dend, "dend")?,
        new_ack: slice(&new_ack, "new_ack")?,
        ack: slice(&ack, "ack")?,
        win: slice(&win, "win")?,
        hi_dend: slice(&hi_dend, "hi_dend")?,
        r_hi_ack: slice(&r_hi_ack, "r_hi_ack")?,
        r_win: slice(&r_win, "r_win")?,
        est_rows: slice(&est_rows, "est_rows")?,
        est_srtt: slice(&est_srtt, "est_srtt")?,
    };
    let o = py.detach(|| crate::state::guard(|| flow_stats(&r, block)))?;
    let [c, w, a] = o.shares;
    Ok((
        o.key.into_pyarray(py),
        o.t0.into_pyarray(py),
        o.acked_t.into_pyarray(py),
        o.ack_bytes.into_pyarray(py),
        o.ack_t.into_pyarray(py),
        o.iw_b.into_pyarray(py),
        o.iw_n.into_pyarray(py),
        o.max_rwnd.into_pyarray(py),
        c.into_pyarray(py),
        w.into_pyarray(py),
        a.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flow_stats_py, m)?)
}
