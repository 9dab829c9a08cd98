//! Capture decoding: pcap/pcapng records -> link -> IP (with fragment reassembly) -> TCP/UDP rows.
//!
//! Pure Rust, no Python: [`read`] takes the file's bytes and returns the per-row columns
//! (what `tracekit.parsers._decode.Rows` holds), the warnings in the order the reader would
//! log them, and the container's metadata; or a located [`Failure`]. `py.rs` turns these into
//! numpy arrays and dicts. Nothing here indexes input bytes without a bounds check, so damaged
//! input cannot panic (the Python entry point still catches unwinds, as a last guard).

pub mod addrs;
pub mod bytes;
pub mod erf;
pub mod ip;
pub mod iplen;
pub mod l3;
pub mod link;
pub mod linkx;
pub mod ngbatch;
pub mod ngiface;
pub mod ngpkt;
pub mod ngscan;
pub mod pcap;
pub mod pcapng;
pub mod peek;
pub mod py;
pub mod reasm;
pub mod rows;
pub mod snoop;
pub mod spans;
pub mod tally;
pub mod tcp;
pub mod timeback;
pub mod tunnel;

pub use ip::Rows;

/// The resource limits of `tracekit.limits.Limits` the reader applies.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_caplen: u64,
    pub max_block_bytes: u64,
    pub max_packets: u64,
    pub max_frag_datagrams: usize,
    pub max_frag_bytes: i64,
    pub frag_timeout_s: f64,
    /// `frag_timeout_s` as Python's `:g` prints it (for the W-FRAG-LIMIT message).
    pub frag_timeout_text: String,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_caplen: 262_144,
            max_block_bytes: 16 << 20,
            max_packets: 50_000_000,
            max_frag_datagrams: 4096,
            max_frag_bytes: 4 << 20,
            frag_timeout_s: 30.0,
            frag_timeout_text: "30".into(),
        }
    }
}

/// One warning as `tracekit.trace.WarningLog.add` takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Warn {
    pub code: &'static str,
    pub message: String,
    pub count: u64,
    pub offset: Option<u64>,
    pub frame: Option<u64>,
    pub hint: Option<&'static str>,
}

impl Warn {
    pub fn new(code: &'static str, message: impl Into<String>, count: u64) -> Warn {
        Warn {
            code,
            message: message.into(),
            count,
            offset: None,
            frame: None,
            hint: None,
        }
    }
    pub fn at(mut self, offset: Option<u64>, frame: Option<u64>) -> Warn {
        self.offset = offset;
        self.frame = frame;
        self
    }
    pub fn hint(mut self, hint: &'static str) -> Warn {
        self.hint = Some(hint);
        self
    }
}

/// Which `TracekitError` subclass a failure becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Corrupt,
    Unknown,
    Limit,
}

/// A located error; `warnings` are those logged before it (strict mode raises the first).
#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    pub message: String,
    pub offset: Option<u64>,
    pub frame: Option<u64>,
    pub hint: Option<String>,
    pub warnings: Vec<Warn>,
}

impl Failure {
    pub fn new(kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            offset: None,
            frame: None,
            hint: None,
            warnings: Vec::new(),
        }
    }
    pub fn corrupt(message: impl Into<String>, offset: u64) -> Failure {
        Failure::new(Kind::Corrupt, message).at(Some(offset), None)
    }
    pub fn at(mut self, offset: Option<u64>, frame: Option<u64>) -> Failure {
        self.offset = offset;
        self.frame = frame;
        self
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }
}

/// Per-record facts the container readers give the decoder (frame numbers are 1, 2, ...).
#[derive(Default, Debug)]
pub struct Records {
    pub data_off: Vec<u64>,
    pub caplen: Vec<u32>,
    pub origlen: Vec<u32>,
    pub ts_ns: Vec<i64>,
    /// One link type per record, or empty when `linktype` applies to all.
    pub linktypes: Vec<u32>,
    pub linktype: u32,
    /// The file's records before these (a batch of a streaming reader; else 0).
    pub first: usize,
}

impl Records {
    pub fn len(&self) -> usize {
        self.data_off.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data_off.is_empty()
    }
    fn linktype_of(&self, i: usize) -> u32 {
        self.linktypes.get(i).copied().unwrap_or(self.linktype)
    }
}

/// An option value or name as the file holds it (Python makes it printable).
pub type Text = Option<Vec<u8>>;

/// The first section header's version, application, OS and hardware.
pub type Shb = (u16, u16, Text, Text, Text);

