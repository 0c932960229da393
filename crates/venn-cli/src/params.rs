//! `venn params`: each protocol's security model and its parameters for given set sizes.

use venn::protocols::{find, registry, Bins, Offline, Options, OutputKind, Protocol, Sizes};
use venn::session::Role;
use venn::{Error, Result};
use venn_app::join::OUTPUT_LEAKAGE;

/// A `--sigma` row of `venn bench` and `venn params`: σ-bit integers, or `any` for keys of
/// any length (hashed by the protocol).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SigmaRow(pub Option<u32>);

impl SigmaRow {
    /// `any`, or a bit length.
    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "any" => Ok(SigmaRow(None)),
            _ => s.parse().map(|s| SigmaRow(Some(s))).map_err(|_| {
                Error::Usage(format!("--sigma wants bit lengths or 'any', got '{s}'"))
            }),
        }
    }
}

/// The option sets to show or run `p` with (see [`Protocol::variants`]).
pub(crate) fn variants(
    p: &dyn Protocol,
    bins: &[Bins],
    sigmas: &[SigmaRow],
    offlines: &[Offline],
) -> Vec<Options> {
    let sigmas: Vec<Option<u32>> = sigmas.iter().map(|s| s.0).collect();
    p.variants(bins, &sigmas, offlines)
}

/// Prints the parameters of `protocols` (all if empty) for each `(n_sender, n_receiver)`,
/// with each of `bins` and `sigmas` a protocol takes (all it takes if empty).
pub(crate) fn print_params(
    protocols: &[String],
    bins: &[Bins],
    sigmas: &[SigmaRow],
    sizes: &[(u64, u64)],
) -> Result<()> {
    let asked = |name: &str| protocols.is_empty() || protocols.iter().any(|p| p == name);
    let (thunder, ub_cache, ub_fhe) = (asked(THUNDER), asked(UB_CACHE), asked(UB_FHE));
    let list: Vec<&'static dyn Protocol> = if protocols.is_empty() {
        registry().to_vec()
    } else {
        protocols
            .iter()
            .filter(|p| ![THUNDER, UB_CACHE, UB_FHE].contains(&p.as_str()))
            .map(|p| find(p))
            .collect::<Result<_>>()?
    };
    for p in list {
        let info = p.info();
        println!("{} — {}", info.name, info.paper);
        println!("  security: {}", info.security.name());
        println!("  who learns what: {}", info.leakage);
        if let Some(records) = p.records_leakage() {
            println!("  with records: {records}");
        }
        if info.role(Role::Receiver).output == OutputKind::Indices {
            println!("  outputs, beside the intersection:");
            for (way, leaks) in OUTPUT_LEAKAGE {
                println!("    {way}: {leaks}");
            }
        }
        for r in info.roles {
            println!(
                "  {}: {}, learns {}{}; memory about {} B per peer item and {} B per own item",
                r.role.name(),
                r.security.name(),
                r.output.name(),
                if r.role == Role::Sender && info.both_allowed {
                    " (the intersection too with --both)"
                } else {
                    ""
                },
                r.peer_item_bytes,
                r.own_item_bytes
            );
        }
        println!(
            "  parameters: κ = {}, λ = {}",
            venn::COMPUTATIONAL_SECURITY,
            venn::STATISTICAL_SECURITY
        );
        for options in variants(p, bins, sigmas, &[]) {
            options.check(info, p.accepts())?;
            if !options.flags().is_empty() {
                println!("  with {}:", options.flags());
            }
            print_table(p, options, sizes)?;
        }
        println!();
    }
    if thunder {
        print_thunder(sizes);
    }
    if ub_cache {
        print_ub_cache(sizes);
    }
    if ub_fhe {
        print_ub_fhe(sizes)?;
    }
    Ok(())
}

/// Unbalanced PSI's FHE mode's name (it runs through `venn ub`).
const UB_FHE: &str = "ub-fhe";

