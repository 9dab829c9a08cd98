//! The stall pass over a trace's columns (`super::Connection` per connection, in packet order)
//! and its Python entry point `tcp_stalls`.

use super::*;
use crate::state::slice;

/// An integer state column: the prepared state keeps sequence state in 32 bits when the
/// trace's numbers fit (`i32::MIN` for null), else in 64 ([`MISSING`] for null).
#[derive(Clone, Copy)]
pub enum Ints<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Ints<'_> {
    fn len(&self) -> usize {
        match self {
            Ints::I32(x) => x.len(),
            Ints::I64(x) => x.len(),
        }
    }

    fn get(&self, i: usize) -> Option<i64> {
        match self {
            Ints::I32(x) => Some(x[i]).filter(|&v| v != i32::MIN).map(i64::from),
            Ints::I64(x) => opt(x[i]),
        }
    }
}

/// The prepared state's columns (one entry per packet, capture order). i64 columns hold
/// [`MISSING`] for null.
pub struct Columns<'a> {
    /// Direction id `2·flow + dir`.
    pub g: &'a [u32],
    pub time: &'a [f64],
    pub len: &'a [i64],
    pub hi_dend: Ints<'a>,
    pub ack: &'a [i64],
    pub win: &'a [i64],
    pub new_ack: &'a [bool],
    /// Rows of the SYNs (ascending).
    pub syn_rows: &'a [u32],
}

/// The RTT and retransmission inputs.
pub struct Rtt<'a> {
    /// Rows of the `rto` retransmissions (any order).
    pub rto_rows: &'a [u32],
    /// Smoothed RTT per sample: the row of the ACK that closed it and the value
    /// (`crate::state::srtt::Est`).
    pub est_rows: &'a [u32],
    pub est_srtt: &'a [f64],
    /// Every RTT sample's data direction and value (the floor is the smallest above 0).
    pub rs_flow: &'a [u32],
    pub rs_dir: &'a [i8],
    pub rs_rtt: &'a [f64],
}

fn opt(x: i64) -> Option<i64> {
    (x != MISSING).then_some(x)
}

/// Dense numbers of connection ids.
enum Ids {
    Table(Vec<u32>),
    Sorted(Vec<u32>),
}

impl Ids {
    fn new(flows: impl Iterator<Item = u32> + Clone, n: usize) -> Self {
        let top = flows.clone().max().unwrap_or(0) as usize;
        if top < 4 * n + 1024 {
            let mut t = vec![u32::MAX; top + 1];
            let mut k = 0;
            for f in flows {
                if t[f as usize] == u32::MAX {
                    t[f as usize] = k;
                    k += 1;
                }
            }
            Ids::Table(t)
        } else {
            let mut s: Vec<u32> = flows.collect();
            s.sort_unstable();
            s.dedup();
            Ids::Sorted(s)
        }
    }

    fn count(&self) -> usize {
        match self {
            Ids::Table(t) => t.iter().filter(|&&k| k != u32::MAX).count(),
            Ids::Sorted(s) => s.len(),
        }
    }

    fn get(&self, flow: u32) -> Option<usize> {
        match self {
            Ids::Table(t) => t
                .get(flow as usize)
                .filter(|&&k| k != u32::MAX)
                .map(|&k| k as usize),
            Ids::Sorted(s) => s.binary_search(&flow).ok(),
        }
    }
}

fn check(c: &Columns, r: &Rtt) -> Result<usize, String> {
    let n = c.g.len();
    let lens = [
        ("time", c.time.len()),
        ("len", c.len.len()),
        ("hi_dend", c.hi_dend.len()),
        ("ack", c.ack.len()),
        ("win", c.win.len()),
        ("new_ack", c.new_ack.len()),
    ];
    for (name, l) in lens {
        if l != n {
            return Err(format!("column {name} has {l} values, g has {n}"));
        }
    }
    if n >= u32::MAX as usize {
        return Err(format!("{n} packets: at most 2^32 - 2 per call"));
    }
    if r.rs_flow.len() != r.rs_dir.len() || r.rs_flow.len() != r.rs_rtt.len() {
        return Err("rs_flow, rs_dir and rs_rtt differ in length".into());
    }
    for (name, rows) in [("syn_rows", c.syn_rows), ("rto_rows", r.rto_rows)] {
        if let Some(&x) = rows.iter().find(|&&x| x as usize >= n) {
            return Err(format!("{name}: row {x} beyond the {n} packets"));
        }
    }
    if let Some(&d) = r.rs_dir.iter().find(|&&d| d != 0 && d != 1) {
        return Err(format!("rs_dir: {d} is not 0 or 1"));
    }
    Ok(n)
}

/// The smallest RTT sample above 0 per direction ([`floor_add`]).
fn floors(ids: &Ids, r: &Rtt) -> Vec<[Option<f64>; 2]> {
    let mut out = vec![[None; 2]; ids.count()];
    for ((&f, &d), &v) in r.rs_flow.iter().zip(r.rs_dir).zip(r.rs_rtt) {
        let Some(k) = ids.get(f) else { continue };
        floor_add(&mut out[k][d as usize], v);
    }
    out
}

/// A set of rows, read in ascending row order.
struct Marks {
    rows: Vec<u32>,
    next: usize,
}

