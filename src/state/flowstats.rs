//! Per data direction of the flows table: ACK timing, the initial window, the peer's largest
//! window and the time shares limited by the receiver window, the application and cwnd.
//!
//! Two streaming passes over the prepared state's rows in packet order (a direction's rows in
//! their order). The first ([`Extent`]) learns each direction's data span (first byte, end),
//! its largest segment and largest advertised window; the second ([`DirStats`]) needs them:
//! "an ACK covers data" compares with the first data byte, "an ACK of the last byte" with the
//! end, and "the window cannot take one more segment" with the largest segment. A later
//! streaming driver keeps the first pass's values per direction as they grow and feeds the
//! second with the final ones (or from a second read of the file).
//!
//! Definitions (the `tracekit.analysis.flows` docstring has the user-facing ones):
//! * the initial window: the bytes and segments a direction sent before the first ACK of its
//!   data (RFC 5681 section 3.1's IW, as seen at the vantage point);
//! * each data segment stands for the time until its direction's next one (the last: none);
//!   that time is *rwnd-limited* when the unacknowledged bytes plus one largest segment exceed
//!   the peer's last window (RFC 9293 section 3.8.6.2.1: the sender may not send past the
//!   window), else *application-limited* when the gap exceeds the smoothed RTT (RFC 6298) of
//!   the reverse direction's latest sample and the next segment finds everything acknowledged
//!   (RFC 7661: the sender had nothing to send), else *cwnd-limited*.

use super::seq::MISSING;
use super::srtt::{Est, Latest};

/// The prepared state's columns (one entry per row, packet order); integer columns hold
/// [`MISSING`] for null.
pub struct Rows<'a> {
    /// Direction id `2·flow + dir`.
    pub g: &'a [u32],
    pub len: &'a [i64],
    pub time: &'a [f64],
    /// `seq + len` (never null on data rows).
    pub dend: &'a [i64],
    /// The packet raises its direction's cumulative ACK.
    pub new_ack: &'a [bool],
    pub ack: &'a [i64],
    pub win: &'a [i64],
    pub hi_dend: &'a [i64],
    pub r_hi_ack: &'a [i64],
    pub r_win: &'a [i64],
    /// The smoothed RTT samples (RFC 6298): the row each was taken on and its value
    /// (`super::srtt::Est`).
    pub est_rows: &'a [u32],
    pub est_srtt: &'a [f64],
}

/// numpy's `minimum`/`maximum`: NaN wins (unlike `f64::min`/`max`).
fn nan_fold(acc: Option<f64>, x: f64, max: bool) -> Option<f64> {
    Some(match acc {
        None => x,
        Some(a) if a.is_nan() || x.is_nan() => f64::NAN,
        Some(a) if max => a.max(x),
        Some(a) => a.min(x),
    })
}

/// First pass, one per direction: what the second pass compares with.
#[derive(Clone, Copy, Debug)]
pub struct Extent {
    /// Data segments seen.
    pub n_data: i64,
    /// Earliest data segment's time.
    pub t0: Option<f64>,
    /// Lowest data byte and highest data end.
    pub s0: i64,
    pub last: i64,
    /// Largest segment (bytes).
    pub mss: i64,
    /// Largest window this direction advertised ([`MISSING`]: none).
    pub max_win: i64,
}

impl Default for Extent {
    fn default() -> Self {
        Extent {
            n_data: 0,
            t0: None,
            s0: i64::MAX,
            last: i64::MIN,
            mss: 0,
            max_win: MISSING,
        }
    }
}

impl Extent {
    pub fn on_packet(&mut self, len: i64, time: f64, dend: i64, win: i64) {
        self.max_win = self.max_win.max(win);
        if len > 0 {
            self.n_data += 1;
            self.t0 = nan_fold(self.t0, time, false);
            self.s0 = self.s0.min(dend - len);
            self.last = self.last.max(dend);
            self.mss = self.mss.max(len);
        }
    }
}

