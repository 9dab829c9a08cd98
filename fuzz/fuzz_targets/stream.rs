//! The streamed summary (`_core.stream_summary`, which `analyze --json` runs on a plain capture)
//! on arbitrary bytes: both passes, every per-connection stage and the cwnd batches. Any panic is
//! a bug: the stream must turn every input into a summary or a refusal. The bytes go through a
//! file, since the stream reads a path (twice, forward) as the command does.
#![no_main]

use _core::fuzz_stream;
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("tracekit-fuzz-stream-{}.pcap", std::process::id()));
    let Ok(mut f) = std::fs::File::create(&path) else { return };
    if f.write_all(data).is_err() {
        return;
    }
    drop(f);
    fuzz_stream(&path);
});
