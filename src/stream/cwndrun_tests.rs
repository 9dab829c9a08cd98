//! The stretch-at-a-time run against the columns' (`cwndlive::built`, `cwndest::stats`) on the
//! same rows: random batches of connections whose senders lose, re-send (named or not, some by
//! the timer), get SACKs and duplicate ACKs, at times that tie.

use super::*;
use crate::state::cwnd::tests_loss::next;
use crate::state::seq::{ACK, MISSING, SYN};
use crate::stream::conn::Pk;
use crate::stream::cwnd::DirIn;
use crate::stream::cwndest::stats;
use crate::stream::cwndlive::{built, DirLive, Live};
use crate::stream::facts::CwndFacts;
use crate::stream::tests::pk;

/// One generated packet: its direction, the packet, named a retransmission, SACKed bytes, the
/// other direction's segments its blocks SACKed first.
type Gen = (usize, Pk, bool, i64, Vec<u32>);

/// A connection of `n` steps from packet row `row` and time `t`: direction 0 sends data (and
/// direction 1 too when `both`), each re-sending below its highest byte now and then; the
/// other direction's ACKs advance, repeat, SACK segments. A third of the connections start
/// without a handshake, and in some direction 0 sends no ACK flag (direction 1's sender never
/// hears one).
fn connection(s: &mut u64, row: &mut u32, t: &mut f64, n: usize, both: bool) -> Vec<Gen> {
    let base = *row;
    let mut out: Vec<Gen> = Vec::new();
    let (mut hi, mut una) = ([1i64; 2], [1i64; 2]);
    let mut firsts: [Vec<u32>; 2] = Default::default();
    if !next(s).is_multiple_of(3) {
        out.push((0, pk(base, *t, (0, 0), SYN, MISSING), false, 0, vec![]));
        out.push((1, pk(base + 1, *t, (0, 0), SYN | ACK, 1), false, 0, vec![]));
    }
    let deaf = both && next(s).is_multiple_of(3);
    let ack_of = |d: usize, v: i64| {
        if d == 0 && deaf {
            (0, MISSING)
        } else {
            (ACK, v)
        }
    };
    for _ in 0..n {
        let r = base + out.len() as u32;
        // (ties: a fifth of the steps take no time)
        *t += (next(s) % 5) as f64 * 2e-4 * (next(s) % 3) as f64;
        let d = if both && next(s).is_multiple_of(3) {
            1
        } else {
            0
        };
        let o = 1 - d;
        if next(s).is_multiple_of(2) {
            // data: new, or a re-send from snd_una (named by the analysis, mostly)
            let resend = hi[d] > una[d] && next(s).is_multiple_of(5);
            let seq = if resend { una[d] } else { hi[d] };
            let len = if next(s).is_multiple_of(7) { 40 } else { 100 };
            let named = resend && !next(s).is_multiple_of(4);
            let sacked = if hi[d] > una[d] + 200 && next(s).is_multiple_of(3) {
                100
            } else {
                0
            };
            if !resend {
                firsts[d].push(r);
            }
            hi[d] = hi[d].max(seq + len);
            let (f, a) = ack_of(d, una[o]);
            let p = pk(r, *t, (seq, len), f, a);
            out.push((d, p, named, sacked, vec![]));
        } else {
            // an ACK of direction d's data: it advances, or repeats; it may SACK a segment
            if !next(s).is_multiple_of(3) {
                una[d] = (una[d] + (next(s) % 3) as i64 * 100).min(hi[d]);
            }
            // (a scoreboard names a segment once: `sack::Scoreboard::newly_sacked`)
            let k = firsts[d].len();
            let newly = if k > 2 && next(s).is_multiple_of(4) {
                vec![firsts[d].swap_remove((next(s) as usize) % k)]
            } else {
                vec![]
            };
            let (f, a) = ack_of(o, una[d]);
            let p = pk(r, *t, (hi[o], 0), f, a);
            out.push((o, p, false, 0, newly));
        }
    }
    *row = base + out.len() as u32;
    out
}

