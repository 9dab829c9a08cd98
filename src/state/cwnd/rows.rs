//! The cwnd estimate's input rows of one data direction, built one packet at a time in capture
//! order ([`DirRows`]: `tracekit.analysis._cwnd_rows.Rows`' columns for that direction).
//!
//! The frames path feeds it from the packet columns (`rows_frames`); a stream would feed it the
//! same way, each data segment with what the retransmission and flight steps said of it.

use super::acks::Acks;
use crate::state::seq::MISSING;

/// What the other analyses say of one data segment ([`DirRows::on_data`]).
#[derive(Debug, Clone, Copy)]
pub struct Marks {
    /// The retransmission analysis names it a retransmission.
    pub named: bool,
    /// The retransmission timer sent it (`tracekit.analysis.retrans.timeout_resends`: the first
    /// re-send of each `rto` episode, RFC 6298 §5).
    pub timeout: bool,
    /// SACKed bytes above una as the flight analysis measured them (RFC 6675 "pipe"): unacked −
    /// pipe (`flight_bytes` is Wireshark's figure, which already subtracts the latest ACK's SACK
    /// blocks); 0: none, or the flight frame has no row.
    pub sacked: i64,
    /// Its row in the flight frame (read with `sacked` only).
    pub pos: i64,
    /// From which flight row on its segment counts as SACKed (-1: never, or unknown;
    /// `tracekit.analysis.flight.flight_and_sacks`).
    pub at: i64,
}

impl Marks {
    /// A segment no other analysis says anything of.
    pub const NONE: Marks = Marks {
        named: false,
        timeout: false,
        sacked: 0,
        pos: -1,
        at: -1,
    };
}

/// What the ACKs fed before a row say of it ([`DirRows::acked`]): snd_una, sent on a duplicate
/// ACK, released by a new latest ACK (the first row: any ACK before it), and when the latest
/// ACK arrived (NaN: none).
#[derive(Debug, Clone, Copy)]
pub struct Acked {
    pub una: i64,
    pub dup: bool,
    pub new_ack: bool,
    pub ack_t: f64,
}

/// The rows' columns ([`DirRows`] appends to them; rows of several directions may share one).
/// Per data segment its time, end, payload, snd_una, whether a duplicate ACK sent it, whether a
/// new ACK released it and when the latest ACK before it arrived; the SACK marks and the
/// retransmissions of its rows (rows numbered in these columns).
#[derive(Default)]
#[cfg_attr(test, derive(Clone))]
pub struct RowCols {
    pub time: Vec<f64>,
    pub seq_end: Vec<i64>,
    pub pay: Vec<i64>,
    pub una: Vec<i64>,
    pub dup: Vec<bool>,
    pub new_ack: Vec<bool>,
    pub ack_t: Vec<f64>,
    /// Rows with SACKed bytes above una: row, bytes, flight row.
    pub sack: (Vec<i64>, Vec<i64>, Vec<i64>),
    /// Rows whose segments get SACKed: row, from which flight row on.
    pub seg: (Vec<i64>, Vec<i64>),
    /// Retransmitted rows: row, the highest byte sent before it, the timer sent it.
    pub retx: (Vec<i64>, Vec<i64>, Vec<bool>),
}

impl RowCols {
    /// Room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        RowCols {
            time: Vec::with_capacity(rows),
            seq_end: Vec::with_capacity(rows),
            pay: Vec::with_capacity(rows),
            una: Vec::with_capacity(rows),
            dup: Vec::with_capacity(rows),
            new_ack: Vec::with_capacity(rows),
            ack_t: Vec::with_capacity(rows),
            ..RowCols::default()
        }
    }
}

/// One data direction's row builder: fed its data segments and the ACKs reaching its sender in
/// capture order, it appends the direction's rows to a [`RowCols`] (contiguous: nothing else may
/// append rows between its first row and [`DirRows::finish`], which writes them).
///
/// Memory: 24 B per data segment until [`DirRows::finish`] (its time, end, payload and how many
/// ACKs came before it: snd_una, the duplicate-ACK mark, the new-ACK mark and the latest ACK's
/// time are read off the ACKs then), 16 B per ACK (in [`Acks`], plus 16 B per first
/// transmission until an ACK covers it), 24 B per row with SACKed bytes, 17 B per
/// retransmission, 16 B per row whose segment gets SACKed; about 200 B per direction. The
/// seven row columns take 42 B per data segment from `finish` on.
#[derive(Default)]
#[cfg_attr(test, derive(Clone))]
pub struct DirRows {
    acks: Acks,
    /// Its first row in the columns, and its rows so far.
    lo: usize,
    n: usize,
    /// Rows sent before any ACK reached the sender (a prefix of the rows).
    pre: usize,
    /// Per row: its time, end (seq + payload), payload and the ACKs fed before it.
    time: Vec<f64>,
    end: Vec<i64>,
    pay: Vec<u32>,
    fed: Vec<u32>,
    /// The lowest data byte (the first row's start unless a segment starts lower).
    first_seq: Option<i64>,
    /// A stream's window ([`DirRows::drop_before`]): rows dropped from the front of the row
    /// vectors, the ACKs fed before the last of them, and the lowest data byte of the whole
    /// direction when it is known ahead (`set_low`: it is read instead of `first_seq`).
    base: usize,
    prev_fed: u32,
    low: Option<i64>,
    /// The largest payload (the segment size when no MSS is known).
    pub max_pay: i64,
    /// SYNs the direction sent, and when the last of them left.
    pub syns: u32,
    pub syn_t: f64,
}

