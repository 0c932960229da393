//! KBM23's trusted dealer (§IV-A): a third process, which never sees an input, makes the
//! set OLE tuples of one run and hands each party its half.
//!
//! **What the dealer sends** (spec §5.1, with the reading the spec recommends: r_B⁻¹ is
//! sampled directly, and only what is not a seed is sent). The sender gets a seed from
//! which it expands `w_ij` (uniform in 𝔽*_Q, its `r_B⁻¹`) and `u_ij` (uniform in 𝔽_Q, its
//! own premultiplied share, see [`super::SenderState`]); the receiver gets a seed from
//! which it expands `s_A,i`, and the dealer streams to it
//! `r_A,ij = (s_A,i − k·D − 1)·w_ij + u_ij`. Then with `s_B = u·w⁻¹ − k·D − 1` the tuples
//! satisfy Eq. 11, `r_A·r_B = s_A + s_B`, and they are uniform: s_A, u and w are, and r_A
//! is their function. Traffic: 16 bytes to the sender, `αβ·ℓ` bits to the receiver
//! (Table IV).
//!
//! **Who must be trusted**: the dealer knows every tuple, so a dealer that colludes with
//! either party, or reads the receiver–sender link, learns the other's set (a dealer with
//! the sender's tuples turns the receiver's `c` into the receiver's table; with the
//! receiver's, the sender's `d` into the sender's). It learns nothing from the parties:
//! they send it only their session id, role and set sizes.
//!
//! **Pairing**: both parties announce the id of their receiver–sender session,
//! which the dealer uses to pair their connections, and the sizes and σ they agreed, which
//! must match.

use super::field::{Field, Packed, PackedWriter};
use super::tuples::{ReceiversTuples, SendersTuples};
use super::{answer, Kbm23Params};
use crate::crypto::{Block, Prg};
use crate::net::{Channel, Reader, Writer};
use crate::session::{Role, Sizes};
use crate::util::wide_cpu::with_avx512;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"VENN/DLR";
/// The dealer's wire version.
const VERSION: u16 = 1;
/// The length of a request: magic, version, role, session id, two sizes, σ.
const REQUEST_LEN: usize = 8 + 2 + 1 + 32 + 8 + 8 + 2;

/// How many opening bytes of a connection [`looks_like_request`] needs.
pub const REQUEST_PREFIX: usize = 4 + MAGIC.len();

/// Whether a connection's opening bytes (a frame length and the magic) can be a party's
/// request to the dealer: what the dealer checks before it takes a connection.
pub fn looks_like_request(first: &[u8]) -> bool {
    first.len() >= REQUEST_PREFIX
        && u32::from_le_bytes(first[..4].try_into().expect("4 bytes")) as usize == REQUEST_LEN
        && &first[4..REQUEST_PREFIX] == MAGIC
}

/// What a party asks the dealer for: the tuples of its role in one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The party's role.
    pub role: Role,
    /// The id of the parties' session, which pairs their requests.
    pub session: [u8; 32],
    /// The set sizes the tuples are for.
    pub sizes: Sizes,
    /// `Some(32)` for 32-bit integer keys, `None` for hashed keys.
    pub sigma: Option<u32>,
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .bytes(MAGIC)
            .u16(VERSION)
            .u8(self.role.code())
            .bytes(&self.session)
            .u64(self.sizes.sender)
            .u64(self.sizes.receiver)
            .u16(self.sigma.unwrap_or(0) as u16)
            .0
    }

    /// Reads a party's request, refusing set sizes above `max_items` and parameters
    /// kbm23 does not run with.
    pub fn read(chan: &mut dyn Channel, max_items: u64) -> Result<Request> {
        let bytes = chan.recv(REQUEST_LEN)?;
        let mut r = Reader::new(&bytes, "dealer request");
        if r.array::<8>()? != *MAGIC {
            return Err(Error::protocol("a venn dealer request", "other bytes"));
        }
        let version = r.u16()?;
        if version != VERSION {
            return Err(Error::Handshake(format!(
                "the party speaks dealer version {version}, this dealer {VERSION}: run the \
                 same venn release"
            )));
        }
        let role = Role::from_code(r.u8()?)?;
        let session = r.array::<32>()?;
        let sizes = Sizes {
            sender: r.u64()?,
            receiver: r.u64()?,
        };
        let sigma = match r.u16()? {
            0 => None,
            32 => Some(32),
            s => return Err(Error::protocol("σ = 32 or hashed keys", format!("σ = {s}"))),
        };
        r.finish()?;
        if sizes.sender.max(sizes.receiver) > max_items {
            return Err(Error::Usage(format!(
                "tuples for {} and {} items, above this dealer's --max-items {max_items}",
                sizes.sender, sizes.receiver
            )));
        }
        Kbm23Params::new(sizes, sigma)?;
        Ok(Request {
            role,
            session,
            sizes,
            sigma,
        })
    }
}

