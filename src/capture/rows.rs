//! The decoded rows' columns: what `ip` writes per IP packet and Python receives as numpy.
//!
//! Every record gives at most one row, so the per-row columns are allocated once for all
//! records and each span of records writes its rows in place, from the span's first record
//! on ([`Sink`] over [`Cols`]); spans decoded on several threads thus share no column. The
//! few rows with IPv6 addresses, SACK blocks, tunnels or IP lengths beyond the frame go to a
//! span's own lists ([`Side`], numbered within the span) and are renumbered when the spans
//! are joined in record order ([`Rows::join`]).

/// Decoded rows as columns (see `tracekit.parsers._decode.Rows`). TCP fields are meaningful
/// on TCP rows (`proto == 0`), options where their `*_ok` flag is set.
#[derive(Default, Debug, PartialEq)]
pub struct Rows {
    pub frame: Vec<u64>,
    pub time: Vec<f64>,
    pub proto: Vec<u8>,
    pub size: Vec<u32>,
    pub caplen: Vec<u32>,
    pub payload: Vec<u32>,
    pub ports: Vec<bool>,
    pub sport: Vec<i32>,
    pub dport: Vec<i32>,
    pub is4: Vec<bool>,
    pub s4: Vec<u32>,
    pub d4: Vec<u32>,
    pub seq_raw: Vec<u32>,
    pub ack_raw: Vec<u32>,
    pub flags: Vec<u8>,
    pub win_raw: Vec<u16>,
    pub mss: Vec<u16>,
    pub mss_ok: Vec<bool>,
    pub wscale: Vec<u8>,
    pub wscale_ok: Vec<bool>,
    pub ts_val: Vec<u32>,
    pub ts_ecr: Vec<u32>,
    pub ts_ok: Vec<bool>,
    /// The IP header's TTL (IPv4) or hop limit (IPv6).
    pub ttl: Vec<u8>,
    /// IPv6 rows: row, source and destination as (high, low) 64-bit halves.
    pub v6_row: Vec<i64>,
    pub v6: [Vec<u64>; 4],
    /// SACK blocks (RFC 2018): row and raw 32-bit edges, in option order within a row.
    pub sack_row: Vec<i64>,
    pub sack_left: Vec<i64>,
    pub sack_right: Vec<i64>,
    /// Tunnelled rows (issue 24 point 4): row, outer IP version, tunnel code (index into
    /// `tunnel::NAMES`) and the outer source and destination as (high, low) halves.
    pub outer_row: Vec<i64>,
    pub outer_is4: Vec<bool>,
    pub outer_code: Vec<u8>,
    pub outer: [Vec<u64>; 4],
    /// TCP rows whose IP length runs beyond the frame's original length: (row, the payload
    /// the frame can hold); settled by `confirm` once every row is decoded.
    pub(super) beyond: Vec<(usize, u32)>,
}

/// The per-frame part of a row.
#[derive(Clone, Copy)]
pub(super) struct RowHead {
    pub(super) frame: u64,
    pub(super) time: f64,
    pub(super) size: u32,
    pub(super) caplen: u32,
    pub(super) is4: bool,
    pub(super) s4: u32,
    pub(super) d4: u32,
    pub(super) ttl: u8,
}

/// One row's transport part before it is appended.
#[derive(Default, Clone, Copy)]
pub(super) struct Row {
    pub(super) proto: u8,
    pub(super) payload: u32,
    pub(super) ports: bool,
    pub(super) sport: i32,
    pub(super) dport: i32,
    pub(super) seq: u32,
    pub(super) ack: u32,
    pub(super) flags: u8,
    pub(super) win: u16,
    pub(super) mss: Option<u16>,
    pub(super) wscale: Option<u8>,
    pub(super) ts: Option<(u32, u32)>,
}

/// Applies `$m!` to the names of the per-row columns.
macro_rules! per_row {
    ($m:ident) => {
        $m!(
            frame, time, proto, size, caplen, payload, ports, sport, dport, is4, s4, d4, seq_raw,
            ack_raw, flags, win_raw, mss, mss_ok, wscale, wscale_ok, ts_val, ts_ecr, ts_ok, ttl
        )
    };
}

/// The per-row columns of a span of rows, as slices of [`Rows`]' columns.
pub(super) struct Cols<'a> {
    frame: &'a mut [u64],
    time: &'a mut [f64],
    proto: &'a mut [u8],
    size: &'a mut [u32],
    caplen: &'a mut [u32],
    payload: &'a mut [u32],
    ports: &'a mut [bool],
    sport: &'a mut [i32],
    dport: &'a mut [i32],
    is4: &'a mut [bool],
    s4: &'a mut [u32],
    d4: &'a mut [u32],
    seq_raw: &'a mut [u32],
    ack_raw: &'a mut [u32],
    flags: &'a mut [u8],
    win_raw: &'a mut [u16],
    mss: &'a mut [u16],
    mss_ok: &'a mut [bool],
    wscale: &'a mut [u8],
    wscale_ok: &'a mut [bool],
    ts_val: &'a mut [u32],
    ts_ecr: &'a mut [u32],
    ts_ok: &'a mut [bool],
    ttl: &'a mut [u8],
}

impl<'a> Cols<'a> {
    /// Rows `at..` in the second part, the rows before in the first.
    pub(super) fn split_at(self, at: usize) -> (Cols<'a>, Cols<'a>) {
        macro_rules! split {
            ($($f:ident),*) => {{
                $( let $f = self.$f.split_at_mut(at); )*
                (Cols { $( $f: $f.0, )* }, Cols { $( $f: $f.1, )* })
            }};
        }
        per_row!(split)
    }
    fn len(&self) -> usize {
        self.frame.len()
    }
}