/// What an IDB says about one interface.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    pub linktype: u32,
    pub snaplen: u32,
    pub tsresol: u8,
    pub tsoffset: i64,
    pub fcslen: u8,
    pub name: Text,
    pub section: usize,
}

/// Container metadata.
#[derive(Clone, Debug)]
pub enum Meta {
    Pcap {
        linktype: u32,
        snaplen: u32,
        nanos: bool,
        version: (u16, u16),
    },
    Pcapng {
        sections: usize,
        interfaces: Vec<Interface>,
        shb: Option<Shb>,
        blocks: u64,
        simple: u64,
        obsolete: u64,
        used: Vec<u32>,
    },
}

/// A read capture: rows, warnings in log order, frame-less counts, metadata.
#[derive(Debug)]
pub struct Capture {
    pub meta: Meta,
    /// Link types the decoder lacks: the caller reads the file through tshark instead
    /// (rows are then empty and `warnings` holds those logged before that decision).
    pub unsupported: Vec<u32>,
    pub rows: Rows,
    /// The rows' address ids.
    pub ids: addrs::Ids,
    pub warnings: Vec<Warn>,
    pub counts: Vec<(&'static str, u64)>,
    pub records: u64,
    pub t0_ns: Option<i64>,
}

/// The capture formats [`read`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pcap,
    Pcapng,
    Snoop,
    Erf,
    Peek,
}

/// Read a whole pcap or pcapng file.
pub fn read(
    src: &mut dyn bytes::Source,
    format: Format,
    limits: &Limits,
) -> Result<Capture, Failure> {
    read_in_spans(src, format, limits, spans::SPAN)
}

/// [`read`] with the records decoded in spans of `span` (the fuzz target compares small spans,
/// which take the parallel path on small inputs, with the one-span read).
pub fn read_in_spans(
    src: &mut dyn bytes::Source,
    format: Format,
    limits: &Limits,
    span: usize,
) -> Result<Capture, Failure> {
    let mut warnings = Vec::new();
    let (recs, meta) = match format {
        Format::Pcap => pcap::read(src, limits, &mut warnings),
        Format::Pcapng => pcapng::read(src, limits, &mut warnings),
        Format::Snoop => snoop::read(src, limits, &mut warnings),
        Format::Erf => erf::read(src, limits, &mut warnings),
        Format::Peek => peek::read(src, limits, &mut warnings),
    }
    .map_err(|mut f| {
        f.warnings = std::mem::take(&mut warnings);
        f
    })?;
    let used: Vec<u32> = match &meta {
        Meta::Pcap { linktype, .. } => vec![*linktype],
        Meta::Pcapng { used, .. } => used.clone(),
    };
    let unsupported: Vec<u32> = used
        .iter()
        .copied()
        .filter(|lt| link::name(*lt).is_none())
        .collect();
    if !unsupported.is_empty() {
        return Ok(Capture {
            meta,
            unsupported,
            rows: Rows::default(),
            ids: addrs::Ids::default(),
            warnings,
            counts: Vec::new(),
            records: recs.len() as u64,
            t0_ns: None,
        });
    }
    let n = recs.len() as u64;
    if n > limits.max_packets {
        let mut f = Failure::new(
            Kind::Limit,
            format!(
                "{} packets, over the limit of {}",
                commas(n),
                commas(limits.max_packets)
            ),
        )
        .hint("raise max_packets in [limits] or split the capture (editcap -c)");
        f.warnings = warnings;
        return Err(f);
    }
    let t0 = recs.ts_ns.first().copied();
    let mut back = timeback::TimeBack::default();
    recs.ts_ns.iter().for_each(|&t| back.on(t));
    let mut counts = Vec::new();
    let rows = ip::decode_in(
        src,
        &recs,
        t0.unwrap_or(0),
        limits,
        &mut warnings,
        &mut counts,
        span,
    );
    drop(recs); // before the ids are made: the peak stays that of the decode
    let ids = addrs::ids(&rows);
    warnings.extend(back.warning());
    Ok(Capture {
        meta,
        unsupported,
        rows,
        ids,
        warnings,
        counts,
        records: n,
        t0_ns: t0,
    })
}

/// `n` with thousands separators, as Python's `f"{n:,}"`.
pub fn commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_group_thousands() {
        assert_eq!(commas(0), "0");
        assert_eq!(commas(999), "999");
        assert_eq!(commas(1000), "1,000");
        assert_eq!(commas(262144), "262,144");
        assert_eq!(commas(1234567), "1,234,567");
    }
}
