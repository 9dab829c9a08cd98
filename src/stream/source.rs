//! Bounded batches of decoded rows, read on their own thread.
//!
//! The container walk is `capture::pcap::Batches` (the record walk of `read_capture`, resumed
//! batch by batch) and every batch is decoded by `capture::spans::decode_batch`, the
//! sequential span decoder, with one IP reassembler carried across batches: the rows are
//! those `read_capture` gives. A batch holds at most [`BATCH`] records and about
//! [`BATCH_BYTES`] of captured bytes; the reader runs at most two batches ahead of the
//! passes (one queued, one being decoded).

use super::Refusal;
use crate::capture::bytes::{FileSource, Source};
use crate::capture::pcap::Batches;
use crate::capture::reasm::Reassembler;
use crate::capture::spans::decode_batch;
use crate::capture::{Failure, Kind, Limits, Records, Rows};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};

/// Records per batch.
pub const BATCH: usize = 1 << 14;
/// Captured bytes per batch (about: the record that crosses it is the batch's last).
pub const BATCH_BYTES: u64 = 1 << 20;

/// The pcapng section header block's type: the first four bytes of a pcapng file.
const PCAPNG: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

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

/// Opens `path` and reads its pcap header: the source and the record batches.
fn open(path: &Path) -> Result<(FileSource, Batches), Refusal> {
    let mut src = FileSource::open(path)
        .map_err(|e| Refusal::new("UnknownFormatError", format!("cannot read file: {e}")))?;
    if src.get(0, 4) == Some(&PCAPNG[..]) {
        return Err(Refusal::new(
            "UnknownFormatError",
            "pcapng is not streamed yet (only pcap): read it with tracekit.read",
        ));
    }
    let mut warnings = Vec::new();
    let batches = Batches::open(&mut src, &mut warnings).map_err(|f| refusal(&f))?;
    let Some(b) = batches else {
        return Err(Refusal::new(
            "UnknownFormatError",
            "link type not decoded by tracekit itself (tracekit.read hands it to tshark)",
        ));
    };
    Ok((src, b))
}

/// One batch's rows, or why reading stopped.
type Item = Result<Rows, Refusal>;

/// Decodes every batch of the file at `path` in order, on this thread, handing each to `send`
/// (false: the receiver is gone, stop).
fn read_all(path: &Path, mut send: impl FnMut(Item) -> bool) {
    let (mut src, mut batches) = match open(path) {
        Ok(x) => x,
        Err(r) => {
            send(Err(r));
            return;
        }
    };
    let limits = Limits::default();
    let mut ra = Reassembler::new(&limits);
    let mut recs = Records::default();
    let mut t0: Option<i64> = None;
    loop {
        match batches.next(&mut src, &limits, &mut recs, BATCH, BATCH_BYTES) {
            Ok(true) => {}
            Ok(false) => return,
            Err(f) => {
                send(Err(refusal(&f)));
                return;
            }
        }
        let t = *t0.get_or_insert(recs.ts_ns.first().copied().unwrap_or(0));
        let rows = decode_batch(&mut src, &recs, t, &mut ra);
        if let Some(e) = src.take_error() {
            send(Err(Refusal::new(
                "CorruptTraceError",
                format!("read error: {e}"),
            )));
            return;
        }
        if rows.has_beyond() {
            send(Err(Refusal::new(
                "TracekitError",
                "a TCP segment's IP length runs beyond its frame: only tracekit.read, which \
                 sees the later segments, can confirm it",
            )));
            return;
        }
        if !send(Ok(rows)) {
            return;
        }
    }
}

/// The decoded batches of a file, read on a thread of their own.
pub struct Reader {
    rx: Receiver<Item>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reader {
    /// Starts reading `path`.
    pub fn start(path: &Path) -> Reader {
        // one batch queued while the next is decoded: at most two ahead of the passes
        let (tx, rx) = sync_channel::<Item>(1);
        let path: PathBuf = path.to_path_buf();
        let thread = std::thread::spawn(move || {
            let run = std::panic::AssertUnwindSafe(|| read_all(&path, |x| tx.send(x).is_ok()));
            if std::panic::catch_unwind(run).is_err() {
                let msg = "internal error while decoding (a bug: please report it with the file)";
                let _ = tx.send(Err(Refusal::new("CorruptTraceError", msg)));
            }
        });
        Reader {
            rx,
            thread: Some(thread),
        }
    }
}

impl Iterator for Reader {
    type Item = Item;
    fn next(&mut self) -> Option<Item> {
        self.rx.recv().ok()
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