/// Uniform elements of 𝔽_Q (or of 𝔽*_Q) from a seed, the same sequence however it is
/// asked for: the dealer expands a party's seed frame by frame, the party all at once.
/// Lemire's multiply-shift with rejection of the biased low products, so exactly
/// uniform; 32-bit words for Q < 2^32 (the products then vectorise).
struct Sampler {
    prg: Prg,
    /// Elements are `offset + (below range)`.
    range: u64,
    offset: u64,
    buf: Vec<u64>,
    used: usize,
}

/// Elements a [`Sampler`] makes at a time.
const SAMPLES: usize = 1 << 10;

impl Sampler {
    /// Elements of `f` (non-zero ones if `nonzero`) from `seed`.
    fn new(f: &Field, seed: Block, nonzero: bool) -> Self {
        Sampler {
            prg: Prg::from_seed(seed),
            range: f.modulus() - nonzero as u64,
            offset: nonzero as u64,
            buf: vec![0; SAMPLES],
            used: SAMPLES,
        }
    }

    /// The next `out.len()` elements.
    fn fill(&mut self, out: &mut [u64]) {
        let mut at = 0;
        while at < out.len() {
            if self.used == SAMPLES {
                self.refill();
            }
            let take = (SAMPLES - self.used).min(out.len() - at);
            out[at..at + take].copy_from_slice(&self.buf[self.used..self.used + take]);
            (self.used, at) = (self.used + take, at + take);
        }
    }

    /// [`SAMPLES`] more elements; a word in the biased low range (probability below
    /// Q/2^32 each) is replaced by the PRG's exact [`Prg::below`], after the batch.
    fn refill(&mut self) {
        const REJECTED: u64 = u64::MAX;
        let range = self.range;
        if range <= 1 << 32 {
            let mut blocks = [Block::ZERO; SAMPLES / 4];
            self.prg.fill_blocks(&mut blocks);
            let mut words = [0u32; SAMPLES];
            for (w, b) in words.chunks_exact_mut(4).zip(&blocks) {
                for (k, w) in w.iter_mut().enumerate() {
                    *w = (b.as_u128() >> (32 * k)) as u32;
                }
            }
            let threshold = ((1u64 << 32) % range) as u32;
            with_avx512(
                #[inline(always)]
                || {
                    for (v, &x) in self.buf.iter_mut().zip(&words) {
                        let m = x as u64 * range;
                        *v = if (m as u32) < threshold {
                            REJECTED
                        } else {
                            m >> 32
                        };
                    }
                },
            );
        } else {
            let mut blocks = [Block::ZERO; SAMPLES / 2];
            self.prg.fill_blocks(&mut blocks);
            let threshold = range.wrapping_neg() % range;
            for (i, v) in self.buf.iter_mut().enumerate() {
                let x = (blocks[i / 2].as_u128() >> (64 * (i % 2))) as u64;
                let m = x as u128 * range as u128;
                *v = if (m as u64) < threshold {
                    REJECTED
                } else {
                    (m >> 64) as u64
                };
            }
        }
        if self.buf.contains(&REJECTED) {
            for v in self.buf.iter_mut().filter(|v| **v == REJECTED) {
                *v = self.prg.below(range);
            }
        }
        if self.offset != 0 {
            self.buf.iter_mut().for_each(|v| *v += self.offset);
        }
        self.used = 0;
    }
}

/// The sender's seeds for w and u, from the one the dealer sends.
fn senders_seeds(seed: Block) -> (Block, Block) {
    let mut prg = Prg::from_seed(seed);
    (prg.block(), prg.block())
}

