//! Bounded batches of decoded rows, read on their own thread.
//!
//! The container walk is `capture::pcap::Batches` or `capture::ngbatch::Batches` (the record
//! and block walks of `read_capture`, resumed batch by batch; a pcapng file is settled as its
//! first walk ends, [`settle_pcapng`]) and every batch is decoded
//! by `capture::spans::BatchDecoder`, the sequential span decoder, with one IP reassembler
//! and the decoder's counts carried across batches: the rows, and the warnings, are those
//! `read_capture` gives, with its default limits. A batch holds at most [`BATCH`] records
//! and about [`BATCH_BYTES`] of captured bytes; the reader runs at most two batches ahead of
//! the passes (one queued, one being decoded). The file is read once, forward
//! ([`super::ahead::Ahead`]), and each batch's TCP packets are numbered on this thread when
//! [`Reader::start`] is asked to (`super::number`).

use super::ahead::Ahead;
use super::number::{Num, Numbering};
use super::Refusal;
use crate::capture::bytes::Source;
use crate::capture::ngbatch::{self, Ended};
use crate::capture::spans::BatchDecoder;
use crate::capture::timeback::TimeBack;
use crate::capture::{commas, iplen, link, pcap, Failure, Kind, Limits, Meta, Records, Rows, Warn};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Records per batch.
pub const BATCH: usize = 1 << 14;
/// Captured bytes per batch (about: the record that crosses it is the batch's last).
pub const BATCH_BYTES: u64 = 1 << 20;

/// The pcapng section header block's type: the first four bytes of a pcapng file.
const PCAPNG: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Python's `Limits().max_flows`: connections per file (`tracekit.limits`).
pub const MAX_FLOWS: usize = 100_000;

/// A failure of the capture reader as a refusal.
fn refusal(f: &Failure) -> Refusal {
    let kind = match f.kind {
        Kind::Corrupt => "CorruptTraceError",
        Kind::Unknown => "UnknownFormatError",
        Kind::Limit => "LimitError",
    };
    let at = match (f.frame, f.offset) {
        (Some(fr), _) => format!(" (frame {fr})"),
        (None, Some(o)) => format!(" (byte {o})"),
        _ => String::new(),
    };
    Refusal::new(kind, format!("{}{at}", f.message))
}

/// More connections than `tracekit.read` takes (`nflows`: the connection table's; the rows
/// without ports count as one more, as polars' `n_unique` counts their null flow).
pub fn check_flows(nflows: usize) -> Result<(), Refusal> {
    let nflows = nflows + usize::from(LAST.with(|x| x.borrow().1));
    if nflows > MAX_FLOWS {
        let msg = format!(
            "{} connections, over the limit of {}",
            commas(nflows as u64),
            commas(MAX_FLOWS as u64)
        );
        return Err(Refusal::new("LimitError", msg));
    }
    Ok(())
}

/// A capture's record batches: either container's walk.
enum Walk {
    Pcap(Box<pcap::Batches>),
    Pcapng(Box<ngbatch::Batches>),
}

impl Walk {
    fn next(
        &mut self,
        src: &mut dyn Source,
        limits: &Limits,
        recs: &mut Records,
    ) -> Result<bool, Failure> {
        match self {
            Walk::Pcap(b) => b.next(src, limits, recs, BATCH, BATCH_BYTES),
            Walk::Pcapng(b) => Ok(b.next(src, limits, recs, BATCH, BATCH_BYTES)),
        }
    }
}

/// The link type a record cannot be decoded with by tracekit itself (`tracekit.read` hands
/// such a file to tshark, so the stream leaves it to the frames path).
fn tshark() -> Refusal {
    Refusal::new(
        "UnknownFormatError",
        "link type not decoded by tracekit itself (tracekit.read hands it to tshark)",
    )
}

fn file(path: &Path) -> Result<Ahead, Refusal> {
    Ahead::open(path)
        .map_err(|e| Refusal::new("UnknownFormatError", format!("cannot read file: {e}")))
}

/// Opens `path` and reads its header: the source, the record batches and the warnings so far
/// (a pcapng file's come when its walk ends, [`settle_pcapng`]).
fn open(path: &Path) -> Result<(Ahead, Walk, Vec<Warn>), Refusal> {
    let mut src = file(path)?;
    let mut warnings = Vec::new();
    if src.get(0, 4) == Some(&PCAPNG[..]) {
        let b = ngbatch::Batches::start(&mut src).map_err(|f| refusal(&f))?;
        return Ok((src, Walk::Pcapng(Box::new(b)), warnings));
    }
    let batches = pcap::Batches::open(&mut src, &mut warnings).map_err(|f| refusal(&f))?;
    let b = batches.ok_or_else(tshark)?;
    Ok((src, Walk::Pcap(Box::new(b)), warnings))
}

