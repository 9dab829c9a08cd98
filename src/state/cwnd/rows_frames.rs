//! The frames path's driver of [`DirRows`]: the packet columns grouped by data direction, each
//! direction's data segments and the ACKs reaching its sender fed in capture order (time, then
//! frame), with what the retransmission and flight frames say of each segment (found by
//! `(flow, dir, frame)`). `tracekit._core.cwnd_rows`; its result is
//! `tracekit.analysis._cwnd_rows.Rows`' columns.

use super::rows::{DirRows, Marks, RowCols};
use super::same_len;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Packet kind bits (`kind`): TCP with a flow and a direction, payload > 0 with a sequence
/// number, an ACK (an ACK number and the ACK flag; a trace without flags is taken to set it),
/// SYN.
pub const TCP: u8 = 1;
pub const DATA: u8 = 2;
pub const ACK: u8 = 4;
pub const SYN: u8 = 8;

/// The packet columns the rows read (nulls filled; `kind` says which are set).
pub struct Packets<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub kind: &'a [u8],
    pub time: &'a [f64],
    pub frame: &'a [u64],
    pub seq: &'a [i64],
    pub ack: &'a [i64],
    pub payload: &'a [u32],
}

/// Rows of another analysis' frame, by `(flow, dir, frame)` (`ok`: the key has no null; empty:
/// all have none).
pub struct Keys<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub frame: &'a [u64],
    pub ok: &'a [bool],
}

/// The frames of the other analyses: the flight frame's SACKed bytes (`sacked`, per flight row;
/// empty: none) and from which flight row on each segment counts as SACKed (`at`; empty:
/// unknown), the retransmissions and the re-sends the retransmission timer sent.
pub struct Frames<'a> {
    pub flight: Keys<'a>,
    pub sacked: &'a [i64],
    pub at: &'a [i64],
    pub retrans: Keys<'a>,
    pub timeouts: Keys<'a>,
}

/// Each direction's rows, in `(flow, dir)` order, with its segment size (`mss`: NaN where none
/// is known: the largest payload then).
pub struct Built {
    pub cols: RowCols,
    pub rows: Vec<DirRows>,
    pub acks: Vec<(Vec<f64>, Vec<i64>)>,
    pub min_rtt: Vec<f64>,
    pub mss: Vec<f64>,
}

/// Numbers each packet's data direction: `(flow, dir)` among `dirs` (sorted, distinct).
struct Codes<'a> {
    flow: &'a [u32],
    dir: &'a [i8],
    /// Per flow id: its directions' range, and its directions 0 and 1 (u32::MAX: none).
    start: Vec<u32>,
    two: Vec<[u32; 2]>,
}

impl<'a> Codes<'a> {
    fn new(flow: &'a [u32], dir: &'a [i8]) -> Result<Self, String> {
        let keys = flow.iter().zip(dir);
        if keys.clone().zip(keys.skip(1)).any(|(a, b)| a >= b) {
            return Err("data directions not sorted by (flow, dir), or repeated".into());
        }
        let top = flow.last().map_or(0, |&f| f as usize + 1);
        let mut start = vec![0u32; top + 1];
        let mut two = vec![[u32::MAX; 2]; top];
        for (d, (&f, &r)) in flow.iter().zip(dir).enumerate() {
            start[f as usize + 1] += 1;
            if let Some(slot) = usize::try_from(r)
                .ok()
                .and_then(|r| two[f as usize].get_mut(r))
            {
                *slot = d as u32;
            }
        }
        for k in 1..start.len() {
            start[k] += start[k - 1];
        }
        Ok(Codes {
            flow,
            dir,
            start,
            two,
        })
    }

    fn of(&self, flow: u32, dir: i8) -> Option<usize> {
        let f = flow as usize;
        if let (Ok(r @ 0..=1), Some(t)) = (usize::try_from(dir), self.two.get(f)) {
            return (t[r] != u32::MAX).then_some(t[r] as usize);
        }
        let (a, b) = (*self.start.get(f)?, *self.start.get(f + 1)?);
        (a as usize..b as usize).find(|&d| self.dir[d] == dir && self.flow[d] == flow)
    }
}

