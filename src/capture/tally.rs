//! What the decoder counts (malformed packets, clamped options, ...) and the warnings and
//! counts it makes of them, in the order the reader before the compiled core logged them.

use super::Warn;

/// Something counted while decoding, with where it first happened.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub(super) struct Tally {
    pub(super) n: u64,
    chunk: usize,
    frame: u64,
}

impl Tally {
    pub(super) fn add(&mut self, chunk: usize, frame: u64) {
        if self.n == 0 {
            self.chunk = chunk;
            self.frame = frame;
        }
        self.n += 1;
    }
    /// Count another span's tally too (the first occurrence stays the earliest frame's).
    fn merge(&mut self, o: &Tally) {
        if o.n > 0 && (self.n == 0 || o.frame < self.frame) {
            self.chunk = o.chunk;
            self.frame = o.frame;
        }
        self.n += o.n;
    }
}

/// What the decoder counts; a span of records keeps its own (see [`Tallies::merge`]).
#[derive(Default, Debug, PartialEq)]
pub(super) struct Tallies {
    pub(super) non_ip: Tally,
    pub(super) short: Tally,
    pub(super) version: Tally,
    pub(super) impossible: Tally,
    pub(super) tcp_bad: Tally,
    pub(super) wscale: Tally,
    pub(super) offload: Tally,
    pub(super) beyond: Tally,
    pub(super) protected: Tally,
}

impl Tallies {
    /// Add a later (or earlier) span's counts.
    pub(super) fn merge(&mut self, o: &Tallies) {
        let pairs = [
            (&mut self.non_ip, &o.non_ip),
            (&mut self.short, &o.short),
            (&mut self.version, &o.version),
            (&mut self.impossible, &o.impossible),
            (&mut self.tcp_bad, &o.tcp_bad),
            (&mut self.wscale, &o.wscale),
            (&mut self.offload, &o.offload),
            (&mut self.beyond, &o.beyond),
            (&mut self.protected, &o.protected),
        ];
        for (a, b) in pairs {
            a.merge(b);
        }
    }
}

/// The decoder's warnings and counts, in the order the reader logged them.
pub(super) fn report(t: &Tallies, warnings: &mut Vec<Warn>, counts: &mut Vec<(&'static str, u64)>) {
    let mut items: Vec<(usize, usize, Warn)> = Vec::new();
    let mut add = |k: usize, tl: &Tally, w: Warn| {
        if tl.n > 0 {
            items.push((tl.chunk, k, w));
        }
    };
    add(
        0,
        &t.short,
        Warn::new(
            "W-MALFORMED",
            "packets too short for their IP header (skipped)",
            t.short.n,
        )
        .at(None, Some(t.short.frame)),
    );
    let msg = "packets whose IP version disagrees with their link layer's type (skipped)";
    add(
        1,
        &t.version,
        Warn::new("W-MALFORMED", msg, t.version.n).at(None, Some(t.version.frame)),
    );
    add(
        1,
        &t.impossible,
        Warn::new(
            "W-MALFORMED",
            "packets with impossible IP header/total lengths (kept as 'other')",
            t.impossible.n,
        ),
    );
    add(
        2,
        &t.tcp_bad,
        Warn::new(
            "W-MALFORMED",
            "TCP segments with a bad data offset or cut before the TCP header (kept as 'other')",
            t.tcp_bad.n,
        ),
    );
    add(
        3,
        &t.wscale,
        Warn::new(
            "W-WSCALE",
            "window scale options above 14 (clamped to 14, RFC 7323)",
            t.wscale.n,
        ),
    );
    let msg = "IP total length 0 or a jumbo payload (segmentation offload on the capturing host): length taken from the frame";
    add(
        4,
        &t.offload,
        Warn::new("W-OFFLOAD", msg, t.offload.n).at(None, Some(t.offload.frame)),
    );
    let msg = "TCP segments whose IP length exceeds the frame and that no later sequence or ACK number confirms: payload limited to what the frame can hold";
    add(
        5,
        &t.beyond,
        Warn::new("W-IPLEN", msg, t.beyond.n).at(None, Some(t.beyond.frame)),
    );
    let msg = "protected (encrypted) 802.11 data frames: not decoded (no key), counted as non-IP";
    add(
        6,
        &t.protected,
        Warn::new("W-ENCRYPTED", msg, t.protected.n).at(None, Some(t.protected.frame)),
    );
    items.sort_by_key(|(c, k, _)| (*c, *k));
    warnings.extend(items.into_iter().map(|(_, _, w)| w));
    let mut cs: Vec<(usize, usize, &'static str, u64)> = Vec::new();
    if t.non_ip.n > 0 {
        cs.push((t.non_ip.chunk, 0, "non_ip", t.non_ip.n));
    }
    let bad = Tally {
        n: t.short.n + t.version.n,
        chunk: t.short.chunk.min(t.version.chunk),
        frame: 0,
    };
    let bad_chunk = match (t.short.n, t.version.n) {
        (0, _) => t.version.chunk,
        (_, 0) => t.short.chunk,
        _ => bad.chunk,
    };
    if bad.n > 0 {
        cs.push((bad_chunk, 1, "malformed", bad.n));
    }
    cs.sort_by_key(|c| (c.0, c.1));
    counts.extend(cs.into_iter().map(|c| (c.2, c.3)));
}
