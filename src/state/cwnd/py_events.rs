//! The Python entry point of the cwnd reductions pass (`events`): numpy columns in and out.

use super::events::{
    reductions, Columns, Evidence, DECREASE, SOURCE_ESTIMATE, SOURCE_NONE, SOURCE_TRACE,
};
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::collections::HashMap;

type EventArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
);

/// The reductions of every cwnd series and which are loss events, with each series' stats.
///
/// Rows: `flow, dir, source` (`CWND_SOURCE_*` codes) delimit the series (contiguous, each in
/// time order); `cwnd_ok`/`ssthresh_ok` say which values are set (empty: all); `recovery`:
/// the row's phase is `recovery`. Evidence: `e_flow, e_dir, e_time` (any order). Windows:
/// `w_flow, w_dir, w_tol`, the checked directions and their reach.
///
/// Returns `(rows, loss_event)` of the reductions, then per series `(first_row, max_cwnd,
/// max_cwnd_set, loss_events, first_loss)` (`first_loss` NaN without a loss event).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_reductions<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, i64>,
    dir: PyReadonlyArray1<'py, i64>,
    source: PyReadonlyArray1<'py, u8>,
    time: PyReadonlyArray1<'py, f64>,
    cwnd: PyReadonlyArray1<'py, f64>,
    cwnd_ok: PyReadonlyArray1<'py, bool>,
    ssthresh: PyReadonlyArray1<'py, f64>,
    ssthresh_ok: PyReadonlyArray1<'py, bool>,
    recovery: PyReadonlyArray1<'py, bool>,
    e_flow: PyReadonlyArray1<'py, i64>,
    e_dir: PyReadonlyArray1<'py, i64>,
    e_time: PyReadonlyArray1<'py, f64>,
    w_flow: PyReadonlyArray1<'py, i64>,
    w_dir: PyReadonlyArray1<'py, i64>,
    w_tol: PyReadonlyArray1<'py, f64>,
) -> PyResult<EventArrays<'py>> {
    let c = Columns {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        source: slice(&source, "source")?,
        time: slice(&time, "time")?,
        cwnd: slice(&cwnd, "cwnd")?,
        cwnd_ok: slice(&cwnd_ok, "cwnd_ok")?,
        ssthresh: slice(&ssthresh, "ssthresh")?,
        ssthresh_ok: slice(&ssthresh_ok, "ssthresh_ok")?,
        recovery: slice(&recovery, "recovery")?,
    };
    let e = (
        slice(&e_flow, "e_flow")?,
        slice(&e_dir, "e_dir")?,
        slice(&e_time, "e_time")?,
    );
    let w = (
        slice(&w_flow, "w_flow")?,
        slice(&w_dir, "w_dir")?,
        slice(&w_tol, "w_tol")?,
    );
    let found = py.detach(|| {
        guard(|| {
            if e.0.len() != e.2.len() || e.1.len() != e.2.len() {
                return Err("evidence columns differ in length".to_string());
            }
            if w.0.len() != w.2.len() || w.1.len() != w.2.len() {
                return Err("window columns differ in length".to_string());
            }
            let windows: HashMap<(i64, i64), f64> =
                w.0.iter()
                    .zip(w.1)
                    .zip(w.2)
                    .map(|((&f, &d), &t)| ((f, d), t))
                    .collect();
            reductions(&c, &Evidence::new(e.0, e.1, e.2), &windows)
        })
    })?;
    let st = &found.stats;
    let first_loss = st
        .iter()
        .map(|s| s.first_loss.get().unwrap_or(f64::NAN))
        .collect::<Vec<_>>();
    Ok((
        found
            .rows
            .iter()
            .map(|&r| r as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        found.loss.into_pyarray(py),
        found
            .series
            .iter()
            .map(|&r| r as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        st.iter()
            .map(|s| s.max_cwnd.get().unwrap_or(f64::NAN))
            .collect::<Vec<_>>()
            .into_pyarray(py),
        st.iter()
            .map(|s| s.max_cwnd.get().is_some())
            .collect::<Vec<_>>()
            .into_pyarray(py),
        st.iter()
            .map(|s| s.losses)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        first_loss.into_pyarray(py),
    ))
}

/// Adds the reductions pass, its source codes and the traced-series threshold to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CWND_SOURCE_ESTIMATE", SOURCE_ESTIMATE)?;
    m.add("CWND_SOURCE_TRACE", SOURCE_TRACE)?;
    m.add("CWND_SOURCE_NONE", SOURCE_NONE)?;
    m.add("CWND_DECREASE", DECREASE)?;
    m.add_function(wrap_pyfunction!(cwnd_reductions, m)?)
}
