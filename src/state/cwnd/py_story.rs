//! The Python entry point of the account's cwnd events (`story`): numpy columns in and out.

use super::story::{tell, Told};
use crate::state::{guard, slice};
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;

/// The events of every direction's series, flat: `dirs` (`flow, dir, rows, ca_start`, NaN
/// without a congestion-avoidance row, and `ca`: whether there is one), `runs` and `cuts`
/// (each row's direction in `run_dir` / `cut_dir`, an index into `dirs`). Each direction has
/// `min(reductions, cap + 1)` cuts in order (NaN where a reduction anchors at no row).
fn output<'py>(
    py: Python<'py>,
    keys: &[(i64, i64, usize)],
    told: &[Told],
    cap: usize,
    nred: &[usize],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let ca = told
        .iter()
        .map(|t| t.ca_start.is_some())
        .collect::<Vec<_>>();
    out.set_item(
        "flow",
        keys.iter()
            .map(|k| k.0)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "dir",
        keys.iter()
            .map(|k| k.1)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "rows",
        keys.iter()
            .map(|k| k.2 as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item("ca", ca.into_pyarray(py))?;
    let ca_start = told.iter().map(|t| t.ca_start.unwrap_or(f64::NAN));
    out.set_item("ca_start", ca_start.collect::<Vec<_>>().into_pyarray(py))?;
    let runs = told
        .iter()
        .enumerate()
        .flat_map(|(d, t)| t.runs.iter().map(move |r| (d as i64, *r)));
    let runs: Vec<_> = runs.collect();
    out.set_item(
        "run_dir",
        runs.iter()
            .map(|r| r.0)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "run_from",
        runs.iter()
            .map(|r| r.1.from)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "run_top",
        runs.iter()
            .map(|r| r.1.top)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "run_top_t",
        runs.iter()
            .map(|r| r.1.top_t)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "run_end",
        runs.iter()
            .map(|r| r.1.end)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    out.set_item(
        "run_end_t",
        runs.iter()
            .map(|r| r.1.end_t)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    // every reduction up to cap + 1 gets a slot, NaN when it anchored nowhere
    let (mut cd, mut before, mut after, mut phase, mut tol, mut prev_t) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for (d, t) in told.iter().enumerate() {
        for c in t.slots(nred[d], cap) {
            cd.push(d as i64);
            before.push(c.map_or(f64::NAN, |c| c.before));
            after.push(c.map_or(f64::NAN, |c| c.after));
            phase.push(c.map_or(-1, |c| c.phase));
            tol.push(c.map_or(f64::NAN, |c| c.tol));
            prev_t.push(c.map_or(f64::NAN, |c| c.prev_t));
        }
    }
    out.set_item("cut_dir", cd.into_pyarray(py))?;
    out.set_item("cut_before", before.into_pyarray(py))?;
    out.set_item("cut_after", after.into_pyarray(py))?;
    out.set_item("cut_phase", phase.into_pyarray(py))?;
    out.set_item("cut_tol", tol.into_pyarray(py))?;
    out.set_item("cut_prev_t", prev_t.into_pyarray(py))?;
    Ok(out)
}

/// The account's cwnd events of every direction (`story::tell`).
///
/// Rows `flow, dir, time, cwnd, phase`: each direction's chosen series contiguous, in time
/// order. Reductions `r_flow, r_dir, r_time, r_backed`: per direction in time order (NaN last).
/// `cap`: runs told and reductions detailed per direction (`tracekit.explain._MAX_EACH`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_story<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, i64>,
    dir: PyReadonlyArray1<'py, i64>,
    time: PyReadonlyArray1<'py, f64>,
    cwnd: PyReadonlyArray1<'py, f64>,
    phase: PyReadonlyArray1<'py, i8>,
    r_flow: PyReadonlyArray1<'py, i64>,
    r_dir: PyReadonlyArray1<'py, i64>,
    r_time: PyReadonlyArray1<'py, f64>,
    r_backed: PyReadonlyArray1<'py, bool>,
    cap: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (f, d, t, v, ph) = (
        slice(&flow, "flow")?,
        slice(&dir, "dir")?,
        slice(&time, "time")?,
        slice(&cwnd, "cwnd")?,
        slice(&phase, "phase")?,
    );
    let (rf, rd, rt, rb) = (
        slice(&r_flow, "r_flow")?,
        slice(&r_dir, "r_dir")?,
        slice(&r_time, "r_time")?,
        slice(&r_backed, "r_backed")?,
    );
    let (keys, told, nred) = py.detach(|| {
        guard(|| {
            let n = t.len();
            if f.len() != n || d.len() != n || v.len() != n || ph.len() != n {
                return Err("cwnd columns differ in length".to_string());
            }
            let m = rt.len();
            if rf.len() != m || rd.len() != m || rb.len() != m {
                return Err("reduction columns differ in length".to_string());
            }
            let mut red: HashMap<(i64, i64), (Vec<f64>, Vec<bool>)> = HashMap::new();
            for i in 0..m {
                let e = red.entry((rf[i], rd[i])).or_default();
                e.0.push(rt[i]);
                e.1.push(rb[i]);
            }
            let none = (Vec::new(), Vec::new());
            let (mut keys, mut told, mut nred) = (vec![], vec![], vec![]);
            let mut a = 0;
            while a < n {
                let mut b = a + 1;
                while b < n && f[b] == f[a] && d[b] == d[a] {
                    b += 1;
                }
                let (lt, lb) = red.get(&(f[a], d[a])).unwrap_or(&none);
                told.push(tell(&t[a..b], &v[a..b], &ph[a..b], lt, lb, cap));
                keys.push((f[a], d[a], b - a));
                nred.push(lt.len());
                a = b;
            }
            Ok((keys, told, nred))
        })
    })?;
    output(py, &keys, &told, cap, &nred)
}

/// Adds the account's cwnd events to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CWND_STORY_CAP", super::story::CAP)?;
    m.add_function(wrap_pyfunction!(cwnd_story, m)?)
}
