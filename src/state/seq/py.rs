//! `TcpState`: the packets' columns and their sequence state (`super::analyze`), kept in the
//! core for the passes that read them.
//!
//! `tracekit/analysis/_state.py::prepare` makes one per prepared frame. The later passes
//! (`tcp_rtt`, `tcp_retrans`, `tcp_stalls`) take it as it is instead of the frame's columns
//! converted to numpy again for each of them: the packet columns cross into the core once.

use super::{analyze, Packets, State, MISSING, NEW_ACK, SYN};
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// The packet columns of one prepared frame (capture order) and their sequence state.
///
/// Integer columns hold [`super::MISSING`] where the packet has none (`ack`, `win`, `ts_val`);
/// `ts_ecr` holds 0 for none (RFC 7323 §3.2: a zero TSecr echoes nothing).
#[pyclass(frozen, module = "tracekit._core")]
pub struct TcpState {
    pub flow: Vec<u32>,
    pub dir: Vec<i8>,
    /// Direction id `2·flow + dir` (u32: as `prepare`'s `g` column, which wraps the same way).
    pub g: Vec<u32>,
    pub frame: Vec<u64>,
    pub time: Vec<f64>,
    pub seq: Vec<i64>,
    /// Payload bytes.
    pub len: Vec<i64>,
    /// The TCP flags byte.
    pub flags: Vec<u8>,
    pub ack: Vec<i64>,
    pub win: Vec<i64>,
    pub ts_val: Vec<i64>,
    pub ts_ecr: Vec<u32>,
    /// `nxt, hi_dend, bits, r_i, r_hi_ack, r_win` of every packet.
    pub st: State,
}

impl TcpState {
    /// The packets' own columns and their state (`super::analyze`), the lengths checked.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        flow: &[u32],
        dir: &[i8],
        frame: &[u64],
        time: &[f64],
        seq: &[i64],
        len: &[u32],
        flags: &[u8],
        ack: &[i64],
        win: &[i64],
        ts_val: &[i64],
        ts_ecr: &[u32],
    ) -> Result<TcpState, String> {
        let p = Packets {
            flow,
            dir,
            seq,
            len,
            flags,
            ack,
            win,
        };
        let n = p.validate()?;
        for (name, l) in [
            ("frame", frame.len()),
            ("time", time.len()),
            ("ts_val", ts_val.len()),
            ("ts_ecr", ts_ecr.len()),
        ] {
            if l != n {
                return Err(format!("column {name} has {l} values, flow has {n}"));
            }
        }
        let st = analyze(&p)?;
        let g = flow
            .iter()
            .zip(dir)
            .map(|(&f, &d)| f.wrapping_mul(2).wrapping_add(d as u32))
            .collect();
        Ok(TcpState {
            flow: flow.to_vec(),
            dir: dir.to_vec(),
            g,
            frame: frame.to_vec(),
            time: time.to_vec(),
            seq: seq.to_vec(),
            len: len.iter().map(|&l| i64::from(l)).collect(),
            flags: flags.to_vec(),
            ack: ack.to_vec(),
            win: win.to_vec(),
            ts_val: ts_val.to_vec(),
            ts_ecr: ts_ecr.to_vec(),
            st,
        })
    }

    /// Whether the packet raises the highest ACK its direction has sent ([`NEW_ACK`]).
    pub fn new_ack(&self) -> Vec<bool> {
        self.st.bits.iter().map(|&b| b & NEW_ACK != 0).collect()
    }

    /// Rows of the packets with SYN set (stray ones too), ascending.
    pub fn syn_rows(&self) -> Vec<u32> {
        (0..self.flags.len() as u32)
            .filter(|&i| self.flags[i as usize] & SYN != 0)
            .collect()
    }
}

/// `g, len, flags, bits` and the integer state columns, each with its rows of no value.
type Columns<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Vec<(Bound<'py, PyAny>, Bound<'py, PyArray1<u32>>)>,
);

