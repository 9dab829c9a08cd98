//! `TcpState`: the packets' columns and their sequence state (`super::analyze`), kept in the
//! core for the passes that read them.
//!
//! `tracekit/analysis/_state.py::prepare` makes one per prepared frame. The later passes
//! (`tcp_rtt`, `tcp_retrans`, `tcp_stalls`) take it as it is instead of the frame's columns
//! converted to numpy again for each of them: the packet columns cross into the core once.

use super::{analyze, Packets, State, MISSING, NEW_ACK, SYN};
use crate::state::{guard, slice};
use numpy::PyArrayMethods;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// The packet columns of one prepared frame (capture order) and their sequence state.
///
/// The packet columns are the numpy arrays `prepare` handed over, kept as they are (most are
/// polars' own buffers, not copies); the passes read them through [`TcpState::with_cols`].
/// Integer columns hold [`MISSING`] where the packet has none (`ack`, `win`, `ts_val`);
/// `ts_ecr` holds 0 for none (RFC 7323 §3.2: a zero TSecr echoes nothing).
#[pyclass(frozen, module = "tracekit._core")]
pub struct TcpState {
    flow: Py<PyArray1<u32>>,
    dir: Py<PyArray1<i8>>,
    frame: Py<PyArray1<u64>>,
    time: Py<PyArray1<f64>>,
    seq: Py<PyArray1<i64>>,
    flags: Py<PyArray1<u8>>,
    ack: Py<PyArray1<i64>>,
    win: Py<PyArray1<i64>>,
    ts_val: Py<PyArray1<i64>>,
    ts_ecr: Py<PyArray1<u32>>,
    /// Direction id `2·flow + dir` (u32: as `prepare`'s `g` column, which wraps the same way).
    g: Vec<u32>,
    /// Payload bytes.
    len: Vec<i64>,
    /// `nxt, hi_dend, bits, r_i, r_hi_ack, r_win` of every packet.
    st: State,
}

/// A [`TcpState`]'s columns as slices (one entry per packet, capture order).
pub struct Cols<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub g: &'a [u32],
    pub frame: &'a [u64],
    pub time: &'a [f64],
    pub seq: &'a [i64],
    pub len: &'a [i64],
    /// The TCP flags byte.
    pub flags: &'a [u8],
    pub ack: &'a [i64],
    pub win: &'a [i64],
    pub ts_val: &'a [i64],
    pub ts_ecr: &'a [u32],
    pub st: &'a State,
}

impl Cols<'_> {
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

impl TcpState {
    /// `f` of the columns (the numpy ones borrowed read-only while it runs).
    pub fn with_cols<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Cols) -> PyResult<R>,
    ) -> PyResult<R> {
        let (flow, dir, frame) = (
            self.flow.bind(py).try_readonly()?,
            self.dir.bind(py).try_readonly()?,
            self.frame.bind(py).try_readonly()?,
        );
        let (time, seq, flags) = (
            self.time.bind(py).try_readonly()?,
            self.seq.bind(py).try_readonly()?,
            self.flags.bind(py).try_readonly()?,
        );
        let (ack, win) = (
            self.ack.bind(py).try_readonly()?,
            self.win.bind(py).try_readonly()?,
        );
        let (ts_val, ts_ecr) = (
            self.ts_val.bind(py).try_readonly()?,
            self.ts_ecr.bind(py).try_readonly()?,
        );
        let c = Cols {
            flow: slice(&flow, "flow")?,
            dir: slice(&dir, "dir")?,
            g: &self.g,
            frame: slice(&frame, "frame")?,
            time: slice(&time, "time")?,
            seq: slice(&seq, "seq")?,
            len: &self.len,
            flags: slice(&flags, "flags")?,
            ack: slice(&ack, "ack")?,
            win: slice(&win, "win")?,
            ts_val: slice(&ts_val, "ts_val")?,
            ts_ecr: slice(&ts_ecr, "ts_ecr")?,
            st: &self.st,
        };
        f(&c)
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

/// An integer column for the frame: int32 when narrow (the caller checked that every value
/// fits), else int64 as it is.
enum Narrowed {
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
}

impl Narrowed {
    fn into_py(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            Narrowed::I32(v) => v.into_pyarray(py).into_any(),
            Narrowed::I64(v) => v.into_pyarray(py).into_any(),
            Narrowed::U32(v) => v.into_pyarray(py).into_any(),
        }
    }
}

