//! Throughput of the building blocks on this machine: `cargo run --release --example primitives`.

use std::time::Instant;
use venn::crypto::{transpose128, Aes, Block, Prg, RandomOracle, WideHash};
use venn::internals::okvs::{Okvs, Params};
use venn::internals::tables::{cuckoo_insert, CuckooHash, MatchTable};
use venn::internals::vole::{pprf, Pair, Shape};
use venn::util::memory::huge_vec;

fn time(name: &str, per: usize, f: impl FnOnce()) {
    let t = Instant::now();
    f();
    let e = t.elapsed();
    println!(
        "{name:<28} {:>8.2} ns each  ({:.1} ms total)",
        e.as_nanos() as f64 / per as f64,
        e.as_secs_f64() * 1e3
    );
}

/// The median of each of `fs`' times in ms over `runs` rounds, each round running every
/// one of them once (the machine is shared: one run says little, and interleaving lets each
/// see the same load).
fn medians_ms<const K: usize>(runs: usize, mut fs: [&mut dyn FnMut(); K]) -> [f64; K] {
    let mut times = vec![[0.0; K]; runs];
    for round in times.iter_mut() {
        for (t, f) in round.iter_mut().zip(fs.iter_mut()) {
            let start = Instant::now();
            f();
            *t = start.elapsed().as_secs_f64() * 1e3;
        }
    }
    std::array::from_fn(|k| {
        let mut t: Vec<f64> = times.iter().map(|r| r[k]).collect();
        t.sort_by(f64::total_cmp);
        t[runs / 2]
    })
}

/// RR22's OKVS at `n` keys: encode and decode on rayon pools of 1 and 2 threads.
fn okvs(n: usize, prg: &mut Prg) {
    let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
    let values: Vec<Block> = (0..n).map(|_| prg.block()).collect();
    let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
    let pool = |k| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(k)
            .build()
            .unwrap()
    };
    let (one, two) = (pool(1), pool(2));
    let encode = |pool: &rayon::ThreadPool| {
        pool.install(|| std::hint::black_box(okvs.encode(&keys, &values).unwrap()));
    };
    let [e1, e2] = medians_ms(7, [&mut || encode(&one), &mut || encode(&two)]);
    let encoding = okvs.encode(&keys, &values).unwrap();
    let (mut out1, mut out2) = (vec![Block::ZERO; n], vec![Block::ZERO; n]);
    let [d1, d2] = medians_ms(
        9,
        [
            &mut || one.install(|| okvs.decode(&encoding, &keys, &mut out1)),
            &mut || two.install(|| okvs.decode(&encoding, &keys, &mut out2)),
        ],
    );
    assert!(out1 == values && out2 == values);
    let log_n = n.trailing_zeros();
    for (what, t1, t2) in [("encode", e1, e2), ("decode", d1, d2)] {
        println!(
            "okvs {what} 2^{log_n}: 1 thread {t1:6.1} ms, 2 threads {t2:6.1} ms ({:.2}×, medians)",
            t1 / t2
        );
    }
}

