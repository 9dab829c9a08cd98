//! The flows table's per-direction values that are not a per-packet state machine of their
//! own: a simulator's received bytes and drops, the duplicate ACKs against a direction's data
//! and its last smoothed RTT. One pass each over its rows, every output aligned to one list
//! of directions (the flows rows, `tracekit.analysis.flows.directions`), so that Python puts
//! the values into its per-direction records by index, without a join.

use super::seq::MISSING;
use super::slice;
use crate::state::guard;
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;

/// An event code (`ev` below): a receive event at the packet's destination node.
pub const RECV: u8 = 1;
/// An event code: a simulator's drop event.
pub const DROP: u8 = 2;

/// The directions of the output, by id `2·flow + dir`: each id's position.
pub struct Dirs(HashMap<u64, usize>, usize);

impl Dirs {
    /// From the directions' connections and `dir`s, in output order; a `dir` other than 0 or 1
    /// (no direction) is a position no row matches.
    pub fn new(flow: &[u32], dir: &[i8]) -> Result<Self, String> {
        if flow.len() != dir.len() {
            return Err("flow_dirs: the directions' flow and dir differ in length".into());
        }
        let mut m = HashMap::with_capacity(flow.len());
        for (i, (&f, &d)) in flow.iter().zip(dir).enumerate() {
            if d == 0 || d == 1 {
                m.insert(u64::from(f) * 2 + d as u64, i);
            }
        }
        Ok(Dirs(m, flow.len()))
    }

    fn len(&self) -> usize {
        self.1
    }

    /// The position of the direction `dir` (0 or 1; anything else: none) of `flow`.
    pub fn at(&self, flow: u32, dir: i8) -> Option<usize> {
        if dir != 0 && dir != 1 {
            return None;
        }
        self.0.get(&(u64::from(flow) * 2 + dir as u64)).copied()
    }
}

fn same_len(n: usize, cols: &[(&str, usize)]) -> Result<(), String> {
    match cols.iter().find(|(_, l)| *l != n) {
        Some((name, l)) => Err(format!("column {name} has {l} values, not {n}")),
        None => Ok(()),
    }
}

/// A simulator's events (one entry per row of the trace's packets, any order): connection,
/// `dir` (-1: none), time, sequence number ([`MISSING`]: none), payload and the event code.
pub struct Events<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub time: &'a [f64],
    pub seq: &'a [i64],
    pub payload: &'a [i64],
    pub ev: &'a [u8],
}

/// Per direction of `dirs`: the unique payload bytes its destination received (`MISSING`: no
/// receive event) and when the last of them first arrived (NaN: none).
///
/// ns-2 and ns-3 write a receive event (`r`) on every hop; only one on the link into the
/// packet's destination node delivered it (docs/formats-ns2.md: `node` is the link's `to` node
/// for `r`; the caller marks those [`RECV`]). Each byte range counts once, at its first arrival,
/// and the union of the ranges in sequence order counts: a retransmission that fills a hole
/// arrives after higher data but delivers new bytes, a duplicate delivers none.
pub fn received(dirs: &Dirs, e: &Events) -> Result<(Vec<i64>, Vec<f64>), String> {
    let n = e.flow.len();
    same_len(
        n,
        &[
            ("dir", e.dir.len()),
            ("time", e.time.len()),
            ("seq", e.seq.len()),
            ("payload", e.payload.len()),
            ("ev", e.ev.len()),
        ],
    )?;
    let mut ranges: Vec<Vec<(i64, i64, f64)>> = vec![Vec::new(); dirs.len()];
    for i in 0..n {
        if e.ev[i] != RECV || e.payload[i] <= 0 || e.seq[i] == MISSING {
            continue;
        }
        if let Some(k) = dirs.at(e.flow[i], e.dir[i]) {
            ranges[k].push((e.seq[i], e.seq[i].saturating_add(e.payload[i]), e.time[i]));
        }
    }
    let mut bytes = vec![MISSING; dirs.len()];
    let mut last = vec![f64::NAN; dirs.len()];
    for (k, r) in ranges.iter_mut().enumerate() {
        if r.is_empty() {
            continue;
        }
        // by range, the earliest arrival of a range first: its copies add nothing
        r.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2)));
        let (mut sum, mut hi, mut t) = (0i64, None::<i64>, f64::NAN);
        for &(seq, end, time) in r.iter() {
            let new = (end - seq.max(hi.unwrap_or(seq))).max(0);
            hi = Some(hi.map_or(end, |h| h.max(end)));
            if new > 0 {
                sum += new;
                // (polars' max: NaN times left out)
                if !time.is_nan() && (t.is_nan() || time > t) {
                    t = time;
                }
            }
        }
        bytes[k] = sum;
        last[k] = t;
    }
    Ok((bytes, last))
}