/// `x` as a frame column and the rows where it holds `none`.
fn narrowed(x: &[i64], none: i64, narrow: bool) -> (Narrowed, Vec<u32>) {
    let missing: Vec<u32> = (0..x.len() as u32)
        .filter(|&i| x[i as usize] == none)
        .collect();
    let col = if narrow {
        Narrowed::I32(x.iter().map(|&v| v as i32).collect())
    } else {
        Narrowed::I64(x.to_vec())
    };
    (col, missing)
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
        flow: Bound<'_, PyArray1<u32>>,
        dir: Bound<'_, PyArray1<i8>>,
        frame: Bound<'_, PyArray1<u64>>,
        time: Bound<'_, PyArray1<f64>>,
        seq: Bound<'_, PyArray1<i64>>,
        len: PyReadonlyArray1<'_, u32>,
        flags: Bound<'_, PyArray1<u8>>,
        ack: Bound<'_, PyArray1<i64>>,
        win: Bound<'_, PyArray1<i64>>,
        ts_val: Bound<'_, PyArray1<i64>>,
        ts_ecr: Bound<'_, PyArray1<u32>>,
    ) -> PyResult<TcpState> {
        let (g, ln, st) = {
            let (fl, di, sq, fg) = (
                flow.try_readonly()?,
                dir.try_readonly()?,
                seq.try_readonly()?,
                flags.try_readonly()?,
            );
            let (ak, wn) = (ack.try_readonly()?, win.try_readonly()?);
            let (fr, tm, tv, te) = (
                frame.try_readonly()?,
                time.try_readonly()?,
                ts_val.try_readonly()?,
                ts_ecr.try_readonly()?,
            );
            let p = Packets {
                flow: slice(&fl, "flow")?,
                dir: slice(&di, "dir")?,
                seq: slice(&sq, "seq")?,
                len: slice(&len, "len")?,
                flags: slice(&fg, "flags")?,
                ack: slice(&ak, "ack")?,
                win: slice(&wn, "win")?,
            };
            let others = [
                ("frame", slice(&fr, "frame")?.len()),
                ("time", slice(&tm, "time")?.len()),
                ("ts_val", slice(&tv, "ts_val")?.len()),
                ("ts_ecr", slice(&te, "ts_ecr")?.len()),
            ];
            py.detach(|| {
                guard(|| {
                    let n = p.validate()?;
                    if let Some((name, l)) = others.iter().find(|(_, l)| *l != n) {
                        return Err(format!("column {name} has {l} values, flow has {n}"));
                    }
                    let st = analyze(&p)?;
                    let g: Vec<u32> = p
                        .flow
                        .iter()
                        .zip(p.dir)
                        .map(|(&f, &d)| f.wrapping_mul(2).wrapping_add(d as u32))
                        .collect();
                    let ln: Vec<i64> = p.len.iter().map(|&l| i64::from(l)).collect();
                    Ok((g, ln, st))
                })
            })?
        };
        Ok(TcpState {
            flow: flow.unbind(),
            dir: dir.unbind(),
            frame: frame.unbind(),
            time: time.unbind(),
            seq: seq.unbind(),
            flags: flags.unbind(),
            ack: ack.unbind(),
            win: win.unbind(),
            ts_val: ts_val.unbind(),
            ts_ecr: ts_ecr.unbind(),
            g,
            len: ln,
            st,
        })
    }

    /// Number of packets.
    fn __len__(&self) -> usize {
        self.g.len()
    }

    /// The columns of the prepared frame: `(g, len, flags, bits, ints)`, `flags` 0 for none,
    /// `ints` the pairs (column, rows of no value) of `dend, nxt, hi_dend, r_i, r_hi_ack,
    /// r_win`: `dend` is `seq + len`, `r_i` uint32, the others int32 when `narrow` (the caller
    /// checked that every value fits), else int64.
    fn columns<'py>(&self, py: Python<'py>, narrow: bool) -> PyResult<Columns<'py>> {
        let seq = self.seq.bind(py).try_readonly()?;
        let seq = slice(&seq, "seq")?;
        // the columns are made without the GIL (batches run on several threads)
        let (g, len, bits, ints) = py.detach(|| {
            let st = &self.st;
            let dend: Vec<i64> = seq.iter().zip(&self.len).map(|(s, l)| s + l).collect();
            let mut ints: Vec<_> = [&dend, &st.nxt, &st.hi_dend]
                .into_iter()
                .map(|x| narrowed(x, MISSING, narrow))
                .collect();
            let r_missing: Vec<u32> = (0..st.r_i.len() as u32)
                .filter(|&i| st.r_i[i as usize] < 0)
                .collect();
            let r_i = st.r_i.iter().map(|&r| r as u32).collect();
            ints.push((Narrowed::U32(r_i), r_missing));
            for x in [&st.r_hi_ack, &st.r_win] {
                ints.push(narrowed(x, MISSING, narrow));
            }
            (self.g.clone(), self.len.clone(), st.bits.clone(), ints)
        });
        let ints = ints
            .into_iter()
            .map(|(x, none)| (x.into_py(py), none.into_pyarray(py)))
            .collect();
        Ok((
            g.into_pyarray(py),
            len.into_pyarray(py),
            self.flags.bind(py).clone(),
            bits.into_pyarray(py),
            ints,
        ))
    }
}

/// Adds `TcpState` to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TcpState>()
}