/// `ub-fhe`'s model, its parameter sets and, per server set size (each size pair's sender
/// side), the set a query of a single key, of up to 256 and of up to 4,096 take (a
/// dataset serves one set a query cap up to its own), its bundles and a query's
/// traffic.
fn print_ub_fhe(sizes: &[(u64, u64)]) -> Result<()> {
    use venn::unbalanced::fhe::messages::{request_len, result_len};
    use venn::unbalanced::fhe::params::{classes, sets};
    use venn::unbalanced::fhe::{LEAKAGE, PAPER, SECURITY};
    println!("{UB_FHE} — {PAPER}");
    println!("  security: {SECURITY}");
    println!("  who learns what: {LEAKAGE}");
    println!(
        "  per query: an OPRF round (as ub-cache's), then the request (each bundle index's \
         source powers encrypted, each c₀ less the low bits \"c₀ drop\" its evaluation's noise \
         leaves room for, and a relinearisation key where the set takes products: not \
         where ℓ = d and every power is sent) up and, per bundle, one result \
         and one more per label part down (a part holds f·⌊log₂ t⌋ bits of the sealed label, \
         ℓ + 21 bytes); each set keeps at least 6 bits of noise budget at its worst (tested). \
         A dataset keeps a database for each query cap up to its own, less one whose set \
         would evaluate nearly the next cap's bundles (the table below: 256 keys at 2^24 \
         take V16M-4096); a query takes the smallest cap its keys fit"
    );
    println!(
        "  server memory: the databases (4 bytes a coefficient: about N·(d + 1)·4 bytes a \
         bundle, (1 + P) times that labeled), the plaintexts kept between queries (`venn ub \
         serve --plaintext-cache-mib`, all databases together, taken first come: a kept \
         bundle's query skips encoding it; \"kept MiB\" a bundle's matching polynomial, (1 + \
         P) times that labeled) and each query's ciphertexts"
    );
    println!(
        "  {:>10} {:>9} {:>4} {:>2} {:>2} {:>5} {:>4} {:>8} {:>8} {:>10} {:>9} {:>10} {:>10} {:>8}",
        "set",
        "felt bits",
        "H",
        "f",
        "I",
        "d",
        "ℓ",
        "sources",
        "c₀ drop",
        "max items",
        "max query",
        "up MiB",
        "KiB/result",
        "kept MiB"
    );
    let mut sizes_of = Vec::new();
    for set in sets() {
        let par = set.bfv.build()?;
        let (up, result) = (request_len(&set, &par)?, result_len(&par)?);
        println!(
            "  {:>10} {:>9} {:>4} {:>2} {:>2} {:>5} {:>4} {:>8} {:>8} {:>10} {:>9} {:>10.2} {:>10.1} {:>8.1}",
            set.name,
            set.felt_bits(),
            set.hashes,
            set.felts,
            set.indices,
            set.degree,
            set.low,
            set.sources.len(),
            set.query_drop,
            size(set.max_items),
            set.max_query,
            mib(up as u64),
            result as f64 / 1024.0,
            mib(set.plaintext_bytes())
        );
        sizes_of.push((set.name, result));
    }
    println!(
        "  {:>12} {:>8} {:>10} {:>8} {:>14} {:>12} {:>9}",
        "n_server", "m", "set", "bundles", "false pos.", "down KiB", "kept MiB"
    );
    let mut servers: Vec<u64> = sizes.iter().map(|&(n, _)| n).collect();
    servers.dedup();
    for n in servers {
        // As a dataset declared for queries of up to 4,096 keys (or of one, past what
        // larger queries are served to) offers them, and a client of m keys takes one.
        let offered = classes(n, 4096).or_else(|_| classes(n, 1));
        for m in [1u32, 256, 4096] {
            let chosen = (offered.iter().flatten()).find(|s| s.max_query >= m);
            let Some(set) = chosen else {
                println!("  {:>12} {:>8} {:>10}", size(n), m, "(no set)");
                continue;
            };
            let bundles = set.bundles_for(n) * u64::from(set.indices);
            let fpp = set.log2_false_positive()
                + (set.bundles_for(n) as f64).log2()
                + f64::from(set.max_query).log2();
            let result = (sizes_of.iter())
                .find(|(name, _)| *name == set.name)
                .map_or(0, |s| s.1);
            println!(
                "  {:>12} {:>8} {:>10} {:>8} {:>14} {:>12.1} {:>9.0}",
                size(n),
                m,
                set.name,
                bundles,
                format!("2^{fpp:.1}"),
                (bundles as usize * result) as f64 / 1024.0,
                mib(bundles * set.plaintext_bytes())
            );
        }
    }
    println!();
    Ok(())
}

/// `bytes` in MiB.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Unbalanced PSI's OPRF-cache mode's name (it runs through `venn ub`).
const UB_CACHE: &str = "ub-cache";

/// `ub-cache`'s model and, per server set size (each size pair's sender side) and query
/// cap, its tags' width, the tag set's download and a query's traffic.
fn print_ub_cache(sizes: &[(u64, u64)]) {
    use venn::unbalanced::cache::{LEAKAGE, PAPER, SECURITY};
    use venn::unbalanced::tag_set::{expected_wire_len, tag_bits};
    println!("{UB_CACHE} — {PAPER}");
    println!("  security: {SECURITY}");
    println!("  who learns what: {LEAKAGE}");
    println!(
        "  per query of m keys, padded to m' (1, 16, 256, 4,096 or a multiple): 32·m' + 9 B \
         up, 32·m' + 73 B down, m' OPRF evaluations at the server (counted against the \
         client's allowance); the lookups are the client's, local. Updates reach a client \
         as deltas, about τ − log₂(changes) + 1.5 bits a change"
    );
    println!(
        "  {:>12} {:>8} {:>5} {:>14} {:>10} {:>12}",
        "n_server", "m_max", "τ", "tag set MiB", "bits/key", "query KiB"
    );
    let mut servers: Vec<u64> = sizes.iter().map(|&(n, _)| n).collect();
    servers.dedup();
    for n in servers {
        for m in [1u64, 256, 4096] {
            let tau = tag_bits(n, m);
            let bytes = expected_wire_len(n, tau);
            println!(
                "  {:>12} {:>8} {:>5} {:>14.2} {:>10.1} {:>12.1}",
                size(n),
                m,
                tau,
                mib(bytes as u64),
                bytes as f64 * 8.0 / n.max(1) as f64,
                (64 * m + 82) as f64 / 1024.0
            );
        }
    }
    println!();
}

