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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endian {
    pub big: bool,
}

impl Endian {
    pub fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        arr(b, at).map(if self.big { u16::from_be_bytes } else { u16::from_le_bytes })
    }
    pub fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        arr(b, at).map(if self.big { u32::from_be_bytes } else { u32::from_le_bytes })
    }
    pub fn i64(self, b: &[u8], at: usize) -> Option<i64> {
        arr(b, at).map(if self.big { i64::from_be_bytes } else { i64::from_le_bytes })
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
}
