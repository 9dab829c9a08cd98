//! The summary from per-connection state (issue 21): a capture streamed through the
//! connection table and each connection's per-packet passes, never held as columns.
//!
//! [`source`] reads the file (pcap or pcapng) in bounded batches on a reader thread (the
//! capture reader's own container walk, decoder, warnings and default limits,
//! `crate::capture`), [`drive`] makes two passes over it: the
//! first numbers the connections and settles what only the whole trace tells
//! (`state::conn::Table::settle`: directions and window scales), the second feeds every TCP
//! packet to its connection's state (sequence state, per-direction counts, RTT samples) and
//! collects the per-direction summaries. Memory: the batches in flight, the per-connection
//! state and each direction's RTT samples (for the quantiles). `py.rs` is `_core.stream_summary`.

pub mod drive;
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
