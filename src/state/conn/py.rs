//! `tcp_connections`: the connection table (`super`) for Python, numpy columns in and out.

use super::*;
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// An integer column as a reader hands it over (the capture reader's narrow dtypes, the
/// text readers' int64), read without a widening copy.
#[derive(FromPyObject)]
enum IntArray<'py> {
    U16(PyReadonlyArray1<'py, u16>),
    I32(PyReadonlyArray1<'py, i32>),
    U32(PyReadonlyArray1<'py, u32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl IntArray<'_> {
    fn ints(&self, name: &str) -> PyResult<Ints<'_>> {
        Ok(match self {
            IntArray::U16(a) => Ints::U16(slice(a, name)?),
            IntArray::I32(a) => Ints::I32(slice(a, name)?),
            IntArray::U32(a) => Ints::U32(slice(a, name)?),
            IntArray::I64(a) => Ints::I64(slice(a, name)?),
        })
    }
}

type I64Array<'py> = Bound<'py, PyArray1<i64>>;
type ConnArrays<'py> = (
    usize,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i8>>,
    I64Array<'py>,
    I64Array<'py>,
    I64Array<'py>,
    I64Array<'py>,
    I64Array<'py>,
);

/// Connections and relative numbers (see `conn`):
/// `(nflows, flow, dir, seq, ack, win, sack_left, sack_right)`.
///
/// `src`/`dst` are address ids (uint32 or int64), ports int32 or int64, `win` uint16 or
/// int64; `seq`/`ack` the raw 32-bit numbers; SACK blocks as (row, raw left, raw right).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_connections<'py>(
    py: Python<'py>,
    src: IntArray<'py>,
    dst: IntArray<'py>,
    sport: IntArray<'py>,
    dport: IntArray<'py>,
    l4: PyReadonlyArray1<'py, bool>,
    tcp: PyReadonlyArray1<'py, bool>,
    udp: PyReadonlyArray1<'py, bool>,
    flags: PyReadonlyArray1<'py, u8>,
    seq: PyReadonlyArray1<'py, u32>,
    ack: PyReadonlyArray1<'py, u32>,
    win: IntArray<'py>,
    wscale: PyReadonlyArray1<'py, u8>,
    wscale_ok: PyReadonlyArray1<'py, bool>,
    sack_row: PyReadonlyArray1<'py, i64>,
    sack_left: PyReadonlyArray1<'py, i64>,
    sack_right: PyReadonlyArray1<'py, i64>,
) -> PyResult<ConnArrays<'py>> {
    let c = Columns {
        src: src.ints("src")?,
        dst: dst.ints("dst")?,
        sport: sport.ints("sport")?,
        dport: dport.ints("dport")?,
        l4: slice(&l4, "l4")?,
        tcp: slice(&tcp, "tcp")?,
        udp: slice(&udp, "udp")?,
        flags: slice(&flags, "flags")?,
        seq: slice(&seq, "seq")?,
        ack: slice(&ack, "ack")?,
        win: win.ints("win")?,
        wscale: slice(&wscale, "wscale")?,
        wscale_ok: slice(&wscale_ok, "wscale_ok")?,
        sack_row: slice(&sack_row, "sack_row")?,
        sack_left: slice(&sack_left, "sack_left")?,
        sack_right: slice(&sack_right, "sack_right")?,
    };
    let o = py.detach(|| guard(|| number(&c)))?;
    Ok((
        o.nflows,
        o.flow.into_pyarray(py),
        o.dir.into_pyarray(py),
        o.seq.into_pyarray(py),
        o.ack.into_pyarray(py),
        o.win.into_pyarray(py),
        o.sack_left.into_pyarray(py),
        o.sack_right.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_connections, m)?)
}
