//! Entry points for the fuzz targets in `fuzz/` (run with `cargo +nightly fuzz run …`); the
//! committed corpora are replayed through the same functions by `tests/fuzz_corpus.rs` on
//! stable, so every input a campaign found interesting stays a regression test.
//!
//! Each function takes arbitrary bytes and panics only on a bug: untrusted input must end
//! in an [`Error`](crate::Error), never a panic, an unbounded allocation or a hang.

use crate::crypto::{Block, Prg};
use crate::net::{
    check_frame_len, mem_pair, Channel, MemChannel, StreamChannel, TimedRead, Traffic,
};
use crate::protocols::{find, registry, Options, Output, Protocol};
use crate::session::Role;
use crate::{run, Items, Result, RunOptions};
use std::io::Read;
use std::sync::OnceLock;
use std::time::Duration;

/// A byte stream with nothing to wait for: reads return what is left, then end of file.
struct Bytes<'a>(&'a [u8]);

impl Read for Bytes<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl TimedRead for Bytes<'_> {
    fn set_read_limit(&mut self, _: Duration) -> std::io::Result<()> {
        Ok(())
    }
}

/// The frame decoder ([`StreamChannel`]) on an arbitrary byte stream: the first byte picks
/// the bound on frame lengths; every frame accepted must respect it and be counted.
pub fn frames(data: &[u8]) {
    let Some((&bound, stream)) = data.split_first() else {
        return;
    };
    let max_len = 1usize << (bound % 28);
    let mut chan = StreamChannel::new(Bytes(stream), std::io::sink(), Duration::from_secs(1));
    let chan: &mut dyn Channel = &mut chan;
    let mut buf = Vec::new();
    let mut received = 0u64;
    while chan.recv_into(&mut buf, max_len).is_ok() {
        assert!(buf.len() <= max_len, "a frame over the bound was accepted");
        received += 4 + buf.len() as u64;
        assert_eq!(chan.traffic().received, received);
    }
}

/// A peer made of frames cut from fuzz input (each a 2-byte length and its bytes); what we
/// send is discarded.
struct Scripted<'a> {
    data: &'a [u8],
    traffic: Traffic,
}

impl Channel for Scripted<'_> {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.traffic.sent += 4 + frame.len() as u64;
        Ok(())
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        let closed = crate::Error::PeerClosed(" (end of fuzz input)");
        let (len, rest) = self.data.split_at_checked(2).ok_or(closed)?;
        let len = u16::from_le_bytes(len.try_into().expect("2 bytes")) as usize;
        let frame = &rest[..len.min(rest.len())];
        self.data = &rest[frame.len()..];
        check_frame_len(frame.len(), max_len)?;
        buf.clear();
        buf.extend_from_slice(frame);
        self.traffic.received += 4 + frame.len() as u64;
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn abort(&mut self, _reason: &str) {}

    /// Fuzz input has no clock: its frames are all there.
    fn set_deadline(&mut self, _deadline: Option<std::time::Instant>) {}
}

/// The options of `protocol`'s cheapest runs, which a fuzzed run uses (and the tests that
/// run a protocol many times over): the defaults, on σ-bit integers of the smallest σ where
/// it takes them. The circuits' cost grows with the width of the values they compare:
/// psww18's, whose tables are sized for at least 2^14 items, compares 19-bit values at
/// σ = 32 and 43-bit ones for hashed keys of 200 items (2.3× the AND gates).
pub fn cheapest_options(protocol: &dyn Protocol) -> Options {
    Options {
        sigma: protocol.accepts().sigma.iter().min().copied(),
        ..Options::default()
    }
}

