//! The summary from per-connection state (issue 21): a capture streamed through the
//! connection table and each connection's per-packet passes, never held as columns.
//!
//! [`source`] reads the file (pcap or pcapng) in bounded batches on a reader thread (the
//! capture reader's own container walk, decoder, warnings and default limits,
//! `crate::capture`), [`drive`] makes two passes over it: the
//! first numbers the connections and settles what only the whole trace tells
//! (`state::conn::Table::settle`: directions and window scales; [`conn::Scout`]: each
//! direction's smoothed-RTT method and each connection's out-of-order window), the second
//! feeds every TCP packet to its connection's state ([`conn::Conn`]: sequence state,
//! per-direction counts, RTT samples, the RFC 6298 estimate, retransmissions, and
//! [`fstats::Stage`]: the limit shares, windows, ACK timing, duplicate ACKs and vantage point,
//! whose data extents pass 1 settles in [`fstats::Scout`]) and collects the per-direction
//! summaries. Memory: the batches in flight, the per-connection state, each
//! direction's RTT samples (for the quantiles, 8 B each) and the retransmission rules' log of
//! the sequence starts each direction sent (`retrans::SentLog`, 24 B per data segment: a
//! re-send is compared with the previous send of its start, however old). `py.rs` is
//! `_core.stream_summary`.

pub mod conn;
pub mod drive;
pub mod fstats;
pub mod py;
pub mod source;

#[cfg(test)]
mod tests;

/// Why a capture cannot be streamed: which `tracekit.errors` class, and the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub kind: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}
