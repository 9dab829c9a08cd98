//! The Python entry point of the cwnd ACK walk: numpy columns in, numpy columns out (the
//! estimate's own: `py_estimate`).

use super::{acks, mark, AckRows};
use crate::state::guard;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type AckArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

/// The ACK stream at each data row (see `Acks`): `(j, una, dup, a_una, retx_rows, retx_timeout,
/// retx_hi, min_rtt)`; `j` is the latest ACK before each row (-1: none).
///
/// `named`/`timeout`: rows the retransmission analysis names / whose retransmission timer sent
/// them (repeats allowed).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_acks<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    seq_end: PyReadonlyArray1<'py, i64>,
    pay: PyReadonlyArray1<'py, i64>,
    key: PyReadonlyArray1<'py, f64>,
    tie: PyReadonlyArray1<'py, i64>,
    named: PyReadonlyArray1<'py, i64>,
    timeout: PyReadonlyArray1<'py, i64>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    alo: PyReadonlyArray1<'py, i64>,
    ahi: PyReadonlyArray1<'py, i64>,
    a_time: PyReadonlyArray1<'py, f64>,
    a_ack: PyReadonlyArray1<'py, i64>,
    a_key: PyReadonlyArray1<'py, f64>,
    a_tie: PyReadonlyArray1<'py, i64>,
) -> PyResult<AckArrays<'py>> {
    let c = (
        slice(&time, "time")?,
        slice(&seq_end, "seq_end")?,
        slice(&pay, "pay")?,
        slice(&key, "key")?,
        slice(&tie, "tie")?,
    );
    let m = (slice(&named, "named")?, slice(&timeout, "timeout")?);
    let d = (
        slice(&lo, "lo")?,
        slice(&hi, "hi")?,
        slice(&alo, "alo")?,
        slice(&ahi, "ahi")?,
    );
    let a = (
        slice(&a_time, "a_time")?,
        slice(&a_ack, "a_ack")?,
        slice(&a_key, "a_key")?,
        slice(&a_tie, "a_tie")?,
    );
    let st = py.detach(|| {
        guard(|| {
            let n = c.0.len();
            let (mut nm, mut fs) = (vec![0u8; n], vec![0u8; n]);
            mark(&mut nm, m.0, 1)?;
            mark(&mut fs, m.1, 1)?;
            let (nm, fs): (Vec<bool>, Vec<bool>) = (
                nm.iter().map(|&x| x != 0).collect(),
                fs.iter().map(|&x| x != 0).collect(),
            );
            acks(&AckRows {
                time: c.0,
                seq_end: c.1,
                pay: c.2,
                key: c.3,
                tie: c.4,
                named: &nm,
                timeout: &fs,
                lo: d.0,
                hi: d.1,
                alo: d.2,
                ahi: d.3,
                a_time: a.0,
                a_ack: a.1,
                a_key: a.2,
                a_tie: a.3,
            })
        })
    })?;
    let rows: Vec<i64> = st.retx.iter().map(|x| x.0).collect();
    let timeout: Vec<bool> = st.retx.iter().map(|x| x.1).collect();
    let hi: Vec<i64> = st.retx.iter().map(|x| x.2).collect();
    Ok((
        st.j.into_pyarray(py),
        st.una.into_pyarray(py),
        st.dup.into_pyarray(py),
        st.a_una.into_pyarray(py),
        rows.into_pyarray(py),
        timeout.into_pyarray(py),
        hi.into_pyarray(py),
        st.min_rtt.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cwnd_acks, m)?)
}