/// What a span adds beside its per-row columns; rows are numbered within the span.
#[derive(Default)]
pub(super) struct Side {
    pub(super) v6_row: Vec<i64>,
    pub(super) v6: [Vec<u64>; 4],
    pub(super) sack_row: Vec<i64>,
    pub(super) sack_left: Vec<i64>,
    pub(super) sack_right: Vec<i64>,
    pub(super) outer_row: Vec<i64>,
    pub(super) outer_is4: Vec<bool>,
    pub(super) outer_code: Vec<u8>,
    pub(super) outer: [Vec<u64>; 4],
    pub(super) beyond: Vec<(usize, u32)>,
}

/// Where the decoder writes a span's rows: its slice of the columns, in order, and its lists.
pub(super) struct Sink<'a> {
    cols: Cols<'a>,
    len: usize,
    pub(super) side: Side,
}

impl<'a> Sink<'a> {
    pub(super) fn new(cols: Cols<'a>) -> Sink<'a> {
        Sink {
            cols,
            len: 0,
            side: Side::default(),
        }
    }
    /// Rows written so far (the next row's number within the span).
    pub(super) fn len(&self) -> usize {
        self.len
    }
    /// Forget what was written (the span is decoded again).
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.side = Side::default();
    }
    /// The rows written and the lists (the slice's borrow ends here).
    pub(super) fn done(self) -> (usize, Side) {
        (self.len, self.side)
    }
    /// Write the next row (a span holds a slot for each of its records: a row per record at most).
    pub(super) fn push(&mut self, h: &RowHead, r: &Row) {
        let i = self.len;
        if i >= self.cols.len() {
            debug_assert!(false, "more rows than records");
            return;
        }
        let c = &mut self.cols;
        c.frame[i] = h.frame;
        c.time[i] = h.time;
        c.size[i] = h.size;
        c.caplen[i] = h.caplen;
        c.is4[i] = h.is4;
        c.s4[i] = h.s4;
        c.d4[i] = h.d4;
        c.ttl[i] = h.ttl;
        c.proto[i] = r.proto;
        c.payload[i] = r.payload;
        c.ports[i] = r.ports;
        c.sport[i] = r.sport;
        c.dport[i] = r.dport;
        c.seq_raw[i] = r.seq;
        c.ack_raw[i] = r.ack;
        c.flags[i] = r.flags;
        c.win_raw[i] = r.win;
        c.mss[i] = r.mss.unwrap_or(0);
        c.mss_ok[i] = r.mss.is_some();
        c.wscale[i] = r.wscale.unwrap_or(0);
        c.wscale_ok[i] = r.wscale.is_some();
        let (v, e) = r.ts.unwrap_or((0, 0));
        c.ts_val[i] = v;
        c.ts_ecr[i] = e;
        c.ts_ok[i] = r.ts.is_some();
        self.len += 1;
    }
}

impl Rows {
    /// `n` rows of zeros in every per-row column (zeroed allocations: pages that no row is
    /// written to are never touched).
    pub(super) fn zeroed(n: usize) -> Rows {
        let mut r = Rows::default();
        macro_rules! alloc {
            ($($f:ident),*) => { $( r.$f = vec![Default::default(); n]; )* };
        }
        per_row!(alloc);
        r
    }
    /// The per-row columns as one span to split.
    pub(super) fn cols(&mut self) -> Cols<'_> {
        macro_rules! all {
            ($($f:ident),*) => { Cols { $( $f: &mut self.$f[..], )* } };
        }
        per_row!(all)
    }
    /// Join spans in record order: `spans` gives each span's first slot, its rows and lists;
    /// rows move up over the slots of records that gave none, and the lists are renumbered.
    pub(super) fn join(&mut self, spans: Vec<(usize, usize, Side)>) {
        let mut at = 0usize;
        for (start, len, side) in spans {
            if start != at {
                macro_rules! shift {
                    ($($f:ident),*) => { $( self.$f.copy_within(start..start + len, at); )* };
                }
                per_row!(shift);
            }
            let base = at as i64;
            let renumber = |v: Vec<i64>| v.into_iter().map(move |r| r + base);
            self.v6_row.extend(renumber(side.v6_row));
            self.sack_row.extend(renumber(side.sack_row));
            self.outer_row.extend(renumber(side.outer_row));
            for (k, v) in side.v6.into_iter().enumerate() {
                self.v6[k].extend(v);
            }
            for (k, v) in side.outer.into_iter().enumerate() {
                self.outer[k].extend(v);
            }
            self.sack_left.extend(side.sack_left);
            self.sack_right.extend(side.sack_right);
            self.outer_is4.extend(side.outer_is4);
            self.outer_code.extend(side.outer_code);
            self.beyond
                .extend(side.beyond.into_iter().map(|(r, room)| (r + at, room)));
            at += len;
        }
        macro_rules! cut {
            ($($f:ident),*) => { $( self.$f.truncate(at); )* };
        }
        per_row!(cut);
    }
    pub fn len(&self) -> usize {
        self.frame.len()
    }
    /// Rows whose IP length runs beyond the frame: only a later segment can settle them
    /// (`iplen::confirm`, over every row).
    pub fn has_beyond(&self) -> bool {
        !self.beyond.is_empty()
    }
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }
}
