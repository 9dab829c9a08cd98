//! The capture reader on arbitrary bytes: pcap and pcapng, container, link, IP, reassembly,
//! TCP options. Any panic (an index out of bounds, an overflow in debug builds) is a bug: the
//! reader must turn every input into rows or a located failure.
#![no_main]

use _core::capture::bytes::Mem;
use _core::capture::{read, Format, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // small reassembly buffers, so that the limits' paths are reached too
    let limits = Limits { max_frag_datagrams: 4, max_frag_bytes: 4096, frag_timeout_s: 1.0, ..Limits::default() };
    for format in [Format::Pcap, Format::Pcapng, Format::Snoop, Format::Erf, Format::Peek] {
        if let Ok(c) = read(&mut Mem(data), format, &limits) {
            assert!(c.rows.len() as u64 <= c.records);
        }
    }
});
