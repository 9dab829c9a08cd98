//! Decoding on every core: spans of records decoded in parallel, joined in record order.
//!
//! The container walk that finds the records is sequential (each record's length says where
//! the next one starts); decoding a record's link, IP and TCP headers depends on that record
//! alone, except for IP fragment reassembly, whose state runs over the whole capture in frame
//! order. So the records are cut into spans of [`SPAN`]; every span is decoded on its own
//! thread (rayon) into its own slots of the columns (see `rows`), with its own tallies. A span
//! that meets an IP fragment stops, and is decoded again afterwards, in span order, with the
//! one reassembler: the reassembler sees every fragment in frame order, exactly as a
//! sequential decode would show them. Tallies keep their first frame, so warnings, counts and
//! their order are those of the sequential decode; the rows are those it would write.

use super::bytes::Source;
use super::ip::records;
use super::reasm::Reassembler;
use super::rows::{Cols, Rows, Side, Sink};
use super::tally::Tallies;
use super::Records;
use rayon::prelude::*;

/// Records per span: large enough that a span's start-up is nothing, small enough to share the
/// work between threads.
pub const SPAN: usize = 1 << 15;

/// A span: its first record, its records' slots and the thread-local counts.
struct Part<'a> {
    start: usize,
    end: usize,
    sink: Sink<'a>,
    tallies: Tallies,
    /// Decoded without a fragment (else to decode again in order).
    done: bool,
}

/// The rows of every record, and the decoder's counts (`ra` is fed every fragment in order).
pub(super) fn decode(
    src: &mut dyn Source,
    recs: &Records,
    t0: i64,
    ra: &mut Reassembler,
    span: usize,
) -> (Rows, Tallies) {
    let n = recs.len();
    let mut rows = Rows::zeroed(n);
    let mut parts = split(rows.cols(), n, span.max(1));
    if parts.len() > 1 {
        parallel(src, recs, t0, &mut parts);
    }
    let mut tallies = Tallies::default();
    let mut joined: Vec<(usize, usize, Side)> = Vec::with_capacity(parts.len());
    for mut part in parts {
        if !part.done {
            part.sink.clear();
            part.tallies = Tallies::default();
            let range = part.start..part.end;
            records(
                src,
                recs,
                range,
                t0,
                Some(&mut *ra),
                &mut part.tallies,
                &mut part.sink,
            );
        }
        tallies.merge(&part.tallies);
        let (len, side) = part.sink.done();
        joined.push((part.start, len, side));
    }
    rows.join(joined);
    (rows, tallies)
}

/// A streaming reader's decoder (`crate::stream`): every batch of records decoded in one
/// sequential span, as a span of [`decode`] is, with the one reassembler and the decoder's
/// counts carried from batch to batch (frame numbers run on: `Records::first`).
pub struct BatchDecoder {
    ra: Reassembler,
    tallies: Tallies,
}

impl BatchDecoder {
    pub fn new(limits: &super::Limits) -> BatchDecoder {
        BatchDecoder {
            ra: Reassembler::new(limits),
            tallies: Tallies::default(),
        }
    }

    /// The rows of a batch of records.
    pub fn decode(&mut self, src: &mut dyn Source, recs: &Records, t0: i64) -> Rows {
        let n = recs.len();
        let mut rows = Rows::zeroed(n);
        let mut sink = Sink::new(rows.cols());
        let ra = Some(&mut self.ra);
        records(src, recs, 0..n, t0, ra, &mut self.tallies, &mut sink);
        let (len, side) = sink.done();
        rows.join(vec![(0, len, side)]);
        rows
    }

    /// Settles a batch's rows whose IP length runs beyond the frame, looking on into the
    /// batches decoded after it (`iplen::settled_by` says when they reach far enough; at the
    /// end of the file, whatever came after), as `read_capture` settles them over every row.
    pub fn settle(&mut self, rows: &mut Rows, later: &[&Rows]) {
        super::ip::confirm_lengths(rows, later, &mut self.tallies);
    }