/// Per direction of `dirs`: the rows with `mask` whose (`flow`, `dir`) is that direction, or
/// with `other`, whose reverse direction it is.
pub fn count(
    dirs: &Dirs,
    flow: &[u32],
    dir: &[i8],
    mask: &[bool],
    other: bool,
) -> Result<Vec<i64>, String> {
    same_len(flow.len(), &[("dir", dir.len()), ("mask", mask.len())])?;
    let mut out = vec![0i64; dirs.len()];
    for i in (0..flow.len()).filter(|&i| mask[i]) {
        let d = if other && (dir[i] == 0 || dir[i] == 1) {
            1 - dir[i]
        } else {
            dir[i]
        };
        if let Some(k) = dirs.at(flow[i], d) {
            out[k] += 1;
        }
    }
    Ok(out)
}

/// Per direction of `dirs`: the RFC 6298 estimate (srtt, rttvar) after its last sample (NaN:
/// none), from the smoothed-RTT pass' output (`srtt::smooth`, ordered by the row of the ACK
/// that closed each sample: the last entry of a direction is its estimate at the end).
pub fn last_estimate(
    dirs: &Dirs,
    flow: &[u32],
    dir: &[i8],
    srtt: &[f64],
    rttvar: &[f64],
) -> Result<(Vec<f64>, Vec<f64>), String> {
    same_len(
        flow.len(),
        &[
            ("dir", dir.len()),
            ("srtt", srtt.len()),
            ("rttvar", rttvar.len()),
        ],
    )?;
    let mut s = vec![f64::NAN; dirs.len()];
    let mut v = vec![f64::NAN; dirs.len()];
    for i in 0..flow.len() {
        if let Some(k) = dirs.at(flow[i], dir[i]) {
            s[k] = srtt[i];
            v[k] = rttvar[i];
        }
    }
    Ok((s, v))
}

type A<'py, T> = PyReadonlyArray1<'py, T>;
/// The events' `flow, dir, time, seq, payload, ev` ([`Events`]).
type EvArrays<'py> = (
    A<'py, u32>,
    A<'py, i8>,
    A<'py, f64>,
    A<'py, i64>,
    A<'py, i64>,
    A<'py, u8>,
);
/// The state's `flow, dir, dup`.
type DupArrays<'py> = (A<'py, u32>, A<'py, i8>, A<'py, bool>);
/// The smoothed-RTT pass' `flow, dir, srtt, rttvar`, in its order.
type EstArrays<'py> = (A<'py, u32>, A<'py, i8>, A<'py, f64>, A<'py, f64>);

