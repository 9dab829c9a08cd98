//! What pass 1 of the streamed summary settles of each direction for the cwnd estimate
//! ([`CwndFacts`]), which the estimate's rows learn only at the direction's end: `conn::Scout`
//! walks each side with [`CwndWalk`].

use super::conn::Pk;
use crate::state::cwnd::acks::Acks;
use crate::state::seq::{ACK, MISSING};

/// What pass 1 settles of a direction for the cwnd estimate, which `cwnd::rows::DirRows` learns
/// only at the direction's end (a stream that runs the estimate as the rows come needs them from
/// the first row): Karn's minimum RTT (RFC 6298 §3) over the segments that start at or above the
/// highest byte sent before them (NaN: none), the lowest data byte (`MISSING`: no data) and the
/// largest payload (the segment size where no MSS option is seen). Where the direction's times
/// never fall these are `DirRows`' own values unless the retransmission analysis names a segment
/// that starts above everything sent before it (`docs/architecture.md`, "Why pass 1 must settle
/// the minimum RTT").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwndFacts {
    pub min_rtt: f64,
    pub low: i64,
    pub top: i64,
}

impl CwndFacts {
    /// Nothing known (no pass 1).
    pub const NONE: CwndFacts = CwndFacts {
        min_rtt: f64::NAN,
        low: MISSING,
        top: -1,
    };
}

/// The cwnd estimate's walk over one connection's sides (`cwndlive::Live::feed`'s: a data
/// segment, payload > 0, is its side's; an ACK, the flag and a number, reaches the other side's
/// sender), without the retransmission analysis' verdicts: a re-send is a segment that starts
/// below the highest byte sent before it.
pub struct CwndWalk {
    karn: [Acks; 2],
    low: [i64; 2],
    top: [i64; 2],
}

impl Default for CwndWalk {
    fn default() -> Self {
        CwndWalk {
            karn: [Acks::walk(), Acks::walk()],
            low: [i64::MAX; 2],
            top: [0; 2],
        }
    }
}

impl CwndWalk {
    /// Packet `p` of side `s`.
    pub fn on_packet(&mut self, s: usize, p: &Pk) {
        if p.len > 0 {
            self.karn[s].on_data(p.time, p.seq, p.seq.wrapping_add(p.len), false);
            self.low[s] = self.low[s].min(p.seq);
            self.top[s] = self.top[s].max(p.len);
        }
        if p.flags & ACK != 0 && p.ack != MISSING {
            self.karn[1 - s].on_ack(p.time, p.ack);
        }
    }

    /// Side `s`'s facts.
    pub fn facts(&self, s: usize) -> CwndFacts {
        CwndFacts {
            min_rtt: self.karn[s].min_rtt(false),
            low: if self.top[s] > 0 {
                self.low[s]
            } else {
                MISSING
            },
            top: self.top[s],
        }
    }
}