impl Marks {
    fn new(rows: &[u32]) -> Self {
        let mut rows = rows.to_vec();
        rows.sort_unstable();
        Marks { rows, next: 0 }
    }

    /// Whether `row` is one (rows must come in ascending order).
    fn at(&mut self, row: u32) -> bool {
        let mut hit = false;
        while self.rows.get(self.next).is_some_and(|&r| r <= row) {
            hit |= self.rows[self.next] == row;
            self.next += 1;
        }
        hit
    }
}

/// The stalls of every direction, ordered by the row of their start.
pub fn stalls(c: &Columns, r: &Rtt) -> Result<Vec<(u32, Stall)>, String> {
    let n = check(c, r)?;
    let ids = Ids::new(c.g.iter().map(|&g| g >> 1), n);
    let mut conns: Vec<Connection> = (0..ids.count()).map(|_| Connection::default()).collect();
    let mut rto = Marks::new(r.rto_rows);
    let mut syn = Marks::new(c.syn_rows);
    let mut est = Est::new(r.est_rows, r.est_srtt, n)?;
    for i in 0..n {
        let row = i as u32;
        let p = Packet {
            time: c.time[i],
            len: c.len[i],
            hi_dend: c.hi_dend.get(i),
            ack: opt(c.ack[i]),
            win: opt(c.win[i]),
            new_ack: c.new_ack[i],
            syn: syn.at(row),
            rto: rto.at(row),
            srtt: est.at(row),
        };
        let g = c.g[i];
        let k = ids.get(g >> 1).ok_or("connection id not indexed")?;
        conns[k].on_packet(row, (g & 1) as usize, &p);
    }
    let fl = floors(&ids, r);
    let mut out = Vec::new();
    let mut found = Vec::new();
    for (k, conn) in conns.into_iter().enumerate() {
        conn.finish(fl[k], &mut found);
        out.extend(found.drain(..).map(|s| (s.row, s)));
    }
    // (connection ids only index the machines: the g of a stall is its start row's)
    let mut out: Vec<(u32, Stall)> = out
        .into_iter()
        .map(|(row, s)| (c.g[row as usize], s))
        .collect();
    out.sort_unstable_by_key(|(_, s)| s.row);
    Ok(out)
}

/// An int32 or int64 numpy column.
#[derive(FromPyObject)]
enum IntArray<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

type StallArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
);

/// Stalls and their causes (see `stalls`): `(g, start, end, cause)` ordered by start row,
/// `cause` a [`Cause`].
///
/// `ack` and `win` carry -2^62 for null, `hi_dend` -2^62 (int64) or -2^31 (int32); `syn_rows`,
/// `rto_rows` and `est_rows` are row numbers.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_stalls<'py>(
    py: Python<'py>,
    g: PyReadonlyArray1<'py, u32>,
    time: PyReadonlyArray1<'py, f64>,
    len: PyReadonlyArray1<'py, i64>,
    hi_dend: IntArray<'py>,
    ack: PyReadonlyArray1<'py, i64>,
    win: PyReadonlyArray1<'py, i64>,
    new_ack: PyReadonlyArray1<'py, bool>,
    syn_rows: PyReadonlyArray1<'py, u32>,
    rto_rows: PyReadonlyArray1<'py, u32>,
    est_rows: PyReadonlyArray1<'py, u32>,
    est_srtt: PyReadonlyArray1<'py, f64>,
    rs_flow: PyReadonlyArray1<'py, u32>,
    rs_dir: PyReadonlyArray1<'py, i8>,
    rs_rtt: PyReadonlyArray1<'py, f64>,
) -> PyResult<StallArrays<'py>> {
    let c = Columns {
        g: slice(&g, "g")?,
        time: slice(&time, "time")?,
        len: slice(&len, "len")?,
        hi_dend: match &hi_dend {
            IntArray::I32(a) => Ints::I32(slice(a, "hi_dend")?),
            IntArray::I64(a) => Ints::I64(slice(a, "hi_dend")?),
        },
        ack: slice(&ack, "ack")?,
        win: slice(&win, "win")?,
        new_ack: slice(&new_ack, "new_ack")?,
        syn_rows: slice(&syn_rows, "syn_rows")?,
    };
    let r = Rtt {
        rto_rows: slice(&rto_rows, "rto_rows")?,
        est_rows: slice(&est_rows, "est_rows")?,
        est_srtt: slice(&est_srtt, "est_srtt")?,
        rs_flow: slice(&rs_flow, "rs_flow")?,
        rs_dir: slice(&rs_dir, "rs_dir")?,
        rs_rtt: slice(&rs_rtt, "rs_rtt")?,
    };
    let found = py.detach(|| guard(|| stalls(&c, &r)))?;
    let g: Vec<u32> = found.iter().map(|(g, _)| *g).collect();
    let start: Vec<f64> = found.iter().map(|(_, s)| s.start).collect();
    let end: Vec<f64> = found.iter().map(|(_, s)| s.end).collect();
    let cause: Vec<u8> = found.iter().map(|(_, s)| s.cause as u8).collect();
    Ok((
        g.into_pyarray(py),
        start.into_pyarray(py),
        end.into_pyarray(py),
        cause.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "STALL_CAUSES",
        pyo3::types::PyTuple::new(m.py(), super::CAUSE_NAMES)?,
    )?;
    m.add_function(wrap_pyfunction!(tcp_stalls, m)?)
}