/// Feeds one connection's packets; returns its data directions' rows.
fn feed(g: &[Gen]) -> [Option<DirLive>; 2] {
    let mut data = [0i64; 2];
    g.iter()
        .filter(|x| x.1.len > 0)
        .for_each(|x| data[x.0] += 1);
    let mut l = Live::new(g.len(), data, 0.0);
    for (d, p, named, sacked, newly) in g {
        l.on_packet((*d, p), (*named, None), -1, *sacked, newly);
    }
    l.flush();
    [l.take(0), l.take(1)]
}

#[test]
fn a_stretch_at_a_time_equals_the_columns_on_random_batches() {
    let mut s = 20_261_129u64;
    let (mut events, mut cuts) = (0u32, 0usize);
    for case in 0..400 {
        let (mut row, mut t) = (0u32, 0.0);
        let conns = 1 + (next(&mut s) % 3) as usize;
        let (mut live, mut dirs, mut times) = (Vec::new(), Vec::new(), Vec::new());
        for flow in 0..conns as u32 {
            let n = 5 + (next(&mut s) % 300) as usize;
            let both = next(&mut s).is_multiple_of(2);
            let g = connection(&mut s, &mut row, &mut t, n, both);
            // the loss evidence: the named re-sends; the timer sent a third of them
            let named: Vec<&Gen> = g.iter().filter(|x| x.2).collect();
            for x in &named {
                times.push((i64::from(flow), x.0 as i64, x.1.time));
            }
            let to: [Vec<u32>; 2] = [0, 1].map(|d| {
                let v = named.iter().filter(|x| x.0 == d).map(|x| x.1.row);
                v.filter(|r| r % 3 == 0).collect()
            });
            for (d, x) in feed(&g).into_iter().enumerate() {
                let Some(x) = x else { continue };
                let mss = if next(&mut s).is_multiple_of(4) {
                    f64::NAN
                } else {
                    100.0
                };
                let tol = (next(&mut s) % 20) as f64 * 1e-3;
                dirs.push(DirIn {
                    flow,
                    dir: d as i8,
                    mss,
                    tol,
                });
                live.push((x, to[d].clone()));
            }
        }
        let ev = Evidence::new(
            &times.iter().map(|x| x.0).collect::<Vec<_>>(),
            &times.iter().map(|x| x.1).collect::<Vec<_>>(),
            &times.iter().map(|x| x.2).collect::<Vec<_>>(),
        );
        let mss: Vec<f64> = dirs.iter().map(|d| d.mss).collect();
        let want = match built(live.clone().into_iter(), dirs.len(), &mss) {
            None => vec![None; dirs.len()],
            Some(b) => stats(&b, &dirs, &ev).expect("the columns run"),
        };
        let got = run(live.into_iter(), &dirs, &ev).expect("the stretches run");
        // (NaN fields: compared as printed)
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "case {case}");
        for (e, st) in got.iter().flatten() {
            events += e.loss_events;
            cuts += st.told.cuts.len();
        }
    }
    // (the cases do reduce cwnd, and the story tells of it)
    assert!(
        events > 400 && cuts > 400,
        "{events} loss events, {cuts} cuts"
    );
}

#[test]
fn pass_one_settles_the_facts_the_rows_learn_at_their_end() {
    use crate::stream::conn::Scout;
    let mut s = 20_261_130u64;
    let mut held = 0;
    for case in 0..300 {
        let (mut row, mut t) = (0u32, 0.0);
        let n = 5 + (next(&mut s) % 300) as usize;
        let both = next(&mut s).is_multiple_of(2);
        let g = connection(&mut s, &mut row, &mut t, n, both);
        let mut scout = Scout::default();
        for (d, p, ..) in &g {
            scout.on_packet(*d, p);
        }
        let facts = scout.settle(0).cwnd;
        for (d, x) in feed(&g).into_iter().enumerate() {
            let Some(mut x) = x else { continue };
            // (the generator names only re-sends below the highest byte sent: the walks agree)
            x.facts = facts[d];
            let v = View::new(x.clone(), &[]).expect("rows in order");
            let mr = v.b.min_rtt(false);
            assert_eq!(v.facts_hold(mr), Some(true), "case {case} direction {d}");
            // a fact that differs is told
            x.facts.top += 1;
            let w = View::new(x, &[]).expect("rows in order");
            assert_eq!(w.facts_hold(mr), Some(false));
            held += 1;
        }
    }
    assert!(held > 300, "{held} directions");
}

