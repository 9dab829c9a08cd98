//! The flight stage of the streamed summary: per connection, Wireshark's bytes in flight at
//! every data segment (`tcp.analysis.bytes_in_flight` with its SACK and SYN/FIN corrections,
//! `state::flight::Corrected`), reduced per direction by the flows accumulator
//! (`flowstats::summary::Summary::on_flight`: the max, and polars' Kahan sum for the mean),
//! beside the SACK scoreboard (RFC 6675 pipe, outstanding data, the first-SACKed segments):
//! `sack::ConnFlight`, the one per-packet step the column pass `tcp_flight_sack` calls. The
//! flight row and the segments each packet SACKed first go to the cwnd stage (`super::cwnd`).
//! The state is Wireshark's list of unacknowledged segments per direction (at most
//! `flight::MAX_UNACKED` each: the rule bounds it), the latest packet's SACK bytes, and the
//! scoreboard's first transmissions not yet cumulatively ACKed (24 B each) and the highest
//! right edge per SACK left edge reported (16 B each, never dropped).

use super::conn::Pk;
use crate::state::flowstats::summary::Summary;
use crate::state::sack::{ConnFlight, FlightRow};

/// One connection's flight state (both directions): Wireshark's value beside the SACK
/// scoreboard (`sack::ConnFlight`), whose marks the cwnd stage reads.
#[derive(Default)]
pub struct Flight {
    conn: ConnFlight,
}

impl Flight {
    /// Packet `p` of direction `d` with its state bits (`seq::Side::on_packet`'s: GAP and
    /// STRAY are read) and SACK blocks (relative edges): a data segment's value goes to its
    /// direction's accumulator `sum` (a segment without one is left out, as the flows table
    /// leaves out the frame's nulls). Returns the data segment's flight row; a segment is
    /// labelled by its row ([`Flight::newly_sacked`]).
    pub fn on_packet(
        &mut self,
        d: usize,
        p: &Pk,
        bits: u8,
        sack: &[(i64, i64)],
        sum: &mut Summary,
    ) -> Option<FlightRow> {
        let (seq, len, fl, ack) = (p.seq, p.len, p.flags, p.ack);
        let r = self.conn.on_packet(d, seq, len, fl, ack, bits, sack, p.row);
        if let Some(r) = r {
            sum.on_flight(r.flight);
        }
        r
    }

    /// The rows of the other direction's segments the latest packet of direction `d` SACKed
    /// first (`sack::Scoreboard::newly_sacked`).
    pub fn newly_sacked(&self, d: usize) -> &[u32] {
        self.conn.newly_sacked(d)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conn::Tcp;
    use super::*;
    use crate::state::sack::{flight_columns, Blocks};
    use crate::state::seq::{Packets, ACK, MISSING};

    /// (dir, seq, len, ack, SACK blocks), every packet with the ACK flag.
    type P<'a> = (usize, i64, i64, i64, &'a [(i64, i64)]);

    /// The stage's max and mean per direction, and the frames path's flight column.
    fn both(pk: &[P]) -> ([Option<(i64, f64)>; 2], Vec<i64>) {
        let (mut tcp, mut st) = (Tcp::default(), Flight::default());
        let mut sum = [Summary::default(), Summary::default()];
        let mut bits = Vec::new();
        for (i, &(d, seq, len, ack, sack)) in pk.iter().enumerate() {
            let p = Pk {
                row: i as u32,
                time: i as f64,
                seq,
                len,
                flags: ACK,
                ack,
                win: 1000,
                ts_val: MISSING,
                ts_ecr: 0,
                ttl: 0,
                mss: -1,
            };
            let b = tcp.on_packet(d, &p).step.bits;
            bits.push(b);
            st.on_packet(d, &p, b, sack, &mut sum[d]);
        }
        let col = |f: fn(&P) -> i64| pk.iter().map(f).collect::<Vec<i64>>();
        let (seq, ack) = (col(|p| p.1), col(|p| p.3));
        let len: Vec<u32> = pk.iter().map(|p| p.2 as u32).collect();
        let dir: Vec<i8> = pk.iter().map(|p| p.0 as i8).collect();
        let (flow, flags, win) = (vec![0; pk.len()], vec![ACK; pk.len()], vec![1000; pk.len()]);
        let p = Packets {
            flow: &flow,
            dir: &dir,
            seq: &seq,
            len: &len,
            flags: &flags,
            ack: &ack,
            win: &win,
        };
        let (mut row, mut left, mut right) = (vec![], vec![], vec![]);
        for (i, x) in pk.iter().enumerate() {
            for &(l, r) in x.4 {
                row.push(i as i64);
                left.push(l);
                right.push(r);
            }
        }
        let bl = Blocks {
            row: &row,
            left: &left,
            right: &right,
        };
        let c = flight_columns(&p, &bits, &bl).expect("valid");
        ([sum[0].flight(), sum[1].flight()], c.flight)
    }

    #[test]
    fn latest_blocks_are_subtracted_as_the_frame_does() {
        const NO: &[(i64, i64)] = &[];
        // 1..1001 lost; the receiver SACKs 1001..3001, then the sender re-sends and goes on
        let mut pk: Vec<P> = (0..4).map(|k| (0, 1 + 1000 * k, 1000, 1, NO)).collect();
        pk.push((1, 1, 0, 1, &[(1001, 3001)]));
        pk.push((0, 4001, 1000, 1, NO));
        pk.push((0, 1, 1000, 1, NO)); // the re-send
        pk.push((1, 1, 0, 5001, NO));
        pk.push((0, 5001, 1000, 5001, NO));
        let (got, frame) = both(&pk);
        // 5000 - 2000 SACKed, then 5000 again (a re-send), then a lone segment
        assert_eq!(frame, vec![1000, 2000, 3000, 4000, 3000, 3000, 1000]);
        let mean = (1000 + 2000 + 3000 + 4000 + 3000 + 3000 + 1000) as f64 / 7.0;
        assert_eq!(got, [Some((4000, mean)), None]);
    }

    #[test]
    fn a_gap_leaves_values_out() {
        const NO: &[(i64, i64)] = &[];
        // a segment that skips bytes: no value until the other side ACKs
        let pk: Vec<P> = vec![
            (0, 1, 100, 1, NO),
            (0, 301, 100, 1, NO),
            (0, 401, 100, 1, NO),
            (1, 1, 0, 101, NO),
            (0, 501, 100, 1, NO),
        ];
        let (got, frame) = both(&pk);
        assert_eq!(frame, vec![100, MISSING, MISSING, 300]);
        assert_eq!(got, [Some((300, 200.0)), None]);
    }
}