impl DirRows {
    /// A direction whose rows start at row `lo` of its columns.
    pub fn new(lo: usize) -> Self {
        DirRows {
            lo,
            syn_t: f64::NEG_INFINITY,
            ..DirRows::default()
        }
    }

    /// Its rows start at row `lo` of its columns (before its first row).
    pub fn set_start(&mut self, lo: usize) {
        self.lo = lo;
    }

    /// An ACK that reaches the direction's sender: its time and cumulative ACK number.
    pub fn on_ack(&mut self, time: f64, ack: i64) {
        self.acks.on_ack(time, ack);
    }

    /// A SYN of the direction (a retransmitted SYN is a loss: cwnd starts at 1 segment and
    /// ssthresh at 2, RFC 5681 §3.1).
    pub fn on_syn(&mut self, time: f64) {
        self.syns += 1;
        // (numpy's maximum: a NaN time stays)
        self.syn_t = if time.is_nan() || self.syn_t.is_nan() {
            f64::NAN
        } else {
            self.syn_t.max(time)
        };
    }

    /// Room for `n` more rows.
    pub fn reserve(&mut self, n: usize) {
        self.time.reserve_exact(n);
        self.end.reserve_exact(n);
        self.pay.reserve_exact(n);
        self.fed.reserve_exact(n);
    }

    /// A data segment (payload > 0): its time, first byte, payload and the other analyses' marks.
    pub fn on_data(&mut self, out: &mut RowCols, time: f64, seq: i64, pay: i64, m: Marks) {
        let row = self.lo + self.n;
        let end = seq.wrapping_add(pay);
        let fed = self.acks.fed();
        if fed == 0 {
            self.pre = self.n + 1;
        }
        // snd_una (RFC 793 §3.3) and sent on a duplicate ACK (RFC 5681 §2, RFC 3042 limited
        // transmit) are the ACKs' as of `fed` ([`DirRows::finish`]); a retransmission and
        // Karn's RTT samples (RFC 6298 §3): see [`Acks`]
        let (_, _, retx) = self.acks.on_data(time, seq, end, m.named);
        let r = row as i64;
        // the highest byte sent before a retransmission is its loss event's recovery point
        // (RFC 6582 "recover"); the timer's re-sends always start one (RFC 6298 §5)
        if let Some(hi) = retx {
            out.retx.0.push(r);
            out.retx.1.push(hi);
            out.retx.2.push(m.timeout);
        }
        // SACKed bytes above una (RFC 6675 "pipe"), and from when this segment counts as SACKed
        // (RFC 6675 §2: the pipe counts octets between HighACK and HighData)
        if m.sacked != 0 {
            out.sack.0.push(r);
            out.sack.1.push(m.sacked);
            out.sack.2.push(m.pos);
        }
        if m.at >= 0 {
            out.seg.0.push(r);
            out.seg.1.push(m.at);
        }
        self.first_seq = Some(self.first_seq.map_or(seq, |s| s.min(seq)));
        self.max_pay = self.max_pay.max(pay);
        self.time.push(time);
        self.end.push(end);
        // (a payload is a u32 column: the frames' `payload`, the stream's IP lengths)
        self.pay.push(u32::try_from(pay).unwrap_or(u32::MAX));
        self.fed.push(u32::try_from(fed).unwrap_or(u32::MAX));
        self.n += 1;
    }

    /// Its first row in the columns.
    pub fn start(&self) -> usize {
        self.lo
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.n
    }

    /// No rows yet.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// ACKs fed so far.
    pub fn acks_fed(&self) -> usize {
        self.acks.fed()
    }

    /// Did an ACK reach the sender before the first row / before the last row?
    pub fn acked_first(&self) -> bool {
        self.pre == 0 && !self.is_empty()
    }

    pub fn acked_last(&self) -> bool {
        self.pre < self.len()
    }