/// Capture order: time (NaN last, as numpy sorts), then frame.
fn capture(p: &Packets, a: usize, b: usize) -> Ordering {
    let (x, y) = (p.time[a], p.time[b]);
    let t = match (x.is_nan(), y.is_nan()) {
        (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (nx, ny) => nx.cmp(&ny),
    };
    // (then the packet's place: a stable sort, and rows of one frame number in packet order)
    t.then(p.frame[a].cmp(&p.frame[b])).then(a.cmp(&b))
}

/// The data direction of packet `i` (`Some`: its own, for data and SYNs) and of the ACK it carries
/// (an ACK travels the other way: it belongs to direction `1 - dir`; Int8 arithmetic as in polars).
fn codes(p: &Packets, c: &Codes, i: usize) -> (Option<usize>, Option<usize>) {
    let k = p.kind[i];
    if k & TCP == 0 {
        return (None, None);
    }
    let own = if k & (DATA | SYN) != 0 {
        c.of(p.flow[i], p.dir[i])
    } else {
        None
    };
    let back = if k & ACK != 0 {
        c.of(p.flow[i], 1i8.wrapping_sub(p.dir[i]))
    } else {
        None
    };
    (own, back)
}

/// The packets of each direction (data, then ACKs reaching its sender), each in capture order,
/// and the SYNs fed to `rows`.
fn group(p: &Packets, c: &Codes, rows: &mut [DirRows]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let nd = rows.len();
    let (mut data, mut acks) = (vec![Vec::new(); nd], vec![Vec::new(); nd]);
    for i in 0..p.kind.len() {
        let (own, back) = codes(p, c, i);
        if let Some(d) = own {
            if p.kind[i] & DATA != 0 {
                data[d].push(i as u32);
            }
            if p.kind[i] & SYN != 0 {
                rows[d].on_syn(p.time[i]);
            }
        }
        if let Some(d) = back {
            acks[d].push(i as u32);
        }
    }
    let sort = |v: &mut Vec<u32>| {
        if v.windows(2)
            .any(|w| capture(p, w[0] as usize, w[1] as usize).is_gt())
        {
            v.sort_by(|&a, &b| capture(p, a as usize, b as usize));
        }
    };
    data.par_iter_mut()
        .chain(acks.par_iter_mut())
        .for_each(sort);
    (data, acks)
}

/// Finds data rows by `(flow, dir, frame)`: by the frame's place when frame numbers strictly
/// increase, else by a search over the sorted keys (frames repeat or go back: merged traces).
struct Finder<'a> {
    p: &'a Packets<'a>,
    /// Per packet: its row (u32::MAX: not a data row).
    row_of: Vec<u32>,
    /// Data rows by key, when frames do not increase.
    sorted: Vec<(u32, i8, u64, u32)>,
    consecutive: bool,
}

impl<'a> Finder<'a> {
    fn new(p: &'a Packets<'a>, data: &[Vec<u32>]) -> Self {
        let n = p.frame.len();
        let mut row_of = vec![u32::MAX; n];
        for (row, &i) in data.iter().flatten().enumerate() {
            row_of[i as usize] = row as u32;
        }
        let up = p.frame.windows(2).all(|w| w[0] < w[1]);
        let mut sorted = Vec::new();
        if !up {
            sorted = data
                .iter()
                .flatten()
                .map(|&i| {
                    let i = i as usize;
                    (p.flow[i], p.dir[i], p.frame[i], row_of[i])
                })
                .collect();
            sorted.sort_unstable();
            row_of = Vec::new();
        }
        let consecutive = up && n > 0 && p.frame[n - 1] - p.frame[0] == n as u64 - 1;
        Finder {
            p,
            row_of,
            sorted,
            consecutive,
        }
    }

