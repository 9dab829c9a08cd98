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
pub mod flowstats;
pub mod group;
pub mod retrans;
pub mod rtt;
pub mod sack;
pub mod seq;
pub mod srtt;
pub mod stalls;
pub mod vantage;

use numpy::PyReadonlyArray1;
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

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bins::register(m)?;
    sack::register(m)?;
    retrans::register(m)?;
    rtt::register(m)?;
    stalls::register(m)?;
    cwnd::register(m)?;
    conn::register(m)?;
    flowstats::register(m)?;
    group::register(m)?;
    srtt::register(m)?;
    seq::register(m)?;
    dirstats::register(m)?;
    vantage::register(m)
}