/// A pcapng file as its first read settled it: the walk to run again, the container's warnings
/// and metadata (a second read starts from it instead of settling the file again); or, where a
/// later section is damaged, the walk to run instead, not settled yet (no metadata).
pub struct Checked {
    walk: ngbatch::Batches,
    warnings: Vec<Warn>,
    meta: Option<Meta>,
}

/// One batch's rows, or the warnings once every batch is read, or why reading stopped.
enum Item {
    /// The pcapng file as its walk settled it, sent after its last batch.
    Checked(Box<Checked>),
    /// A later section of the pcapng file is damaged: the read starts over with this walk.
    Again(Box<Checked>),
    Rows(Box<Rows>),
    /// A batch's rows with its TCP packets numbered (what the reader thread sends on).
    Numbered(Box<Batch>),
    /// The connection table once every batch is numbered, sent before [`Item::Done`].
    Table(Box<Numbering>),
    /// The warnings, whether a row had no ports, and what the reader says of the file.
    Done(Vec<Warn>, bool, Box<Facts>),
    Refused(Refusal),
}

/// Decodes every batch of the file at `path` in order, on this thread, handing each to `send`
/// (false: the receiver is gone, stop); the warnings `read_capture` gives, once all are read.
fn read_all(path: &Path, checked: Option<Checked>, mut send: impl FnMut(Item) -> bool) {
    match read_batches(path, checked, &mut send) {
        Ok(Some((w, portless, facts))) => {
            send(Item::Done(w, portless, facts));
        }
        Ok(None) => {}
        Err(r) => {
            send(Item::Refused(r));
        }
    }
}