/// Bins of r_A in a frame from the dealer to the receiver: about 2^20 comparisons, in a
/// multiple of eight bins, so that the frames' packed bytes join end to end.
fn frame_bins(p: &Kbm23Params) -> usize {
    ((1 << 20) / p.beta).next_multiple_of(8)
}

/// Expands `len` elements of `sampler` into a packed vector.
fn expand(f: &Field, sampler: &mut Sampler, len: usize) -> Packed {
    let mut out = PackedWriter::new(f.bits(), len);
    let mut buf = vec![0; SAMPLES.min(len)];
    for start in (0..len).step_by(SAMPLES) {
        let buf = &mut buf[..SAMPLES.min(len - start)];
        sampler.fill(buf);
        out.extend(buf);
    }
    out.finish()
}

/// Connects a party to the dealer and sends its request.
fn request(
    dealer: &mut dyn Channel,
    role: Role,
    session: [u8; 32],
    p: &Kbm23Params,
) -> Result<Block> {
    let sizes = Sizes {
        sender: p.n_b,
        receiver: p.n_a,
    };
    let sigma = (!p.hashed).then_some(p.sigma);
    let req = Request {
        role,
        session,
        sizes,
        sigma,
    };
    dealer.send(&req.encode())?;
    let seed = dealer.recv_exact(16, "the dealer's seed")?;
    Ok(Block::from_le_bytes(seed.try_into().expect("16 bytes")))
}

/// The sender's `(w, u)` from the dealer.
pub(super) fn senders_tuples(
    dealer: &mut dyn Channel,
    session: [u8; 32],
    p: &Kbm23Params,
) -> Result<SendersTuples> {
    let (w_seed, u_seed) = senders_seeds(request(dealer, Role::Sender, session, p)?);
    let f = p.field;
    let w = expand(&f, &mut Sampler::new(&f, w_seed, true), p.comparisons());
    let u = expand(&f, &mut Sampler::new(&f, u_seed, false), p.comparisons());
    Ok(SendersTuples { w, u })
}

/// The receiver's `(s_A, r_A)` from the dealer: its seed, then r_A a frame at a time.
pub(super) fn receivers_tuples(
    dealer: &mut dyn Channel,
    session: [u8; 32],
    p: &Kbm23Params,
) -> Result<ReceiversTuples> {
    let seed = request(dealer, Role::Receiver, session, p)?;
    let (f, beta, alpha) = (p.field, p.beta, p.alpha as usize);
    let s = expand(&f, &mut Sampler::new(&f, seed, false), alpha);
    let mut r = PackedWriter::new(f.bits(), p.comparisons());
    let mut frame = Vec::new();
    for first in (0..alpha).step_by(frame_bins(p)) {
        let len = frame_bins(p).min(alpha - first) * beta;
        let bytes = super::field::packed_bytes(f.bits(), len);
        dealer.recv_exact_into(&mut frame, bytes, "r_A from the dealer")?;
        let part = Packed::parse(&f, len, std::mem::take(&mut frame), "r_A from the dealer")?;
        r.append(&part);
        frame = part.into_bytes();
    }
    Ok(ReceiversTuples { s, r: r.finish() })
}