/// `x` as a numpy column (i32 when `narrow`: the caller checked that every value fits) and the
/// rows where it holds `none`.
fn narrowed<'py>(
    py: Python<'py>,
    x: &[i64],
    none: i64,
    narrow: bool,
) -> (Bound<'py, PyAny>, Bound<'py, PyArray1<u32>>) {
    let missing: Vec<u32> = (0..x.len() as u32)
        .filter(|&i| x[i as usize] == none)
        .collect();
    let col = if narrow {
        x.iter()
            .map(|&v| v as i32)
            .collect::<Vec<i32>>()
            .into_pyarray(py)
            .into_any()
    } else {
        PyArray1::from_slice(py, x).into_any()
    };
    (col, missing.into_pyarray(py))
}

#[pymethods]
impl TcpState {
    /// Runs the sequence state over the packets (see `seq`). `len` is the payload (0 for
    /// none), `flags` the TCP flags byte (0 for none); `ack`, `win`, `ts_val` carry -2^62 and
    /// `ts_ecr` 0 where the packet has none.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        flow: PyReadonlyArray1<'_, u32>,
        dir: PyReadonlyArray1<'_, i8>,
        frame: PyReadonlyArray1<'_, u64>,
        time: PyReadonlyArray1<'_, f64>,
        seq: PyReadonlyArray1<'_, i64>,
        len: PyReadonlyArray1<'_, u32>,
        flags: PyReadonlyArray1<'_, u8>,
        ack: PyReadonlyArray1<'_, i64>,
        win: PyReadonlyArray1<'_, i64>,
        ts_val: PyReadonlyArray1<'_, i64>,
        ts_ecr: PyReadonlyArray1<'_, u32>,
    ) -> PyResult<TcpState> {
        let (flow, dir, frame, time) = (
            slice(&flow, "flow")?,
            slice(&dir, "dir")?,
            slice(&frame, "frame")?,
            slice(&time, "time")?,
        );
        let (seq, len, flags) = (
            slice(&seq, "seq")?,
            slice(&len, "len")?,
            slice(&flags, "flags")?,
        );
        let (ack, win, ts_val, ts_ecr) = (
            slice(&ack, "ack")?,
            slice(&win, "win")?,
            slice(&ts_val, "ts_val")?,
            slice(&ts_ecr, "ts_ecr")?,
        );
        py.detach(|| {
            guard(|| {
                TcpState::build(
                    flow, dir, frame, time, seq, len, flags, ack, win, ts_val, ts_ecr,
                )
            })
        })
    }

    /// Number of packets.
    fn __len__(&self) -> usize {
        self.flow.len()
    }

    /// The columns of the prepared frame: `(g, len, flags, bits, ints)`, `flags` 0 for none,
    /// `ints` the pairs (column, rows of no value) of `dend, nxt, hi_dend, r_i, r_hi_ack,
    /// r_win`: `dend` is `seq + len`, `r_i` uint32, the others int32 when `narrow` (the caller
    /// checked that every value fits), else int64.
    fn columns<'py>(&self, py: Python<'py>, narrow: bool) -> Columns<'py> {
        let st = &self.st;
        let dend: Vec<i64> = self.seq.iter().zip(&self.len).map(|(s, l)| s + l).collect();
        let mut ints: Vec<_> = [&dend, &st.nxt, &st.hi_dend]
            .into_iter()
            .map(|x| narrowed(py, x, MISSING, narrow))
            .collect();
        let r_missing: Vec<u32> = (0..st.r_i.len() as u32)
            .filter(|&i| st.r_i[i as usize] < 0)
            .collect();
        let r_i: Vec<u32> = st.r_i.iter().map(|&r| r as u32).collect();
        ints.push((r_i.into_pyarray(py).into_any(), r_missing.into_pyarray(py)));
        for x in [&st.r_hi_ack, &st.r_win] {
            ints.push(narrowed(py, x, MISSING, narrow));
        }
        (
            PyArray1::from_slice(py, &self.g),
            PyArray1::from_slice(py, &self.len),
            PyArray1::from_slice(py, &self.flags),
            PyArray1::from_slice(py, &st.bits),
            ints,
        )
    }
}

/// Adds `TcpState` to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TcpState>()
}
