//! Throughput, goodput and packet rate bins per direction, one streaming pass per direction.
//!
//! Every packet with a flow and direction (TCP or UDP) falls into the bin `k` the caller
//! computed from its time; a direction's bins run from its first packet's to its last packet's,
//! zeros where it was silent. Per bin: the packets' wire bytes (`size`: headers,
//! retransmissions and pure ACKs included), their *new* payload and their number.
//!
//! New payload (the goodput): the part of a segment above the highest sequence end its
//! direction sent before it, in capture order (time, then frame). The first data segment counts
//! from the direction's lowest data sequence number, so that a direction adds up to exactly
//! highest end - lowest data seq (tcptrace's "unique bytes"; bytes below a hole count when
//! the hole's upper edge is first sent). A packet without a sequence number (UDP) counts its
//! whole payload; pure ACKs count nothing and leave the running highest end alone.

use super::seq::MISSING;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use rayon::prelude::*;
use std::cmp::Ordering;

/// The packet columns the bins read (one entry per packet with a flow and direction).
pub struct Packets<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub time: &'a [f64],
    pub frame: &'a [u64],
    /// Wire bytes (0 when unknown).
    pub size: &'a [u32],
    /// Payload bytes (0 when unknown).
    pub payload: &'a [u32],
    /// Relative sequence number ([`MISSING`]: none, e.g. UDP).
    pub seq: &'a [i64],
    /// Bin number ([`MISSING`]: a time too absurd to bin).
    pub k: &'a [i64],
}

/// One direction's running goodput state, fed packet by packet in capture order.
pub struct NewPayload {
    /// The direction's lowest data sequence number (known up front: the first data segment
    /// counts from it).
    low: i64,
    /// Highest data end so far (None before the first data segment).
    hi_end: Option<i64>,
}

impl NewPayload {
    pub fn new(low: i64) -> Self {
        NewPayload { low, hi_end: None }
    }

    /// The new payload bytes of one packet.
    pub fn on_packet(&mut self, seq: i64, payload: i64) -> i64 {
        if seq == MISSING {
            return payload; // no sequence number (UDP): all of it is new
        }
        if payload <= 0 {
            return 0; // a pure ACK
        }
        let end = seq + payload;
        let prev = self.hi_end.unwrap_or(self.low);
        self.hi_end = Some(self.hi_end.map_or(end, |h| h.max(end)));
        (end - prev).max(0)
    }
}

/// The bins of every direction: per direction its key and bin range, per bin the sums.
#[derive(Debug, Default)]
pub struct Bins {
    /// The directions (ascending flow, then dir): flow, dir, first bin, number of bins (0:
    /// every time absurd).
    pub flow: Vec<u32>,
    pub dir: Vec<i8>,
    pub kmin: Vec<i64>,
    pub nbins: Vec<i64>,
    /// Per bin (directions one after the other, bins ascending): wire bytes, new payload
    /// bytes, packets.
    pub bytes: Vec<f64>,
    pub good: Vec<f64>,
    pub packets: Vec<i64>,
}

/// Why no bins were made: no direction has a bin time, or one spans over `max_bins` bins.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    NoBins,
    TooMany(i128),
}

/// Row order by (time, frame), stable, NaN times last (numpy's `lexsort`); None when the rows
/// already are in it (the usual case).
fn time_order(p: &Packets) -> Option<Vec<u32>> {
    let sorted = p.time.windows(2).zip(p.frame.windows(2)).all(|(t, f)| {
        t[1] > t[0] || (t[1] == t[0] && (f[1] as i64).wrapping_sub(f[0] as i64) >= 0)
    });
    if sorted {
        return None;
    }
    let cmp_t = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (x, y) => x.cmp(&y),
    };
    let mut order: Vec<u32> = (0..p.time.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        cmp_t(p.time[a], p.time[b]).then(p.frame[a].cmp(&p.frame[b]))
    });
    Some(order)
}

/// One direction (`rows` in capture order): its first bin, last bin and each row's new payload.
fn direction(p: &Packets, rows: &[u32]) -> (i64, i64, Vec<i64>) {
    let low = rows
        .iter()
        .map(|&r| r as usize)
        .filter(|&i| p.payload[i] > 0 && p.seq[i] != MISSING)
        .map(|i| p.seq[i])
        .min()
        .unwrap_or(i64::MAX);
    let mut np = NewPayload::new(low);
    let mut new = Vec::with_capacity(rows.len());
    let (mut kmin, mut kmax) = (i64::MAX, i64::MIN);
    for &r in rows {
        let i = r as usize;
        new.push(np.on_packet(p.seq[i], i64::from(p.payload[i])));
        kmax = kmax.max(p.k[i]); // (MISSING, an absurd time, is below every bin)
        if p.k[i] != MISSING {
            kmin = kmin.min(p.k[i]);
        }
    }
    (kmin, kmax, new)
}