/// Deals the tuples of one session to its two parties (`links[0]` asked with
/// `requests[0]`), which the caller has paired: same session, both roles, same sizes and σ.
/// Returns the bytes sent to each.
pub fn deal(
    links: [&mut dyn Channel; 2],
    requests: [Request; 2],
    prg: &mut Prg,
) -> Result<[u64; 2]> {
    let [a, b] = requests;
    if a.session != b.session || a.role == b.role || a.sizes != b.sizes || a.sigma != b.sigma {
        return Err(Error::Usage(
            "the two requests are not the two parties of one session".into(),
        ));
    }
    let p = Kbm23Params::new(a.sizes, a.sigma)?;
    let [first, second] = links;
    let (receiver, sender) = match a.role {
        Role::Receiver => (first, second),
        Role::Sender => (second, first),
    };
    let (f, beta, alpha) = (p.field, p.beta, p.alpha as usize);
    let (receivers_seed, senders_seed) = (prg.block(), prg.block());
    sender.send(&senders_seed.to_le_bytes())?;
    receiver.send(&receivers_seed.to_le_bytes())?;
    let (w_seed, u_seed) = senders_seeds(senders_seed);
    let mut s = Sampler::new(&f, receivers_seed, false);
    let (mut w, mut u) = (
        Sampler::new(&f, w_seed, true),
        Sampler::new(&f, u_seed, false),
    );
    let bins = frame_bins(&p);
    let dummy = p.senders_dummy();
    let (mut c, mut r_buf, mut w_buf, mut u_buf) = (
        vec![0; bins],
        vec![0; bins * beta],
        vec![0; bins * beta],
        vec![0; bins * beta],
    );
    let (mut sent, mut buf) = (16, Vec::new());
    for first in (0..alpha).step_by(bins) {
        let bins = bins.min(alpha - first);
        let len = bins * beta;
        s.fill(&mut c[..bins]);
        c[..bins].iter_mut().for_each(|s| *s = f.sub(*s, dummy));
        w.fill(&mut w_buf[..len]);
        u.fill(&mut u_buf[..len]);
        // r_A = (s_A − dummy + 0)·w + u: the sender's answer to a bin where the tables
        // agree.
        let r = &mut r_buf[..len];
        r.fill(0);
        answer(&f, beta, &c[..bins], r, &w_buf[..len], &u_buf[..len]);
        let mut packed = PackedWriter::reusing(f.bits(), len, buf);
        packed.extend(r);
        let packed = packed.finish();
        receiver.send(packed.as_bytes())?;
        sent += packed.as_bytes().len() as u64;
        buf = packed.into_bytes();
    }
    Ok(match a.role {
        Role::Receiver => [sent, 16],
        Role::Sender => [16, sent],
    })
}

#[cfg(test)]
mod tests {
    use super::super::tuples::tests::assert_tuples;
    use super::*;
    use crate::net::mem_pair;
    use crate::util::cpu::{with_level, Level};
    use std::time::Duration;