/// A data segment waiting for its direction's next one (which ends the time it stands for).
#[derive(Clone, Copy, Debug)]
struct Pending {
    time: f64,
    ack: i64,
    hd: i64,
    win: i64,
    srtt: f64,
}

/// Second pass, one per data direction: fed its own packets and the peer's ACKs in order.
#[derive(Clone, Debug)]
pub struct DirStats {
    /// First byte, data end and largest segment ([`Extent`]).
    s0: i64,
    last: i64,
    mss: i64,
    /// Position of this direction's first data segment among every direction's data
    /// segments (ascending direction id) and the summing block's length: the shares add the
    /// gaps block by block, as the columnar code did, so that sums round the same.
    pos: usize,
    block: usize,
    /// The first ACK of the last data byte (its earliest time).
    pub acked_t: Option<f64>,
    /// An ACK of data seen; the highest such ACK and the latest time among them.
    acked_any: bool,
    ack_hi: i64,
    pub ack_t: Option<f64>,
    /// Segments and bytes sent before the first ACK of data.
    pub iw_n: i64,
    pub iw_b: i64,
    pending: Option<Pending>,
    /// Time per kind (cwnd, rwnd, app): this block's and the earlier blocks' sums.
    part: [f64; 3],
    pub sums: [f64; 3],
}

impl DirStats {
    pub fn new(e: &Extent, pos: usize, block: usize) -> Self {
        DirStats {
            s0: e.s0,
            last: e.last,
            mss: e.mss,
            pos,
            block: block.max(1),
            acked_t: None,
            acked_any: false,
            ack_hi: MISSING,
            ack_t: None,
            iw_n: 0,
            iw_b: 0,
            pending: None,
            part: [0.0; 3],
            sums: [0.0; 3],
        }
    }

    /// A peer packet that raises its cumulative ACK (`new_ack`).
    pub fn on_peer_ack(&mut self, time: f64, ack: i64) {
        if ack == MISSING {
            return;
        }
        if ack >= self.last {
            self.acked_t = nan_fold(self.acked_t, time, false);
        }
        if ack > self.s0 {
            // cumulative ACKs only rise: the highest is the most the receiver had got
            self.acked_any = true;
            self.ack_hi = self.ack_hi.max(ack);
            self.ack_t = nan_fold(self.ack_t, time, true);
        }
    }

    /// One of this direction's data segments; `srtt`: its smoothed RTT then (None: no sample
    /// yet), `r_hi_ack`/`r_win`: the peer's highest ACK and its last window then.
    pub fn on_data(
        &mut self,
        time: f64,
        len: i64,
        hd: i64,
        r_hi_ack: i64,
        r_win: i64,
        srtt: Option<f64>,
    ) {
        if !self.acked_any {
            self.iw_n += 1;
            self.iw_b += len;
        }
        if let Some(p) = self.pending.take() {
            self.classify(p, time - p.time, r_hi_ack);
        }
        let srtt = srtt.unwrap_or(0.0); // no sample yet: no gap is the application's
        self.pending = Some(Pending {
            time,
            ack: r_hi_ack,
            hd,
            win: r_win,
            srtt,
        });
    }

    /// After the last packet: the last segment stands for no time.
    pub fn finish(&mut self) {
        if let Some(p) = self.pending.take() {
            self.classify(p, 0.0, MISSING);
        }
        for (s, p) in self.sums.iter_mut().zip(self.part) {
            *s += p;
        }
        self.part = [0.0; 3];
    }

    fn classify(&mut self, p: Pending, w: f64, next_ack: i64) {
        if self.pos.is_multiple_of(self.block) {
            for (s, q) in self.sums.iter_mut().zip(self.part) {
                *s += q;
            }
            self.part = [0.0; 3];
        }
        self.pos += 1;
        let w = if w < 0.0 { 0.0 } else { w }; // (NaN stays NaN, as numpy's clip)
        let unacked = if p.ack == MISSING {
            0
        } else {
            p.hd.wrapping_sub(p.ack).max(0)
        };
        let rwnd = p.win != MISSING && p.ack != MISSING && unacked + self.mss > p.win;
        let app = !rwnd && w > p.srtt && next_ack != MISSING && next_ack >= p.hd;
        self.part[usize::from(rwnd) + 2 * usize::from(app)] += w;
    }