/// The options a fuzzed run uses: [`cheapest_options`].
fn options(protocol: &str, role: Role) -> RunOptions<'static> {
    let protocol = find(protocol).expect("a registered protocol");
    RunOptions {
        protocol,
        role,
        both: false,
        options: cheapest_options(protocol),
        max_peer_items: 1 << 10,
        max_memory: 1 << 30,
        input_memory: 0,
        threads: 1,
        // Each party its own randomness, as on two machines: with one seed both would draw
        // the same keys, and dual execution's two encodings of an item would cancel.
        seed: Some(Block::from(match role {
            Role::Sender => 0x5eed,
            Role::Receiver => 0x5eed_0002,
        })),
        progress: None,
        dealer: None,
        upload_deadline: None,
        in_buckets: None,
    }
}

/// A party of a registered protocol (picked by the first byte, with its role) against a
/// peer whose frames are the rest of the input: the handshake's parsers. (The handshake's
/// proofs cannot be forged, so the run never gets further; [`tampered_run`] goes deeper.)
pub fn handshake(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let protocols = registry();
    let protocol = protocols[(pick as usize >> 1) % protocols.len()]
        .info()
        .name;
    let role = if pick & 1 == 0 {
        Role::Sender
    } else {
        Role::Receiver
    };
    // Integers, so that a protocol on σ-bit integers takes them too.
    let items: Items = [b"1".as_slice(), b"2"].into_iter().collect();
    let mut peer = Scripted {
        data: rest,
        traffic: Traffic::default(),
    };
    assert!(
        run(&mut peer, &items, &options(protocol, role)).is_err(),
        "a run against made-up frames must fail"
    );
}

/// How one frame on its way to a party is changed.
#[derive(Clone, Copy)]
struct Edit {
    /// Which party receives the frame.
    to: Role,
    /// The frame's position among those that party receives.
    frame: usize,
    op: u8,
    at: usize,
    arg: u8,
}

impl Edit {
    /// Edits of 5 bytes each: target and frame, operation, offset (2 bytes), argument.
    fn parse(data: &[u8]) -> Vec<Edit> {
        data.chunks_exact(5)
            .map(|e| Edit {
                to: if e[0] & 1 == 0 {
                    Role::Sender
                } else {
                    Role::Receiver
                },
                frame: (e[0] >> 1) as usize,
                op: e[1] % 4,
                at: u16::from_le_bytes([e[2], e[3]]) as usize,
                arg: e[4],
            })
            .collect()
    }

    fn apply(&self, frame: &mut Vec<u8>) {
        match self.op {
            0 if !frame.is_empty() => {
                let i = self.at % frame.len();
                frame[i] ^= self.arg.max(1);
            }
            1 => frame.truncate(self.at % (frame.len() + 1)),
            2 => {
                let i = self.at % (frame.len() + 1);
                frame.splice(i..i, std::iter::repeat_n(self.arg, 1 + self.at % 64));
            }
            3 => {
                // Overwrite a little-endian u64 (lengths and counts are 4 or 8 bytes).
                let i = self.at % (frame.len() + 1);
                let end = (i + 8).min(frame.len());
                let v = (self.arg as u64)
                    .wrapping_shl(self.at as u32 % 64)
                    .to_le_bytes();
                frame[i..end].copy_from_slice(&v[..end - i]);
            }
            _ => {}
        }
    }
}

/// A party's channel with the edits meant for it applied to what it receives.
struct Tampered {
    inner: MemChannel,
    edits: Vec<Edit>,
    received: usize,
    /// The positions of the frames an edit changed.
    changed: Vec<usize>,
}

impl Tampered {
    fn new(inner: MemChannel, edits: &[Edit], to: Role) -> Self {
        let edits = edits.iter().filter(|e| e.to == to).copied();
        Tampered {
            inner,
            edits: edits.collect(),
            received: 0,
            changed: Vec::new(),
        }
    }

    /// Whether any frame but the last one received was changed. (The last is the peer's
    /// transcript confirmation: a party whose own transcript was untouched may rightly
    /// finish although its peer's copy of that last frame was altered.)
    fn changed_before_last(&self) -> bool {
        self.changed.iter().any(|&f| f + 1 < self.received)
    }
}

