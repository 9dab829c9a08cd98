//! The Python entry points of the cwnd passes: numpy columns in, numpy columns out.

use super::{
    acks, mark, phases, pipe, same_len, AckRows, PipeRows, DUP, EPOCH, NEW_ACK, SEG, TIMEOUT,
};
use crate::state::guard;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type PipeArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
);

/// The cwnd estimate's pipe (see `Pipe`): `(filtered, raw, flags)` per data row (flags: `APP`
/// 1, the row's burst was application-limited; `HELD` 2, its window read no cwnd-limited burst).
///
/// `ev`: loss events' first rows; `ev_to`: those that are timeouts; `ends`: rows where an
/// event ends; `ack_t`: when the latest ACK before each row arrived (NaN: none); `clocked`/
/// `end_una`: per direction, the ACK-clock tolerance (s) and the last cumulative ACK (all three
/// empty: no application-limited test); `restart`: per direction, the idle after which a window
/// may restart (`Pipe::restart_after`; empty: no empty-pipe test); `sack_at`/`sack_val`/
/// `sack_pos`: rows with SACKed bytes, how many and the row's data packet place (a repeated row:
/// the last value); `pay`: payload per row; `seg_rows`/`seg_at`: rows whose segments get SACKed
/// and from which place on (`SackInfo`; both empty: none).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_pipe<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    seq_end: PyReadonlyArray1<'py, i64>,
    una: PyReadonlyArray1<'py, i64>,
    dup: PyReadonlyArray1<'py, bool>,
    new_ack: PyReadonlyArray1<'py, bool>,
    sack_at: PyReadonlyArray1<'py, i64>,
    sack_val: PyReadonlyArray1<'py, i64>,
    sack_pos: PyReadonlyArray1<'py, i64>,
    pay: PyReadonlyArray1<'py, i64>,
    seg_rows: PyReadonlyArray1<'py, i64>,
    seg_at: PyReadonlyArray1<'py, i64>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    min_rtt: PyReadonlyArray1<'py, f64>,
    ev: PyReadonlyArray1<'py, i64>,
    ends: PyReadonlyArray1<'py, i64>,
    ev_to: PyReadonlyArray1<'py, i64>,
    ack_t: PyReadonlyArray1<'py, f64>,
    clocked: PyReadonlyArray1<'py, f64>,
    end_una: PyReadonlyArray1<'py, i64>,
    restart: PyReadonlyArray1<'py, f64>,
) -> PyResult<PipeArrays<'py>> {
    let time = slice(&time, "time")?;
    let (dup, new_ack) = (slice(&dup, "dup")?, slice(&new_ack, "new_ack")?);
    let (sack_at, sack_val) = (slice(&sack_at, "sack_at")?, slice(&sack_val, "sack_val")?);
    let info = (
        slice(&sack_pos, "sack_pos")?,
        slice(&pay, "pay")?,
        slice(&seg_rows, "seg_rows")?,
        slice(&seg_at, "seg_at")?,
    );
    let (lo, hi, ev, ends) = (
        slice(&lo, "lo")?,
        slice(&hi, "hi")?,
        slice(&ev, "ev")?,
        slice(&ends, "ends")?,
    );
    let r = (
        slice(&seq_end, "seq_end")?,
        slice(&una, "una")?,
        slice(&min_rtt, "min_rtt")?,
    );
    let clock = (
        slice(&ev_to, "ev_to")?,
        slice(&ack_t, "ack_t")?,
        slice(&clocked, "clocked")?,
        slice(&end_una, "end_una")?,
    );
    let restart = slice(&restart, "restart")?;
    let out = py.detach(|| {
        guard(|| {
            let n = time.len();
            same_len(n, &[("dup", dup.len()), ("new_ack", new_ack.len())])?;
            same_len(sack_at.len(), &[("sack_val", sack_val.len())])?;
            let mut marks: Vec<u8> = dup
                .iter()
                .zip(new_ack)
                .map(|(&d, &a)| if d { DUP } else { 0 } | if a { NEW_ACK } else { 0 })
                .collect();
            mark(&mut marks, ev, EPOCH | SEG)?;
            mark(&mut marks, clock.0, TIMEOUT)?;
            mark(&mut marks, ends, SEG)?;
            let mut sacked = vec![0i64; n];
            for (&at, &v) in sack_at.iter().zip(sack_val) {
                let slot = usize::try_from(at).ok().and_then(|i| sacked.get_mut(i));
                *slot.ok_or_else(|| format!("SACK row {at} outside 0..{n}"))? = v;
            }
            // the SackInfo columns, only when some segment gets SACKed
            let (mut pos, mut seg_at) = (Vec::new(), Vec::new());
            if !info.2.is_empty() {
                same_len(info.2.len(), &[("seg_at", info.3.len())])?;
                same_len(sack_at.len(), &[("sack_pos", info.0.len())])?;
                (pos, seg_at) = (vec![-1i64; n], vec![-1i64; n]);
                scatter(&mut pos, sack_at, info.0)?;
                scatter(&mut seg_at, info.2, info.3)?;
            }
            pipe(&PipeRows {
                time,
                seq_end: r.0,
                una: r.1,
                sacked: &sacked,
                pay: info.1,
                pos: &pos,
                at: &seg_at,
                marks: &marks,
                ack_t: clock.1,
                lo,
                hi,
                min_rtt: r.2,
                clocked: clock.2,
                end_una: clock.3,
                restart,
            })
        })
    })?;
    Ok((
        out.0.into_pyarray(py),
        out.1.into_pyarray(py),
        out.2.into_pyarray(py),
    ))
}

/// `out[rows[k]] = vals[k]` for every k (each row checked against `out`).
fn scatter(out: &mut [i64], rows: &[i64], vals: &[i64]) -> Result<(), String> {
    let n = out.len();
    for (&r, &v) in rows.iter().zip(vals) {
        let slot = usize::try_from(r).ok().and_then(|i| out.get_mut(i));
        *slot.ok_or_else(|| format!("row {r} outside 0..{n}"))? = v;
    }
    Ok(())
}

type PhaseArrays<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<u8>>);

/// Congestion-avoidance interpolation and phase codes (see `Phase`): `(estimate, phase)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_phases<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    est: PyReadonlyArray1<'py, f64>,
    ssthresh: PyReadonlyArray1<'py, f64>,
    recovery: PyReadonlyArray1<'py, bool>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    mss: PyReadonlyArray1<'py, f64>,
) -> PyResult<PhaseArrays<'py>> {
    let c = (
        slice(&time, "time")?,
        slice(&est, "est")?,
        slice(&ssthresh, "ssthresh")?,
        slice(&recovery, "recovery")?,
    );
    let d = (slice(&lo, "lo")?, slice(&hi, "hi")?, slice(&mss, "mss")?);
    let out = py.detach(|| guard(|| phases(c.0, c.1, c.2, c.3, d.0, d.1, d.2)))?;
    Ok((out.0.into_pyarray(py), out.1.into_pyarray(py)))
}

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
    m.add_function(wrap_pyfunction!(cwnd_acks, m)?)?;
    m.add_function(wrap_pyfunction!(cwnd_pipe, m)?)?;
    m.add_function(wrap_pyfunction!(cwnd_phases, m)?)
}
