//! `tcp_flight_sack`: the flight pass (`super`) for Python, numpy columns in, the flight
//! frame's columns out.

use super::*;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type FlightArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i8>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
);

/// `col` at the data packets (payload > 0), in packet order.
fn at_data<T: Copy>(col: &[T], len: &[u32], m: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(m);
    out.extend(col.iter().zip(len).filter(|(_, &l)| l > 0).map(|(&v, _)| v));
    out
}

/// The flight frame's columns per data packet: `(flow, dir, frame, time, flight, sender_only,
/// pipe, unacked)`, and `sacked_at` (see [`FlightColumns::sacked_at`]; not a column of the frame).
///
/// `flags` is the TCP flags byte, `bits` the state bits `tcp_state` returned
/// (`seq::State::bits`); `block_row`, `block_left`, `block_right` every SACK block (rows
/// ascending); -2^62 stands for none everywhere. `frame` and `time` (optional: empty
/// columns come back without them) are only carried to the data packets' rows.
#[pyfunction]
#[pyo3(signature = (flow, dir, seq, len, flags, ack, bits, block_row, block_left, block_right, frame=None, time=None))]
#[allow(clippy::too_many_arguments)]
fn tcp_flight_sack<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    seq: PyReadonlyArray1<'py, i64>,
    len: PyReadonlyArray1<'py, u32>,
    flags: PyReadonlyArray1<'py, u8>,
    ack: PyReadonlyArray1<'py, i64>,
    bits: PyReadonlyArray1<'py, u8>,
    block_row: PyReadonlyArray1<'py, i64>,
    block_left: PyReadonlyArray1<'py, i64>,
    block_right: PyReadonlyArray1<'py, i64>,
    frame: Option<PyReadonlyArray1<'py, u64>>,
    time: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<FlightArrays<'py>> {
    let f = slice(&flow, "flow")?;
    // (no pass here reads the window: zeroed memory the system maps lazily, never written)
    let win = vec![0i64; f.len()];
    let p = Packets {
        flow: f,
        dir: slice(&dir, "dir")?,
        seq: slice(&seq, "seq")?,
        len: slice(&len, "len")?,
        flags: slice(&flags, "flags")?,
        ack: slice(&ack, "ack")?,
        win: &win,
    };
    let bits = slice(&bits, "bits")?;
    let bl = Blocks {
        row: slice(&block_row, "block_row")?,
        left: slice(&block_left, "block_left")?,
        right: slice(&block_right, "block_right")?,
    };
    let frame = frame
        .as_ref()
        .map(|a| slice(a, "frame"))
        .transpose()?
        .unwrap_or(&[]);
    let time = time
        .as_ref()
        .map(|a| slice(a, "time"))
        .transpose()?
        .unwrap_or(&[]);
    let (out, keys) = py.detach(|| {
        crate::state::guard(|| {
            let out = flight_columns(&p, bits, &bl)?;
            let m = out.flight.len();
            let opt = |name: &str, l: usize| match l {
                0 => Ok(false),
                l if l == f.len() => Ok(true),
                l => Err(format!(
                    "column {name} has {l} values, flow has {}",
                    f.len()
                )),
            };
            let (with_frame, with_time) = (opt("frame", frame.len())?, opt("time", time.len())?);
            let keys = (
                at_data(p.flow, p.len, m),
                at_data(p.dir, p.len, m),
                if with_frame {
                    at_data(frame, p.len, m)
                } else {
                    Vec::new()
                },
                if with_time {
                    at_data(time, p.len, m)
                } else {
                    Vec::new()
                },
            );
            Ok((out, keys))
        })
    })?;
    Ok((
        keys.0.into_pyarray(py),
        keys.1.into_pyarray(py),
        keys.2.into_pyarray(py),
        keys.3.into_pyarray(py),
        out.flight.into_pyarray(py),
        out.sender_only.into_pyarray(py),
        out.pipe.into_pyarray(py),
        out.unacked.into_pyarray(py),
        out.sacked_at.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_flight_sack, m)?)
}
