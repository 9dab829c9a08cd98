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
use crate::state::slice;
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

/// Capture order (time, then frame; NaN times last, ties in row order as numpy's stable
/// `lexsort`) of one direction's rows, which come in row order: kept when already in it (the
/// usual case), else sorted.
fn capture_order(p: &Packets, rows: &mut [u32]) {
    let at = |r: u32| (p.time[r as usize], p.frame[r as usize]);
    let sorted = rows.windows(2).all(|w| {
        let ((t0, f0), (t1, f1)) = (at(w[0]), at(w[1]));
        t1 > t0 || (t1 == t0 && (f1 as i64).wrapping_sub(f0 as i64) >= 0)
    });
    if sorted {
        return;
    }
    let cmp_t = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (x, y) => x.cmp(&y),
    };
    rows.sort_by(|&a, &b| {
        let ((ta, fa), (tb, fb)) = (at(a), at(b));
        cmp_t(ta, tb).then(fa.cmp(&fb))
    });
}

/// One direction (`rows` in capture order): its lowest data sequence number and its first
/// and last bin ([`MISSING`] last bin: every time absurd).
fn extent(p: &Packets, rows: &[u32]) -> (i64, i64, i64) {
    let (mut low, mut kmin, mut kmax) = (i64::MAX, i64::MAX, i64::MIN);
    for &r in rows {
        let i = r as usize;
        if p.payload[i] > 0 && p.seq[i] != MISSING {
            low = low.min(p.seq[i]);
        }
        kmax = kmax.max(p.k[i]); // (MISSING, an absurd time, is below every bin)
        if p.k[i] != MISSING {
            kmin = kmin.min(p.k[i]);
        }
    }
    (low, kmin, kmax)
}

/// One direction's bins `kmin ..= kmin + nbins - 1`: wire bytes, new payload bytes, packets.
fn direction(
    p: &Packets,
    rows: &[u32],
    low: i64,
    kmin: i64,
    nbins: usize,
) -> (Vec<u64>, Vec<i64>, Vec<i64>) {
    let (mut bytes, mut good, mut packets) =
        (vec![0u64; nbins], vec![0i64; nbins], vec![0i64; nbins]);
    let mut np = NewPayload::new(low);
    for &r in rows {
        let i = r as usize;
        let new = np.on_packet(p.seq[i], i64::from(p.payload[i]));
        if p.k[i] == MISSING {
            continue; // an absurd time: in no bin
        }
        let slot = (p.k[i] - kmin) as usize;
        bytes[slot] += u64::from(p.size[i]);
        good[slot] += new;
        packets[slot] += 1;
    }
    (bytes, good, packets)
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
    // (flow, dir) as one key that sorts like the pair (dir is an Int8)
    let keys: Vec<u64> = (0..n)
        .map(|i| (u64::from(p.flow[i]) << 8) | (i16::from(p.dir[i]) + 128) as u64)
        .collect();
    let mut gr = super::seq::group_keys(&keys);
    drop(keys);
    let mut parts: Vec<&mut [u32]> = Vec::with_capacity(gr.keys.len());
    let mut rest = gr.order.as_mut_slice();
    for w in gr.starts.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        parts.push(head);
        rest = tail;
    }
    let ext: Vec<(i64, i64, i64)> = parts
        .par_iter_mut()
        .map(|rows| {
            capture_order(p, rows);
            extent(p, rows)
        })
        .collect();
    if ext.iter().all(|e| e.2 == MISSING) {
        return Ok(Err(Refused::NoBins));
    }
    let widest = ext
        .iter()
        .filter(|e| e.2 != MISSING)
        .map(|e| i128::from(e.2) - i128::from(e.1))
        .max()
        .unwrap_or(0);
    if widest > i128::from(max_bins) {
        return Ok(Err(Refused::TooMany(widest)));
    }
    let mut out = Bins::default();
    for (&key, e) in gr.keys.iter().zip(&ext) {
        out.flow.push((key >> 8) as u32);
        out.dir.push(((key & 0xff) as i16 - 128) as i8);
        let present = e.2 != MISSING;
        out.kmin.push(if present { e.1 } else { 0 });
        out.nbins.push(if present { e.2 - e.1 + 1 } else { 0 });
    }
    let per: Vec<(Vec<u64>, Vec<i64>, Vec<i64>)> = parts
        .par_iter()
        .enumerate()
        .map(|(g, rows)| direction(p, rows, ext[g].0, out.kmin[g], out.nbins[g] as usize))
        .collect();
    // integer sums, exact in f64 below 2^53 bytes per bin (numpy's float sums of the same)
    for (bytes, good, packets) in per {
        out.bytes.extend(bytes.into_iter().map(|x| x as f64));
        out.good.extend(good.into_iter().map(|x| x as f64));
        out.packets.extend(packets);
    }
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