/// What `read_capture` gives beside the rows and warnings (`tracekit.parsers._capture` makes
/// the trace's meta of it): the container's metadata, the decoder's frame-less counts, the
/// records, the first record's time (epoch ns), and the rows and those captured short of their
/// size (`caplen < size`: the inputs of `tracekit.parsers._meta.headers_only`).
#[derive(Clone, Debug)]
pub struct Facts {
    pub meta: Meta,
    pub counts: Vec<(&'static str, u64)>,
    pub records: u64,
    pub t0_ns: Option<i64>,
    pub rows: u64,
    pub cut: u64,
    /// The account's warnings' inputs over the rows (`account::RowFacts`).
    pub account: super::account::RowFacts,
}

/// [`read_all`]'s walk: the warnings at the end, whether a row had no ports and the file's
/// [`Facts`], `None` when the receiver is gone.
#[allow(clippy::type_complexity)]
fn read_batches(
    path: &Path,
    checked: Option<Checked>,
    send: &mut impl FnMut(Item) -> bool,
) -> Result<Option<(Vec<Warn>, bool, Box<Facts>)>, Refusal> {
    let limits = Limits::default();
    let (mut src, mut walk, mut warnings, mut meta) = match checked {
        Some(c) => (
            file(path)?,
            Walk::Pcapng(Box::new(c.walk)),
            c.warnings,
            c.meta,
        ),
        None => {
            let (src, walk, warnings) = open(path)?;
            (src, walk, warnings, None)
        }
    };
    let mut dec = BatchDecoder::new(&limits);
    let mut recs = Records::default();
    let (mut t0, mut n) = (None::<i64>, 0usize);
    let mut back = TimeBack::default();
    let mut portless = false;
    let mut seen = [0u64; 2]; // the rows sent, and those with caplen < size
    let mut acct = super::account::RowFacts::default();
    // a record of a link type tracekit does not decode: the file is refused once walked
    let mut foreign = false;
    // decoded batches not sent yet: the first has IP lengths that later rows must settle
    let mut held: VecDeque<Box<Rows>> = VecDeque::new();
    while walk
        .next(&mut src, &limits, &mut recs)
        .map_err(|f| refusal(&f))?
    {
        recs.first = n;
        n += recs.len();
        recs.ts_ns.iter().for_each(|&t| back.on(t));
        // the bytes before the batch's last record's end are read no more
        let end = (recs.data_off.last().copied().unwrap_or(0))
            .saturating_add(u64::from(recs.caplen.last().copied().unwrap_or(0)));
        foreign |= recs.linktypes.iter().any(|&lt| link::name(lt).is_none());
        if foreign || n as u64 > limits.max_packets {
            src.keep_from(end);
            continue; // only walked: refused below, as `read_capture` refuses
        }
        let t = *t0.get_or_insert(recs.ts_ns.first().copied().unwrap_or(0));
        let rows = dec.decode(&mut src, &recs, t);
        src.keep_from(end);
        if let Some(e) = src.take_error() {
            return Err(Refusal::new(
                "CorruptTraceError",
                format!("read error: {e}"),
            ));
        }
        portless |= rows.ports.iter().any(|&p| !p);
        held.push_back(Box::new(rows));
        if !send_settled(&mut held, &mut dec, false, (&mut seen, &mut acct), send) {
            return Ok(None);
        }
    }
    if !send_settled(&mut held, &mut dec, true, (&mut seen, &mut acct), send) {
        return Ok(None);
    }
    let meta = match (&mut walk, meta.take()) {
        (Walk::Pcap(b), _) => {
            b.warnings(&mut warnings);
            b.meta.clone()
        }
        (Walk::Pcapng(b), Some(m)) => {
            // settled by the file's first read (a file changed since is refused)
            if b.finish(&mut Vec::new()).is_err() {
                return Err(Refusal::new("CorruptTraceError", CHANGED));
            }
            m
        }
        (Walk::Pcapng(b), None) => match settle_pcapng(b, &mut warnings, send)? {
            Some(m) => m,
            None => return Ok(None),
        },
    };
    if n as u64 > limits.max_packets {
        let msg = format!(
            "{} packets, over the limit of {}",
            commas(n as u64),
            commas(limits.max_packets)
        );
        return Err(Refusal::new("LimitError", msg));
    }
    let counts = dec.finish(&mut warnings);
    warnings.extend(back.warning());
    let facts = Facts {
        meta,
        counts,
        records: n as u64,
        t0_ns: t0,
        rows: seen[0],
        cut: seen[1],
        account: acct,
    };
    Ok(Some((warnings, portless, Box::new(facts))))
}

/// A file whose second read does not settle as its first did.
const CHANGED: &str = "the file changed between the stream's two reads of it";

/// A pcapng file's first read, once walked: its container warnings (into `warnings`) and
/// metadata, sent on for a second read ([`Checked`]); `read_capture`'s error when it refuses
/// the file, the stream's own when a packet's link type is one tracekit does not decode.
/// None: the receiver is gone, or told to start over (a later section is damaged).
fn settle_pcapng(
    b: &mut ngbatch::Batches,
    warnings: &mut Vec<Warn>,
    send: &mut impl FnMut(Item) -> bool,
) -> Result<Option<Meta>, Refusal> {
    let meta = match b.finish(warnings) {
        Ok(m) => m,
        Err(Ended::Failed(f)) => return Err(refusal(&f)),
        Err(Ended::Damaged(walk)) => {
            let walk = *walk;
            let warnings = Vec::new();
            send(Item::Again(Box::new(Checked {
                walk,
                warnings,
                meta: None,
            })));
            return Ok(None);
        }
    };
    if let Meta::Pcapng { used, .. } = &meta {
        if used.iter().any(|&lt| link::name(lt).is_none()) {
            return Err(tshark());
        }
    }
    let c = Checked {
        walk: b.restart(),
        warnings: warnings.clone(),
        meta: Some(meta.clone()),
    };
    Ok(send(Item::Checked(Box::new(c))).then_some(meta))
}

/// Sends the held batches that are settled, in order: a batch whose IP lengths beyond the
/// frame the rows after it settle (`iplen::settled_by`, or `end`: nothing more comes), with
/// the decoder's W-IPLEN counts; `seen` counts the rows sent and those with `caplen < size`,
/// and the account's inputs over them. False: the receiver is gone.
fn send_settled(
    held: &mut VecDeque<Box<Rows>>,
    dec: &mut BatchDecoder,
    end: bool,
    (seen, acct): (&mut [u64; 2], &mut super::account::RowFacts),
    send: &mut impl FnMut(Item) -> bool,
) -> bool {
    while let Some(mut first) = held.pop_front() {
        let later: Vec<&Rows> = held.iter().map(|b| &**b).collect();
        if !(end || iplen::settled_by(&first, &later)) {
            held.push_front(first);
            return true;
        }
        dec.settle(&mut first, &later);
        seen[0] += first.size.len() as u64;
        seen[1] += first
            .caplen
            .iter()
            .zip(&first.size)
            .filter(|(c, s)| c < s)
            .count() as u64;
        acct.add(&first);
        if !send(Item::Rows(first)) {
            return false;
        }
    }
    true
}

thread_local! {
    /// The warnings of the last file a [`Reader`] read to its end on this thread, whether a
    /// row had no ports, and its [`Facts`].
    #[allow(clippy::type_complexity)]
    static LAST: RefCell<(Vec<Warn>, bool, Option<Box<Facts>>)> =
        const { RefCell::new((Vec::new(), false, None)) };
}

/// The warnings of the last file read to its end on this thread (`tracekit.read`'s, in its
/// order), taken.
pub fn take_warnings() -> Vec<Warn> {
    LAST.with(|w| std::mem::take(&mut *w.borrow_mut()).0)
}

/// The [`Facts`] of the last file read to its end on this thread, taken (before
/// [`take_warnings`], which clears them).
pub fn take_facts() -> Option<Box<Facts>> {
    LAST.with(|w| w.borrow_mut().2.take())
}

/// One decoded batch and its TCP packets, numbered (`number::Numbering::batch`).
pub struct Batch {
    pub rows: Rows,
    pub nums: Vec<Num>,
}

/// The decoded batches of a file, read and numbered on a thread of their own.
pub struct Reader {
    rx: Receiver<Item>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A pcapng file's check, once the reader has sent it (for [`Reader::start`] again).
    pub checked: Option<Checked>,
    /// The connection table and addresses, once every batch is read.
    pub numbering: Option<Numbering>,
    /// The walk to read again with, when a later section of a pcapng file is damaged (the
    /// batches sent are then not the file's: the receiver starts over).
    pub again: Option<Checked>,
}

impl Reader {
    /// The reader thread's name (`bench/bench_budget.py` tells the passes' CPU apart by it).
    #[cfg(test)]
    pub(crate) fn thread_name(&self) -> Option<String> {
        Some(self.thread.as_ref()?.thread().name()?.to_string())
    }

