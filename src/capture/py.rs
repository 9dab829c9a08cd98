//! The Python face of the capture reader: `tracekit._core.read_capture` and `linktypes`.
//!
//! The file comes in as a path (read through a window) or through the buffer protocol (bytes,
//! no copy); the reader runs without the GIL, and its columns go out as numpy arrays that
//! own the vectors (no copy, no per-packet Python object).

use super::bytes::{FileSource, Mem};
use super::{read, Capture, Failure, Format, Kind, Limits, Meta, Warn};
use numpy::IntoPyArray;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::panic::AssertUnwindSafe;

fn limits_of(obj: &Bound<'_, PyAny>, timeout_text: String) -> PyResult<Limits> {
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> { obj.getattr(k) };
    Ok(Limits {
        max_caplen: get("max_caplen")?.extract()?,
        max_block_bytes: get("max_block_bytes")?.extract()?,
        max_packets: get("max_packets")?.extract()?,
        max_frag_datagrams: get("max_frag_datagrams")?.extract()?,
        max_frag_bytes: get("max_frag_bytes")?.extract()?,
        frag_timeout_s: get("frag_timeout_s")?.extract()?,
        frag_timeout_text: timeout_text,
    })
}

/// The warnings as Python tuples `(code, message, count, offset, frame, hint)` (`read_capture`
/// and `stream_summary` give them alike).
pub(crate) fn warnings<'py>(py: Python<'py>, ws: &[Warn]) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<_> = ws
        .iter()
        .map(|w| {
            (
                w.code,
                w.message.as_str(),
                w.count,
                w.offset,
                w.frame,
                w.hint,
            )
        })
        .collect();
    PyList::new(py, items)
}

fn text<'py>(py: Python<'py>, t: &Option<Vec<u8>>) -> Option<Bound<'py, PyBytes>> {
    t.as_ref().map(|v| PyBytes::new(py, v))
}

/// The container's metadata as `read_capture`'s `meta` (`stream_summary` gives it alike).
pub(crate) fn meta<'py>(py: Python<'py>, m: &Meta) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match m {
        Meta::Pcap {
            linktype,
            snaplen,
            nanos,
            version,
        } => {
            d.set_item("linktype", linktype)?;
            d.set_item("snaplen", snaplen)?;
            d.set_item("nanos", nanos)?;
            d.set_item("version", version)?;
        }
        Meta::Pcapng {
            sections,
            interfaces,
            shb,
            blocks,
            simple,
            obsolete,
            used,
        } => {
            d.set_item("sections", sections)?;
            let l = PyList::empty(py);
            for f in interfaces {
                l.append((
                    f.linktype,
                    f.snaplen,
                    text(py, &f.name),
                    f.section,
                    f.tsresol,
                    f.tsoffset,
                    f.fcslen,
                ))?;
            }
            d.set_item("interfaces", l)?;
            if let Some((ma, mi, app, os, hw)) = shb {
                d.set_item("shb", (ma, mi, text(py, app), text(py, os), text(py, hw)))?;
            }
            d.set_item("blocks", blocks)?;
            d.set_item("simple", simple)?;
            d.set_item("obsolete", obsolete)?;
            d.set_item("used", used.clone())?;
        }
    }
    Ok(d)
}

fn failure<'py>(py: Python<'py>, f: &Failure) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let kind = match f.kind {
        Kind::Corrupt => "corrupt",
        Kind::Unknown => "unknown",
        Kind::Limit => "limit",
    };
    d.set_item(
        "error",
        (
            kind,
            f.message.as_str(),
            f.offset,
            f.frame,
            f.hint.as_deref(),
        ),
    )?;
    d.set_item("warnings", warnings(py, &f.warnings)?)?;
    Ok(d)
}

