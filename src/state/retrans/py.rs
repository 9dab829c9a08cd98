//! `tcp_retrans`: the retransmission pass (`super`) for Python, numpy columns in and out.

use super::*;
use pyo3::prelude::*;

type RetransArrays<'py> = (
    Bound<'py, numpy::PyArray1<u32>>,
    Bound<'py, numpy::PyArray1<u8>>,
    Bound<'py, numpy::PyArray1<i32>>,
);

/// Retransmissions of the prepared state (see `retrans`): `(rows, kind, episode)`.
///
/// `flags` is the TCP flags byte, `bits` the state bits `tcp_state` returned
/// (`seq::State::bits`). Kinds: 0 fast, 1 rto, 2 spurious. `min_rtt_flow` (ascending) and
/// `min_rtt` give each flow's out-of-order window; `rto_floor` is the sender stack's minimum
/// RTO (seconds).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_retrans<'py>(
    py: Python<'py>,
    flow: numpy::PyReadonlyArray1<'py, u32>,
    dir: numpy::PyReadonlyArray1<'py, i8>,
    time: numpy::PyReadonlyArray1<'py, f64>,
    seq: numpy::PyReadonlyArray1<'py, i64>,
    len: numpy::PyReadonlyArray1<'py, i64>,
    nxt: numpy::PyReadonlyArray1<'py, i64>,
    ack: numpy::PyReadonlyArray1<'py, i64>,
    r_hi_ack: numpy::PyReadonlyArray1<'py, i64>,
    flags: numpy::PyReadonlyArray1<'py, u8>,
    bits: numpy::PyReadonlyArray1<'py, u8>,
    est_rows: numpy::PyReadonlyArray1<'py, u32>,
    est_srtt: numpy::PyReadonlyArray1<'py, f64>,
    sack_row: numpy::PyReadonlyArray1<'py, i64>,
    sack_left: numpy::PyReadonlyArray1<'py, i64>,
    sack_right: numpy::PyReadonlyArray1<'py, i64>,
    min_rtt_flow: numpy::PyReadonlyArray1<'py, u32>,
    min_rtt: numpy::PyReadonlyArray1<'py, f64>,
    rto_floor: f64,
) -> PyResult<RetransArrays<'py>> {
    use crate::state::slice;
    use numpy::IntoPyArray;
    let c = Columns {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        time: slice(&time, "time")?,
        seq: slice(&seq, "seq")?,
        len: slice(&len, "len")?,
        nxt: slice(&nxt, "nxt")?,
        ack: slice(&ack, "ack")?,
        r_hi_ack: slice(&r_hi_ack, "r_hi_ack")?,
        flags: slice(&flags, "flags")?,
        bits: slice(&bits, "bits")?,
        est_rows: slice(&est_rows, "est_rows")?,
        est_srtt: slice(&est_srtt, "est_srtt")?,
        sack_row: slice(&sack_row, "sack_row")?,
        sack_left: slice(&sack_left, "sack_left")?,
        sack_right: slice(&sack_right, "sack_right")?,
    };
    let mf = slice(&min_rtt_flow, "min_rtt_flow")?;
    let mv = slice(&min_rtt, "min_rtt")?;
    if mf.len() != mv.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "min_rtt_flow and min_rtt differ in length",
        ));
    }
    let ooo = |f: u32| mf.binary_search(&f).ok().map(|k| mv[k]);
    let out = py.detach(|| crate::state::guard(|| classify(&c, &ooo, rto_floor)))?;
    let rows: Vec<u32> = out.iter().map(|r| r.0).collect();
    let kind: Vec<u8> = out.iter().map(|r| r.1).collect();
    let ep: Vec<i32> = out.iter().map(|r| r.2).collect();
    Ok((
        rows.into_pyarray(py),
        kind.into_pyarray(py),
        ep.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "RETRANS_KINDS",
        pyo3::types::PyTuple::new(m.py(), super::KIND_NAMES)?,
    )?;
    m.add_function(wrap_pyfunction!(tcp_retrans, m)?)
}
