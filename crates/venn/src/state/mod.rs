//! Offline states outside memory: the encoding a party writes its state with
//! ([`StateWriter`], [`StateReader`]) and the single-use state file around it ([`mod@file`]).

pub mod file;

use crate::crypto::Block;
use crate::util::memory::advise_huge_pages;
use crate::{Error, Result};
use std::io::{Read, Write};

/// Bytes converted per call when writing or reading large arrays.
const CHUNK: usize = 1 << 16;

/// `v`, if it has exactly `n` elements (a state array whose length the parameters fix).
pub fn exactly<T>(v: Vec<T>, n: usize) -> Result<Vec<T>> {
    if v.len() != n {
        return Err(Error::State(format!(
            "{} values where the parameters fix {n}",
            v.len()
        )));
    }
    Ok(v)
}

/// Writes a state: fixed-size values, and arrays prefixed by their length.
pub struct StateWriter<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
}

impl<'a> StateWriter<'a> {
    /// Writes to `out`.
    pub fn new(out: &'a mut dyn Write) -> Self {
        StateWriter {
            out,
            buf: Vec::with_capacity(CHUNK),
        }
    }

    fn io(e: std::io::Error) -> Error {
        Error::State(format!("cannot write the state: {e}"))
    }

    /// Bytes as they are.
    pub fn raw(&mut self, v: &[u8]) -> Result<()> {
        self.out.write_all(v).map_err(Self::io)
    }

    /// A u64.
    pub fn u64(&mut self, v: u64) -> Result<()> {
        self.raw(&v.to_le_bytes())
    }

    /// A block.
    pub fn block(&mut self, v: Block) -> Result<()> {
        self.out.write_all(&v.to_le_bytes()).map_err(Self::io)
    }

    /// Fixed-size values, each encoded by `put`, prefixed by their count.
    fn array<T: Copy, const N: usize>(&mut self, v: &[T], put: fn(T) -> [u8; N]) -> Result<()> {
        self.u64(v.len() as u64)?;
        for chunk in v.chunks(CHUNK / N) {
            self.buf.clear();
            self.buf.extend(chunk.iter().flat_map(|&x| put(x)));
            self.out.write_all(&self.buf).map_err(Self::io)?;
        }
        Ok(())
    }

    /// Blocks, prefixed by their count.
    pub fn blocks(&mut self, v: &[Block]) -> Result<()> {
        self.array(v, Block::to_le_bytes)
    }

    /// u32s, prefixed by their count.
    pub fn u32s(&mut self, v: &[u32]) -> Result<()> {
        self.array(v, u32::to_le_bytes)
    }

    /// u64s, prefixed by their count.
    pub fn u64s(&mut self, v: &[u64]) -> Result<()> {
        self.array(v, u64::to_le_bytes)
    }

    /// Bits, packed eight to a byte, prefixed by their count.
    pub fn bits(&mut self, v: &[bool]) -> Result<()> {
        self.u64(v.len() as u64)?;
        let packed: Vec<u8> = v
            .chunks(8)
            .map(|c| c.iter().rev().fold(0, |acc, &b| acc << 1 | b as u8))
            .collect();
        self.out.write_all(&packed).map_err(Self::io)
    }
}

/// Reads what a [`StateWriter`] wrote; every count is checked against a bound given by the
/// caller (from the parameters) before anything is allocated.
pub struct StateReader<'a> {
    input: &'a mut dyn Read,
    buf: Vec<u8>,
}

impl<'a> StateReader<'a> {
    /// Reads from `input`.
    pub fn new(input: &'a mut dyn Read) -> Self {
        StateReader {
            input,
            buf: Vec::new(),
        }
    }

    fn fill(&mut self, n: usize) -> Result<()> {
        self.buf.resize(n, 0);
        self.input.read_exact(&mut self.buf).map_err(|e| {
            Error::State(match e.kind() {
                std::io::ErrorKind::UnexpectedEof => "the state is truncated".into(),
                _ => format!("cannot read the state: {e}"),
            })
        })
    }