/// One connection's packets fed to a [`Live`]: run as the rows come where `facts` are given
/// (each named re-send the first of its episode, a timeout where `to` says), else held.
fn fed(g: &[Gen], facts: Option<[CwndFacts; 2]>, to: &impl Fn(&Gen) -> bool) -> Vec<DirLive> {
    let mut data = [0i64; 2];
    g.iter()
        .filter(|x| x.1.len > 0)
        .for_each(|x| data[x.0] += 1);
    let mut l = Live::new(g.len(), data, 0.0);
    if let Some(f) = facts {
        l = l.with(f);
    }
    for x in g {
        let mark = (facts.is_some() && x.2 && x.1.len > 0).then(|| to(x));
        l.on_packet((x.0, &x.1), (x.2, mark), x.1.mss, x.3, &x.4);
    }
    l.flush();
    (0..2).filter_map(|d| l.take(d)).collect()
}

#[test]
fn a_live_run_equals_the_held_rows_on_random_connections() {
    use crate::stream::conn::Scout;
    let mut s = 20_261_131u64;
    let (mut live, mut cut, mut refused) = (0, 0, 0);
    for case in 0..400 {
        let (mut row, mut t) = (0u32, 0.0);
        let n = 20 + (next(&mut s) % 400) as usize;
        let both = next(&mut s).is_multiple_of(2);
        let g = connection(&mut s, &mut row, &mut t, n, both);
        let mut scout = Scout::default();
        g.iter().for_each(|x| scout.on_packet(x.0, &x.1));
        let facts = scout.settle(0).cwnd;
        let to = |x: &Gen| x.1.row.is_multiple_of(3);
        let timeouts: [Vec<u32>; 2] = [0, 1].map(|d| {
            let v = g.iter().filter(|x| x.0 == d && x.2 && x.1.len > 0 && to(x));
            v.map(|x| x.1.row).collect()
        });
        let dirs: Vec<DirIn> = (0..2)
            .filter(|&d| g.iter().any(|x| x.0 == d && x.1.len > 0))
            .map(|d| DirIn {
                flow: 0,
                dir: d as i8,
                mss: facts[d].top as f64,
                tol: 0.002,
            })
            .collect();
        let times: Vec<&Gen> = g.iter().filter(|x| x.2 && x.1.len > 0).collect();
        let ev = Evidence::new(
            &vec![0; times.len()],
            &times.iter().map(|x| x.0 as i64).collect::<Vec<_>>(),
            &times.iter().map(|x| x.1.time).collect::<Vec<_>>(),
        );
        let with = |rows: Vec<DirLive>| {
            let it = rows.into_iter().zip(&dirs).map(|(r, x)| {
                let d = x.dir as usize;
                (r, timeouts[d].clone())
            });
            run(it, &dirs, &ev)
        };
        let ran = fed(&g, Some(facts), &to);
        live += ran.iter().filter(|r| r.ran()).count();
        let got = match with(ran) {
            // (a direction that never hears an ACK reads its batch's: those run live are gone)
            Err(e) if e.contains("without ACKs") => {
                refused += 1;
                continue;
            }
            got => got.expect("the live run's facts hold"),
        };
        let want = with(fed(&g, None, &to)).expect("the held rows run");
        assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            let key = |x: &Option<(Est, Story)>| {
                x.as_ref()
                    .map(|(e, s)| format!("{:?} {} {s:?}", e.max_cwnd, e.loss_events))
            };
            assert_eq!(key(a), key(b), "case {case}");
            cut += a.as_ref().map_or(0, |x| x.0.loss_events);
        }
    }
    // (most directions run live, and their estimates do reduce)
    assert!(
        live > 200 && cut > 400,
        "{live} directions run live, {cut} loss events"
    );
    assert!(refused < 100, "{refused} of 400 refused");
}
