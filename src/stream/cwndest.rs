//! The cwnd stage's estimate over the columns of a logged batch (`cwnd::run`: a NaN or infinite
//! time): the frames path's own `estimate` and reductions pass (`cwnd::events`) over
//! `rows_frames::Built`, and the account's cwnd events of each direction (`cwndstory`, whose
//! story needs numpy's search over a whole series once a time is NaN). A batch fed live runs
//! the same rules a stretch at a time (`cwndrun`).

use super::cwnd::{DirIn, Est};
use super::cwndstory::{of_batch, Story};
use crate::state::cwnd::estimate::{estimate, EstRows};
use crate::state::cwnd::events::{reductions, Columns, Evidence, SOURCE_ESTIMATE};
use crate::state::cwnd::rows_frames::Built;
use crate::state::cwnd::{spans, RECOVERY};
use std::borrow::Cow;
use std::collections::HashMap;

/// The estimate's frame as `_core_pass` reads it and the reductions pass over it (`cwnd.py`'s
/// `reductions_and_stats` over the chosen series: a capture's are the estimate's): each
/// direction's statistics, by `dirs`' index.
pub fn stats(
    b: &Built,
    dirs: &[DirIn],
    ev: &Evidence,
) -> Result<Vec<Option<(Est, Story)>>, String> {
    let (lo, hi) = spans(b.rows.iter().map(|r| r.len()));
    let (alo, ahi) = spans(b.acks.iter().map(|a| a.0.len()));
    // a retransmitted SYN (it sets ssthresh only on ns-2, never a capture's stack: `estimate`)
    let syn_lost: Vec<bool> = b.rows.iter().map(|x| x.syns > 1).collect();
    // the ACK columns of every direction, one after another (one direction's: borrowed)
    let (a_time, a_una): (Cow<[f64]>, Cow<[i64]>) = match &b.acks[..] {
        [(t, u)] => (Cow::Borrowed(t), Cow::Borrowed(u)),
        all => (
            all.iter().flat_map(|a| a.0.iter().copied()).collect(),
            all.iter().flat_map(|a| a.1.iter().copied()).collect(),
        ),
    };
    let k = &b.cols;
    let r = EstRows {
        time: &k.time,
        seq_end: &k.seq_end,
        pay: &k.pay,
        una: &k.una,
        dup: &k.dup,
        new_ack: &k.new_ack,
        ack_t: &k.ack_t,
        sack_at: &k.sack.0,
        sack_val: &k.sack.1,
        sack_pos: &k.sack.2,
        seg_rows: &k.seg.0,
        seg_at: &k.seg.1,
        retx_rows: &k.retx.0,
        retx_hi: &k.retx.1,
        retx_timeout: &k.retx.2,
        a_time: &a_time,
        a_una: &a_una,
        lo: &lo,
        hi: &hi,
        alo: &alo,
        ahi: &ahi,
        mss: &b.mss,
        min_rtt: &b.min_rtt,
        syn_lost: &syn_lost,
    };
    // a capture's stack holds ssthresh on a backed-off expiry (RFC 5681 §3.1: Linux; only
    // ns-2 halves it every time, `cwnd.py`'s `hold_backoff`)
    let e = estimate(&r, true, true)?;
    let n = k.time.len();
    let (mut flow, mut dir) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (d, (&l, &h)) in lo.iter().zip(&hi).enumerate() {
        let x = dirs
            .get(d)
            .ok_or("a direction of the rows is not a data direction")?;
        let m = usize::try_from(h - l).unwrap_or(0);
        flow.extend(std::iter::repeat_n(i64::from(x.flow), m));
        dir.extend(std::iter::repeat_n(i64::from(x.dir), m));
    }
    let source = vec![SOURCE_ESTIMATE; n];
    // (the frame's ssthresh is null where NaN: none yet)
    let st_ok: Vec<bool> = e.ssthresh.iter().map(|v| !v.is_nan()).collect();
    let recovery: Vec<bool> = e.phase.iter().map(|&p| p == RECOVERY).collect();
    let cols = Columns {
        flow: &flow,
        dir: &dir,
        source: &source,
        time: &k.time,
        cwnd: &e.est,
        cwnd_ok: &[],
        ssthresh: &e.ssthresh,
        ssthresh_ok: &st_ok,
        recovery: &recovery,
    };
    // a reduction is a loss event when evidence lies within the direction's least RTT of it
    let windows: HashMap<(i64, i64), f64> = dirs
        .iter()
        .map(|d| ((i64::from(d.flow), i64::from(d.dir)), d.tol))
        .collect();
    let found = reductions(&cols, ev, &windows)?;
    // the account's events of each direction's series (`story`)
    let mut told = of_batch(
        &k.time,
        &e.est,
        &e.phase,
        (&lo, &hi),
        (&found.rows, &found.loss),
    );
    let mut out = vec![None; dirs.len()];
    for (&first, s) in found.series.iter().zip(&found.stats) {
        let d = hi.partition_point(|&h| h <= first as i64);
        let story = told.get_mut(d).and_then(Option::take).unwrap_or_default();
        if let Some(slot) = out.get_mut(d) {
            let est = Est {
                max_cwnd: s.max_cwnd.get(),
                loss_events: s.losses,
                facts: None,
                live: false,
            };
            *slot = Some((est, story));
        }
    }
    Ok(out)
}
