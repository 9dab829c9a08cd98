//! A data direction's held rows as the cwnd estimate reads them, without writing them out as
//! columns: [`Window`] for the loss rules (`episodes::find`, the Finder's `Seen`) and [`Rows`]
//! for the pipe (`DirPipe::input`'s values), both over `DirRows` and its sparse SACK columns;
//! shared by the batch's run (`cwndrun`) and the live run (`cwndgo`).

use crate::state::cwnd::episodes::{Episode, RowsAt, SackedAt, Seen};
use crate::state::cwnd::estimate::{search_left, search_right};
use crate::state::cwnd::rows::{Acked, DirRows};
use crate::state::cwnd::stretch::Input;
use crate::state::cwnd::{RowIn, SackInfo, DUP, EPOCH, NEW_ACK, SEG, TIMEOUT};

/// `(rows, values)` sorted by row, a repeated row keeping its last value (a stable sort).
pub fn last_of_each((rows, vals): (Vec<i64>, Vec<i64>)) -> (Vec<i64>, Vec<i64>) {
    if rows.windows(2).all(|w| w[0] < w[1]) {
        return (rows, vals);
    }
    let mut k: Vec<(i64, i64)> = rows.into_iter().zip(vals).collect();
    k.sort_by_key(|x| x.0);
    let mut out: (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for (j, &(r, v)) in k.iter().enumerate() {
        if k.get(j + 1).is_none_or(|x| x.0 != r) {
            out.0.push(r);
            out.1.push(v);
        }
    }
    out
}

/// A direction's held rows with their SACK column, as the loss rules read them
/// (`episodes::find`, the Finder's `Seen`): `done`, every row and ACK of the direction is in,
/// else an answer that rows or ACKs still to come could change waits (a live run, `cwndgo`).
pub struct Window<'a> {
    pub b: &'a DirRows,
    pub sack: &'a SackCols,
    pub done: bool,
}

impl Window<'_> {
    /// A search over the rows held: final when it stops inside them.
    fn found(&self, k: usize) -> Option<usize> {
        (k < self.b.times().len() || self.done).then_some(self.b.base() + k)
    }

    fn sacked_at(&self, i: usize) -> i64 {
        match self.sack.0.binary_search(&(i as i64)) {
            Ok(k) => self.sack.1[k],
            Err(_) => 0,
        }
    }
}

impl RowsAt for Window<'_> {
    fn time(&self, i: usize) -> f64 {
        self.b.sent(i).0
    }
    fn seq_end(&self, i: usize) -> i64 {
        self.b.sent(i).1
    }
    fn pay(&self, i: usize) -> i64 {
        self.b.sent(i).2
    }
    fn una(&self, i: usize) -> i64 {
        self.b.acked(i).una
    }
}

impl SackedAt for Window<'_> {
    fn sacked(&self, i: usize) -> i64 {
        self.sacked_at(i)
    }
}

impl Seen for Window<'_> {
    fn sacked(&self, i: usize) -> i64 {
        self.sacked_at(i)
    }
    fn ack_end(&self, rp: i64) -> Option<f64> {
        let (t, u) = self.b.acks();
        let k = u.partition_point(|&y| y < rp);
        match t.get(k) {
            Some(&x) => Some(x),
            None => self.done.then_some(f64::INFINITY),
        }
    }
    fn row_from(&self, t: f64) -> Option<usize> {
        self.found(search_left(self.b.times(), t))
    }
    fn row_after(&self, t: f64) -> Option<usize> {
        self.found(search_right(self.b.times(), t))
    }
}

/// The place of row `i` in `rows` (ascending), from `k` on (rows read in ascending order, a row
/// possibly twice: `k` never passes `i`).
fn seek(rows: &[i64], k: &mut usize, i: usize) -> Option<usize> {
    while rows.get(*k).is_some_and(|&r| r < i as i64) {
        *k += 1;
    }
    (rows.get(*k) == Some(&(i as i64))).then_some(*k)
}