/// The per-direction values of the flows rows `(flow, dir)`, aligned to them, as a dict of
/// arrays: `rx_bytes` and `rx_t` ([`received`], from the events `ev_*`), `drops` (the
/// events coded [`DROP`] of each direction: ns-2/ns-3 `d` lines), `dup_acks` (the state rows
/// with `dup`, counted against the reverse direction: Wireshark's `tcp.analysis.duplicate_ack`
/// repeats the ACK of the other side's data), `srtt` and `rttvar` ([`last_estimate`]).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn flow_dirs<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    ev: EvArrays<'py>,
    dup: DupArrays<'py>,
    est: EstArrays<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let (flow, dir) = (slice(&flow, "flow")?, slice(&dir, "dir")?);
    let e = Events {
        flow: slice(&ev.0, "ev_flow")?,
        dir: slice(&ev.1, "ev_dir")?,
        time: slice(&ev.2, "ev_time")?,
        seq: slice(&ev.3, "ev_seq")?,
        payload: slice(&ev.4, "ev_payload")?,
        ev: slice(&ev.5, "ev")?,
    };
    let (df, dd, dm) = (
        slice(&dup.0, "dup_flow")?,
        slice(&dup.1, "dup_dir")?,
        slice(&dup.2, "dup")?,
    );
    let (ef, ed) = (slice(&est.0, "est_flow")?, slice(&est.1, "est_dir")?);
    let (es, ev_) = (slice(&est.2, "srtt")?, slice(&est.3, "rttvar")?);
    let drop: Vec<bool> = e.ev.iter().map(|&c| c == DROP).collect();
    let out = py.detach(|| {
        guard(|| {
            let dirs = Dirs::new(flow, dir)?;
            let rx = received(&dirs, &e)?;
            let drops = count(&dirs, e.flow, e.dir, &drop, false)?;
            let dups = count(&dirs, df, dd, dm, true)?;
            let last = last_estimate(&dirs, ef, ed, es, ev_)?;
            Ok((rx, drops, dups, last))
        })
    })?;
    let ((rx_bytes, rx_t), drops, dups, (srtt, rttvar)) = out;
    let d = PyDict::new(py);
    d.set_item("rx_bytes", rx_bytes.into_pyarray(py))?;
    d.set_item("rx_t", rx_t.into_pyarray(py))?;
    d.set_item("drops", drops.into_pyarray(py))?;
    d.set_item("dup_acks", dups.into_pyarray(py))?;
    d.set_item("srtt", srtt.into_pyarray(py))?;
    d.set_item("rttvar", rttvar.into_pyarray(py))?;
    Ok(d)
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flow_dirs, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn received_counts_each_byte_once_at_its_first_arrival() {
        let dirs = Dirs::new(&[0, 0], &[0, 1]).unwrap();
        let e = Events {
            flow: &[0, 0, 0, 0, 0, 0],
            dir: &[0, 0, 0, 0, 1, 0],
            time: &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            seq: &[1, 101, 101, 1, 1, 201],
            payload: &[100, 100, 100, 100, 0, 100],
            ev: &[RECV, RECV, RECV, RECV, RECV, DROP],
        };
        let (b, t) = received(&dirs, &e).unwrap();
        assert_eq!(b, vec![200, MISSING]);
        assert_eq!(t[0], 2.0);
        assert!(t[1].is_nan());
        let drop: Vec<bool> = e.ev.iter().map(|&c| c == DROP).collect();
        assert_eq!(
            count(&dirs, e.flow, e.dir, &drop, false).unwrap(),
            vec![1, 0]
        );
        assert_eq!(
            count(&dirs, e.flow, e.dir, &drop, true).unwrap(),
            vec![0, 1]
        );
    }

    #[test]
    fn the_last_estimate_is_the_last_entry_of_the_direction() {
        let dirs = Dirs::new(&[3], &[1]).unwrap();
        let (s, v) = last_estimate(
            &dirs,
            &[3, 3, 2],
            &[1, 1, 1],
            &[0.1, 0.2, 0.3],
            &[0.01, 0.02, 0.03],
        )
        .unwrap();
        assert_eq!((s, v), (vec![0.2], vec![0.02]));
        assert!(Dirs::new(&[0], &[0, 1]).is_err());
    }
}
