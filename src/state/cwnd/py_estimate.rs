//! The Python entry point of the whole cwnd estimate (`tracekit._core.cwnd_estimate`): the
//! columns of `tracekit.analysis._cwnd_rows.Rows` in, the estimate's columns out.

use super::estimate::{estimate, EstRows, Estimate};
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type F64<'py> = PyReadonlyArray1<'py, f64>;
type I64<'py> = PyReadonlyArray1<'py, i64>;
type Bool<'py> = PyReadonlyArray1<'py, bool>;

/// The data rows' columns, in `cwnd_estimate`'s order (see [`EstRows`]).
type RowCols<'py> = (
    F64<'py>,
    I64<'py>,
    I64<'py>,
    I64<'py>,
    Bool<'py>,
    Bool<'py>,
    F64<'py>,
);
/// The per-direction columns, in `cwnd_estimate`'s order (see [`EstRows`]).
type DirCols<'py> = (
    I64<'py>,
    I64<'py>,
    I64<'py>,
    I64<'py>,
    F64<'py>,
    F64<'py>,
    Bool<'py>,
);

/// The arguments, as numpy arrays (see [`EstRows`] for each).
struct Cols<'py> {
    rows: RowCols<'py>,
    sack: (I64<'py>, I64<'py>, I64<'py>, I64<'py>, I64<'py>),
    retx: (I64<'py>, I64<'py>, Bool<'py>),
    acks: (F64<'py>, I64<'py>),
    dirs: DirCols<'py>,
}

/// The slices of `c` (each must be contiguous).
fn est_rows<'a>(c: &'a Cols<'_>) -> PyResult<EstRows<'a>> {
    let (r, s, x, a, d) = (&c.rows, &c.sack, &c.retx, &c.acks, &c.dirs);
    Ok(EstRows {
        time: slice(&r.0, "time")?,
        seq_end: slice(&r.1, "seq_end")?,
        pay: slice(&r.2, "pay")?,
        una: slice(&r.3, "una")?,
        dup: slice(&r.4, "dup")?,
        new_ack: slice(&r.5, "new_ack")?,
        ack_t: slice(&r.6, "ack_t")?,
        sack_at: slice(&s.0, "sack_at")?,
        sack_val: slice(&s.1, "sack_val")?,
        sack_pos: slice(&s.2, "sack_pos")?,
        seg_rows: slice(&s.3, "seg_rows")?,
        seg_at: slice(&s.4, "seg_at")?,
        retx_rows: slice(&x.0, "retx_rows")?,
        retx_hi: slice(&x.1, "retx_hi")?,
        retx_timeout: slice(&x.2, "retx_timeout")?,
        a_time: slice(&a.0, "a_time")?,
        a_una: slice(&a.1, "a_una")?,
        lo: slice(&d.0, "lo")?,
        hi: slice(&d.1, "hi")?,
        alo: slice(&d.2, "alo")?,
        ahi: slice(&d.3, "ahi")?,
        mss: slice(&d.4, "mss")?,
        min_rtt: slice(&d.5, "min_rtt")?,
        syn_lost: slice(&d.6, "syn_lost")?,
    })
}

type EstArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
    (
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray1<f64>>,
    ),
);

/// `out` as numpy arrays: per row (estimate, ssthresh, phase); per loss event (direction, first
/// row, end, timeout, recovery, ssthresh).
fn arrays(py: Python<'_>, out: Estimate) -> EstArrays<'_> {
    let ev = &out.events;
    let d: Vec<i64> = ev.iter().map(|e| e.d as i64).collect();
    let i: Vec<i64> = ev.iter().map(|e| e.i as i64).collect();
    let end: Vec<f64> = ev.iter().map(|e| e.end).collect();
    let to: Vec<bool> = ev.iter().map(|e| e.timeout).collect();
    let rec: Vec<bool> = ev.iter().map(|e| e.recovery).collect();
    let st: Vec<f64> = ev.iter().map(|e| e.ssthresh).collect();
    (
        out.est.into_pyarray(py),
        out.ssthresh.into_pyarray(py),
        out.phase.into_pyarray(py),
        (
            d.into_pyarray(py),
            i.into_pyarray(py),
            end.into_pyarray(py),
            to.into_pyarray(py),
            rec.into_pyarray(py),
            st.into_pyarray(py),
        ),
    )
}

/// The cwnd estimate of every data row (`estimate`): `(cwnd, ssthresh, phase, events)`, per row
/// the estimate, ssthresh (NaN: none yet) and phase code (`tracekit.schema.PHASE`'s order), and
/// per loss event `(direction, first row, end (inf: never), timeout, recovery, ssthresh)`.
///
/// `rows`: per data row `(time, seq_end, pay, una, dup, new_ack, ack_t)`; `sack`: `(sack_at,
/// sack_val, sack_pos, seg_rows, seg_at)`; `retx`: `(retx_rows, retx_hi, retx_timeout)`; `acks`:
/// `(a_time, a_una)`; `dirs`: per direction `(lo, hi, alo, ahi, mss, min_rtt, syn_lost)`;
/// `hold_backoff`: a backed-off expiry holds ssthresh (false: ns-2 halves it every time);
/// `whole`: each direction in one stretch, not cut at its loss events, its events found over
/// the whole of it (the reference the cuts and the live event finder are tested against:
/// `stretch`, `episodes::Finder`).
#[pyfunction]
#[pyo3(signature = (rows, sack, retx, acks, dirs, hold_backoff, whole = false))]
#[allow(clippy::too_many_arguments)]
fn cwnd_estimate<'py>(
    py: Python<'py>,
    rows: RowCols<'py>,
    sack: (I64<'py>, I64<'py>, I64<'py>, I64<'py>, I64<'py>),
    retx: (I64<'py>, I64<'py>, Bool<'py>),
    acks: (F64<'py>, I64<'py>),
    dirs: DirCols<'py>,
    hold_backoff: bool,
    whole: bool,
) -> PyResult<EstArrays<'py>> {
    let c = Cols {
        rows,
        sack,
        retx,
        acks,
        dirs,
    };
    let r = est_rows(&c)?;
    let out = py.detach(|| guard(|| estimate(&r, hold_backoff, !whole)))?;
    Ok(arrays(py, out))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cwnd_estimate, m)?)
}
