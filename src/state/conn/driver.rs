//! The column driver of the connection table: rows in capture order through [`Table`], then
//! what [`Table::settle`] decides applied to every row, and the SACK edges made relative.

use super::{sack_edge, Packet, Settled, Table};
use crate::state::seq::SYN;

/// An integer column of one of the dtypes the readers hand over.
#[derive(Clone, Copy)]
pub enum Ints<'a> {
    U16(&'a [u16]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    I64(&'a [i64]),
}

impl Ints<'_> {
    fn len(&self) -> usize {
        match self {
            Ints::U16(v) => v.len(),
            Ints::I32(v) => v.len(),
            Ints::U32(v) => v.len(),
            Ints::I64(v) => v.len(),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> i64 {
        match self {
            Ints::U16(v) => i64::from(v[i]),
            Ints::I32(v) => i64::from(v[i]),
            Ints::U32(v) => i64::from(v[i]),
            Ints::I64(v) => v[i],
        }
    }
}

/// The packet columns (one entry per row, capture order); TCP fields are read on TCP rows.
pub struct Columns<'a> {
    /// Address ids (equal ids = equal addresses) and ports; read where `l4`.
    pub src: Ints<'a>,
    pub dst: Ints<'a>,
    pub sport: Ints<'a>,
    pub dport: Ints<'a>,
    /// Rows of a connection: TCP or UDP with addresses and ports.
    pub l4: &'a [bool],
    pub tcp: &'a [bool],
    pub udp: &'a [bool],
    pub flags: &'a [u8],
    pub seq: &'a [u32],
    pub ack: &'a [u32],
    pub win: Ints<'a>,
    pub wscale: &'a [u8],
    pub wscale_ok: &'a [bool],
    /// SACK blocks: row and raw edges.
    pub sack_row: &'a [i64],
    pub sack_left: &'a [i64],
    pub sack_right: &'a [i64],
}

/// The connection columns, row order. Off connection rows `flow`/`dir` are 0; `seq` is 0
/// off connection TCP rows, `ack` 0 where there is no ACK; `win` is scaled on connection
/// TCP rows other than SYNs (RFC 7323 §2.2: a SYN's window is never scaled).
#[derive(Debug, Default)]
pub struct Out {
    pub nflows: usize,
    pub flow: Vec<u32>,
    pub dir: Vec<i8>,
    pub seq: Vec<i64>,
    pub ack: Vec<i64>,
    pub win: Vec<i64>,
    pub sack_left: Vec<i64>,
    pub sack_right: Vec<i64>,
}

impl Columns<'_> {
    fn validate(&self) -> Result<usize, String> {
        let n = self.l4.len();
        let lens = [
            ("src", self.src.len()),
            ("dst", self.dst.len()),
            ("sport", self.sport.len()),
            ("dport", self.dport.len()),
            ("tcp", self.tcp.len()),
            ("udp", self.udp.len()),
            ("flags", self.flags.len()),
            ("seq", self.seq.len()),
            ("ack", self.ack.len()),
            ("win", self.win.len()),
            ("wscale", self.wscale.len()),
            ("wscale_ok", self.wscale_ok.len()),
        ];
        for (name, l) in lens {
            if l != n {
                return Err(format!("column {name} has {l} values, l4 has {n}"));
            }
        }
        if n >= u32::MAX as usize {
            return Err(format!("{n} rows: at most 2^32 - 2 per call"));
        }
        let s = self.sack_row.len();
        if self.sack_left.len() != s || self.sack_right.len() != s {
            return Err("sack_row, sack_left and sack_right differ in length".into());
        }
        if let Some(&r) = self.sack_row.iter().find(|&&r| r < 0 || r as usize >= n) {
            return Err(format!("sack row {r} is not a row (of {n})"));
        }
        Ok(n)
    }

    fn packet(&self, i: usize) -> Packet {
        // endpoint = address id · 65536 + port (int64, as the pair key has always been)
        let ep = |id: &Ints, port: &Ints| (id.at(i) << 16).wrapping_add(port.at(i));
        Packet {
            src: ep(&self.src, &self.sport),
            dst: ep(&self.dst, &self.dport),
            tcp: self.tcp[i],
            udp: self.udp[i],
            flags: self.flags[i],
            seq: self.seq[i],
            ack: self.ack[i],
            wscale: self.wscale_ok[i].then_some(self.wscale[i]),
        }
    }
}

/// Numbers the connections of `c` and makes its TCP numbers relative (see the module doc).
pub fn number(c: &Columns) -> Result<Out, String> {
    let n = c.validate()?;
    let mut t = Table::default();
    let mut out = Out {
        flow: vec![0; n],
        dir: vec![0; n],
        seq: vec![0; n],
        ack: vec![0; n],
        win: (0..n).map(|i| c.win.at(i)).collect(),
        ..Out::default()
    };
    for i in 0..n {
        if !c.l4[i] {
            continue;
        }
        let nb = t.on_packet(&c.packet(i));
        out.flow[i] = nb.flow;
        out.dir[i] = i8::from(nb.side); // the side until the directions are settled
        out.seq[i] = nb.seq;
        out.ack[i] = nb.ack.unwrap_or(0);
    }
    out.nflows = t.len();
    if t.is_empty() {
        return Ok(out);
    }
    let s = t.settle();
    for i in 0..n {
        if !c.l4[i] {
            continue;
        }
        let (f, side) = (out.flow[i], out.dir[i] == 1);
        out.dir[i] = s.dir(f, side);
        let sh = s.shift(f, side);
        if c.tcp[i] && c.flags[i] & SYN == 0 && sh > 0 {
            out.win[i] = out.win[i].wrapping_shl(u32::from(sh));
        }
    }
    let (sl, sr) = sack_edges(c, &out, &s);
    out.sack_left = sl;
    out.sack_right = sr;
    Ok(out)
}

/// SACK edges relative to the other direction's base (the ACK's), in the ACK's lap.
fn sack_edges(c: &Columns, out: &Out, s: &Settled) -> (Vec<i64>, Vec<i64>) {
    let n = c.l4.len();
    // A direction without a base can only be reached by a SACK on a packet without the ACK
    // flag whose other side never showed; it falls back to the last row's sequence number
    // (the earlier numpy code's choice, kept so that no frame changes), any base being as
    // meaningless as another there.
    let last = n - 1;
    let fallback = c.seq[last].wrapping_sub(u32::from(c.flags[last] & SYN == 0));
    let mut left = Vec::with_capacity(c.sack_row.len());
    let mut right = Vec::with_capacity(c.sack_row.len());
    for (k, &r) in c.sack_row.iter().enumerate() {
        let r = r as usize;
        let conn = c.l4[r] && c.tcp[r];
        // rows outside a connection count as direction 0 of connection 0 (their blocks
        // cannot mean anything; this keeps the column defined)
        let (f, d) = if conn {
            (out.flow[r], out.dir[r])
        } else {
            (0, 0)
        };
        let base = s.base(f, 1 - d).unwrap_or(fallback);
        let ack = if conn { out.ack[r] } else { 0 };
        left.push(sack_edge(c.sack_left[k], base, ack));
        right.push(sack_edge(c.sack_right[k], base, ack));
    }
    (left, right)
}