    /// What the ACKs fed before row `i` (below [`DirRows::len`]) say of it, as
    /// [`DirRows::finish`] writes it (see there).
    pub fn acked(&self, i: usize) -> Acked {
        let (at, au, ab) = (&self.acks.a_time, &self.acks.a_una, self.acks.base);
        let j = i - self.base;
        let fed = self.fed[j] as usize;
        let new_ack = match (i, j) {
            (0, _) => fed > 0,
            (_, 0) => fed != self.prev_fed as usize,
            _ => fed != self.fed[j - 1] as usize,
        };
        // (ACK `k` counted from the first fed; a window keeps those from `base` on)
        let ack = |k: usize| k.checked_sub(ab).and_then(|k| au.get(k).copied());
        let latest = fed.checked_sub(1).and_then(ack);
        let ack_t = match fed {
            0 => f64::NAN,
            k => (k - 1)
                .checked_sub(ab)
                .and_then(|k| at.get(k).copied())
                .unwrap_or(f64::NAN),
        };
        // (`Acks::on_ack`: the latest ACK advanced snd_una)
        let before = fed.checked_sub(2).and_then(ack);
        let new = latest.is_some_and(|u| u > before.unwrap_or(MISSING));
        let first = self.low.or(self.first_seq).unwrap_or(0);
        Acked {
            una: if i < self.pre {
                first
            } else {
                latest.unwrap_or(0).max(first)
            },
            dup: latest.is_some() && !new,
            new_ack,
            ack_t,
        }
    }

    /// Row `i`'s time, end (seq + payload) and payload (below [`DirRows::len`], not dropped).
    pub fn sent(&self, i: usize) -> (f64, i64, i64) {
        let j = i - self.base;
        (self.time[j], self.end[j], i64::from(self.pay[j]))
    }

    /// The first row not dropped ([`DirRows::drop_before`]).
    pub fn base(&self) -> usize {
        self.base
    }

    /// The direction's lowest data byte, known ahead (pass 1 of the streamed summary): snd_una
    /// of the rows before the first ACK, and at least that of every row ([`DirRows::acked`]).
    pub fn set_low(&mut self, low: Option<i64>) {
        self.low = low;
    }

    /// Drops the rows before row `k` (a stream that has run the estimate up to it) and the ACKs
    /// no later row reads ([`DirRows::acked`] reads the two latest before a row).
    pub fn drop_before(&mut self, k: usize) {
        let d = k.saturating_sub(self.base).min(self.time.len());
        if d == 0 {
            return;
        }
        self.prev_fed = self.fed[d - 1];
        self.time.drain(..d);
        self.end.drain(..d);
        self.pay.drain(..d);
        self.fed.drain(..d);
        self.base += d;
        let keep = self.fed.first().map_or(self.acks.fed(), |&f| f as usize);
        self.acks.drop_before(keep.saturating_sub(2));
    }

    /// The lowest data byte (None: no row).
    pub fn lowest(&self) -> Option<i64> {
        self.first_seq
    }

    /// The rows' times, in order (from [`DirRows::base`] on).
    pub fn times(&self) -> &[f64] {
        &self.time
    }

    /// The ACKs fed: their times and cumulative values (those no row reads dropped).
    pub fn acks(&self) -> (&[f64], &[i64]) {
        (&self.acks.a_time, &self.acks.a_una)
    }

    /// The minimum RTT (`strict`: see [`Acks::min_rtt`]).
    pub fn min_rtt(&self, strict: bool) -> f64 {
        self.acks.min_rtt(strict)
    }

    /// Writes the rows to `out` (at its end: row `lo` on) and returns the ACK stream's times and
    /// cumulative values and the minimum RTT (`strict`: see [`Acks::min_rtt`]). Per row, from
    /// the ACKs fed before it: snd_una, the latest cumulative ACK (RFC 793 §3.3: an old ACK
    /// never lowers it), at least the direction's first data byte (the rows before any ACK take
    /// that byte); sent on a duplicate ACK, one that did not advance snd_una (RFC 5681 §2); the
    /// segments one ACK releases, a new latest ACK (the first row: any ACK before it); and when
    /// the latest ACK arrived.
    pub fn finish(&mut self, out: &mut RowCols, strict: bool) -> (Vec<f64>, Vec<i64>, f64) {
        let n = self.n;
        out.una.reserve(n);
        out.dup.reserve(n);
        out.new_ack.reserve(n);
        out.ack_t.reserve(n);
        for i in 0..n {
            let a = self.acked(i);
            out.new_ack.push(a.new_ack);
            out.ack_t.push(a.ack_t);
            out.dup.push(a.dup);
            out.una.push(a.una);
        }
        // (moved whole where the columns hold no other direction's rows)
        if out.time.is_empty() {
            std::mem::swap(&mut out.time, &mut self.time);
        }
        out.time.append(&mut self.time);
        if out.seq_end.is_empty() {
            std::mem::swap(&mut out.seq_end, &mut self.end);
        }
        out.seq_end.append(&mut self.end);
        out.pay.extend(self.pay.iter().map(|&p| i64::from(p)));
        (self.pay, self.fed) = (Vec::new(), Vec::new());
        let mr = self.acks.min_rtt(strict);
        let acks = std::mem::take(&mut self.acks);
        (acks.a_time, acks.a_una, mr)
    }
}