fn main() {
    let n = 1 << 20;
    let mut prg = Prg::from_seed(Block::ONE);
    if std::env::args().any(|a| a == "okvs") {
        for log_n in [20, 22] {
            okvs(1 << log_n, &mut prg);
        }
        return;
    }
    okvs(n, &mut prg);
    let mut m = [Block::ZERO; 128];
    prg.fill_blocks(&mut m);
    time("transpose128", 40_000, || {
        for _ in 0..40_000 {
            transpose128(&mut m);
        }
    });
    let aes = Aes::new(Block::from(5));
    let mut blocks = vec![Block::ZERO; n];
    time("aes (batched)", n, || aes.encrypt_blocks(&mut blocks));
    let ro = RandomOracle::new("bench", &[]);
    let items: Vec<[u8; 16]> = (0..n).map(|i| (i as u128).to_le_bytes()).collect();
    time("random oracle, 16-byte item", n, || {
        for it in &items {
            std::hint::black_box(ro.hash_block(it));
        }
    });
    let wh = WideHash::new("bench", &[]);
    let mut rows: Vec<Block> = (0..4 * n as u64).map(Block::from).collect();
    let idx: Vec<u32> = (0..n as u32).collect();
    let mut out = vec![Block::ZERO; n];
    time("wide hash (4 lanes)", n, || {
        wh.hash_rows(&idx, &mut rows, 56, &mut out)
    });
    let hasher = CuckooHash::new(Block::from(7), n * 6 / 5);
    let ys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
    let mut bins = Vec::new();
    time("cuckoo bins_of", n, || hasher.bins_of(&ys, &mut bins));
    time("cuckoo insert", n, || {
        std::hint::black_box(cuckoo_insert(&bins, n * 6 / 5, 3, &mut prg).unwrap());
    });
    // Built as matching::match_values builds it (by regions, on the rayon pool).
    let mut table = MatchTable::build(0, 0, |_| (Block::ZERO, 0, 0));
    time("match table build", n, || {
        table = MatchTable::build(n, n, |i| (ys[i], 0, i as u32));
    });
    let probes: Vec<Block> = (0..6 * n).map(|_| prg.block()).collect();
    time("match table miss (no pf)", 6 * n, || {
        for &p in &probes {
            std::hint::black_box(table.find(p, 0));
        }
    });
    time("match table miss (pf 16)", 6 * n, || {
        for (i, &p) in probes.iter().enumerate() {
            if let Some(&a) = probes.get(i + 16) {
                table.prefetch(a);
            }
            std::hint::black_box(table.find(p, 0));
        }
    });
    // The receiver's lookups at 2^20 (as matching::receive_matches makes them): n sender
    // values, half of them its own, in a random order, the slot asked for 16 ahead.
    let order = prg.permutation(n);
    let sent: Vec<Block> = (0..n)
        .map(|i| match i % 2 {
            0 => ys[order[i] as usize],
            _ => prg.block(),
        })
        .collect();
    time("match table lookups (½ hit)", n, || {
        let mut hits = 0;
        for (i, &v) in sent.iter().enumerate() {
            if let Some(&a) = sent.get(i + 16) {
                table.prefetch(a);
            }
            hits += usize::from(table.find(v, 0).is_some());
        }
        assert_eq!(hits, n / 2);
    });
    vole(&mut prg);
}

/// The silent VOLE's parts at 2^20 PSI items (1,426,063 VOLE outputs): the code's dual
/// encoding of the sender's blocks and of the receiver's pairs, and the GGM forest (349
/// trees of depth 13) on each side.
fn vole(prg: &mut Prg) {
    let shape = Shape::new(1_426_063);
    let (trees, depth, len) = (shape.trees, shape.depth, shape.noise_len());
    let code = shape.code(Block::from(0x5665_6e6e));
    let mut blocks = vec![Block::ZERO; len];
    prg.fill_blocks(&mut blocks);
    time("dual_encode Block (N=2.86M)", len / 2, || {
        code.dual_encode(&mut blocks)
    });
    let mut pairs: Vec<Pair> = blocks.iter().map(|&b| Pair(b, !b)).collect();
    time("dual_encode Pair (N=2.86M)", len / 2, || {
        code.dual_encode(&mut pairs)
    });
    // The same on huge pages (memory::huge_vec): the expander's random reads miss the TLB
    // far less.
    let mut huge = huge_vec(len, Block::ZERO);
    huge.copy_from_slice(&blocks);
    time("dual_encode Block, huge pages", len / 2, || {
        code.dual_encode(&mut huge)
    });
    let mut huge = huge_vec(len, Pair::default());
    huge.copy_from_slice(&pairs);
    time("dual_encode Pair, huge pages", len / 2, || {
        code.dual_encode(&mut huge)
    });
    let roots: Vec<Block> = (0..trees).map(|_| prg.block()).collect();
    let mut sums = Vec::with_capacity(trees);
    time("GGM forest sender (349×2^13)", len, || {
        for (&root, tree) in roots.iter().zip(blocks.chunks_exact_mut(1 << depth)) {
            sums.push(pprf::expand_sender(root, depth, tree));
        }
    });
    let alphas: Vec<usize> = (0..trees).map(|_| prg.below(1 << depth) as usize).collect();
    time("GGM forest receiver", len, || {
        for ((&alpha, sums), tree) in alphas
            .iter()
            .zip(&sums)
            .zip(blocks.chunks_exact_mut(1 << depth))
        {
            let off_path: Vec<Block> = (1..=depth)
                .map(|l| sums[l - 1][1 - ((alpha >> (depth - l)) & 1)])
                .collect();
            pprf::expand_receiver(alpha, &off_path, tree);
        }
    });
}
