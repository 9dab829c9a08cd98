//! The decoded rows' columns: what `ip` appends per IP packet and Python receives as numpy.

/// Decoded rows as columns (see `tracekit.parsers._decode.Rows`). TCP fields are meaningful
/// on TCP rows (`proto == 0`), options where their `*_ok` flag is set.
#[derive(Default, Debug)]
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

impl Rows {
    pub(super) fn push(&mut self, h: &RowHead, r: &Row) {
        let RowHead {
            frame,
            time,
            size,
            caplen,
            is4,
            s4,
            d4,
        } = *h;
        self.frame.push(frame);
        self.time.push(time);
        self.size.push(size);
        self.caplen.push(caplen);
        self.is4.push(is4);
        self.s4.push(s4);
        self.d4.push(d4);
        self.proto.push(r.proto);
        self.payload.push(r.payload);
        self.ports.push(r.ports);
        self.sport.push(r.sport);
        self.dport.push(r.dport);
        self.seq_raw.push(r.seq);
        self.ack_raw.push(r.ack);
        self.flags.push(r.flags);
        self.win_raw.push(r.win);
        self.mss.push(r.mss.unwrap_or(0));
        self.mss_ok.push(r.mss.is_some());
        self.wscale.push(r.wscale.unwrap_or(0));
        self.wscale_ok.push(r.wscale.is_some());
        let (v, e) = r.ts.unwrap_or((0, 0));
        self.ts_val.push(v);
        self.ts_ecr.push(e);
        self.ts_ok.push(r.ts.is_some());
    }
    /// Room for `n` rows in every per-row column (one allocation each, no regrowth copies).
    pub(super) fn with_capacity(n: usize) -> Rows {
        let mut r = Rows::default();
        macro_rules! reserve {
            ($($f:ident),*) => { $( r.$f.reserve_exact(n); )* };
        }
        reserve!(
            frame, time, proto, size, caplen, payload, ports, sport, dport, is4, s4, d4, seq_raw,
            ack_raw
        );
        reserve!(flags, win_raw, mss, mss_ok, wscale, wscale_ok, ts_val, ts_ecr, ts_ok);
        r
    }
    pub fn len(&self) -> usize {
        self.frame.len()
    }
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }
}