    /// Data bytes the highest ACK of data covers ([`MISSING`]: none).
    pub fn ack_bytes(&self) -> i64 {
        if self.acked_any {
            self.ack_hi.min(self.last) - self.s0
        } else {
            MISSING
        }
    }

    /// The initial window `(bytes, segments)`, None without an ACK of data or a segment before it.
    pub fn initial_window(&self) -> Option<(i64, i64)> {
        (self.acked_any && self.iw_n > 0).then_some((self.iw_b, self.iw_n))
    }
}

/// Per data direction (ascending id), the columns of the flows table's part.
#[derive(Debug, Default)]
pub struct FlowStats {
    pub key: Vec<i64>,
    pub t0: Vec<f64>,
    pub acked_t: Vec<f64>,
    pub ack_bytes: Vec<i64>,
    pub ack_t: Vec<f64>,
    pub iw_b: Vec<i64>,
    pub iw_n: Vec<i64>,
    pub max_rwnd: Vec<i64>,
    pub shares: [Vec<f64>; 3],
}

fn check(r: &Rows) -> Result<usize, String> {
    let n = r.g.len();
    let lens = [
        r.len.len(),
        r.time.len(),
        r.dend.len(),
        r.new_ack.len(),
        r.ack.len(),
        r.win.len(),
        r.hi_dend.len(),
        r.r_hi_ack.len(),
        r.r_win.len(),
    ];
    if lens.iter().any(|&l| l != n) {
        return Err("flow_stats: columns of different lengths".into());
    }
    Ok(n)
}

/// Both passes over every row; `block`: the summing block (see [`DirStats`]).
pub fn flow_stats(r: &Rows, block: usize) -> Result<FlowStats, String> {
    let n = check(r)?;
    let nd = r.g.iter().map(|&g| g as usize + 2).max().unwrap_or(0) & !1;
    let mut ext = vec![Extent::default(); nd];
    for i in 0..n {
        ext[r.g[i] as usize].on_packet(r.len[i], r.time[i], r.dend[i], r.win[i]);
    }
    let mut pos = 0usize;
    let mut st: Vec<Option<DirStats>> = ext
        .iter()
        .map(|e| {
            (e.n_data > 0).then(|| {
                let s = DirStats::new(e, pos, block);
                pos += e.n_data as usize;
                s
            })
        })
        .collect();
    // per connection, each direction's latest smoothed RTT
    let mut est = Est::new(r.est_rows, r.est_srtt, n).map_err(|e| format!("flow_stats: {e}"))?;
    let mut latest = vec![Latest::default(); nd / 2];
    for i in 0..n {
        let g = r.g[i] as usize;
        latest[g >> 1].on_packet(g & 1, est.at(i as u32));
        if r.new_ack[i] {
            if let Some(s) = st[g ^ 1].as_mut() {
                s.on_peer_ack(r.time[i], r.ack[i]);
            }
        }
        if r.len[i] > 0 {
            if let Some(s) = st[g].as_mut() {
                s.on_data(
                    r.time[i],
                    r.len[i],
                    r.hi_dend[i],
                    r.r_hi_ack[i],
                    r.r_win[i],
                    latest[g >> 1].of(g & 1),
                );
            }
        }
    }
    let mut out = FlowStats::default();
    for (g, s) in st.iter_mut().enumerate() {
        let Some(s) = s.as_mut() else { continue };
        s.finish();
        let e = &ext[g];
        out.key.push(g as i64);
        out.t0.push(e.t0.unwrap_or(f64::NAN));
        out.acked_t.push(s.acked_t.unwrap_or(f64::NAN));
        out.ack_bytes.push(s.ack_bytes());
        out.ack_t.push(s.ack_t.unwrap_or(f64::NAN));
        let (b, k) = s.initial_window().unwrap_or((MISSING, MISSING));
        out.iw_b.push(b);
        out.iw_n.push(k);
        out.max_rwnd.push(ext[g ^ 1].max_win);
        let tot = s.sums[0] + s.sums[1] + s.sums[2];
        for (c, v) in out.shares.iter_mut().enumerate() {
            v.push(s.sums[c] / tot);
        }
    }
    Ok(out)
}