    /// Starts reading `path`; `checked`: what an earlier read of the same pcapng file checked
    /// (its `checked` once done), so that the file is not checked again.
    /// `number`: the thread numbers each batch's packets (`Batch::nums`; else they are left
    /// empty for the receiver to number).
    pub fn start(path: &Path, checked: Option<Checked>, number: bool) -> Reader {
        // up to four batches queued while the next is decoded, so that a pass taken off its
        // core for a time slice does not stop the reader (`shards::QUEUE`)
        let (tx, mut rx) = sync_channel::<Item>(4);
        let path: PathBuf = path.to_path_buf();
        // named for its pass, so that `top -H`, perf and `bench/bench_budget.py` tell the
        // passes' readers from the rest
        let name = if number { "tk-read-2" } else { "tk-read-1" };
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || read_on(tx, &path, checked, number));
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                // no thread (the system's limit): the passes get the refusal, not an empty file
                let (tx, no_thread) = sync_channel::<Item>(1);
                let msg = format!("cannot start the reader thread: {e}");
                let _ = tx.send(Item::Refused(Refusal::new("TracekitError", msg)));
                rx = no_thread;
                None
            }
        };
        Reader {
            rx,
            thread,
            checked: None,
            numbering: None,
            again: None,
        }
    }
}

/// The reader thread: decodes every batch of `path` and sends it on `tx`, numbered when
/// `number` (then the connection table after the last batch); a panic is sent as a refusal.
fn read_on(tx: SyncSender<Item>, path: &Path, checked: Option<Checked>, number: bool) {
    let mut numbering = Numbering::default();
    // each batch is numbered here, the table sent once the last one is
    let mut send = |x: Item| {
        let x = match x {
            Item::Rows(r) if number => {
                let nums = numbering.batch(&r);
                Item::Numbered(Box::new(Batch { rows: *r, nums }))
            }
            Item::Done(..) if number => {
                let t = std::mem::take(&mut numbering);
                if tx.send(Item::Table(Box::new(t))).is_err() {
                    return false;
                }
                x
            }
            x => x,
        };
        tx.send(x).is_ok()
    };
    let read = || read_all(path, checked, &mut send);
    let run = std::panic::AssertUnwindSafe(read);
    if std::panic::catch_unwind(run).is_err() {
        let msg = "internal error while decoding (a bug: please report it with the file)";
        let _ = tx.send(Item::Refused(Refusal::new("CorruptTraceError", msg)));
    }
}

impl Iterator for Reader {
    type Item = Result<Batch, Refusal>;
    fn next(&mut self) -> Option<Result<Batch, Refusal>> {
        loop {
            match self.rx.recv().ok()? {
                Item::Checked(c) => self.checked = Some(*c),
                Item::Again(c) => self.again = Some(*c),
                Item::Table(t) => self.numbering = Some(*t),
                Item::Numbered(b) => return Some(Ok(*b)),
                Item::Rows(r) => {
                    let nums = Vec::new(); // (not numbered: the receiver numbers them)
                    return Some(Ok(Batch { rows: *r, nums }));
                }
                Item::Refused(r) => return Some(Err(r)),
                Item::Done(w, portless, facts) => {
                    LAST.with(|x| *x.borrow_mut() = (w, portless, Some(facts)));
                    return None;
                }
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // the thread stops at its next send once the receiver is gone
        let (_, dead) = sync_channel::<Item>(0);
        drop(std::mem::replace(&mut self.rx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