impl crate::net::Layer for Tampered {
    type Inner = MemChannel;
    fn inner(&self) -> &MemChannel {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut MemChannel {
        &mut self.inner
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        // Receive without the bound, edit, then apply the bound as the wire would.
        self.inner.recv_into(buf, crate::net::MAX_FRAME)?;
        let original = buf.clone();
        for e in self.edits.iter().filter(|e| e.frame == self.received) {
            e.apply(buf);
        }
        if *buf != original {
            self.changed.push(self.received);
        }
        self.received += 1;
        check_frame_len(buf.len(), max_len)
    }
}

/// Sets of up to 16 distinct items each (as the CLI hands the protocols: deduplicated) from
/// two bytes: sizes and overlap; decimal integers below 2^32 if `integers`.
fn sets(a: u8, b: u8, integers: bool) -> (Items, Items) {
    let (ns, nr) = (1 + (a % 16) as usize, 1 + (b % 16) as usize);
    let overlap = (a >> 4) as usize % (ns.min(nr) + 1);
    let mut prg = Prg::from_seed(Block::from(u64::from(a) << 8 | u64::from(b)));
    // A distinct first byte for every item made; random bytes after it.
    let mut made = 0u8;
    let mut item = || {
        let mut v = vec![0u8; 1 + prg.below(24) as usize];
        prg.fill_bytes(&mut v);
        v[0] = made;
        made += 1;
        if integers {
            // Distinct items, distinct integers: the first byte times an odd number.
            v = (v[0] as u32)
                .wrapping_mul(0x9e37_79b1)
                .to_string()
                .into_bytes();
        }
        v
    };
    let shared: Vec<Vec<u8>> = (0..overlap).map(|_| item()).collect();
    let sender = shared.iter().cloned().chain((overlap..ns).map(|_| item()));
    let sender: Items = sender.collect();
    let receiver: Items = shared
        .into_iter()
        .chain((overlap..nr).map(|_| item()))
        .collect();
    (sender, receiver)
}

/// The value of a sender's item, for a protocol that sums them: its bytes as a number,
/// cut to 32 bits.
fn value(item: &[u8]) -> u64 {
    item.iter().fold(0u32, |v, &b| v.rotate_left(8) ^ b as u32) as u64
}

/// Runs one party and hands back its channel, closed, with what the edits did.
fn party(mut chan: Tampered, items: &Items, opts: RunOptions) -> (Result<Output>, Tampered) {
    let out = run(&mut chan, items, &opts).map(|r| r.output);
    // Closing our end ends the peer's wait at once.
    let (tx, _) = mem_pair(Duration::ZERO);
    drop(std::mem::replace(&mut chan.inner, tx));
    (out, chan)
}

/// What one run of both parties gave: each party's output and channel, and the sets.
struct Played {
    sent: Result<Output>,
    s: Tampered,
    received: Result<Output>,
    r: Tampered,
    sender: Items,
    receiver: Items,
}

/// Both parties of `protocol`, honest, on the sets `shape` picks ([`sets`]), with `edits`
/// applied to the frames each receives.
fn play(protocol: &str, shape: [u8; 2], edits: &[Edit]) -> Played {
    let accepts = find(protocol).expect("a registered protocol").accepts();
    let (sender, receiver) = sets(shape[0], shape[1], !accepts.sigma.is_empty());
    let sender = match accepts.value_columns > 0 {
        true => {
            let values = (0..sender.len()).map(|i| value(sender.get(i))).collect();
            sender.with_values(values).expect("a value per item")
        }
        false => sender,
    };
    let (s, r) = mem_pair(Duration::from_secs(10));
    let (s, r) = (
        Tampered::new(s, edits, Role::Sender),
        Tampered::new(r, edits, Role::Receiver),
    );
    let ((sent, s), (received, r)) = std::thread::scope(|scope| {
        let receiving = scope.spawn(|| party(r, &receiver, options(protocol, Role::Receiver)));
        let sending = party(s, &sender, options(protocol, Role::Sender));
        (
            sending,
            receiving.join().expect("the receiver does not panic"),
        )
    });
    Played {
        sent,
        s,
        received,
        r,
        sender,
        receiver,
    }
}

/// The protocol a `protocol` fuzz campaign feeds: the registered name in
/// `VENN_FUZZ_PROTOCOL` (one target for every protocol, its corpus `fuzz/corpus/NAME/`).
pub fn protocol_from_env() -> &'static str {
    static NAME: OnceLock<&'static str> = OnceLock::new();
    NAME.get_or_init(|| {
        let wanted = std::env::var("VENN_FUZZ_PROTOCOL").unwrap_or_default();
        match find(&wanted) {
            Ok(p) => p.info().name,
            Err(_) => {
                let names: Vec<&str> = registry().iter().map(|p| p.info().name).collect();
                panic!("set VENN_FUZZ_PROTOCOL to one of {}", names.join(", "))
            }
        }
    })
}