    /// `n` bytes as they are.
    pub fn raw(&mut self, n: usize) -> Result<Vec<u8>> {
        self.fill(n)?;
        Ok(self.buf[..n].to_vec())
    }

    /// A u64.
    pub fn u64(&mut self) -> Result<u64> {
        self.fill(8)?;
        Ok(u64::from_le_bytes(
            self.buf[..8].try_into().expect("8 bytes"),
        ))
    }

    /// A block.
    pub fn block(&mut self) -> Result<Block> {
        self.fill(16)?;
        Ok(Block::from_le_bytes(
            self.buf[..16].try_into().expect("16 bytes"),
        ))
    }

    /// A count of at most `max`, named `what` in errors.
    fn count(&mut self, max: usize, what: &str) -> Result<usize> {
        let n = self.u64()?;
        if n > max as u64 {
            return Err(Error::State(format!(
                "{n} {what}, more than the {max} its parameters allow"
            )));
        }
        Ok(n as usize)
    }

    fn array<T, const N: usize>(
        &mut self,
        max: usize,
        what: &str,
        get: fn([u8; N]) -> T,
    ) -> Result<Vec<T>> {
        let n = self.count(max, what)?;
        let mut out = Vec::with_capacity(n);
        // Large arrays are OT rows and messages that the online phase reads at random.
        advise_huge_pages(&out);
        while out.len() < n {
            let take = (n - out.len()).min(CHUNK / N);
            self.fill(take * N)?;
            out.extend(
                self.buf
                    .chunks_exact(N)
                    .map(|b| get(b.try_into().expect("N bytes"))),
            );
        }
        Ok(out)
    }

    /// At most `max` blocks.
    pub fn blocks(&mut self, max: usize, what: &str) -> Result<Vec<Block>> {
        self.array(max, what, Block::from_le_bytes)
    }

    /// At most `max` u32s.
    pub fn u32s(&mut self, max: usize, what: &str) -> Result<Vec<u32>> {
        self.array(max, what, u32::from_le_bytes)
    }

    /// At most `max` u64s.
    pub fn u64s(&mut self, max: usize, what: &str) -> Result<Vec<u64>> {
        self.array(max, what, u64::from_le_bytes)
    }

    /// At most `max` bits.
    pub fn bits(&mut self, max: usize, what: &str) -> Result<Vec<bool>> {
        let n = self.count(max, what)?;
        self.fill(n.div_ceil(8))?;
        Ok((0..n)
            .map(|i| self.buf[i / 8] >> (i % 8) & 1 == 1)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_counts_are_bounded() {
        let blocks: Vec<Block> = (0..70_000u128)
            .map(|i| Block::from_u128(i * 0x1234_5678_9abc))
            .collect();
        let words: Vec<u32> = (0..1000).collect();
        let bits: Vec<bool> = (0..77).map(|i| i % 3 == 0).collect();
        let mut bytes = Vec::new();
        {
            let mut w = StateWriter::new(&mut bytes);
            w.u64(7).unwrap();
            w.block(Block::from_u128(u128::MAX - 5)).unwrap();
            w.blocks(&blocks).unwrap();
            w.u32s(&words).unwrap();
            w.bits(&bits).unwrap();
        }
        let mut input = &bytes[..];
        let mut r = StateReader::new(&mut input);
        assert_eq!(r.u64().unwrap(), 7);
        assert_eq!(r.block().unwrap(), Block::from_u128(u128::MAX - 5));
        assert_eq!(r.blocks(70_000, "rows").unwrap(), blocks);
        assert_eq!(r.u32s(1000, "indices").unwrap(), words);
        assert_eq!(r.bits(77, "bits").unwrap(), bits);
        assert!(matches!(r.u64(), Err(Error::State(_))), "truncated");

        let mut input = &bytes[24..];
        let e = StateReader::new(&mut input)
            .blocks(69_999, "rows")
            .unwrap_err();
        assert!(e.to_string().contains("more than the 69999"), "{e}");
    }
}