/// Thunder's name in `--protocol` (it runs through `venn cloud`, not `send`/`receive`).
const THUNDER: &str = "thunder";

/// Thunder's model and, per pair of dataset sizes, what the service stores and computes.
fn print_thunder(sizes: &[(u64, u64)]) {
    use venn_cloud::crypto::{DIGEST_BYTES, ITEM_BYTES, PRECOMPUTED_BYTES, TOKEN_BYTES};
    println!("{THUNDER} — {}", venn_cloud::PAPER);
    println!("  security: {}", venn_cloud::SECURITY);
    println!("  who learns what: {}", venn_cloud::LEAKAGE);
    println!(
        "  per item: the client hashes to G1 and multiplies once at upload ({ITEM_BYTES} B \
         stored); per run the service pairs it once with its owner's token ({TOKEN_BYTES} B) \
         into a {DIGEST_BYTES}-byte digest"
    );
    println!(
        "  three parties: n_1 + n_2 + n_3 pairings, then a search of all n_1·n_2 pairs \
         (3SUM in a group without structure: quadratic; 2^14 per party is ~2.7·10^8 steps)"
    );
    println!(
        "  preprocessed runs (docs/cloud.md, two parties): offline, a pairing per item per \
         one-time pre-token ({PRECOMPUTED_BYTES} B kept per item until a run uses it); online, \
         one G_T exponentiation per item of the smaller side and a 32-byte scalar per client. \
         A pre-token serves one run (a second use would let the service intersect the two \
         partners): the service refuses reuse, the client keeps its own list"
    );
    println!(
        "  {:>12} {:>12} {:>12} {:>12} {:>14} {:>16} {:>12}",
        "n_1", "n_2", "stored MiB", "pairings", "false match", "3-party pairs", "pre. raises"
    );
    for &(n1, n2) in sizes {
        let mib = ((n1 + n2) * ITEM_BYTES as u64) as f64 / (1 << 20) as f64;
        // A false match needs two of the n_1·n_2 digests to collide.
        let bound =
            (n1.max(1) as f64).log2() + (n2.max(1) as f64).log2() - 8.0 * DIGEST_BYTES as f64;
        println!(
            "  {:>12} {:>12} {:>12.1} {:>12} {:>14} {:>16} {:>12}",
            size(n1),
            size(n2),
            mib,
            n1 + n2,
            format!("2^{bound:.0}"),
            format!("{:.1e}", n1 as f64 * n2 as f64),
            n1.min(n2)
        );
    }
    println!();
}

/// One table of `p`'s parameters with `options`, a row per pair of sizes (a size the
/// protocol refuses says why in its row).
fn print_table(p: &dyn Protocol, options: Options, sizes: &[(u64, u64)]) -> Result<()> {
    let rows: Vec<_> = sizes
        .iter()
        .map(|&(sender, receiver)| {
            let table = p
                .params(Sizes { sender, receiver }, options)
                .map(|t| t.table());
            (sender, receiver, table)
        })
        .collect();
    let Some(first) = rows.iter().find_map(|(_, _, t)| t.as_ref().ok()) else {
        // Every size refused: say why once.
        return rows
            .into_iter()
            .next()
            .map_or(Ok(()), |(_, _, t)| t.map(|_| ()));
    };
    let mut header = format!("  {:>12} {:>12}", "n_sender", "n_receiver");
    for (k, _) in &first.0 {
        header += &format!(" {k:>10}");
    }
    println!("{header}");
    for (ns, nr, t) in &rows {
        let mut line = format!("  {:>12} {:>12}", size(*ns), size(*nr));
        match t {
            Ok(t) => {
                for (_, v) in &t.0 {
                    line += &format!(" {v:>10}");
                }
            }
            Err(e) => line += &format!("  refused: {e}"),
        }
        println!("{line}");
    }
    Ok(())
}

/// `2^k` for powers of two, the number otherwise.
fn size(n: u64) -> String {
    if n.is_power_of_two() && n >= 4 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}
