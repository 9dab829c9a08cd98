//! `tracekit._core.stream_summary`: the streamed per-direction summary for Python.

use super::drive::{summary_threads, Flows};
use super::{source, Refusal};
use crate::capture::Warn;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;

/// The refusal as the `tracekit.errors` exception it names, with the file.
fn error(py: Python<'_>, r: &Refusal, path: &std::path::Path) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("tracekit.errors")?.getattr(r.kind)?;
        let kw = PyDict::new(py);
        kw.set_item("path", path.to_string_lossy())?;
        Ok(PyErr::from_value(
            cls.call((r.message.as_str(),), Some(&kw))?,
        ))
    })();
    made.unwrap_or_else(|e| e)
}

/// Per direction that carried data (first-appearance order), as plain lists (no numpy), the columns of
/// `tracekit.analyze(tracekit.read(path)).flows` the streamed passes give: `flow`, `dir`,
/// counts and bytes, `start`/`end`, `mss`/`wscale` (-1: none), `handshake_rtt_s` and the
/// `rtt_*` columns (NaN: none; `rtt_samples` 0 and `rtt_method` None without a sample), the
/// `retrans_*` columns (`rto_floor_s`: the sender's minimum RTO, by default Linux's 0.2 s, what
/// `tracekit.analysis.retrans.rto_floor` takes for a pcap capture); `flight_max_bytes` (-1:
/// none) and `flight_mean_bytes` (NaN: none), Wireshark's bytes in flight at the data segments;
/// `stall_count` and `stall_time_s` (0 and 0.0 without a stall); the limit shares
/// (`limited_*_share`), `max_rwnd_bytes`, `init_window_*`, `dup_acks`, `vantage_point` (None:
/// nothing tells) and `window_scaling` (NaN / -2^62: none); the flows records' inputs
/// `_data_t0`, `_acked_t`, `_ack_t`, `_ack_bytes` and `_syn_t`, from which
/// `tracekit._flowrows` computes `duration`, `transfer_s`, `handshake_s`, the rates
/// and `delivered_bytes`; the cwnd estimate's `max_cwnd_bytes`, `cwnd_source` and
/// `loss_events` (None: no estimate row), `_cwnd_facts` (whether pass 1's facts of the direction,
/// `facts::CwndFacts`, are its rows' own; None: not known), `_cwnd_live` (the estimate ran as the
/// rows came, `cwndgo`) and the models' inputs `_smss` (the largest payload),
/// `_srtt` and `_rttvar` (RFC 6298 at the end; NaN: none), from which `_flowrows.with_models`
/// computes `loss_event_rate` and the Mathis, Padhye and window-limit rates; the account's
/// cwnd events (`tracekit.explain_parts.Series`, `cwndstory::output`: `_story_rows`, `_ca_start`,
/// `_story_runs`, `_reductions` per row, then flat `_run_*`, `_cut_*`, `_red_t`, `_red_backed`);
/// the account's other inputs (`account::output`: every retransmission's count, first and last
/// times and counts by kind, the other direction's zero windows, then flat the retransmissions
/// inside the windows the account's `losses` reads and the stalls with their causes);
/// `sport`, `dport` and the addresses as `_src_v6`/`_dst_v6` (an IPv6 address, else IPv4) and
/// their high and low 64 bits `_src_hi`, `_src_lo`, `_dst_hi`, `_dst_lo`, which
/// `tracekit.parsers._frame.address_text` writes as the frame's `src` and `dst`;
/// `packets_fed`: the TCP packets of connections the passes read; `warnings`: those
/// `_core.read_capture` gives for the file, (code, message, count, offset, frame, hint);
/// `capture`: what `read_capture` gives beside them (`meta`, `counts`, `records`, `t0_ns`),
/// and the decoded `rows` and those captured short (`cut`), from which
/// `tracekit.streamed.trace_block` makes `analyze --json`'s `trace` block, and the account's
/// warnings' inputs (`last_t`, `data`, `data_cut`, `data_cut_t`: `account::RowFacts`).
/// A pcap or pcapng file only: any other container, or a capture the stream cannot read as
/// `tracekit.read` does (or that it refuses, with its default limits), raises the
/// `tracekit.errors` exception that says why, naming the file.
/// `threads`: pass 2's connections are spread over at most this many threads (None: rayon's
/// count, `RAYON_NUM_THREADS` or the cores; `stream::shards`); the answer is the same for any.
#[pyfunction]
#[pyo3(signature = (path, rto_floor_s = 0.2, threads = None))]
pub fn stream_summary(
    py: Python<'_>,
    path: PathBuf,
    rto_floor_s: f64,
    threads: Option<usize>,
) -> PyResult<Bound<'_, PyDict>> {
    let threads = threads.unwrap_or_else(rayon::current_num_threads);
    let got = py.detach(|| {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            source::take_warnings();
            summary_threads(&path, rto_floor_s, threads)
                .map(|f| (f, source::take_facts(), source::take_warnings()))
        }))
    });
    let (f, facts, warnings) = match got {
        Ok(Ok(f)) => f,
        Ok(Err(r)) => return Err(error(py, &r, &path)),
        Err(_) => {
            let r = Refusal::new(
                "CorruptTraceError",
                "internal error while streaming (a bug: please report it with the file)",
            );
            return Err(error(py, &r, &path));
        }
    };
    let d = output(py, f, &warnings)?;
    if let Some(x) = facts {
        d.set_item("capture", capture(py, &x)?)?;
    }
    Ok(d)
}

