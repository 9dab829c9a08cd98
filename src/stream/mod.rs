//! The summary from per-connection state (issue 21): a capture streamed through the
//! connection table and each connection's per-packet passes, never held as columns.
//!
//! [`source`] reads the file (pcap or pcapng) in bounded batches on a reader thread (the
//! capture reader's own container walk, decoder, warnings and default limits,
//! `crate::capture`; the file read once per pass, forward, [`ahead`]; in pass 2 the
//! connections numbered there too, [`number`]), [`drive`] makes two passes over it: the
//! first numbers the connections and settles what only the whole trace tells
//! (`state::conn::Table::settle`: directions and window scales; [`conn::Scout`]: each
//! direction's smoothed-RTT method and each connection's out-of-order window), the second
//! feeds every TCP packet to its connection's state ([`conn::Conn`]: sequence state,
//! per-direction counts, RTT samples, the RFC 6298 estimate, retransmissions, bytes in flight,
//! [`stalls`], and [`fstats::Stage`]: the limit shares, windows, ACK timing, duplicate ACKs and
//! vantage point, whose data extents pass 1 settles in [`fstats::Scout`]; [`cwnd`]: what the
//! cwnd estimate reads, run per batch of connections as `analyze` cuts them once the batch's
//! last packet is fed, [`cwndbatch`]) and collects the per-direction summaries; pass 2's
//! connections are spread over the cores by `analyze`'s batches ([`shards`]). Memory: the
//! batches in flight and per-connection state that, but for the cwnd stage's log, does not
//! grow with the connection's length, because pass 1 also learns what pass 2 will be
//! asked: the starts each direction's retransmission candidates re-send (the retransmission
//! log keeps only those, `retrans::candidate`), how far the TSval echoes fall back (the RTT
//! table keeps only the TSvals an echo can still reach, `rtt::Connection::keeping`) and the
//! buckets of the RTT samples (the percentiles and the vantage point's median keep only the
//! values at their ranks, `flowstats::ranks`); the stalls stage keeps 40 B per stall (with its cause, for the
//! account in words: [`account`], which also keeps 17 B per retransmission); the cwnd
//! stage keeps about 42 B per data segment of a direction until its batch is run
//! ([`cwndlive`]). Every
//! answer is the one keeping everything gives. `py.rs` is
//! `_core.stream_summary`.

/// Appends one output column to `stream_summary`'s dict over the rows `all` (a slice of
/// references): `one` value per row, or the rows' lists joined (`flat`).
macro_rules! out_col {
    ($d:expr, $all:expr, one $name:expr, $s:ident => $e:expr) => {
        $d.set_item($name, $all.iter().map(|&$s| $e).collect::<Vec<_>>())?
    };
    ($d:expr, $all:expr, flat $name:expr, $s:ident => $e:expr) => {
        $d.set_item($name, $all.iter().flat_map(|&$s| $e).collect::<Vec<_>>())?
    };
}

pub mod account;
pub mod ahead;
pub mod conn;
pub mod cwnd;
pub mod cwndbatch;
pub mod cwndest;
pub mod cwndgo;
pub mod cwndlive;
pub mod cwndrun;
pub mod cwndstory;
pub mod cwndview;
pub mod drive;
pub mod facts;
pub mod flight;
pub mod fstats;
mod held;
pub mod number;
pub mod py;
pub mod row;
pub mod shards;
pub mod source;
pub mod stalls;

#[cfg(test)]
pub(crate) mod tests;

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
