//! Bounds-checked reads of fixed-width fields: every read of input bytes goes through these
//! (`None` past the end), so a damaged length can never index out of bounds.

#[inline]
pub fn u8_at(b: &[u8], at: usize) -> Option<u8> {
    b.get(at).copied()
}

#[inline]
pub fn arr<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[inline]
pub fn be16(b: &[u8], at: usize) -> Option<u16> {
    arr(b, at).map(u16::from_be_bytes)
}

#[inline]
pub fn be32(b: &[u8], at: usize) -> Option<u32> {
    arr(b, at).map(u32::from_be_bytes)
}

#[inline]
pub fn be64(b: &[u8], at: usize) -> Option<u64> {
    arr(b, at).map(u64::from_be_bytes)
}

#[inline]
pub fn le32(b: &[u8], at: usize) -> Option<u32> {
    arr(b, at).map(u32::from_le_bytes)
}

/// A u16/u32/i64 in a file section's byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Endian {
    pub big: bool,
}

// (a branch per read, not a function pointer: the reads inline into the record walks)
impl Endian {
    #[inline]
    pub fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let v = arr(b, at)?;
        Some(if self.big {
            u16::from_be_bytes(v)
        } else {
            u16::from_le_bytes(v)
        })
    }
    #[inline]
    pub fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let v = arr(b, at)?;
        Some(if self.big {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        })
    }
    #[inline]
    pub fn i64(self, b: &[u8], at: usize) -> Option<i64> {
        let v = arr(b, at)?;
        Some(if self.big {
            i64::from_be_bytes(v)
        } else {
            i64::from_le_bytes(v)
        })
    }
}

/// The capture's bytes, read at offsets: a file is read through a small window (the whole
/// file is never resident), bytes in memory are sliced.
pub trait Source {
    /// Total length in bytes.
    fn size(&self) -> u64;
    /// `n` bytes at `off`; None past the end.
    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]>;
    fn u16(&mut self, e: Endian, off: u64) -> Option<u16> {
        self.get(off, 2).and_then(|b| e.u16(b, 0))
    }
    fn u32(&mut self, e: Endian, off: u64) -> Option<u32> {
        self.get(off, 4).and_then(|b| e.u32(b, 0))
    }
    /// Another reader of the same bytes, for another thread (None: this one cannot be shared).
    fn fork(&self) -> Option<Box<dyn Source + Send + '_>> {
        None
    }
    /// The first read error met, if any (taken).
    fn take_error(&mut self) -> Option<std::io::Error> {
        None
    }
    /// Keep a forked reader's read error as this reader's (the first one stays).
    fn keep_error(&mut self, _e: std::io::Error) {}
}

/// Bytes in memory (decompressed input, or bytes given by the caller).
pub struct Mem<'a>(pub &'a [u8]);

impl Source for Mem<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]> {
        let off = usize::try_from(off).ok()?;
        self.0.get(off..off.checked_add(n)?)
    }
    fn fork(&self) -> Option<Box<dyn Source + Send + '_>> {
        Some(Box::new(Mem(self.0)))
    }
}

/// Bytes read from a window of this size at a time (grown for a longer read).
const WINDOW: usize = 1 << 20;
/// The window of a reader forked for a worker thread (each thread keeps its own).
const FORK_WINDOW: usize = 1 << 18;

/// A file read through one window: both passes over a capture move forward, so each byte is
/// read from the file about once per pass, and memory stays at the window's size.
pub struct FileSource {
    file: std::fs::File,
    win: Window,
    /// The first read error (reported as a damaged file rather than ignored).
    pub error: Option<std::io::Error>,
}

impl FileSource {
    pub fn open(path: &std::path::Path) -> std::io::Result<FileSource> {
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(FileSource {
            file,
            win: Window::new(size, WINDOW),
            error: None,
        })
    }
}

impl Source for FileSource {
    fn size(&self) -> u64 {
        self.win.size
    }
    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]> {
        self.win.get(&self.file, off, n, &mut self.error)
    }
    fn fork(&self) -> Option<Box<dyn Source + Send + '_>> {
        Some(Box::new(FileView {
            file: &self.file,
            win: Window::new(self.win.size, FORK_WINDOW),
            error: None,
        }))
    }
    fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }
    fn keep_error(&mut self, e: std::io::Error) {
        self.error.get_or_insert(e);
    }
}

/// Another window on a [`FileSource`]'s file (positioned reads share the file handle).
struct FileView<'a> {
    file: &'a std::fs::File,
    win: Window,
    error: Option<std::io::Error>,
}

impl Source for FileView<'_> {
    fn size(&self) -> u64 {
        self.win.size
    }
    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]> {
        self.win.get(self.file, off, n, &mut self.error)
    }
    fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }
}

/// The bytes of a file read last: `buf` holds the file's bytes from `start`.
struct Window {
    size: u64,
    start: u64,
    buf: Vec<u8>,
    /// Bytes read at a time (more for a longer read).
    len: usize,
}

impl Window {
    fn new(size: u64, len: usize) -> Window {
        Window {
            size,
            start: 0,
            buf: Vec::new(),
            len,
        }
    }
    /// `n` bytes at `off`, read from `file` into the window when outside it; None past the
    /// end or on a read error (kept in `error`).
    fn get(
        &mut self,
        file: &std::fs::File,
        off: u64,
        n: usize,
        error: &mut Option<std::io::Error>,
    ) -> Option<&[u8]> {
        let end = off.checked_add(n as u64)?;
        if end > self.size {
            return None;
        }
        if off < self.start || end > self.start + self.buf.len() as u64 {
            use std::os::unix::fs::FileExt;
            let len = usize::try_from((self.size - off).min(self.len.max(n) as u64)).ok()?;
            self.buf.resize(len, 0);
            if let Err(e) = file.read_exact_at(&mut self.buf, off) {
                self.buf.clear();
                error.get_or_insert(e);
                return None;
            }
            self.start = off;
        }
        let at = usize::try_from(off - self.start).ok()?;
        self.buf.get(at..at + n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end() {
        let b = [1u8, 2, 3, 4, 5];
        assert_eq!(be16(&b, 3), Some(0x0405));
        assert_eq!(be16(&b, 4), None);
        assert_eq!(be32(&b, 1), Some(0x02030405));
        assert_eq!(be32(&b, usize::MAX), None);
        assert_eq!(le32(&b, 0), Some(0x04030201));
        assert_eq!(Endian { big: false }.u16(&b, 0), Some(0x0201));
    }

    #[test]
    fn file_window_reads_like_memory() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("cd_window_{}.bin", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let mut f = FileSource::open(&path).unwrap();
        let mut m = Mem(&data);
        for (off, n) in [
            (0u64, 10usize),
            (1_048_570, 20),
            (5, 2_000_000),
            (2_999_990, 10),
            (2_999_990, 11),
            (100, 4),
        ] {
            assert_eq!(
                f.get(off, n).map(<[u8]>::to_vec),
                m.get(off, n).map(<[u8]>::to_vec),
                "{off} {n}"
            );
        }
        assert_eq!(
            f.u32(Endian { big: true }, 1),
            m.u32(Endian { big: true }, 1)
        );
        std::fs::remove_file(&path).unwrap();
    }
}
