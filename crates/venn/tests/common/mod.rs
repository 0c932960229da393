//! What the protocol tests share: options, random sets with a known intersection, and a
//! meddling channel that rewrites or cuts off one party's frames.
#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use venn::crypto::{Block, Prg};
use venn::net::{mem_pair, Channel, MemChannel, Traffic};
use venn::protocols::{Options, Output, Protocol, Sizes};
use venn::session::Role;
use venn::{run, Error, Items, Report, RunOptions};

/// `f` on every item, spread over the machine's cores by plain threads, each taking the
/// next item not yet taken (a protocol's runs cost from milliseconds to seconds: a fixed
/// share per thread left a core idle behind the other's circuit protocols). Not the rayon
/// pool: a pool thread that waits for a party's own pool runs other queued items
/// meanwhile, nested on its stack.
pub(crate) fn each_on_all_cores<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..cores {
            scope.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    f(item);
                }
            });
        }
    });
}

pub(crate) fn options(
    protocol: &'static dyn Protocol,
    role: Role,
    both: bool,
) -> RunOptions<'static> {
    RunOptions {
        protocol,
        role,
        both,
        options: test_options(protocol),
        max_peer_items: 1 << 24,
        max_memory: 1 << 32,
        input_memory: 0,
        threads: 1,
        seed: None,
        progress: None,
        dealer: None,
        upload_deadline: None,
        in_buckets: None,
    }
}

/// The options a test runs `p` with.
pub(crate) fn with(p: &'static dyn Protocol, role: Role, chosen: Options) -> RunOptions<'static> {
    RunOptions {
        options: chosen,
        ..options(p, role, false)
    }
}

/// Precomputes both parties' states of `p` for at most `most = [sender, receiver]` items,
/// saved in `dir`; returns their paths (sender's first).
pub(crate) fn precompute(
    p: &'static dyn Protocol,
    o: Options,
    most: [u64; 2],
    dir: &Path,
) -> [PathBuf; 2] {
    let paths = [dir.join("s.state"), dir.join("r.state")];
    let (mut a, mut b) = mem_pair(Duration::from_secs(30));
    std::thread::scope(|sc| {
        let t = sc.spawn(|| venn::precompute(&mut b, most[1], &with(p, Role::Receiver, o)));
        let pre = venn::precompute(&mut a, most[0], &with(p, Role::Sender, o)).unwrap();
        pre.save(&paths[0]).unwrap();
        t.join().unwrap().unwrap().save(&paths[1]).unwrap();
    });
    paths
}

/// Runs both parties' online phases from the states at `paths`.
pub(crate) fn online(
    p: &'static dyn Protocol,
    o: Options,
    paths: &[PathBuf; 2],
    s: &Items,
    r: &Items,
) -> (venn::Result<Report>, venn::Result<Report>) {
    let (mut a, mut b) = mem_pair(Duration::from_secs(30));
    std::thread::scope(|sc| {
        let t = sc.spawn(|| {
            let o = with(p, Role::Receiver, o);
            venn::run_online(&mut b, r, venn::load_state(&paths[1], &o)?, &o)
        });
        let o = with(p, Role::Sender, o);
        let sr = venn::load_state(&paths[0], &o).and_then(|st| venn::run_online(&mut a, s, st, &o));
        (sr, t.join().unwrap())
    })
}

/// The options the tests run `protocol` with: the defaults, and for a protocol that only
/// runs on σ-bit integers the largest σ.
pub(crate) fn test_options(protocol: &'static dyn Protocol) -> Options {
    let accepts = protocol.accepts();
    Options {
        sigma: (!accepts.any_items)
            .then(|| accepts.sigma.iter().max().copied())
            .flatten(),
        ..Options::default()
    }
}

/// A named entry of a protocol's parameter table at `n` items a side (with the tests'
/// options).
pub(crate) fn param(protocol: &str, n: u64, name: &str) -> usize {
    let sizes = Sizes {
        sender: n,
        receiver: n,
    };
    let p = venn::protocols::find(protocol).unwrap();
    let table = p.params(sizes, test_options(p)).unwrap().table();
    let value = table
        .0
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.parse());
    value
        .unwrap_or_else(|| panic!("{protocol} has no {name}"))
        .unwrap()
}

/// `items` as `protocol` takes them with [`test_options`] (see [`fit_sigma`]).
pub(crate) fn fit(protocol: &'static dyn Protocol, items: &Items) -> Items {
    fit_sigma(test_options(protocol).sigma, items)
}

/// `items` unchanged, or for a run on σ-bit integers each item's 64-bit FNV-1a hash cut
/// to σ bits, in decimal (distinct for the tests' sets of distinct items, with
/// overwhelming probability at σ = 64 and about 1 − n²/2^33 at σ = 32).
pub(crate) fn fit_sigma(sigma: Option<u32>, items: &Items) -> Items {
    let Some(sigma) = sigma else {
        return items.clone();
    };
    let mask = u64::MAX >> (64 - sigma);
    (0..items.len())
        .map(|i| {
            let h = items.get(i).iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            });
            (h & mask).to_string()
        })
        .collect()
}

