//! `dir_stats`: the per-direction accumulators (`super`) for Python, numpy columns in, a dict
//! of per-direction numpy columns out.

use super::*;
use crate::state::slice;
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Per direction (first appearance order) the accumulated values, plus the per-connection
/// ones each direction's row carries: `window_scaling` (both SYNs had the option),
/// `flow_syn_t` (the connection's first SYN) and `hs_rtt` (the handshake RTT).
struct Out {
    flow: Vec<u32>,
    dir: Vec<i16>,
    ints: [Vec<i64>; 8],
    floats: [Vec<f64>; 5],
    opts: [Vec<i32>; 3],
    window_scaling: Vec<bool>,
}

const INTS: [&str; 8] = [
    "first_row",
    "packets",
    "data_packets",
    "data_bytes",
    "wire_bytes",
    "seq_lo",
    "end_hi",
    "max_payload",
];
const FLOATS: [&str; 5] = ["start", "end", "syn_t", "flow_syn_t", "hs_rtt"];
const OPTS: [&str; 3] = ["mss", "wscale", "syn_mss"];

fn collect(d: &Directions) -> Out {
    // per connection: the first SYN of either direction
    let mut first_syn: HashMap<u32, f64> = HashMap::new();
    for (k, s) in d.keys.iter().zip(&d.stats) {
        let t = first_syn.entry(k.0).or_insert(f64::NAN);
        *t = t.min(s.syn_t);
    }
    let mut o = Out {
        flow: Vec::new(),
        dir: Vec::new(),
        ints: Default::default(),
        floats: Default::default(),
        opts: Default::default(),
        window_scaling: Vec::new(),
    };
    for (&(flow, dir), s) in d.keys.iter().zip(&d.stats) {
        let side = |x: i16| d.find(flow, x).map(|p| &d.stats[p]);
        let (d0, d1) = (side(0), side(1));
        o.flow.push(flow);
        o.dir.push(dir);
        let ints = [
            s.first_row,
            s.packets,
            s.data_packets,
            s.data_bytes,
            s.wire_bytes,
            s.seq_lo,
            s.end_hi,
            s.max_payload,
        ];
        for (v, x) in o.ints.iter_mut().zip(ints) {
            v.push(x);
        }
        let floats = [
            s.start,
            s.end,
            s.syn_t,
            first_syn[&flow],
            d0.map_or(f64::NAN, DirStats::handshake_rtt),
        ];
        for (v, x) in o.floats.iter_mut().zip(floats) {
            v.push(x);
        }
        for (v, x) in o.opts.iter_mut().zip([s.mss, s.wscale, s.syn_mss]) {
            v.push(x);
        }
        o.window_scaling
            .push(d0.is_some_and(|a| a.syn_wscale) && d1.is_some_and(|b| b.syn_wscale));
    }
    o
}

/// Per-direction summary columns (see the module docs) as a dict of numpy arrays; `dir` is
/// -32768 and floats NaN, integers -2^62 (`seq_lo`, `end_hi`) or -1 (options) for none.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(name = "dir_stats")]
fn dir_stats_py<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i16>,
    time: PyReadonlyArray1<'py, f64>,
    payload: PyReadonlyArray1<'py, u32>,
    size: PyReadonlyArray1<'py, u32>,
    seq: PyReadonlyArray1<'py, i64>,
    flags: PyReadonlyArray1<'py, u8>,
    mss: PyReadonlyArray1<'py, i32>,
    wscale: PyReadonlyArray1<'py, i16>,
) -> PyResult<Bound<'py, PyDict>> {
    let c = Columns {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        time: slice(&time, "time")?,
        payload: slice(&payload, "payload")?,
        size: slice(&size, "size")?,
        seq: slice(&seq, "seq")?,
        flags: slice(&flags, "flags")?,
        mss: slice(&mss, "mss")?,
        wscale: slice(&wscale, "wscale")?,
    };
    let o = py.detach(|| crate::state::guard(|| dir_stats(&c).map(|d| collect(&d))))?;
    let out = PyDict::new(py);
    out.set_item("flow", o.flow.into_pyarray(py))?;
    out.set_item("dir", o.dir.into_pyarray(py))?;
    for (name, v) in INTS.iter().zip(o.ints) {
        out.set_item(name, v.into_pyarray(py))?;
    }
    for (name, v) in FLOATS.iter().zip(o.floats) {
        out.set_item(name, v.into_pyarray(py))?;
    }
    for (name, v) in OPTS.iter().zip(o.opts) {
        out.set_item(name, v.into_pyarray(py))?;
    }
    out.set_item("window_scaling", o.window_scaling.into_pyarray(py))?;
    Ok(out)
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dir_stats_py, m)?)
}
