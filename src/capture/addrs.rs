//! Address ids: every row's source and destination as a dense id over the capture's distinct
//! addresses, so that Python turns only the distinct ones into text (a capture has millions of
//! rows and a handful of hosts) and numbers connections by integers.
//!
//! Ids follow the order `tracekit.parsers._frame` has always given them: IPv4 addresses
//! ascending, then IPv6 ones in the order of their 16 bytes as the (high, low) halves lie in
//! memory (numpy's `unique` of those pairs viewed as 16-byte values).

use super::ip::Rows;

/// The ids of every row and the distinct addresses they number.
#[derive(Debug, Default, PartialEq)]
pub struct Ids {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    /// Distinct IPv4 addresses, ascending: ids 0, 1, ...
    pub v4: Vec<u32>,
    /// Distinct IPv6 addresses as (high, low) halves: the ids after the IPv4 ones.
    pub v6: Vec<(u64, u64)>,
}

/// The sort key of an IPv6 address: its halves' bytes as they lie in memory.
fn v6_key(a: (u64, u64)) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.0.to_ne_bytes());
    k[8..].copy_from_slice(&a.1.to_ne_bytes());
    k
}

/// The ids of `rows`' addresses (rows are IPv4 where `is4`, else listed in `v6_row`).
pub fn ids(rows: &Rows) -> Ids {
    let n = rows.len();
    let mut seen: Vec<u32> = Vec::new();
    let mut last = None;
    for i in (0..n).filter(|&i| rows.is4[i]) {
        let pair = (rows.s4[i], rows.d4[i]);
        if last != Some(pair) {
            seen.extend([pair.0, pair.1]); // consecutive rows mostly repeat their pair
            last = Some(pair);
        }
    }
    seen.sort_unstable();
    seen.dedup();
    let v6_rows = rows.v6_row.len();
    let half = |k: usize, j: usize| rows.v6[k].get(j).copied().unwrap_or(0);
    let v6_src = |j: usize| (half(0, j), half(1, j));
    let v6_dst = |j: usize| (half(2, j), half(3, j));
    let mut v6: Vec<(u64, u64)> = (0..v6_rows).flat_map(|j| [v6_src(j), v6_dst(j)]).collect();
    v6.sort_unstable_by_key(|a| v6_key(*a));
    v6.dedup();
    let mut ids = Ids {
        src: vec![0; n],
        dst: vec![0; n],
        v4: seen,
        v6,
    };
    let id4 = |a: u32, v4: &[u32]| v4.binary_search(&a).unwrap_or(0) as u32;
    let mut memo: Option<((u32, u32), (u32, u32))> = None;
    for i in (0..n).filter(|&i| rows.is4[i]) {
        let pair = (rows.s4[i], rows.d4[i]);
        let got = match memo {
            Some((p, got)) if p == pair => got,
            _ => {
                let got = (id4(pair.0, &ids.v4), id4(pair.1, &ids.v4));
                memo = Some((pair, got));
                got
            }
        };
        (ids.src[i], ids.dst[i]) = got;
    }
    let base = ids.v4.len() as u32;
    let id6 = |a: (u64, u64)| {
        let k = v6_key(a);
        base + ids.v6.binary_search_by_key(&k, |x| v6_key(*x)).unwrap_or(0) as u32
    };
    let found: Vec<(usize, u32, u32)> = (0..v6_rows)
        .filter_map(|j| {
            let r = usize::try_from(rows.v6_row[j]).ok().filter(|&r| r < n)?;
            Some((r, id6(v6_src(j)), id6(v6_dst(j))))
        })
        .collect();
    for (r, s, d) in found {
        (ids.src[r], ids.dst[r]) = (s, d);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_ascending_then_ipv6_in_memory_byte_order() {
        let mut rows = Rows::default();
        for (is4, s, d) in [(true, 9, 3), (true, 9, 3), (false, 0, 0), (true, 3, 200)] {
            rows.frame.push(0);
            rows.is4.push(is4);
            rows.s4.push(s);
            rows.d4.push(d);
        }
        rows.v6_row.push(2);
        // source 1:0 and destination 0:256: in memory (little-endian) 0:256 sorts first
        for (k, v) in [1u64, 0, 0, 256].into_iter().enumerate() {
            rows.v6[k].push(v);
        }
        let got = ids(&rows);
        assert_eq!(got.v4, vec![3, 9, 200]);
        let mut want6 = vec![(1, 0), (0, 256)];
        want6.sort_by_key(|a| v6_key(*a));
        assert_eq!(got.v6, want6);
        let (a, b) = (
            3 + want6.iter().position(|x| *x == (1, 0)).unwrap() as u32,
            0,
        );
        let b = b + 3 + want6.iter().position(|x| *x == (0, 256)).unwrap() as u32;
        assert_eq!(got.src, vec![1, 1, a, 0]);
        assert_eq!(got.dst, vec![0, 0, b, 2]);
    }
}