/// The value the tests give an item (below 2^32), for a protocol that sums the sender's
/// values: a hash of the item as the tests made it (before [`fit_sigma`]).
pub(crate) fn value_of(item: &[u8]) -> u64 {
    let h = item.iter().fold(0x84222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    h >> 32
}

/// The sender's `items` as `protocol` takes them with `options`: [`fit_sigma`], and each
/// with its [`value_of`] where the protocol sums the sender's values.
pub(crate) fn fit_sender(
    protocol: &'static dyn Protocol,
    options: Options,
    items: &Items,
) -> Items {
    let fitted = with_records(fit_sigma(options.sigma, items), options.payload);
    if protocol.accepts().value_columns == 0 {
        return fitted;
    }
    let values = (0..items.len()).map(|i| value_of(items.get(i))).collect();
    fitted.with_values(values).expect("a value per item")
}

/// The receiver's `items` as a protocol takes them with `options`: [`fit_sigma`], and
/// each with its [`record_of`] where the run carries the receiver's records.
pub(crate) fn fit_receiver(options: Options, items: &Items) -> Items {
    with_records(fit_sigma(options.sigma, items), options.receiver_payload)
}

/// `items` with each one's [`record_of`] of `width` bytes, if a width is given.
fn with_records(items: Items, width: Option<u32>) -> Items {
    let Some(width) = width.map(|w| w as usize) else {
        return items;
    };
    let records = (0..items.len())
        .flat_map(|i| record_of(items.get(i), width))
        .collect();
    items
        .with_records(records, width)
        .expect("a record per item")
}

/// The record a test's party gives `item`: `width` bytes that follow from it alone (its
/// bytes, then its [`value_of`] counting up), so a receiver can tell the right one.
pub(crate) fn record_of(item: &[u8], width: usize) -> Vec<u8> {
    let tail = (0..).map(|k: u64| (value_of(item).wrapping_add(k) % 251) as u8);
    item.iter().copied().chain(tail).take(width).collect()
}

/// Runs both parties; returns (sender report, receiver report).
pub(crate) fn run_pair(
    protocol: &'static dyn Protocol,
    sender: &Items,
    receiver: &Items,
    both: bool,
) -> (venn::Result<Report>, venn::Result<Report>) {
    run_pair_with(protocol, test_options(protocol), sender, receiver, both)
}

/// [`run_pair`] with the protocol's `options`.
pub(crate) fn run_pair_with(
    protocol: &'static dyn Protocol,
    options: Options,
    sender: &Items,
    receiver: &Items,
    both: bool,
) -> (venn::Result<Report>, venn::Result<Report>) {
    let (mut a, mut b) = mem_pair(Duration::from_secs(30));
    let (sender, receiver) = (
        &fit_sender(protocol, options, sender),
        &fit_receiver(options, receiver),
    );
    let opts = |role| RunOptions {
        options,
        ..self::options(protocol, role, both)
    };
    std::thread::scope(|s| {
        let t = s.spawn(|| run(&mut b, receiver, &opts(Role::Receiver)));
        let sr = run(&mut a, sender, &opts(Role::Sender));
        (sr, t.join().unwrap())
    })
}

/// Random sets of the given sizes sharing `overlap` items; item lengths vary 0..=40 bytes.
pub(crate) fn sets(
    n_sender: usize,
    n_receiver: usize,
    overlap: usize,
    seed: u128,
) -> (Items, Items) {
    let mut prg = Prg::from_seed(Block::from_u128(seed));
    let item = |prg: &mut Prg| {
        let len = prg.below(41) as usize;
        let mut b = vec![0u8; len + 8];
        prg.fill_bytes(&mut b);
        b
    };
    let shared: Vec<Vec<u8>> = (0..overlap).map(|_| item(&mut prg)).collect();
    let mut s: Vec<Vec<u8>> = shared.clone();
    s.extend((overlap..n_sender).map(|_| item(&mut prg)));
    let mut r: Vec<Vec<u8>> = shared;
    r.extend((overlap..n_receiver).map(|_| item(&mut prg)));
    // Shuffle so shared items are not at the same positions.
    let ps = prg.permutation(s.len());
    let pr = prg.permutation(r.len());
    (
        ps.iter().map(|&i| s[i as usize].clone()).collect(),
        pr.iter().map(|&i| r[i as usize].clone()).collect(),
    )
}

/// The indices a report's output holds (it must hold indices).
pub(crate) fn indices(r: &Report) -> Vec<usize> {
    r.output.indices().expect("an output of indices").to_vec()
}

/// The receiver's output against the true intersection (as indices of its items `mine`):
/// those indices, or their number from a protocol that outputs only the count, or with it
/// the sum of their [`value_of`].
pub(crate) fn assert_output(r: &Report, mine: &Items, truth: &[usize], what: &str) {
    match &r.output {
        Output::Count(c) => assert_eq!(*c as usize, truth.len(), "{what}: the count"),
        Output::Sum { count, sums } => {
            assert_eq!(*count as usize, truth.len(), "{what}: the count");
            let expected = truth.iter().map(|&i| value_of(mine.get(i))).sum::<u64>();
            assert_eq!(sums[..], [expected], "{what}: the sum");
        }
        Output::Records {
            indices,
            records,
            width,
            rows,
        } => {
            assert_eq!(indices, truth, "{what}");
            assert!(rows.iter().all(|&r| r == 1), "{what}: one row a key");
            for (k, &i) in indices.iter().enumerate() {
                let record = &records[k * width..(k + 1) * width];
                assert_eq!(record, record_of(mine.get(i), *width), "{what}: record {k}");
            }
        }
        out => assert_eq!(out.indices().expect("indices or a count"), truth, "{what}"),
    }
}

pub(crate) fn truth(mine: &Items, theirs: &Items) -> Vec<usize> {
    let other: HashSet<&[u8]> = (0..theirs.len()).map(|i| theirs.get(i)).collect();
    (0..mine.len())
        .filter(|&i| other.contains(mine.get(i)))
        .collect()
}

/// A channel that lets a test rewrite (or cut off at) the frames one party sends, or
/// (with `incoming`) those it receives: a meddling network on that party's link.
pub(crate) struct Tampered<F: FnMut(usize, &mut Vec<u8>) -> bool + Send> {
    inner: MemChannel,
    incoming: bool,
    frames: usize,
    tamper: F,
}

impl<F: FnMut(usize, &mut Vec<u8>) -> bool + Send> venn::net::Layer for Tampered<F> {
    type Inner = MemChannel;
    fn inner(&self) -> &MemChannel {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut MemChannel {
        &mut self.inner
    }
    fn send(&mut self, frame: &[u8]) -> venn::Result<()> {
        if self.incoming {
            return self.inner.send(frame);
        }
        let mut f = frame.to_vec();
        self.frames += 1;
        if !(self.tamper)(self.frames, &mut f) {
            return Err(Error::PeerClosed(" (test: cut off)"));
        }
        self.inner.send(&f)
    }
    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> venn::Result<()> {
        self.inner.recv_into(buf, max_len)?;
        if self.incoming {
            self.frames += 1;
            if !(self.tamper)(self.frames, buf) {
                return Err(Error::PeerClosed(" (test: cut off)"));
            }
        }
        Ok(())
    }
}

/// Runs `p` with the frames on the sender's link passed through `tamper` (those the sender
/// sends, or with `incoming` those it receives); returns both parties' results.
pub(crate) fn tampered_pair(
    p: &'static dyn Protocol,
    o: Options,
    s: &Items,
    r: &Items,
    both: bool,
    incoming: bool,
    tamper: impl FnMut(usize, &mut Vec<u8>) -> bool + Send,
) -> (venn::Result<Report>, venn::Result<Report>) {
    let (sr, rr, _) = tampered_pair_traffic(p, o, s, r, both, incoming, tamper);
    (sr, rr)
}

/// [`tampered_pair`], also returning the sender's traffic on its link (what it sent
/// whether or not it finished).
pub(crate) fn tampered_pair_traffic(
    p: &'static dyn Protocol,
    o: Options,
    s: &Items,
    r: &Items,
    both: bool,
    incoming: bool,
    tamper: impl FnMut(usize, &mut Vec<u8>) -> bool + Send,
) -> (venn::Result<Report>, venn::Result<Report>, Traffic) {
    let (s, r) = (&fit_sender(p, o, s), &fit_receiver(o, r));
    let opts = |role| RunOptions {
        options: o,
        ..options(p, role, both)
    };
    tampered_pair_with(opts, s, r, incoming, tamper)
}

/// [`tampered_pair_traffic`] with each role's options from `opts` and the items as given.
pub(crate) fn tampered_pair_with(
    opts: impl Fn(Role) -> RunOptions<'static> + Sync,
    s: &Items,
    r: &Items,
    incoming: bool,
    tamper: impl FnMut(usize, &mut Vec<u8>) -> bool + Send,
) -> (venn::Result<Report>, venn::Result<Report>, Traffic) {
    let (a, mut b) = mem_pair(Duration::from_secs(5));
    let mut a = Tampered {
        inner: a,
        incoming,
        frames: 0,
        tamper,
    };
    std::thread::scope(|sc| {
        let t = sc.spawn(|| run(&mut b, r, &opts(Role::Receiver)));
        let sr = run(&mut a, s, &opts(Role::Sender));
        let traffic = a.traffic();
        drop(a);
        (sr, t.join().unwrap(), traffic)
    })
}

/// The receiver's result when the sender's frames pass through `tamper`.
pub(crate) fn tampered_run(
    p: &'static dyn Protocol,
    o: Options,
    s: &Items,
    r: &Items,
    tamper: impl FnMut(usize, &mut Vec<u8>) -> bool + Send,
) -> venn::Result<Report> {
    tampered_pair(p, o, s, r, false, false, tamper).1
}