/// Inputs of [`tampered_run`] for a protocol whose corpus no campaign has made yet, read
/// from an honest run: the run untouched, and for each frame either party receives in it
/// (up to the 128 an edit can name) that frame with one byte changed — every message the
/// protocol has, reached once, for the corpus test and as a campaign's seeds.
pub fn seeds(protocol: &str) -> Vec<Vec<u8>> {
    // Sets of 6 and 9 items, 3 of them shared.
    const SHAPE: [u8; 2] = [0x35, 0x08];
    let honest = play(protocol, SHAPE, &[]);
    assert!(
        honest.sent.is_ok() && honest.received.is_ok(),
        "{protocol}: an honest run fails"
    );
    let mut seeds = vec![SHAPE.to_vec()];
    for (to, frames) in [(0u8, honest.s.received), (1, honest.r.received)] {
        for frame in 0..frames.min(128) as u8 {
            let at = (frame as u16).wrapping_mul(37).to_le_bytes();
            seeds.push([&SHAPE[..], &[to | frame << 1, 0, at[0], at[1], 0x80]].concat());
        }
    }
    seeds
}

/// Both parties of `protocol`, honest, on small sets picked by the first two bytes, with
/// the frames each receives changed as the rest of the input says (see `Edit`): every
/// message parser of the protocol sees malformed, truncated and altered messages of the
/// right shape. A party may return an output only if nothing it received was changed and
/// nothing its peer received was, but for the peer's last frame; a run in which nothing
/// was changed must succeed on both sides with exactly the intersection.
pub fn tampered_run(protocol: &str, data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let Played {
        sent,
        s,
        received,
        r,
        sender,
        receiver,
    } = play(protocol, [*a, *b], &Edit::parse(rest));
    for (out, me, peer) in [(&sent, &s, &r), (&received, &r, &s)] {
        if out.is_ok() {
            assert!(
                me.changed.is_empty() && !peer.changed_before_last(),
                "a party finished although the transcript was altered"
            );
        }
    }
    if s.changed.is_empty() && r.changed.is_empty() {
        let (Ok(_), Ok(output)) = (&sent, &received) else {
            panic!("an untouched run failed: {sent:?} / {received:?}");
        };
        let truth: Vec<usize> = (0..receiver.len())
            .filter(|&i| (0..sender.len()).any(|j| sender.get(j) == receiver.get(i)))
            .collect();
        let sum = truth.iter().map(|&i| value(receiver.get(i))).sum::<u64>();
        match output {
            Output::Indices(got) => assert_eq!(
                got, &truth,
                "an untouched run computed a wrong intersection"
            ),
            Output::Count(c) => assert_eq!(
                *c as usize,
                truth.len(),
                "an untouched run computed a wrong count"
            ),
            Output::Sum { count, sums } => assert_eq!(
                (*count as usize, &sums[..]),
                (truth.len(), &[sum][..]),
                "an untouched run computed a wrong sum"
            ),
            _ => {}
        }
    }
}
