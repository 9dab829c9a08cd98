//! The streamed summary's output: a row per direction that carried data, and the values a
//! connection leaves when pass 2 closes it at its last packet (`drive::Pass2::close`).

use super::fstats;
use super::number::Addr;
use crate::state::dirstats::DirStats;
use crate::state::flowstats::summary::RttRow;
use crate::state::seq::MISSING;

/// One direction's row of the summary.
#[derive(Clone, Debug)]
pub struct Row {
    pub flow: u32,
    pub dir: i8,
    pub stats: DirStats,
    /// The connection's handshake RTT (NaN: none).
    pub hs_rtt: f64,
    pub rtt: Option<RttRow>,
    pub retrans: Retrans,
    /// Bytes in flight: max and mean over the data segments with a value (None: no value).
    pub flight: Option<(i64, f64)>,
    /// The stalls' count and time (`stall_count`, `stall_time_s`).
    pub stalls: (i64, f64),
    /// The flow statistics (`fstats`).
    pub fs: fstats::Out,
    pub vantage: Option<crate::state::vantage::Point>,
    /// The connection's first SYN (NaN: none) and whether both SYNs carried a window scale.
    pub syn_t: f64,
    pub window_scaling: bool,
    /// The direction's addresses and ports (the frame's `src`, `sport`, `dst`, `dport`).
    pub src: (Addr, i32),
    pub dst: (Addr, i32),
    /// The cwnd statistics (`cwnd`; None: no estimate row).
    pub cwnd: Option<super::cwnd::Est>,
    /// The account's cwnd events (`cwndstory`; None: no estimate row).
    pub story: Option<super::cwndstory::Story>,
    /// The direction's RFC 6298 (srtt, rttvar) at the end (None: no sample).
    pub srtt: Option<(f64, f64)>,
    /// What the account in words reads of the direction (`account`).
    pub account: super::account::Told,
}

/// One direction's retransmissions (`tracekit.analysis.retrans`): count, re-sent bytes, and
/// the count by kind (fast, rto, spurious).
#[derive(Clone, Copy, Debug, Default)]
pub struct Retrans {
    pub packets: i64,
    pub bytes: i64,
    pub kinds: [i64; 3],
}

impl Row {
    /// Highest data end minus lowest data sequence (0: no data with a sequence number).
    pub fn unique_bytes(&self) -> i64 {
        let s = &self.stats;
        if s.seq_lo == MISSING || s.end_hi == MISSING {
            0
        } else {
            s.end_hi - s.seq_lo
        }
    }
}

/// The summary of a streamed capture: a row per direction that carried data.
#[derive(Debug, Default)]
pub struct Flows {
    pub rows: Vec<Row>,
    /// Packets of pass 2 fed to the per-connection state.
    pub packets: u64,
}

/// A closed connection's values (what its rows read of its state).
pub struct Done {
    pub dirs: [Part; 2],
    pub vantage: Option<crate::state::vantage::Point>,
}

/// One direction of a closed connection.
pub struct Part {
    pub fs: fstats::Out,
    /// The direction's endpoints (address id · 65536 + port).
    pub ends: (i64, i64),
    pub rtt: Option<RttRow>,
    pub retrans: Retrans,
    pub flight: Option<(i64, f64)>,
    pub stalls: (i64, f64),
    /// The direction's RFC 6298 (srtt, rttvar) at the end (None: no sample).
    pub srtt: Option<(f64, f64)>,
    /// The account's inputs (`account`), until the file ends.
    pub account: super::account::Held,
}
