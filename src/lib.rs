//! tracekit's compiled core (`tracekit._core`): the per-packet path of the analysis.
//!
//! Python sees one extension module; every function here turns its input into plain arrays
//! and returns them, and every error into a Python exception (never a panic across the
//! boundary: entry points catch unwinds, see `guard`).

use pyo3::prelude::*;

pub mod capture;
mod state;
mod stream;

/// The crate's version, for `tracekit formats --verbose` and bug reports.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The streamed summary of the file at `path` (what `_core.stream_summary` runs, without Python),
/// for the fuzz target `fuzz/fuzz_targets/stream.rs`: true when it summarised, false when it
/// refused. The reader's warnings and facts, kept per thread for the Python entry, are dropped.
#[doc(hidden)]
pub fn fuzz_stream(path: &std::path::Path) -> bool {
    stream::source::take_warnings();
    let ok = stream::drive::summary(path, 0.2).is_ok();
    stream::source::take_warnings();
    stream::source::take_facts();
    ok
}

/// The `tracekit._core` module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    state::register(m)?;
    m.add_function(wrap_pyfunction!(capture::py::read_capture, m)?)?;
    m.add_function(wrap_pyfunction!(capture::py::linktypes, m)?)?;
    m.add_function(wrap_pyfunction!(capture::py::time_back_warning, m)?)?;
    m.add_function(wrap_pyfunction!(stream::py::stream_summary, m)?)?;
    // the frames path's summing blocks and batch size, which the stream's sums follow
    m.add("STREAM_SUM_BLOCK", stream::fstats::BLOCK)?;
    m.add("STREAM_BATCH_ROWS", stream::fstats::BATCH_ROWS)?;
    Ok(())
}