/// What `read_capture` gives beside its rows and warnings, alike (`meta`, `counts`, `records`,
/// `t0_ns`), and the rows and those with `caplen < size` (`rows`, `cut`).
fn capture<'py>(py: Python<'py>, x: &source::Facts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("meta", crate::capture::py::meta(py, &x.meta)?)?;
    d.set_item("counts", x.counts.clone())?;
    d.set_item("records", x.records)?;
    d.set_item("t0_ns", x.t0_ns)?;
    d.set_item("rows", x.rows)?;
    d.set_item("cut", x.cut)?;
    let a = &x.account;
    d.set_item("last_t", a.last_t)?;
    d.set_item("data", a.data)?;
    d.set_item("data_cut", a.cut.n)?;
    d.set_item("data_cut_t", a.cut.t0)?;
    Ok(d)
}

fn output<'py>(py: Python<'py>, f: Flows, warnings: &[Warn]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("warnings", crate::capture::py::warnings(py, warnings)?)?;
    let rows = &f.rows;
    macro_rules! col {
        ($name:expr, $e:expr) => {
            d.set_item($name, rows.iter().map($e).collect::<Vec<_>>())?;
        };
    }
    col!("flow", |r| r.flow);
    col!("dir", |r| r.dir);
    col!("packets", |r| r.stats.packets);
    col!("data_packets", |r| r.stats.data_packets);
    col!("data_bytes", |r| r.stats.data_bytes);
    col!("wire_bytes", |r| r.stats.wire_bytes);
    col!("unique_bytes", |r| r.unique_bytes());
    col!("start", |r| r.stats.start);
    col!("end", |r| r.stats.end);
    col!("mss", |r| r.stats.mss);
    col!("wscale", |r| r.stats.wscale);
    col!("handshake_rtt_s", |r| r.hs_rtt);
    let nan = f64::NAN;
    col!("rtt_min_s", |r| r.rtt.map_or(nan, |x| x.min));
    col!("rtt_mean_s", |r| r.rtt.map_or(nan, |x| x.mean));
    col!("rtt_p50_s", |r| r.rtt.map_or(nan, |x| x.p50));
    col!("rtt_p95_s", |r| r.rtt.map_or(nan, |x| x.p95));
    col!("rtt_samples", |r| r.rtt.map_or(0, |x| x.n));
    let method: Vec<Option<&str>> = rows
        .iter()
        .map(|r| r.rtt.map(|x| if x.seq { "seq" } else { "ts" }))
        .collect();
    d.set_item("rtt_method", method)?;
    col!("retrans_packets", |r| r.retrans.packets);
    col!("retrans_bytes", |r| r.retrans.bytes);
    col!("retrans_fast", |r| r.retrans.kinds[0]);
    col!("retrans_rto", |r| r.retrans.kinds[1]);
    col!("retrans_spurious", |r| r.retrans.kinds[2]);
    col!("flight_max_bytes", |r| r.flight.map_or(-1, |x| x.0));
    col!("flight_mean_bytes", |r| r.flight.map_or(nan, |x| x.1));
    col!("stall_count", |r| r.stalls.0);
    col!("stall_time_s", |r| r.stalls.1);
    col!("limited_cwnd_share", |r| r.fs.shares[0]);
    col!("limited_rwnd_share", |r| r.fs.shares[1]);
    col!("limited_app_share", |r| r.fs.shares[2]);
    col!("max_rwnd_bytes", |r| r.fs.max_rwnd);
    col!("init_window_bytes", |r| r.fs.iw_bytes);
    col!("init_window_segments", |r| r.fs.iw_segments);
    col!("_data_t0", |r| r.fs.t0);
    col!("_acked_t", |r| r.fs.acked_t);
    col!("_ack_t", |r| r.fs.ack_t);
    col!("_ack_bytes", |r| r.fs.ack_bytes);
    col!("_syn_t", |r| r.syn_t);
    col!("dup_acks", |r| r.fs.dup_acks);
    let point: Vec<Option<&str>> = rows
        .iter()
        .map(|r| {
            r.vantage
                .map(|p| ["sender", "receiver", "middle"][p as usize])
        })
        .collect();
    d.set_item("vantage_point", point)?;
    col!("window_scaling", |r| r.window_scaling);
    for (name, end) in [("src", 0), ("dst", 1)] {
        let e = |r: &super::drive::Row| if end == 0 { r.src } else { r.dst };
        col!(format!("_{name}_v6"), |r| e(r).0 .0 == 6);
        col!(format!("_{name}_hi"), |r| e(r).0 .1);
        col!(format!("_{name}_lo"), |r| e(r).0 .2);
    }
    col!("sport", |r| r.src.1);
    col!("dport", |r| r.dst.1);
    col!("max_cwnd_bytes", |r| r.cwnd.and_then(|c| c.max_cwnd));
    col!("cwnd_source", |r| r.cwnd.map(|_| "estimate"));
    col!("loss_events", |r| r.cwnd.map(|c| c.loss_events));
    col!("_cwnd_facts", |r| r.cwnd.and_then(|c| c.facts));
    col!("_cwnd_live", |r| r.cwnd.map(|c| c.live));
    col!("_smss", |r| r.stats.max_payload);
    col!("_srtt", |r| r.srtt.map_or(nan, |x| x.0));
    col!("_rttvar", |r| r.srtt.map_or(nan, |x| x.1));
    super::cwndstory::output(&d, rows.iter().map(|r| r.story.as_ref()))?;
    super::account::output(&d, rows.iter().map(|r| &r.account))?;
    d.set_item("packets_fed", f.packets)?;
    Ok(d)
}