    /// The decoder's warnings once every batch is decoded, and its frame-less counts, as
    /// `ip::decode_in` reports them.
    pub fn finish(&self, warnings: &mut Vec<super::Warn>) -> Vec<(&'static str, u64)> {
        let mut counts = Vec::new();
        super::tally::report(&self.tallies, warnings, &mut counts);
        self.ra.finish(warnings, &mut counts);
        counts
    }
}

/// The spans of `n` records' slots.
fn split(cols: Cols<'_>, n: usize, span: usize) -> Vec<Part<'_>> {
    let mut parts = Vec::with_capacity(n.div_ceil(span));
    let (mut rest, mut start) = (cols, 0);
    while start < n {
        let end = n.min(start + span);
        let (head, tail) = rest.split_at(end - start);
        parts.push(Part {
            start,
            end,
            sink: Sink::new(head),
            tallies: Tallies::default(),
            done: false,
        });
        (rest, start) = (tail, end);
    }
    parts
}

/// Decode the spans on the rayon threads, each with its own reader of the source (a span
/// with a fragment is left not done). A source that cannot be shared leaves them all to the
/// sequential pass.
fn parallel(src: &mut dyn Source, recs: &Records, t0: i64, parts: &mut [Part<'_>]) {
    let Some(readers) = parts.iter().map(|_| src.fork()).collect::<Option<Vec<_>>>() else {
        return;
    };
    let errors: Vec<Option<std::io::Error>> = parts
        .par_iter_mut()
        .zip(readers)
        .map(|(part, mut reader)| {
            let range = part.start..part.end;
            let (t, sink) = (&mut part.tallies, &mut part.sink);
            part.done = records(&mut *reader, recs, range, t0, None, t, sink);
            reader.take_error()
        })
        .collect();
    for e in errors.into_iter().flatten() {
        src.keep_error(e);
    }
}

#[cfg(test)]
mod tests {
    use super::super::bytes::{FileSource, Mem};
    use super::super::ip::decode_in;
    use super::super::{Limits, Warn};
    use super::*;

    /// Ethernet + IPv4 (identification `id`, fragment field `frag`) carrying `l4`; `tot`
    /// overrides the total length.
    fn v4(id: u16, frag: u16, l4: &[u8], tot: Option<u16>) -> Vec<u8> {
        let mut p = vec![0u8; 12];
        p.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
        p.extend_from_slice(&tot.unwrap_or(20 + l4.len() as u16).to_be_bytes());
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&[64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(l4);
        p
    }

    /// A TCP header (ACK set) with `opts`, then `payload` bytes.
    fn tcp(seq: u32, opts: &[u8], payload: usize) -> Vec<u8> {
        let mut t = vec![0x9c, 0x40, 0x13, 0x89];
        t.extend_from_slice(&seq.to_be_bytes());
        t.extend_from_slice(&[
            0,
            0,
            0,
            1,
            ((20 + opts.len()) as u8 / 4) << 4,
            0x10,
            0xff,
            0xff,
        ]);
        t.extend_from_slice(&[0, 0, 0, 0]);
        t.extend_from_slice(opts);
        t.resize(t.len() + payload, b'x');
        t
    }

    /// Ethernet + IPv6 carrying a TCP segment.
    fn v6(seq: u32) -> Vec<u8> {
        let seg = tcp(seq, &[], 10);
        let mut p = vec![0u8; 12];
        p.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        p.extend_from_slice(&(seg.len() as u16).to_be_bytes());
        p.extend_from_slice(&[6, 64]);
        p.extend_from_slice(&[0xfd; 32]);
        p.extend_from_slice(&seg);
        p
    }

    /// Frames with every stateful or unusual case: a TCP datagram in two fragments far apart
    /// (and a second one whose fragments come in reverse order), SACK blocks, IPv6, a frame
    /// too short for its IP header, a non-IP frame, an IP length beyond the frame.
    fn frames() -> Vec<Vec<u8>> {
        let whole = tcp(1000, &[], 30); // 50 bytes: fragments of 24 and 26
        let sack = [1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        let mut beyond = v4(9, 0, &tcp(5, &[], 40), Some(20 + 20 + 400));
        beyond.truncate(beyond.len() - 10);
        vec![
            v4(1, 0, &tcp(1, &[], 10), None),
            v4(7, 0x2000, &whole[..24], None), // offset 0, more fragments
            v4(2, 0, &tcp(11, &sack, 0), None),
            vec![0u8; 20],                                   // Ethernet type 0: not IP
            v4(3, 0, &tcp(11, &[], 0), None)[..30].to_vec(), // cut inside the IP header
            v6(77),
            v4(7, 3, &whole[24..], None), // offset 24, last: completes the datagram
            v4(8, 3, &whole[24..], None),
            beyond,
            v4(8, 0x2000, &whole[..24], None),
            v4(4, 0, &tcp(21, &sack, 0), None),
        ]
    }

    /// (records, bytes) of a capture of `frames`.
    fn capture(frames: &[Vec<u8>]) -> (Records, Vec<u8>) {
        let mut recs = Records {
            linktype: 1,
            ..Records::default()
        };
        let mut data = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            recs.data_off.push(data.len() as u64);
            recs.caplen.push(f.len() as u32);
            recs.origlen.push(f.len() as u32);
            recs.ts_ns.push(i as i64 * 1_000_000);
            data.extend_from_slice(f);
        }
        (recs, data)
    }

    type Decoded = (Rows, Vec<Warn>, Vec<(&'static str, u64)>);

    fn decoded(src: &mut dyn Source, recs: &Records, span: usize) -> Decoded {
        let (mut w, mut c) = (Vec::new(), Vec::new());
        let rows = decode_in(src, recs, 0, &Limits::default(), &mut w, &mut c, span);
        (rows, w, c)
    }

    #[test]
    fn spans_decode_as_one_sequential_pass() {
        let (recs, data) = capture(&frames());
        let whole = decoded(&mut Mem(&data), &recs, usize::MAX);
        let (rows, w, c) = &whole;
        // the reference itself: what each case gives
        assert_eq!(rows.frame, vec![1, 2, 3, 6, 7, 8, 9, 10, 11]);
        assert_eq!(rows.proto, vec![0, 2, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!((rows.payload[4], rows.size[4]), (30, 2 * 34 + 24 + 26));
        assert_eq!(rows.v6_row, vec![3]);
        assert_eq!(rows.sack_row, vec![2, 8]);
        assert_eq!(rows.payload[6], 30); // limited to the frame (W-IPLEN)
        let codes: Vec<_> = w.iter().map(|x| (x.code, x.count)).collect();
        assert_eq!(codes, vec![("W-MALFORMED", 1), ("W-IPLEN", 1)]);
        assert_eq!(
            c,
            &vec![("non_ip", 1), ("malformed", 1), ("reassembled", 2)]
        );
        for span in [1, 2, 3, 4, 7] {
            assert_eq!(decoded(&mut Mem(&data), &recs, span), whole, "span {span}");
        }
    }

    #[test]
    fn spans_read_a_file_through_their_own_windows() {
        let frames: Vec<Vec<u8>> = (0..50).flat_map(|_| frames()).collect();
        let (recs, data) = capture(&frames);
        let path = std::env::temp_dir().join(format!("cd_spans_{}.bin", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let whole = decoded(&mut Mem(&data), &recs, usize::MAX);
        let mut file = FileSource::open(&path).unwrap();
        assert_eq!(decoded(&mut file, &recs, 16), whole);
        assert!(file.error.is_none());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(whole.0.len(), 50 * 9);
    }
}
