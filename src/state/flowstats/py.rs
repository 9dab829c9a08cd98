//! `flow_stats`: the per-direction flow statistics (`super`) for Python, numpy columns in and out.

use super::*;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

/// A frame's `flow` and `dir` columns.
type KeyArrays<'py> = (PyReadonlyArray1<'py, u32>, PyReadonlyArray1<'py, i8>);

fn keys<'a>(k: &'a KeyArrays<'_>, what: &str) -> PyResult<summary::Keys<'a>> {
    Ok(summary::Keys {
        flow: slice(&k.0, what)?,
        dir: slice(&k.1, what)?,
    })
}

/// Per direction seen in any of the frames (ascending `2·flow + dir`): `(key, rtt_n, rtt_seq,
/// rtt_min, rtt_mean, rtt_p50, rtt_p95, retrans, retrans_bytes, fast, rto, spurious,
/// flight_max, flight_mean, stalls, stall_time)`; NaN / -2^62 for none (`summary`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(name = "flow_summary")]
fn flow_summary_py<'py>(
    py: Python<'py>,
    rtt: KeyArrays<'py>,
    rtt_s: PyReadonlyArray1<'py, f64>,
    rtt_seq: PyReadonlyArray1<'py, bool>,
    rt: KeyArrays<'py>,
    rt_bytes: PyReadonlyArray1<'py, i64>,
    rt_kind: PyReadonlyArray1<'py, u8>,
    fl: KeyArrays<'py>,
    fl_bytes: PyReadonlyArray1<'py, i64>,
    st: KeyArrays<'py>,
    st_dur: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let r = summary::Inputs {
        rtt: keys(&rtt, "rtt keys")?,
        rtt_s: slice(&rtt_s, "rtt_s")?,
        rtt_seq: slice(&rtt_seq, "rtt_seq")?,
        rt: keys(&rt, "retrans keys")?,
        rt_bytes: slice(&rt_bytes, "rt_bytes")?,
        rt_kind: slice(&rt_kind, "rt_kind")?,
        fl: keys(&fl, "flight keys")?,
        fl_bytes: slice(&fl_bytes, "fl_bytes")?,
        st: keys(&st, "stall keys")?,
        st_dur: slice(&st_dur, "st_dur")?,
    };
    let o = py.detach(|| crate::state::guard(|| summary::flow_summary(&r)))?;
    let d = PyDict::new(py);
    d.set_item("key", o.key.into_pyarray(py))?;
    d.set_item("rtt_n", o.rtt_n.into_pyarray(py))?;
    d.set_item("rtt_seq", o.rtt_seq.into_pyarray(py))?;
    for (name, c) in ["rtt_min", "rtt_mean", "rtt_p50", "rtt_p95"]
        .into_iter()
        .zip(o.rtt)
    {
        d.set_item(name, c.into_pyarray(py))?;
    }
    let names = ["retrans", "retrans_bytes", "fast", "rto", "spurious"];
    for (name, c) in names.into_iter().zip(o.retrans) {
        d.set_item(name, c.into_pyarray(py))?;
    }
    d.set_item("flight_max", o.flight_max.into_pyarray(py))?;
    d.set_item("flight_mean", o.flight_mean.into_pyarray(py))?;
    d.set_item("stalls", o.stalls.into_pyarray(py))?;
    d.set_item("stall_time", o.stall_time.into_pyarray(py))?;
    Ok(d)
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flow_stats_py, m)?)?;
    m.add_function(wrap_pyfunction!(flow_summary_py, m)?)
}