/// The rows with SACKed bytes above una (ascending, each once): row, bytes, flight place.
pub type SackCols = (Vec<i64>, Vec<i64>, Vec<i64>);
/// The rows whose segments get SACKed (ascending, each once) and from which flight place on.
pub type SegCols = (Vec<i64>, Vec<i64>);

/// A direction's rows as the pipe takes them (`DirPipe::input`'s values): the duplicate- and
/// new-ACK marks, the events' marks (`estimate::pipe_of`), the SACK columns.
pub struct Rows<'a> {
    b: &'a DirRows,
    sack: &'a SackCols,
    seg: &'a SegCols,
    /// The events' marks by row (ascending, each row once).
    marks: Vec<(usize, u8)>,
    /// Whether the SACK places are read (the frames read them when some direction of the batch
    /// gets segments SACKed; a direction none of whose segments does reads the same either way:
    /// with no segment in its scoreboard, `Pipe::on_row` takes the SACKed bytes as they are).
    info: bool,
    km: usize,
    ks: usize,
    ka: usize,
}

/// The pipe's marks of events `eps` and of an event that has started but not settled (`open`:
/// its first row and timer mark) (each one's first row starts an epoch and a filter segment, a
/// timeout's marked so) and of the filter segments at `ends` (rows), by row, each row once.
pub fn marks_of(
    eps: &[Episode],
    open: Option<(usize, bool)>,
    ends: impl Iterator<Item = usize>,
) -> Vec<(usize, u8)> {
    let mut marks: Vec<(usize, u8)> = Vec::with_capacity(2 * eps.len() + 1);
    let first = |i: usize, to: bool| (i, EPOCH | SEG | if to { TIMEOUT } else { 0 });
    marks.extend(eps.iter().map(|e| first(e.i, e.to)));
    marks.extend(open.map(|(i, to)| first(i, to)));
    marks.extend(ends.map(|j| (j, SEG)));
    marks.sort_by_key(|m| m.0);
    marks.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 |= b.1;
        }
        same
    });
    marks
}

impl<'a> Rows<'a> {
    /// Rows `b` with their SACK columns and the pipe's marks ([`marks_of`]); the sparse columns
    /// are read from their first entry (rows read in ascending order from there).
    pub fn new(
        b: &'a DirRows,
        (sack, seg): (&'a SackCols, &'a SegCols),
        marks: Vec<(usize, u8)>,
        info: bool,
    ) -> Self {
        Rows {
            b,
            sack,
            seg,
            marks,
            info,
            km: 0,
            ks: 0,
            ka: 0,
        }
    }

    /// The duplicate- and new-ACK marks of row `i`. (The frames give a direction's first row
    /// the previous direction's new-ACK mark, but the first row reads none of it: it starts a
    /// burst and a filter segment anyway, `Pipe::on_row`, and `at_sender` skips it.)
    pub fn ack_marks(b: &DirRows, i: usize) -> (u8, Acked) {
        let a = b.acked(i);
        (
            if a.dup { DUP } else { 0 } | if a.new_ack { NEW_ACK } else { 0 },
            a,
        )
    }
}

impl Input for Rows<'_> {
    fn input(&mut self, i: usize) -> RowIn {
        let (time, seq_end, len) = self.b.sent(i);
        let (mut m, a) = Rows::ack_marks(self.b, i);
        while self.marks.get(self.km).is_some_and(|x| x.0 < i) {
            self.km += 1;
        }
        if let Some(x) = self.marks.get(self.km).filter(|x| x.0 == i) {
            m |= x.1;
        }
        let (sack, seg) = (self.sack, self.seg);
        let s = seek(&sack.0, &mut self.ks, i);
        let sk = if self.info {
            SackInfo {
                len,
                pos: s.map_or(-1, |k| sack.2[k]),
                at: seek(&seg.0, &mut self.ka, i).map_or(-1, |k| seg.1[k]),
            }
        } else {
            SackInfo {
                len,
                ..SackInfo::NONE
            }
        };
        RowIn {
            time,
            seq_end,
            una: a.una,
            sacked: s.map_or(0, |k| sack.1[k]),
            sk,
            marks: m,
            ack_t: a.ack_t,
        }
    }
}
