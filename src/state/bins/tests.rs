//! Hand-checked sequences for the throughput bins.

use super::*;

const M: i64 = MISSING;

/// (flow, dir, time, size, payload, seq, k)
type Row = (u32, i8, f64, u32, u32, i64, i64);

/// Rows as (flow, dir, time, size, payload, seq, k): the bins with at most `max` per direction.
fn run(rows: &[Row], max: i64) -> Result<Bins, Refused> {
    let col = |f: &dyn Fn(&Row) -> i64| rows.iter().map(f).collect::<Vec<i64>>();
    let flow: Vec<u32> = rows.iter().map(|r| r.0).collect();
    let dir: Vec<i8> = rows.iter().map(|r| r.1).collect();
    let time: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let frame: Vec<u64> = (1..=rows.len() as u64).collect();
    let size: Vec<u32> = rows.iter().map(|r| r.3).collect();
    let payload: Vec<u32> = rows.iter().map(|r| r.4).collect();
    let seq = col(&|r| r.5);
    let k = col(&|r| r.6);
    let p = Packets {
        flow: &flow,
        dir: &dir,
        time: &time,
        frame: &frame,
        size: &size,
        payload: &payload,
        seq: &seq,
        k: &k,
    };
    bins(&p, max).expect("valid")
}

#[test]
fn goodput_counts_bytes_above_the_highest_end_and_bins_fill_gaps() {
    let b = run(
        &[
            (0, 0, 0.05, 1100, 1000, 1001, 0),
            (0, 1, 0.06, 52, 0, 1, 0), // a pure ACK: counted in bytes and packets only
            (0, 0, 0.07, 1100, 1000, 1, 0), // below the first segment: the first one counted from 1
            (0, 0, 0.25, 1100, 1000, 1501, 2), // half new
            (0, 0, 0.26, 600, 500, M, 2), // no sequence number: all new
        ],
        100,
    )
    .expect("bins");
    assert_eq!(b.flow, vec![0, 0]);
    assert_eq!(b.dir, vec![0, 1]);
    assert_eq!(b.kmin, vec![0, 0]);
    assert_eq!(b.nbins, vec![3, 1]);
    assert_eq!(b.bytes, vec![2200.0, 0.0, 1700.0, 52.0]);
    // 1001..2001 counts from the lowest seq 1: 2000; then 1..1001 adds nothing
    assert_eq!(b.good, vec![2000.0, 0.0, 1000.0, 0.0]);
    assert_eq!(b.packets, vec![2, 0, 2, 1]);
}

#[test]
fn capture_order_is_time_then_frame() {
    // listed out of time order: by time, 1..101 comes first and 101..201 last (nothing new)
    let b = run(
        &[
            (3, 0, 0.2, 100, 100, 201, 2),
            (3, 0, 0.1, 100, 100, 1, 1),
            (3, 0, 0.3, 100, 100, 101, 3),
        ],
        10,
    )
    .expect("bins");
    assert_eq!(b.kmin, vec![1]);
    assert_eq!(b.good, vec![100.0, 200.0, 0.0]);
    assert_eq!(b.packets, vec![1, 1, 1]);
}

#[test]
fn absurd_times_and_the_bin_limit() {
    assert_eq!(
        run(&[(0, 0, 1e300, 1, 0, M, M)], 10).unwrap_err(),
        Refused::NoBins
    );
    assert_eq!(
        run(&[(0, 0, 0.0, 1, 0, M, 0), (0, 0, 5.0, 1, 0, M, 50)], 10).unwrap_err(),
        Refused::TooMany(50)
    );
    // a direction with only absurd times gets no bins; its packet is left out
    let b = run(&[(0, 0, 0.0, 1, 0, M, 0), (1, 0, 1e300, 1, 0, M, M)], 10).expect("bins");
    assert_eq!(b.nbins, vec![1, 0]);
    assert_eq!(b.packets, vec![1]);
}