    /// Calls `f(k, row)` for every data row with the key of `keys`' row `k`, `k` ascending.
    fn each(&self, keys: &Keys, mut f: impl FnMut(usize, usize)) -> Result<(), String> {
        let n = keys.frame.len();
        same_len(n, &[("flow", keys.flow.len()), ("dir", keys.dir.len())])?;
        if !keys.ok.is_empty() {
            same_len(n, &[("ok", keys.ok.len())])?;
        }
        let fr = self.p.frame;
        for k in 0..n {
            if !keys.ok.is_empty() && !keys.ok[k] {
                continue;
            }
            let (qf, qd, q) = (keys.flow[k], keys.dir[k], keys.frame[k]);
            if self.row_of.is_empty() {
                let a = self
                    .sorted
                    .partition_point(|x| (x.0, x.1, x.2) < (qf, qd, q));
                for x in self.sorted[a..]
                    .iter()
                    .take_while(|x| (x.0, x.1, x.2) == (qf, qd, q))
                {
                    f(k, x.3 as usize);
                }
                continue;
            }
            let r = if self.consecutive {
                q.checked_sub(fr[0])
                    .filter(|&r| r < fr.len() as u64)
                    .map(|r| r as usize)
            } else {
                fr.binary_search(&q).ok()
            };
            if let Some(r) = r {
                let row = self.row_of[r];
                if row != u32::MAX && self.p.flow[r] == qf && self.p.dir[r] == qd {
                    f(k, row as usize);
                }
            }
        }
        Ok(())
    }
}

/// What the other analyses' frames say of every data row (rows numbered over all directions):
/// flags ([`NAMED`], [`TIMER`]) per row; per direction `(row, SACKed bytes, flight row)` and
/// `(row, SACKed from)` sorted by row, one per row.
struct RowMarks {
    flags: Vec<u8>,
    sack: Vec<Vec<(usize, i64, i64)>>,
    seg: Vec<Vec<(usize, i64)>>,
}

const NAMED: u8 = 1;
const TIMER: u8 = 2;

/// Sorts `v` by row (stable: already sorted unless the direction's rows were reordered by time)
/// and keeps one entry per row: the first (`last`: the last).
fn by_row<T: Copy>(v: &mut Vec<T>, row: impl Fn(&T) -> usize, last: bool) {
    if v.windows(2).all(|w| row(&w[0]) < row(&w[1])) {
        return;
    }
    if last {
        v.reverse();
    }
    v.sort_by_key(&row);
    v.dedup_by_key(|x| row(x));
}

fn marks(f: &Finder, fr: &Frames, lo: &[usize], rows: usize) -> Result<RowMarks, String> {
    let mut flags = vec![0u8; rows];
    f.each(&fr.retrans, |_, r| flags[r] |= NAMED)?;
    f.each(&fr.timeouts, |_, r| flags[r] |= TIMER)?;
    let nf = fr.flight.frame.len();
    let dir_of = |r: usize| lo.partition_point(|&l| l <= r).saturating_sub(1);
    let (mut sack, mut seg) = (vec![Vec::new(); lo.len()], vec![Vec::new(); lo.len()]);
    if nf > 0 && !fr.sacked.is_empty() {
        same_len(nf, &[("sacked", fr.sacked.len())])?;
        // (a flight key repeats only where frame numbers do: zero values wait for the dedup)
        let unique = !f.row_of.is_empty();
        f.each(&fr.flight, |k, r| {
            if !unique || fr.sacked[k] != 0 {
                sack[dir_of(r)].push((r, fr.sacked[k], k as i64));
            }
        })?;
    }
    // (the SACK places only when the flight frame's rows have them all)
    if nf > 0 && fr.at.len() == nf {
        f.each(&fr.flight, |k, r| {
            if fr.at[k] >= 0 {
                seg[dir_of(r)].push((r, fr.at[k]));
            }
        })?;
    }
    // a key repeated in the flight frame: its first row for the SACKed bytes (the join kept any
    // one), its last for where it counts as SACKed (the scatter kept the last)
    for v in &mut sack {
        by_row(v, |x| x.0, false);
        v.retain(|x| x.1 != 0);
    }
    seg.iter_mut().for_each(|v| by_row(v, |x| x.0, true));
    Ok(RowMarks { flags, sack, seg })
}

