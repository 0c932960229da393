//! Encoding of small structured messages, with bounds-checked decoding.

use crate::crypto::Block;
use crate::{Error, Result};

/// Builds a message.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// An empty message.
    pub fn new() -> Self {
        Writer(Vec::new())
    }
    /// Appends a byte.
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    /// Appends a little-endian u16.
    pub fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian u32.
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian u64.
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a block.
    pub fn block(mut self, v: Block) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends raw bytes.
    pub fn bytes(mut self, v: &[u8]) -> Self {
        self.0.extend_from_slice(v);
        self
    }
    /// Appends a string of at most 255 bytes, prefixed by its length.
    pub fn str8(self, s: &str) -> Self {
        assert!(s.len() < 256);
        self.u8(s.len() as u8).bytes(s.as_bytes())
    }
    /// Appends a string of at most 65535 bytes, prefixed by its length.
    pub fn str16(self, s: &str) -> Self {
        assert!(s.len() < 65536);
        self.u16(s.len() as u16).bytes(s.as_bytes())
    }
}

/// Reads a message; every read is bounds-checked and names what was expected.
pub struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads `buf`, a message described as `what` in errors.
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, what }
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(Error::protocol(
                format!("{} with {n} more bytes", self.what),
                format!("{} bytes", self.buf.len()),
            ));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.bytes(N)?.try_into().expect("length checked"))
    }
    /// A byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// A little-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// A little-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A block.
    pub fn block(&mut self) -> Result<Block> {
        Ok(Block::from_le_bytes(self.array()?))
    }
    /// A UTF-8 string written by [`Writer::str8`].
    pub fn str8(&mut self) -> Result<String> {
        let n = self.u8()? as usize;
        self.utf8(n)
    }
    /// A UTF-8 string written by [`Writer::str16`].
    pub fn str16(&mut self) -> Result<String> {
        let n = self.u16()? as usize;
        self.utf8(n)
    }
    fn utf8(&mut self, n: usize) -> Result<String> {
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| Error::protocol(format!("UTF-8 text in {}", self.what), "invalid bytes"))
    }
    /// Checks that the whole message was consumed.
    pub fn finish(self) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Error::protocol(
                format!("end of {}", self.what),
                format!("{} trailing bytes", self.buf.len()),
            ))
        }
    }
}