/// Read a pcap or pcapng file into decoded rows (see `tracekit.parsers._capture`).
///
/// `source` is a path (read through a small window: the file is never resident) or a byte
/// buffer (decompressed input). Returns a dict: `error` (kind, message, offset, frame, hint)
/// on failure; else `meta`, `warnings` [(code, message, count, offset, frame, hint)],
/// `unsupported` link types, `counts`, `records`, `t0_ns`, `rows` {column: ndarray}, the
/// address `ids` (source ids, destination ids, distinct IPv4 addresses, distinct IPv6 high
/// and low halves), and the `outer` and `sack` column tuples.
#[pyfunction]
#[pyo3(signature = (source, format, limits, timeout_text))]
pub fn read_capture<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    format: &str,
    limits: &Bound<'py, PyAny>,
    timeout_text: String,
) -> PyResult<Bound<'py, PyDict>> {
    let fmt = match format {
        "pcap" => Format::Pcap,
        "pcapng" => Format::Pcapng,
        "snoop" => Format::Snoop,
        "erf" => Format::Erf,
        "peekclassic" => Format::Peek,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown capture format {format:?}"
            )))
        }
    };
    let lim = limits_of(limits, timeout_text)?;
    let got = if let Ok(path) = source.extract::<std::path::PathBuf>() {
        let mut file = match FileSource::open(&path) {
            Ok(f) => f,
            Err(e) => {
                return failure(
                    py,
                    &Failure::new(Kind::Unknown, format!("cannot read file: {e}")),
                )
            }
        };
        py.detach(move || {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| read(&mut file, fmt, &lim)));
            match file.error {
                Some(e) => Ok(Err(Failure::new(Kind::Corrupt, format!("read error: {e}")))),
                None => r,
            }
        })
    } else {
        let data: PyBuffer<u8> = source.extract()?;
        if !data.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "capture bytes must be a contiguous byte buffer",
            ));
        }
        let (ptr, len) = (data.buf_ptr() as usize, data.len_bytes());
        py.detach(move || {
            // SAFETY: the buffer export (`data`) outlives this call and is read-only (bytes, or
            // a read-only map); an exported buffer cannot be resized by another thread.
            let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
            std::panic::catch_unwind(|| read(&mut Mem(bytes), fmt, &lim))
        })
    };
    let cap = match got {
        Ok(Ok(c)) => c,
        Ok(Err(f)) => return failure(py, &f),
        Err(_) => {
            let f = Failure::new(
                Kind::Corrupt,
                "internal error while decoding (a bug: please report it with the file)",
            );
            return failure(py, &f);
        }
    };
    output(py, cap)
}

/// The dict of a read capture (its columns become numpy arrays that own the vectors).
fn output(py: Python<'_>, cap: Capture) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("meta", meta(py, &cap.meta)?)?;
    d.set_item("warnings", warnings(py, &cap.warnings)?)?;
    d.set_item("unsupported", cap.unsupported.clone())?;
    d.set_item("counts", cap.counts.clone())?;
    d.set_item("records", cap.records)?;
    d.set_item("t0_ns", cap.t0_ns)?;
    let mut r = cap.rows;
    // the addresses go out as ids (below): their per-row columns are done with
    (r.is4, r.s4, r.d4, r.v6) = Default::default();
    let cols = PyDict::new(py);
    macro_rules! put {
        ($($f:ident),*) => { $( cols.set_item(stringify!($f), r.$f.into_pyarray(py))?; )* };
    }
    put!(
        frame, time, proto, size, caplen, payload, ports, sport, dport, seq_raw, ack_raw, flags,
        win_raw
    );
    put!(mss, mss_ok, wscale, wscale_ok, ts_val, ts_ecr, ts_ok, ttl);
    d.set_item("rows", cols)?;
    let ids = cap.ids;
    let (hi, lo): (Vec<u64>, Vec<u64>) = ids.v6.into_iter().unzip();
    d.set_item(
        "ids",
        (
            ids.src.into_pyarray(py),
            ids.dst.into_pyarray(py),
            ids.v4.into_pyarray(py),
            hi.into_pyarray(py),
            lo.into_pyarray(py),
        ),
    )?;
    let [a, b, c, e] = r.outer;
    d.set_item(
        "outer",
        (
            r.outer_row.into_pyarray(py),
            r.outer_is4.into_pyarray(py),
            r.outer_code.into_pyarray(py),
            a.into_pyarray(py),
            b.into_pyarray(py),
            c.into_pyarray(py),
            e.into_pyarray(py),
        ),
    )?;
    d.set_item("tunnel_names", super::tunnel::NAMES.to_vec())?;
    d.set_item(
        "sack",
        (
            r.sack_row.into_pyarray(py),
            r.sack_left.into_pyarray(py),
            r.sack_right.into_pyarray(py),
        ),
    )?;
    Ok(d)
}

/// The `W-NONMONOTONIC` warning of record times in file order (ns; `super::timeback`: how
/// often they go back, the largest step and its frame) as `read_capture` gives it, for readers
/// that decode elsewhere (the tshark path); None when no time goes back.
#[pyfunction]
pub fn time_back_warning<'py>(
    py: Python<'py>,
    ts_ns: numpy::PyReadonlyArray1<'py, i64>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let mut b = super::timeback::TimeBack::default();
    ts_ns.as_slice()?.iter().for_each(|&t| b.on(t));
    match b.warning() {
        None => Ok(None),
        Some(w) => Ok(Some(warnings(py, &[w])?.get_item(0)?)),
    }
}

/// The link types the reader decodes itself: {LINKTYPE_* number: name}.
#[pyfunction]
pub fn linktypes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in super::link::SUPPORTED {
        d.set_item(k, v)?;
    }
    Ok(d)
}
