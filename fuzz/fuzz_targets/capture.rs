//! The capture reader on arbitrary bytes: pcap and pcapng, container, link, IP, reassembly,
//! TCP options. Any panic (an index out of bounds, an overflow in debug builds) is a bug: the
//! reader must turn every input into rows or a located failure.
#![no_main]

use _core::capture::bytes::Mem;
use _core::capture::{read, read_in_spans, Format, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // small reassembly buffers, so that the limits' paths are reached too
    let limits = Limits { max_frag_datagrams: 4, max_frag_bytes: 4096, frag_timeout_s: 1.0, ..Limits::default() };
    for format in [Format::Pcap, Format::Pcapng, Format::Snoop, Format::Erf, Format::Peek] {
        let whole = read(&mut Mem(data), format, &limits);
        if let Ok(c) = &whole {
            assert!(c.rows.len() as u64 <= c.records);
        }
        // spans of 2 records take the parallel path (and the in-order redo of spans with
        // fragments) even on these small inputs: the same rows, warnings and counts
        match (whole, read_in_spans(&mut Mem(data), format, &limits, 2)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.rows, b.rows);
                assert_eq!(a.warnings, b.warnings);
                assert_eq!(a.counts, b.counts);
            }
            (Err(a), Err(b)) => assert_eq!(a.message, b.message),
            (a, b) => panic!("spans changed the outcome: {:?} vs {:?}", a.is_ok(), b.is_ok()),
        }
    }
});
