//! Bits written and read most significant first: the tag set's Rice code.

/// Bits written most significant first, after `lead` bytes left for a head.
#[derive(Default)]
pub(super) struct Writer {
    bytes: Vec<u8>,
    /// The bits not yet in `bytes`, at the top: `filled` of them.
    acc: u64,
    filled: u32,
    /// Bits written.
    pub(super) len: u64,
}

impl Writer {
    /// A writer of bits after `lead` zero bytes, with room for `bits` bits.
    pub(super) fn new(lead: usize, bits: u64) -> Writer {
        let mut bytes = Vec::with_capacity(lead + bits.div_ceil(8) as usize + 8);
        bytes.resize(lead, 0);
        Writer {
            bytes,
            ..Writer::default()
        }
    }

    /// The low `count` bits of `value` (at most 64), high first.
    pub(super) fn put(&mut self, value: u64, count: u32) {
        if count == 0 {
            return;
        }
        let value = value & (u64::MAX >> (64 - count));
        let free = 64 - self.filled;
        if count < free {
            self.acc |= value << (free - count);
            self.filled += count;
        } else {
            let spill = count - free;
            self.bytes
                .extend_from_slice(&(self.acc | value >> spill).to_be_bytes());
            self.acc = value.checked_shl(64 - spill).unwrap_or(0);
            self.filled = spill;
        }
        self.len += u64::from(count);
    }

    /// `quotient` ones, then a zero.
    pub(super) fn unary(&mut self, quotient: u128) {
        let mut left = quotient;
        while left >= 64 {
            self.put(u64::MAX, 64);
            left -= 64;
        }
        self.put(u64::MAX, left as u32);
        self.put(0, 1);
    }

    /// The low `count` bits of `value` (at most 127), high first.
    pub(super) fn bits(&mut self, value: u128, count: u8) {
        let count = u32::from(count);
        if count > 64 {
            self.put((value >> 64) as u64, count - 64);
            self.put(value as u64, 64);
        } else {
            self.put(value as u64, count);
        }
    }

    /// The bits `from..to` of `bytes` (most significant first), as they are: a run of
    /// untouched blocks carried into a changed set.
    pub(super) fn append(&mut self, bytes: &[u8], from: u64, to: u64) {
        let mut reader = Reader {
            bytes,
            len: to,
            at: from,
        };
        while reader.at < to {
            let count = (to - reader.at).min(64) as u32;
            self.put(reader.window() >> (64 - count), count);
            reader.at += u64::from(count);
        }
    }

    /// The lead and the bytes written, the last one's unused bits zero.
    pub(super) fn into_bytes(mut self) -> Vec<u8> {
        let tail = self.filled.div_ceil(8) as usize;
        self.bytes
            .extend_from_slice(&self.acc.to_be_bytes()[..tail]);
        self.bytes
    }
}

/// Bits read from `at`, most significant first, never past `len` (at most the bytes').
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) len: u64,
    pub(super) at: u64,
}

impl Reader<'_> {
    /// The 64 bits from `at` on (zeros past the bytes).
    fn window(&self) -> u64 {
        let byte = (self.at / 8) as usize;
        let word = match self.bytes.get(byte..byte + 16) {
            Some(sixteen) => u128::from_be_bytes(sixteen.try_into().expect("16 bytes")),
            None => {
                let mut buf = [0u8; 16];
                let end = (byte + 9).min(self.bytes.len());
                if byte < end {
                    buf[..end - byte].copy_from_slice(&self.bytes[byte..end]);
                }
                u128::from_be_bytes(buf)
            }
        };
        ((word << (self.at % 8)) >> 64) as u64
    }

    /// The next `count` bits (at most 127), if there are as many before `len`.
    pub(super) fn take(&mut self, count: u8) -> Option<u128> {
        if self.len.saturating_sub(self.at) < u64::from(count) {
            return None;
        }
        let (mut value, mut left) = (0u128, u32::from(count));
        while left > 0 {
            let k = left.min(64);
            value = value << k | u128::from(self.window() >> (64 - k));
            self.at += u64::from(k);
            left -= k;
        }
        Some(value)
    }

    /// A gap coded with Rice parameter `rice`, if it is below `limit`: the unary
    /// quotient read a window at a time.
    pub(super) fn gap(&mut self, rice: u8, limit: u128) -> Option<u128> {
        let most = limit >> rice;
        let mut quotient = 0u128;
        loop {
            let available = self.len.saturating_sub(self.at).min(64);
            if available == 0 {
                return None;
            }
            let ones = u64::from((!self.window()).leading_zeros());
            if ones < available {
                quotient += u128::from(ones);
                self.at += ones + 1;
                break;
            }
            quotient += u128::from(available);
            self.at += available;
            if quotient > most {
                return None;
            }
        }
        if quotient > most {
            return None;
        }
        Some(quotient << rice | self.take(rice)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any run of bits, at any offsets, is carried over as it is.
    #[test]
    fn appended_bits_are_the_bits_read() {
        let source: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        let bit = |bytes: &[u8], i: u64| bytes[(i / 8) as usize] >> (7 - i % 8) & 1;
        for lead in [0u32, 1, 7, 63, 64, 65] {
            for (from, to) in [(0, 0), (0, 512), (3, 200), (64, 128), (5, 6), (130, 511)] {
                let mut w = Writer::new(3, 0);
                w.put(u64::MAX, lead.min(64));
                w.put(0, lead.saturating_sub(64));
                w.append(&source, from, to);
                assert_eq!(w.len, u64::from(lead) + to - from);
                let bytes = w.into_bytes();
                let (head, bytes) = bytes.split_at(3);
                assert_eq!(head, [0; 3]);
                assert_eq!(
                    bytes.len() as u64,
                    (u64::from(lead) + to - from).div_ceil(8)
                );
                for i in from..to {
                    let at = u64::from(lead) + i - from;
                    assert_eq!(bit(bytes, at), bit(&source, i), "lead {lead}, bit {i}");
                }
            }
        }
    }
}
