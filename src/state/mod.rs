//! Per-connection TCP state for Python: numpy columns in, numpy columns out.
//!
//! The entry points take the packet columns of any source (capture, ns-2, ns-3 ASCII,
//! NetSim: they all become the same columns), run the state machines without the GIL, and
//! turn every input problem into a Python `ValueError` (never a panic across the boundary).

pub mod bins;
pub mod conn;
pub mod cwnd;
pub mod dirstats;
pub mod flight;
pub mod flowdirs;
pub mod flowstats;
pub mod group;
pub mod retrans;
pub mod rtt;
pub mod sack;
pub mod seq;
pub mod slots;
pub mod srtt;
pub mod stalls;
pub mod vantage;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A numpy column as a slice; a strided (non-contiguous) array is a `ValueError` naming the column.
pub(crate) fn slice<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray1<'_, T>,
    name: &str,
) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("column {name} is not contiguous")))
}

/// Runs `f` and turns a panic (a bug, never expected) into a Python exception.
pub fn guard<T>(f: impl FnOnce() -> Result<T, String> + std::panic::UnwindSafe) -> PyResult<T> {
    match std::panic::catch_unwind(f) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(PyValueError::new_err(e)),
        Err(_) => Err(PyRuntimeError::new_err(
            "internal error in tracekit._core (a bug: please report it)",
        )),
    }
}

type StateArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
);

/// Per-packet TCP sequence state (see `seq`): `(nxt, hi_dend, bits, r_i, r_hi_ack, r_win)`.
///
/// `ack` and `win` carry -2^62 where the packet has none; so do the i64 outputs.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_state<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    seq: PyReadonlyArray1<'py, i64>,
    len: PyReadonlyArray1<'py, u32>,
    flags: PyReadonlyArray1<'py, u8>,
    ack: PyReadonlyArray1<'py, i64>,
    win: PyReadonlyArray1<'py, i64>,
) -> PyResult<StateArrays<'py>> {
    let p = seq::Packets {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        seq: slice(&seq, "seq")?,
        len: slice(&len, "len")?,
        flags: slice(&flags, "flags")?,
        ack: slice(&ack, "ack")?,
        win: slice(&win, "win")?,
    };
    let st = py.detach(|| guard(|| seq::analyze(&p)))?;
    Ok((
        st.nxt.into_pyarray(py),
        st.hi_dend.into_pyarray(py),
        st.bits.into_pyarray(py),
        st.r_i.into_pyarray(py),
        st.r_hi_ack.into_pyarray(py),
        st.r_win.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bins::register(m)?;
    sack::register(m)?;
    retrans::register(m)?;
    rtt::register(m)?;
    stalls::register(m)?;
    cwnd::register(m)?;
    cwnd::py_events::register(m)?;
    conn::register(m)?;
    flowstats::register(m)?;
    flowdirs::register(m)?;
    group::register(m)?;
    srtt::register(m)?;

    dirstats::register(m)?;
    vantage::register(m)?;
    m.add_function(wrap_pyfunction!(tcp_state, m)?)
}
