//! The Python entry point of the cwnd estimate's input rows (`tracekit._core.cwnd_rows`): the
//! packet columns and the other analyses' frames in, `tracekit.analysis._cwnd_rows.Rows`' columns
//! out (the estimate's own: `py_estimate`).

use super::rows::DirRows;
use super::rows_frames::{build, Built, Frames, Keys, Packets};
use super::spans;
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type In<'py, T> = PyReadonlyArray1<'py, T>;
type Out<'py, T> = Bound<'py, PyArray1<T>>;
type KeyCols<'py> = (In<'py, u32>, In<'py, i8>, In<'py, u64>, In<'py, bool>);
type PacketCols<'py> = (
    In<'py, u32>,
    In<'py, i8>,
    In<'py, u8>,
    In<'py, f64>,
    In<'py, u64>,
    In<'py, i64>,
    In<'py, i64>,
    In<'py, u32>,
);
type DirOut<'py> = (
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, f64>,
    Out<'py, f64>,
    Out<'py, bool>,
    Out<'py, f64>,
);
type RowOut<'py> = (
    Out<'py, f64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, bool>,
    Out<'py, bool>,
    Out<'py, f64>,
);
type SackOut<'py> = (
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
    Out<'py, i64>,
);
type RowsOut<'py> = (
    DirOut<'py>,
    RowOut<'py>,
    SackOut<'py>,
    (Out<'py, i64>, Out<'py, i64>, Out<'py, bool>),
    (Out<'py, f64>, Out<'py, i64>),
);

fn keys<'a>(k: &'a KeyCols<'_>) -> PyResult<Keys<'a>> {
    Ok(Keys {
        flow: slice(&k.0, "flow")?,
        dir: slice(&k.1, "dir")?,
        frame: slice(&k.2, "frame")?,
        ok: slice(&k.3, "ok")?,
    })
}

fn arrays(py: Python<'_>, b: Built) -> RowsOut<'_> {
    let (lo, hi) = spans(b.rows.iter().map(DirRows::len));
    let (alo, ahi) = spans(b.acks.iter().map(|a| a.0.len()));
    let c = b.cols;
    let syn_lost: Vec<bool> = b.rows.iter().map(|x| x.syns > 1).collect();
    let syn_t: Vec<f64> = b.rows.iter().map(|x| x.syn_t).collect();
    let a_time: Vec<f64> = b.acks.iter().flat_map(|a| a.0.iter().copied()).collect();
    let a_una: Vec<i64> = b.acks.iter().flat_map(|a| a.1.iter().copied()).collect();
    (
        (
            lo.into_pyarray(py),
            hi.into_pyarray(py),
            alo.into_pyarray(py),
            ahi.into_pyarray(py),
            b.mss.into_pyarray(py),
            b.min_rtt.into_pyarray(py),
            syn_lost.into_pyarray(py),
            syn_t.into_pyarray(py),
        ),
        (
            c.time.into_pyarray(py),
            c.seq_end.into_pyarray(py),
            c.pay.into_pyarray(py),
            c.una.into_pyarray(py),
            c.dup.into_pyarray(py),
            c.new_ack.into_pyarray(py),
            c.ack_t.into_pyarray(py),
        ),
        (
            c.sack.0.into_pyarray(py),
            c.sack.1.into_pyarray(py),
            c.sack.2.into_pyarray(py),
            c.seg.0.into_pyarray(py),
            c.seg.1.into_pyarray(py),
        ),
        (
            c.retx.0.into_pyarray(py),
            c.retx.1.into_pyarray(py),
            c.retx.2.into_pyarray(py),
        ),
        (a_time.into_pyarray(py), a_una.into_pyarray(py)),
    )
}

/// The cwnd estimate's input rows (`rows_frames::build`): None when there is no data segment of
/// the directions or no ACK reaching them; else `(dirs, rows, sack, retx, acks)`: per direction
/// `(lo, hi, alo, ahi, mss, min_rtt, syn_lost, syn_t)`, per data row `(time, seq_end, pay, una,
/// dup, new_ack, ack_t)`, `(sack_at, sack_val, sack_pos, seg_rows, seg_at)`, `(retx_rows,
/// retx_hi, retx_timeout)` and per ACK `(a_time, a_una)`.
///
/// `packets`: `(flow, dir, kind, time, frame, seq, ack, payload)` (nulls filled; `kind`: bits
/// TCP 1, data 2, ACK 4, SYN 8); `dirs`: `(flow, dir, mss, mss_unknown)` sorted by flow, dir;
/// `flight`: `(flow, dir, frame, ok)` with the SACKed bytes and SACKed-from row of each flight
/// row (each empty: none); `retrans`, `timeouts`: `(flow, dir, frame, ok)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn cwnd_rows<'py>(
    py: Python<'py>,
    packets: PacketCols<'py>,
    dirs: (In<'py, u32>, In<'py, i8>, In<'py, f64>, In<'py, bool>),
    flight: (KeyCols<'py>, In<'py, i64>, In<'py, i64>),
    retrans: KeyCols<'py>,
    timeouts: KeyCols<'py>,
) -> PyResult<Option<RowsOut<'py>>> {
    let pc = &packets;
    let p = Packets {
        flow: slice(&pc.0, "flow")?,
        dir: slice(&pc.1, "dir")?,
        kind: slice(&pc.2, "kind")?,
        time: slice(&pc.3, "time")?,
        frame: slice(&pc.4, "frame")?,
        seq: slice(&pc.5, "seq")?,
        ack: slice(&pc.6, "ack")?,
        payload: slice(&pc.7, "payload")?,
    };
    let d = (
        slice(&dirs.0, "flow")?,
        slice(&dirs.1, "dir")?,
        slice(&dirs.2, "mss")?,
        slice(&dirs.3, "mss_unknown")?,
    );
    let fr = Frames {
        flight: keys(&flight.0)?,
        sacked: slice(&flight.1, "sacked")?,
        at: slice(&flight.2, "at")?,
        retrans: keys(&retrans)?,
        timeouts: keys(&timeouts)?,
    };
    let out = py.detach(|| guard(|| build(&p, d, &fr)))?;
    Ok(out.map(|b| arrays(py, b)))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cwnd_rows, m)?)
}
