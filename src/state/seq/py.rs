//! `TcpState`: the packets' columns and their sequence state (`super::analyze`), kept in the
//! core for the passes that read them.
//!
//! `tracekit/analysis/_state.py::prepare` makes one per prepared frame. The later passes
//! (`tcp_rtt`, `tcp_retrans`, `tcp_stalls`) take it as it is instead of the frame's columns
//! converted to numpy again for each of them: the packet columns cross into the core once.

use super::{analyze, Packets, State, NEW_ACK, SYN};
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

type Columns<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
);

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

    /// The columns of the prepared frame: `(g, len, dend, nxt, hi_dend, bits, r_i, r_hi_ack,
    /// r_win, flags)`; `dend` is `seq + len`, `r_i` -1 and the other state columns -2^62 for
    /// none, `flags` 0 for none.
    fn columns<'py>(&self, py: Python<'py>) -> Columns<'py> {
        let st = &self.st;
        let dend: Vec<i64> = self.seq.iter().zip(&self.len).map(|(s, l)| s + l).collect();
        (
            PyArray1::from_slice(py, &self.g),
            PyArray1::from_slice(py, &self.len),
            dend.into_pyarray(py),
            PyArray1::from_slice(py, &st.nxt),
            PyArray1::from_slice(py, &st.hi_dend),
            PyArray1::from_slice(py, &st.bits),
            PyArray1::from_slice(py, &st.r_i),
            PyArray1::from_slice(py, &st.r_hi_ack),
            PyArray1::from_slice(py, &st.r_win),
            PyArray1::from_slice(py, &self.flags),
        )
    }
}

/// Adds `TcpState` to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TcpState>()
}