mod py;
pub mod ranks;
pub mod summary;
pub use py::register;

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = MISSING;

    /// Sender (g 0) sends 3 segments of 100 bytes; the receiver (g 1) ACKs the first two, then all.
    #[test]
    fn timing_and_initial_window() {
        let g = [0u32, 0, 1, 0, 1];
        let len = [100i64, 100, 0, 100, 0];
        let time = [0.0, 0.1, 0.5, 0.6, 1.0];
        let dend = [100i64, 200, 1, 300, 1];
        let new_ack = [false, false, true, false, true];
        let ack = [M, M, 200, M, 300];
        let win = [M, M, 5000, M, 6000];
        let hi = [100i64, 200, 1, 300, 1];
        let r_hi_ack = [M, M, M, 200, 200];
        let r_win = [M, M, M, 5000, 1000];
        let r = Rows {
            g: &g,
            len: &len,
            time: &time,
            dend: &dend,
            new_ack: &new_ack,
            ack: &ack,
            win: &win,
            hi_dend: &hi,
            r_hi_ack: &r_hi_ack,
            r_win: &r_win,
            est_rows: &[2],
            est_srtt: &[0.5],
        };
        let o = flow_stats(&r, 1 << 18).unwrap();
        assert_eq!(o.key, vec![0]);
        assert_eq!(o.t0, vec![0.0]);
        assert_eq!(o.acked_t, vec![1.0]);
        assert_eq!(o.ack_bytes, vec![300]);
        assert_eq!(o.ack_t, vec![1.0]);
        assert_eq!((o.iw_b[0], o.iw_n[0]), (200, 2));
        assert_eq!(o.max_rwnd, vec![6000]);
        // gaps: 0.1 (next segment finds nothing ACKed: cwnd), 0.5 (no sample before it, all
        // ACKed by the next: app), the last: none
        assert_eq!(o.shares[0], vec![0.1 / 0.6]);
        assert_eq!(o.shares[1], vec![0.0]);
        assert_eq!(o.shares[2], vec![0.5 / 0.6]);
    }

    /// An application pause longer than the srtt with everything acknowledged, then a
    /// segment that the window cannot take.
    #[test]
    fn app_and_rwnd_limited() {
        let mut e = Extent::default();
        e.on_packet(100, 0.0, 100, M);
        e.on_packet(100, 2.0, 200, M);
        let mut s = DirStats::new(&e, 0, 2);
        s.on_data(0.0, 100, 100, M, M, None);
        s.on_peer_ack(0.2, 100);
        s.on_data(2.0, 100, 200, 100, 150, Some(0.2)); // 100 unacked + 100 > 150: rwnd
        s.on_data(3.0, 100, 300, 100, 150, Some(0.2));
        s.finish();
        assert_eq!(s.sums, [0.0, 1.0, 2.0]);
        assert_eq!(s.initial_window(), Some((100, 1)));
    }

    #[test]
    fn no_data_no_rows_and_bad_lengths() {
        let r = Rows {
            g: &[1],
            len: &[0],
            time: &[0.0],
            dend: &[0],
            new_ack: &[true],
            ack: &[5],
            win: &[9],
            hi_dend: &[0],
            r_hi_ack: &[M],
            r_win: &[M],
            est_rows: &[],
            est_srtt: &[],
        };
        assert!(flow_stats(&r, 7).unwrap().key.is_empty());
        let bad = Rows { len: &[], ..r };
        assert!(flow_stats(&bad, 7).is_err());
        let bad = Rows {
            est_rows: &[1],
            est_srtt: &[0.1],
            ..r
        };
        assert!(flow_stats(&bad, 7).unwrap_err().contains("row 1"));
    }
}