/// Feeds direction `d`'s rows (`data`) and the ACKs reaching its sender, merged in capture
/// order, to `b`, its rows appended to `out`; returns [`DirRows::finish`]'s ACK columns and
/// minimum RTT.
fn feed(
    p: &Packets,
    (b, out): (&mut DirRows, &mut RowCols),
    (data, acks): (&[u32], &[u32]),
    m: &RowMarks,
    d: usize,
    strict: bool,
) -> AckCols {
    let lo = out.time.len();
    b.reserve(data.len());
    let (sack, seg) = (&m.sack[d], &m.seg[d]);
    let (mut si, mut gi, mut fed) = (0, 0, 0);
    for (k, &i) in data.iter().enumerate() {
        let i = i as usize;
        // the ACKs before the segment in capture order (an ACK at the same instant comes
        // first when its frame is lower) reach the sender before it is sent
        while let Some(&a) = acks
            .get(fed)
            .filter(|&&a| capture(p, a as usize, i).is_lt())
        {
            b.on_ack(p.time[a as usize], p.ack[a as usize]);
            fed += 1;
        }
        let row = lo + k;
        let f = m.flags[row];
        let mut mk = Marks {
            named: f & NAMED != 0,
            timeout: f & TIMER != 0,
            ..Marks::NONE
        };
        if let Some(&(_, v, pos)) = sack.get(si).filter(|x| x.0 == row) {
            (mk.sacked, mk.pos) = (v, pos);
            si += 1;
        }
        if let Some(&(_, at)) = seg.get(gi).filter(|x| x.0 == row) {
            mk.at = at;
            gi += 1;
        }
        b.on_data(out, p.time[i], p.seq[i], i64::from(p.payload[i]), mk);
    }
    for &a in &acks[fed..] {
        b.on_ack(p.time[a as usize], p.ack[a as usize]);
    }
    b.finish(out, strict)
}

/// One direction's ACK times, cumulative ACKs and minimum RTT.
type AckCols = (Vec<f64>, Vec<i64>, f64);

/// Every data direction's rows (`dirs`: `(flow, dir)` sorted, the MSS and whether it is unknown);
/// None when the packets hold no data segment of them or no ACK reaching them.
pub fn build(
    p: &Packets,
    dirs: (&[u32], &[i8], &[f64], &[bool]),
    fr: &Frames,
) -> Result<Option<Built>, String> {
    let n = p.kind.len();
    let cols = [
        ("flow", p.flow.len()),
        ("dir", p.dir.len()),
        ("time", p.time.len()),
        ("frame", p.frame.len()),
        ("seq", p.seq.len()),
        ("ack", p.ack.len()),
        ("payload", p.payload.len()),
    ];
    same_len(n, &cols)?;
    let nd = dirs.0.len();
    same_len(
        nd,
        &[
            ("dir", dirs.1.len()),
            ("mss", dirs.2.len()),
            ("unknown", dirs.3.len()),
        ],
    )?;
    let c = Codes::new(dirs.0, dirs.1)?;
    let mut rows: Vec<DirRows> = (0..nd).map(|_| DirRows::new(0)).collect();
    let (data, acks) = group(p, &c, &mut rows);
    let total: usize = data.iter().map(Vec::len).sum();
    if total == 0 || acks.iter().all(Vec::is_empty) {
        return Ok(None);
    }
    let lo: Vec<usize> = data
        .iter()
        .scan(0, |at, d| {
            let a = *at;
            *at += d.len();
            Some(a)
        })
        .collect();
    let m = marks(&Finder::new(p, &data), fr, &lo, total)?;
    // many directions were searched on one axis, where a NaN or infinite RTT gave none
    let strict = nd > 64;
    let mut cols = RowCols::with_capacity(total);
    let mut per = Vec::with_capacity(nd);
    for (d, b) in rows.iter_mut().enumerate() {
        b.set_start(cols.time.len());
        per.push(feed(p, (b, &mut cols), (&data[d], &acks[d]), &m, d, strict));
    }
    drop((data, acks, m));
    // the first row of each direction compares its latest ACK with the previous direction's
    // last row (the rows were one array): it is new unless neither had an ACK before it
    let mut prev: Option<bool> = None;
    for b in rows.iter().filter(|b| !b.is_empty()) {
        let first = prev.is_none_or(|last| last || b.acked_first());
        if let Some(slot) = cols.new_ack.get_mut(b.start()) {
            *slot = first;
        }
        prev = Some(b.acked_last());
    }
    let mss = rows
        .iter()
        .zip(dirs.2.iter().zip(dirs.3))
        .map(|(b, (&m, &unknown))| if unknown { b.max_pay as f64 } else { m })
        .collect();
    let (mut acks_out, mut min_rtt) = (Vec::with_capacity(nd), Vec::with_capacity(nd));
    for (t, u, mr) in per {
        acks_out.push((t, u));
        min_rtt.push(mr);
    }
    Ok(Some(Built {
        cols,
        rows,
        acks: acks_out,
        min_rtt,
        mss,
    }))
}