/// The bins of every direction (see the module docs), or why none are made.
pub fn bins(p: &Packets, max_bins: i64) -> Result<Result<Bins, Refused>, String> {
    let n = p.flow.len();
    for (name, l) in [
        ("dir", p.dir.len()),
        ("time", p.time.len()),
        ("frame", p.frame.len()),
        ("size", p.size.len()),
        ("payload", p.payload.len()),
        ("seq", p.seq.len()),
        ("k", p.k.len()),
    ] {
        if l != n {
            return Err(format!("column {name} has {l} values, flow has {n}"));
        }
    }
    if n >= u32::MAX as usize {
        return Err(format!("{n} packets: at most 2^32 - 2 per call"));
    }
    let order = time_order(p);
    let at = |j: usize| order.as_ref().map_or(j, |o| o[j] as usize);
    // (flow, dir) as one key that sorts like the pair (dir is an Int8)
    let keys: Vec<u64> = (0..n)
        .map(|j| {
            let i = at(j);
            (u64::from(p.flow[i]) << 8) | (i16::from(p.dir[i]) + 128) as u64
        })
        .collect();
    let mut gr = super::seq::group_keys(&keys);
    for r in gr.order.iter_mut() {
        *r = at(*r as usize) as u32; // grouped positions -> packet rows
    }
    let dirs: Vec<(i64, i64, Vec<i64>)> = gr
        .starts
        .par_windows(2)
        .map(|w| direction(p, &gr.order[w[0]..w[1]]))
        .collect();
    if dirs.iter().all(|d| d.1 == MISSING) {
        return Ok(Err(Refused::NoBins));
    }
    let widest = dirs
        .iter()
        .filter(|d| d.1 != MISSING)
        .map(|d| i128::from(d.1) - i128::from(d.0))
        .max()
        .unwrap_or(0);
    if widest > i128::from(max_bins) {
        return Ok(Err(Refused::TooMany(widest)));
    }
    let mut out = Bins::default();
    for (g, d) in dirs.iter().enumerate() {
        let key = gr.keys[g];
        out.flow.push((key >> 8) as u32);
        out.dir.push(((key & 0xff) as i16 - 128) as i8);
        let present = d.1 != MISSING;
        out.kmin.push(if present { d.0 } else { 0 });
        out.nbins.push(if present { d.1 - d.0 + 1 } else { 0 });
    }
    let total: i64 = out.nbins.iter().sum();
    let total = total as usize;
    let (mut bytes, mut good) = (vec![0u64; total], vec![0i64; total]);
    out.packets = vec![0i64; total];
    let mut base = 0usize;
    for (g, (kmin, _, new)) in dirs.iter().enumerate() {
        for (&r, &nw) in gr.order[gr.starts[g]..gr.starts[g + 1]].iter().zip(new) {
            let i = r as usize;
            if p.k[i] == MISSING {
                continue;
            }
            let slot = base + (p.k[i] - kmin) as usize;
            bytes[slot] += u64::from(p.size[i]);
            good[slot] += nw;
            out.packets[slot] += 1;
        }
        base += out.nbins[g] as usize;
    }
    // integer sums, exact in f64 below 2^53 bytes per bin (numpy's float sums of the same)
    out.bytes = bytes.into_iter().map(|x| x as f64).collect();
    out.good = good.into_iter().map(|x| x as f64).collect();
    Ok(Ok(out))
}

type BinArrays<'py> = (
    i64,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i8>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
);

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!("column {name} is not contiguous"))
    })
}

/// Throughput bins: `(refused, flow, dir, kmin, nbins, bytes, good, packets)`, the first four
/// per direction, the last three per bin.
///
/// `refused` is 0, or -1 when no packet has a bin, or the widest direction's bin span when
/// it exceeds `max_bins` (the arrays are then empty).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn throughput_bins<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    time: PyReadonlyArray1<'py, f64>,
    frame: PyReadonlyArray1<'py, u64>,
    size: PyReadonlyArray1<'py, u32>,
    payload: PyReadonlyArray1<'py, u32>,
    seq: PyReadonlyArray1<'py, i64>,
    k: PyReadonlyArray1<'py, i64>,
    max_bins: i64,
) -> PyResult<BinArrays<'py>> {
    let p = Packets {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        time: slice(&time, "time")?,
        frame: slice(&frame, "frame")?,
        size: slice(&size, "size")?,
        payload: slice(&payload, "payload")?,
        seq: slice(&seq, "seq")?,
        k: slice(&k, "k")?,
    };
    let res = py.detach(|| super::guard(|| bins(&p, max_bins)))?;
    let (refused, b) = match res {
        Ok(b) => (0, b),
        Err(Refused::NoBins) => (-1, Bins::default()),
        Err(Refused::TooMany(w)) => (i64::try_from(w).unwrap_or(i64::MAX), Bins::default()),
    };
    Ok((
        refused,
        b.flow.into_pyarray(py),
        b.dir.into_pyarray(py),
        b.kmin.into_pyarray(py),
        b.nbins.into_pyarray(py),
        b.bytes.into_pyarray(py),
        b.good.into_pyarray(py),
        b.packets.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(throughput_bins, m)?)
}

#[cfg(test)]
mod tests;