    /// The same at every level too (the AVX-512 clone of the batch, or not).
    #[test]
    fn samples_are_the_same_however_asked_for_and_in_range() {
        for q in [3, 9337, 65537, (1 << 40) + 15] {
            let f = Field::new(q);
            for nonzero in [false, true] {
                let mut whole = vec![0; 5000];
                Sampler::new(&f, Block::from(7), nonzero).fill(&mut whole);
                for level in Level::ALL {
                    let mut pieces = Vec::new();
                    let mut s = Sampler::new(&f, Block::from(7), nonzero);
                    for len in [1, 1023, 1, 2000, 1975] {
                        let mut part = vec![0; len];
                        with_level(level, || s.fill(&mut part));
                        pieces.extend(part);
                    }
                    let first = whole.iter().zip(&pieces).position(|(a, b)| a != b);
                    assert!(
                        whole == pieces,
                        "Q = {q}, {level:?}: first difference at {first:?}"
                    );
                }
                assert!(whole.iter().all(|&v| v < q && (v > 0 || !nonzero)));
            }
        }
        // Every element of a small field turns up, in about equal numbers.
        let mut counts = [0u32; 3];
        let mut v = vec![0; 30_000];
        Sampler::new(&Field::new(3), Block::from(1), false).fill(&mut v);
        v.iter().for_each(|&x| counts[x as usize] += 1);
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn dealt_tuples_satisfy_eq_11() {
        for sigma in [Some(32), None] {
            let sizes = Sizes {
                sender: 3000,
                receiver: 2000,
            };
            let p = Kbm23Params::new(sizes, sigma).unwrap();
            let session = [9; 32];
            let (mut receiver, mut receiver_dealer) = mem_pair(Duration::from_secs(10));
            let (mut sender, mut sender_dealer) = mem_pair(Duration::from_secs(10));
            let (a, b, sent) = std::thread::scope(|scope| {
                let a = scope.spawn(|| receivers_tuples(&mut receiver, session, &p).unwrap());
                let b = scope.spawn(|| senders_tuples(&mut sender, session, &p).unwrap());
                let requests = [
                    Request::read(&mut receiver_dealer, 1 << 20).unwrap(),
                    Request::read(&mut sender_dealer, 1 << 20).unwrap(),
                ];
                let links: [&mut dyn Channel; 2] = [&mut receiver_dealer, &mut sender_dealer];
                let sent = deal(links, requests, &mut Prg::from_seed(Block::from(3))).unwrap();
                (a.join().unwrap(), b.join().unwrap(), sent)
            });
            assert_tuples(&p, &a, &b);
            let f = p.field;
            let bytes = super::super::field::packed_bytes(f.bits(), p.comparisons());
            assert!(sent[0] >= 16 + bytes as u64 && sent[1] == 16, "{sent:?}");
        }
    }

    fn small() -> Kbm23Params {
        let sizes = Sizes {
            sender: 500,
            receiver: 400,
        };
        Kbm23Params::new(sizes, Some(32)).unwrap()
    }

    /// What a party gets from a dealer that answers its request with `frames`, then
    /// hangs up.
    fn against(role: Role, frames: Vec<Vec<u8>>) -> Result<()> {
        let p = small();
        let (mut party, mut dealer) = mem_pair(Duration::from_secs(5));
        std::thread::scope(|scope| {
            scope.spawn(move || {
                if Request::read(&mut dealer, 1 << 20).is_ok() {
                    for f in frames {
                        let _ = dealer.send(&f);
                    }
                }
            });
            match role {
                Role::Receiver => receivers_tuples(&mut party, [1; 32], &p).map(drop),
                Role::Sender => senders_tuples(&mut party, [1; 32], &p).map(drop),
            }
        })
    }

    #[test]
    fn a_dealer_that_sends_too_little_or_bad_elements_is_an_error() {
        let p = small();
        let seed = 5u128.to_le_bytes().to_vec();
        let bits = p.field.bits();
        let all = |v: u64| Packed::from_values(bits, (0..p.comparisons()).map(|_| v));
        assert!(frame_bins(&p) as u64 >= p.alpha, "one frame at this size");
        let good = all(1).as_bytes().to_vec();
        assert!(against(Role::Receiver, vec![seed.clone(), good.clone()]).is_ok());
        for (what, frames) in [
            ("no seed", vec![]),
            ("a short seed", vec![seed[..15].to_vec()]),
            ("no r_A", vec![seed.clone()]),
            (
                "r_A cut short",
                vec![seed.clone(), good[..good.len() - 1].to_vec()],
            ),
            (
                "r_A with an element ≥ Q",
                vec![seed.clone(), all(p.field.modulus()).as_bytes().to_vec()],
            ),
        ] {
            let e = against(Role::Receiver, frames).expect_err(what);
            assert!(!matches!(e, Error::Usage(_)), "{what}: {e}");
        }
        assert!(against(Role::Sender, vec![seed.clone()]).is_ok());
        assert!(
            against(Role::Sender, vec![]).is_err(),
            "a dealer gone before the seed"
        );
    }

    #[test]
    fn requests_that_are_not_one_session_are_refused() {
        let req = |role, session, sender| Request {
            role,
            session: [session; 32],
            sizes: Sizes {
                sender,
                receiver: 100,
            },
            sigma: Some(32),
        };
        for (a, b) in [
            (req(Role::Receiver, 1, 100), req(Role::Receiver, 1, 100)),
            (req(Role::Receiver, 1, 100), req(Role::Sender, 2, 100)),
            (req(Role::Receiver, 1, 100), req(Role::Sender, 1, 101)),
        ] {
            let ((mut x, _), (mut y, _)) = (
                mem_pair(Duration::from_secs(10)),
                mem_pair(Duration::from_secs(10)),
            );
            let e = deal(
                [&mut x, &mut y],
                [a, b],
                &mut Prg::from_seed(Block::from(1)),
            )
            .unwrap_err();
            assert!(e.to_string().contains("one session"), "{e}");
        }
        let (mut x, mut y) = mem_pair(Duration::from_secs(10));
        let mut big = req(Role::Sender, 1, 1 << 30).encode();
        x.send(&big).unwrap();
        assert!(Request::read(&mut y, 1 << 24).is_err(), "too many items");
        big[8] = 9;
        x.send(&big).unwrap();
        assert!(Request::read(&mut y, 1 << 30).is_err(), "another version");
    }
}
