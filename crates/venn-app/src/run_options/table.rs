//! The table of a run's options, in the order `--help` lists them. Each entry: the flag,
//! what it takes, which commands take it, its help (`--help`) and its docs (docs/cli.md),
//! and the field it sets; the protocols that take it come from their
//! [`venn::protocols::Accepts`].

use super::{Group, Kind, Python, RunOption};
use crate::columns::parse_revealed;
use crate::input::{parse_delimiter, Format};
use crate::join::JoinKind;
use crate::party::RunSpec;
use venn::protocols::{Bins, Offline, Stash};
use venn::session::run_plan::Align;
use venn::session::run_plan::KeyMismatch;

/// Every option of a run.
pub static OPTIONS: &[RunOption] = &[
    RunOption::new("protocol", Kind::Text, Group::Link, |s, v| {
        s.spec.protocol = v.text()?;
        Ok(())
    })
    .value_name("P")
    .default(|| RunSpec::default().protocol)
    .help(
        "Protocol to run (see `venn params` and `venn plan`).",
        "protocol (default `rr22`; see `venn params`)",
    ),
    RunOption::new("bins", Kind::Text, Group::Protocol, |s, v| {
        s.spec.options.bins = Bins::parse(&v.text()?)?;
        Ok(())
    })
    .value_name("lan|wan")
    .takes(|a| a.bins)
    .help(
        "RR17's bins: lan (m = n/4, less computation) or wan (m = n/10, less traffic).",
        "RR17's bins (`rr17-de`, `rr17-ec`, `rr17-de-sm`): m = n/4, the default, or m = \
         ⌊n/10⌋ (less traffic); both parties must pass the same",
    ),
    RunOption::new(
        "sigma",
        Kind::Number {
            min: 0,
            max: u32::MAX as u64,
        },
        Group::Protocol,
        |s, v| {
            s.spec.options.sigma = Some(u32::try_from(v.number()?).unwrap_or(u32::MAX));
            Ok(())
        },
    )
    .value_name("32|64")
    .takes(|a| !a.sigma.is_empty())
    .help(
        "Bit length of the items (rr17-de-sm: 32 or 64, required; pssz15: 32 or 64; kbm23, \
         psww18-ca/-sum, hek12-ca: 32); the keys must then be integers below 2^SIGMA, in \
         decimal.",
        "item length for `rr17-de-sm` (32 or 64, required), `pssz15` (32 or 64, optional: \
         no hashing of the keys), `kbm23`, `psww18-ca`, `psww18-sum` and `hek12-ca` (32, \
         optional): the keys must be decimal integers below 2^σ",
    ),
    RunOption::new("offline", Kind::Text, Group::Protocol, |s, v| {
        s.spec.options.offline = Offline::parse(&v.text()?)?;
        Ok(())
    })
    .value_name("ot|dealer|bfv|iknp")
    .takes(|a| !a.offline.is_empty())
    .help(
        "Where the offline phase gets its correlated randomness: ot (OT between the two \
         parties, the default: for a GMW circuit's triples silent OT), for kbm23 also bfv \
         (homomorphic encryption between them; --sigma 32) or dealer (a `venn dealer` \
         trusted not to collude with either party; see --dealer), and for the GMW circuits \
         (rr22-ca/-sum, psww18-ca/-sum, hek12-ca) iknp (their triples from IKNP OT \
         extension, as ABY: 256 bits of traffic a triple; to compare).",
        "where the offline phase gets its correlated randomness; both parties must pass the \
         same. `kbm23`'s tuples: OT between the two parties (default), BFV homomorphic \
         encryption between them (`--sigma 32`), or a trusted dealer \
         ([below](#a-trusted-dealer-for-kbm23)). The GMW circuits' (`rr22-ca`, `rr22-sum`, \
         `psww18-ca`, `psww18-sum`, `hek12-ca`) Beaver triples: silent OT (`ot`, the default: a \
         few MB where IKNP moves a GB) or IKNP OT extension (`iknp`, as ABY; as fast only \
         where traffic is free, as on loopback)",
    ),
    RunOption::new("stash", Kind::Text, Group::Protocol, |s, v| {
        s.spec.options.stash = Stash::parse(&v.text()?)?;
        Ok(())
    })
    .value_name("combined|separate")
    .takes(|a| a.stash)
    .help(
        "psww18-ca's stash for the items that fit in neither of the cuckoo side's tables: \
         combined (one for both, the default) or separate (one per table).",
        "`psww18-ca`'s and `psww18-sum`'s stash for the cuckoo side's items that fit in \
         neither table: one for both tables (default) or one per table; both parties must \
         pass the same",
    ),
    RunOption::new(
        "threshold",
        Kind::Number {
            min: 0,
            max: u64::MAX,
        },
        Group::Protocol,
        |s, v| {
            s.spec.options.threshold = Some(v.number()?);
            Ok(())
        },
    )
    .value_name("T")
    .takes(|a| a.threshold)
    .help(
        "For a cardinality protocol (rr22-ca, psww18-ca, hek12-ca): learn only whether the \
         intersection has at least T items, not its size.",
        "`rr22-ca`, `psww18-ca`, `hek12-ca`: the receiver learns only whether the \
         intersection has at least T items, not its size; both parties must pass the same T",
    ),
    RunOption::new("listen", Kind::Text, Group::Link, |s, v| {
        s.listen = Some(v.text()?);
        Ok(())
    })
    .value_name("ADDR")
    .help(
        "Wait for the peer on ADDR (e.g. 0.0.0.0:7766).",
        "wait for the peer on ADDR (e.g. `0.0.0.0:7766`); this or `--connect`",
    ),
    RunOption::new("connect", Kind::Text, Group::Link, |s, v| {
        s.connect = Some(v.text()?);
        Ok(())
    })
    .value_name("ADDR")
    .help(
        "Connect to the peer at ADDR, retrying until --timeout.",
        "connect to the peer at ADDR, retrying until `--timeout`; this or `--listen`",
    ),
    RunOption::new(
        "threads",
        Kind::Number {
            min: 0,
            max: u64::MAX,
        },
        Group::Link,
        |s, v| {
            s.spec.threads = usize::try_from(v.number()?).unwrap_or(usize::MAX);
            Ok(())
        },
    )
    .value_name("N")
    .default(|| RunSpec::default().threads.to_string())
    .help(
        "Worker threads for this party (at least 1; more than the cores it may use are cut \
         to that, with a warning).",
        "worker threads for this party (default 1; at least 1, and at most the cores this \
         process may use: a larger N is cut to that, with a warning naming both numbers, as \
         more threads would only take turns; what runs on them: \
         [benchmark-method.md](benchmark-method.md#--solo-one-party-alone))",
    ),
    RunOption::new("timeout", Kind::Seconds, Group::Link, |s, v| {
        s.spec.timeout = v.seconds()?;
        Ok(())
    })
    .value_name("SECS")
    .default(|| RunSpec::default().timeout.as_secs().to_string())
    .help(
        "Seconds to wait for the peer: to connect, and for each whole message in either \
         direction (a deadline per message, however the peer trickles its bytes or takes \
         ours).",
        "how long to wait for the peer, in seconds: to connect, and for each whole message \
         in either direction — a deadline per message, however slowly the peer trickles its \
         bytes or takes ours (default 60; at least 1; a 64 MiB frame on a 10 Mbit/s link \
         takes 54 s)",
    ),
    RunOption::new("upload-deadline", Kind::Seconds, Group::Link, |s, v| {
        s.spec.upload_deadline = Some(v.seconds()?);
        Ok(())
    })
    .value_name("SECONDS")
    .takes(|a| a.upload_deadline)
    .help(
        "rr22-m's sender: seconds the receiver has for its whole OKVS, from the salt that \
         starts it (default: 30 + m·16 bytes at 10 MB/s, 32 s at 2^20 items). It bounds how \
         many items beyond its own a cheating receiver can get answers for: see `venn params \
         --protocol rr22-m`.",
        "`rr22-m`'s sender: seconds the receiver has for its whole OKVS, from the salt that \
         starts it (default 30 + m·16 bytes at 10 MB/s: 32 s at 2^20 items). It bounds how \
         many items beyond its own a cheating receiver can get answers for \
         ([protocols.md](protocols.md), `venn params --protocol rr22-m`)",
    ),
    RunOption::new("stats-json", Kind::Path, Group::Link, |s, v| {
        s.stats_json = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .python(Python::No)
    .help(
        "Write timings and traffic as JSON to FILE (`-`: standard output).",
        "timings per phase, traffic, set sizes as JSON (written as `--output` is; `-` is \
         standard output)",
    ),
    RunOption::new("insecure", Kind::Switch, Group::Link, |s, v| {
        s.spec.insecure = v.switch()?;
        Ok(())
    })
    .help(
        "Allow an insecure protocol (the naive baseline).",
        "required to run the insecure `naive` baseline",
    ),
    RunOption::new(
        "max-peer-items",
        Kind::Number {
            min: 0,
            max: u64::MAX,
        },
        Group::Link,
        |s, v| {
            s.spec.max_peer_items = v.number()?;
            Ok(())
        },
    )
    .value_name("N")
    .default(|| RunSpec::default().max_peer_items.to_string())
    .help(
        "The largest set size accepted from the peer.",
        "refuse a peer that announces a larger set (default 2^24)",
    ),
    RunOption::new("max-memory", Kind::Size, Group::Link, |s, v| {
        s.spec.max_memory = v.number()?;
        Ok(())
    })
    .value_name("SIZE")
    .help(
        "The most memory this party may need (e.g. 8G, 512M; default: half of physical \
         memory). A peer whose set would need more is refused before anything is allocated.",
        "the most memory this party may take, the whole process (`8G`, `512M`; in Python a \
         number of bytes; default half of physical memory, or 4 GiB where that cannot be \
         read): its input as read (the file, a row and a key each), the protocol's memory \
         model (its growth with the sets; per item in `venn params`) and a 64 MiB base. \
         Before the file is read, from its size and line breaks: a file too large to read \
         whole, or to hold beside the protocol's part for its own keys, is split into \
         buckets ([below](#files-larger-than-memory)), or, where the run cannot go bucket by \
         bucket (a count, a sum, a threshold's answer, `--state`) and reading alone would \
         pass the budget, refused, naming the figure. In the handshake, a run whose input \
         and model for the announced set sizes would need more is refused before anything \
         is allocated for them, with both figures named \
         ([deployment.md](deployment.md#memory))",
    ),
    RunOption::new("tls-cert", Kind::Path, Group::Tls, |s, v| {
        s.tls.tls_cert = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .requires(&["tls-key"])
    .help(
        "This party's certificate (PEM), e.g. made by `venn keygen`. Turns on TLS.",
        "this party's certificate (PEM), e.g. from `venn keygen --out DIR [--days N]`; turns \
         TLS on ([deployment.md](deployment.md#tls))",
    ),
    RunOption::new("tls-key", Kind::Path, Group::Tls, |s, v| {
        s.tls.tls_key = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .requires(&["tls-cert"])
    .help(
        "The private key of --tls-cert (PEM).",
        "the private key of `--tls-cert` (PEM)",
    ),
    RunOption::new("tls-ca", Kind::Path, Group::Tls, |s, v| {
        s.tls.tls_ca = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .requires(&["tls-cert"])
    .help(
        "Trust a peer whose certificate chains to a CA certificate in FILE (PEM); when \
         connecting, the certificate must also name the host connected to.",
        "check the peer's certificate against a CA (PEM); connecting, the certificate must \
         also name the host connected to. This or `--peer-fingerprint`",
    ),
    RunOption::new("peer-fingerprint", Kind::List, Group::Tls, |s, v| {
        s.tls.peer_fingerprint = v.list()?;
        Ok(())
    })
    .value_name("SHA256")
    .requires(&["tls-cert"])
    .conflicts(&["tls-ca"])
    .help(
        "Trust only the peer certificate with this SHA-256 fingerprint (what `venn keygen` \
         printed on the peer's machine); for `venn dealer`, the two parties' \
         (comma-separated).",
        "check the peer's certificate by its fingerprint (as `venn keygen` printed it; \
         colons and case do not matter; several, comma-separated, are each accepted — `venn \
         dealer` pins both parties this way). This or `--tls-ca`",
    ),
    RunOption::new("plaintext", Kind::Switch, Group::Tls, |s, v| {
        s.tls.plaintext = v.switch()?;
        Ok(())
    })
    .conflicts(&["tls-cert"])
    .help(
        "Run without TLS although the peer may be on another machine: anyone on the path \
         can then read the traffic and play either party. Not needed on loopback.",
        "run without TLS although the peer is not on this machine (insecure; warns)",
    ),
    RunOption::new("dealer", Kind::Text, Group::Link, |s, v| {
        s.dealer = Some(v.text()?);
        Ok(())
    })
    .value_name("ADDR")
    .takes(|a| a.offline.contains(&Offline::Dealer))
    .help(
        "The dealer's address, for --offline dealer (where `venn dealer --listen` runs).",
        "the `venn dealer` to use with `--offline dealer` (`kbm23`'s tuples: \
         [below](#a-trusted-dealer-for-kbm23)); each party presents its own `--tls-cert` to \
         the dealer",
    ),
    RunOption::new("dealer-fingerprint", Kind::Text, Group::Link, |s, v| {
        s.dealer_fingerprint = Some(v.text()?);
        Ok(())
    })
    .value_name("SHA256")
    .takes(|a| a.offline.contains(&Offline::Dealer))
    .requires(&["tls-cert", "dealer"])
    .help(
        "With TLS, trust only the dealer certificate with this SHA-256 fingerprint (without \
         it, the dealer's certificate must chain to --tls-ca).",
        "with TLS, the fingerprint of the dealer's certificate (`kbm23`'s `--offline \
         dealer`); without one the dealer's certificate must chain to `--tls-ca`",
    ),
    RunOption::new("input", Kind::Path, Group::Keys, |s, v| {
        s.input = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .required_on_command_line()
    .python(Python::File)
    .help(
        "Input file.",
        "the set: CSV with a header row (default), Parquet (a `*.parquet` file, or \
         `--format parquet`) or, with `--format lines`, one key a line (a text file holding a \
         NUL byte — binary, or UTF-16 text — is refused, naming the line)",
    ),
    RunOption::new(
        "format",
        Kind::Choice(&["csv", "lines", "parquet"]),
        Group::Keys,
        |s, v| {
            s.format = Some(match v.text()?.as_str() {
                "lines" => Format::Lines,
                "parquet" => Format::Parquet,
                _ => Format::Csv,
            });
            Ok(())
        },
    )
    .value_name("FORMAT")
    .default(|| "csv, or parquet for a *.parquet input".into())
    .python(Python::File)
    .help(
        "Input format: csv (with a header row), lines or parquet.",
        "the input's format (default `csv`, or `parquet` for a file named `*.parquet`); a \
         Parquet input's output is a Parquet file",
    ),
    RunOption::new("column", Kind::List, Group::Keys, |s, v| {
        let columns = v.list()?;
        if s.keys.match_any && !columns.is_empty() {
            return Err(key_columns_twice());
        }
        s.keys.columns = columns;
        Ok(())
    })
    .value_name("NAME")
    .python(Python::File)
    .help(
        "Column holding the key (default: the first column); several, comma-separated \
         (`--column email,dob`), make one key of their values together.",
        "column holding the key, by name (default: the first); several (`--column email,dob`) \
         make one key of their values together (each length-prefixed, so `x`+`yz` and \
         `xy`+`z` differ; both parties must name the same number of columns)",
    ),
    RunOption::new("match-any", Kind::List, Group::Party, |s, v| {
        if !s.keys.columns.is_empty() {
            return Err(key_columns_twice());
        }
        s.keys.columns = v.list()?;
        s.keys.match_any = true;
        Ok(())
    })
    .value_name("NAME")
    .python(Python::File)
    .help(
        "Match a record on any one of these columns (`--match-any email,phone`): two records \
         match when an identifier of one equals the same identifier of the other. Each \
         record is output once, with a `matched_on` column.",
        "match a record on any one of 2 to 16 identifier columns (`--match-any \
         email,phone`, both parties naming as many, in the same order): two records match \
         when one of their identifiers is equal (an e-mail only to an e-mail), each \
         normalised as `--trim`/`--lowercase` say; empty ones are left out. One run for all \
         of them. A matched record is output once, with a `matched_on` column naming the \
         identifiers the peer has (`email|phone`), and the peer's `--peer-columns` from its \
         rows of the first of them that matched. Both learn which of their identifiers \
         the peer has, as one run per identifier would tell, and the count of all their \
         identifiers rather than each one's: [OR-matching](protocols.md#or-matching-on-several-identifiers). \
         `rr22`, `rr22-m` and the other protocols that output the intersection, on CSV or \
         Parquet; not with `--value-column` or `--align`",
    ),
    RunOption::new("delimiter", Kind::Text, Group::Keys, |s, v| {
        s.keys.delimiter = parse_delimiter(&v.text()?)?;
        Ok(())
    })
    .value_name("CHAR")
    .default(|| ",".into())
    .python(Python::File)
    .help(
        "What separates a CSV file's fields: `,`, `;` (as spreadsheets save CSV where the \
         comma is the decimal mark), `tab` (or `\\t`) or `|`. Rows are output as they are, \
         so with the input's.",
        "what separates a CSV file's fields: `,` (default), `;` (as spreadsheets save CSV \
         where the comma is the decimal mark), `tab` (or `\\t`) or `\\|`; quoted fields may \
         hold it. The output rows are the input's, so they keep it. A `--column` not found \
         in a header that holds another of these says which to pass",
    ),
    RunOption::new("trim", Kind::Switch, Group::Keys, |s, v| {
        s.keys.trim = v.switch()?;
        Ok(())
    })
    .help(
        "Strip leading and trailing white space from keys.",
        "strip white space at both ends of keys; otherwise keys are compared byte for byte. \
         Both parties must take their keys alike: see `--allow-key-mismatch`",
    ),
    RunOption::new("lowercase", Kind::Switch, Group::Keys, |s, v| {
        s.keys.lowercase = v.switch()?;
        Ok(())
    })
    .help(
        "Lower-case keys before comparing.",
        "lower-case keys before comparing them. Both parties must take their keys alike: \
         see `--allow-key-mismatch`",
    ),
    RunOption::new("skip-empty", Kind::Switch, Group::Keys, |s, v| {
        s.keys.skip_empty = v.switch()?;
        Ok(())
    })
    .help(
        "Skip rows with an empty key instead of failing.",
        "skip rows with an empty key (otherwise an error naming the line)",
    ),
    RunOption::new("allow-key-mismatch", Kind::Switch, Group::Keys, |s, v| {
        s.spec.key_mismatch = KeyMismatch::allowed(v.switch()?);
        Ok(())
    })
    .help(
        "Run, with a warning, when the peer takes its keys otherwise (--trim, --lowercase, \
         the number of --column); by default such a run is refused.",
        "run, with a warning, when the peer trims, lower-cases or counts its `--column`s \
         differently; by default such a run is refused, naming both settings (equal keys \
         would not match)",
    ),
    RunOption::new("output", Kind::Path, Group::Party, |s, v| {
        s.output = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .python(Python::File)
    .help(
        "Where to write the intersecting rows (required to receive; with --both, to send), \
         or the JSON result of a protocol that outputs a count or a sum; `-` for standard \
         output. A regular file is replaced whole, owner-only; a device or a pipe is written \
         into.",
        "receiver: header plus every input row whose key is shared, in input order and byte \
         for byte as in the input (a Parquet input's in a Parquet file: [Parquet](#parquet)), \
         written atomically (a failed run leaves no file); for a \
         protocol that outputs a count or a sum, a JSON object (printed on stdout without \
         `--output`). `-` is standard output; see [below](#where-outputs-go) for links, \
         devices and pipes",
    ),
    RunOption::new("value-column", Kind::List, Group::Party, |s, v| {
        s.keys.value_columns = v.list()?;
        Ok(())
    })
    .value_name("NAME")
    .takes(|a| a.value_columns > 0)
    .python(Python::File)
    .help(
        "Column holding each row's value (integers from 0 to 2^32 − 1), for the sender \
         of a protocol that sums them over the intersection (rr22-sum, psww18-sum); a \
         repeated key's rows' values are added. rr22-sum sums several columns in one run, \
         each apart (`--value-column revenue,units`, up to 16): the receiver learns one sum \
         a column.",
        "sender of `rr22-sum` or `psww18-sum` (required there, refused elsewhere): the \
         column holding each row's value, an integer from 0 to 2^32 − 1 (white space around \
         it ignored; anything else is an error naming the line); a key's rows' values are \
         added, so the sum is over rows, exact below 2^32 rows. `rr22-sum` sums up to 16 \
         columns in one run, each apart (`--value-column revenue,units`; the receiver \
         learns how many there are); `psww18-sum` one",
    ),
    RunOption::new("reveal-columns", Kind::List, Group::Party, |s, v| {
        s.keys.reveal_columns = parse_revealed(&v.list()?)?;
        Ok(())
    })
    .value_name("NAME[:WIDTH]")
    .takes(|a| a.payload)
    .python(Python::File)
    .help(
        "Columns whose values go to the peer with each matched key, for the peer's \
         --peer-columns (rr22, rr22-m; the receiver's only with --both). Values are padded \
         to WIDTH bytes (`segment:32`), or to the longest rounded up to 16.",
        "`rr22` and `rr22-m`: columns (of a CSV or Parquet input) whose values the peer gets \
         for each matched key \
         (PSI with payloads; the receiver's go to the sender only with `--both`): the peer \
         must ask for the same \
         columns in the same order (`--peer-columns`), or both refuse the run. Each value is \
         padded to its column's width — `segment:32` for 32 bytes (a longer value is an \
         error naming its line), or the column's longest value rounded up to 16 — and the \
         peer learns the widths, nothing of unmatched rows \
         ([protocols.md](protocols.md#psi-with-payloads)). A key in several rows reveals each \
         row's values, and so its number of rows where the peer has it",
    ),
    RunOption::new("peer-columns", Kind::List, Group::Party, |s, v| {
        s.peer_columns = v.list()?;
        Ok(())
    })
    .value_name("NAME")
    .takes(|a| a.payload)
    .help(
        "The peer's revealed columns to add to each matched row of the output, as the \
         peer's --reveal-columns names them, in order (a CSV or Parquet input's rows; the sender's \
         only with --both).",
        "`rr22` and `rr22-m`: the peer's columns to add to each matched row of `--output` \
         (after the row's own, \
         the header naming them; quoted where a value needs it): exactly those the peer's \
         `--reveal-columns` names, in order, or both refuse the run. A CSV or Parquet \
         input's (in Python, keys given in memory too: `Intersection.peer_rows`); the \
         sender asks only with `--both`",
    ),
    RunOption::new(
        "join",
        Kind::Choice(JoinKind::NAMES),
        Group::Party,
        |s, v| {
            s.join = JoinKind::parse(&v.text()?)?;
            Ok(())
        },
    )
    .value_name("KIND")
    .default(|| "inner".into())
    .python(Python::File)
    .help(
        "Which of this party's rows --output holds: inner (those whose key the peer has), \
         left (every row, with a `matched` column true or false; the peer's columns empty \
         where it did not match) or difference (those whose key the peer lacks).",
        "which of this party's rows `--output` holds, in input order: `inner` (default: \
         those whose key the peer has), `left` (every row, with a `matched` column `true` \
         or `false`, and the `--peer-columns` empty where it is `false`; a CSV or Parquet \
         input's) or \
         `difference` (those whose key the peer lacks). Each is a function of the party's \
         own rows and the intersection it learns: none reveals more than `inner` \
         ([worked examples](#joins))",
    ),
    RunOption::new("align", Kind::Choice(Align::NAMES), Group::Party, |s, v| {
        s.align = Align::parse(&v.text()?)?;
        Ok(())
    })
    .value_name("HOW")
    .default(|| "none".into())
    .python(Python::File)
    .help(
        "With --both, both parties write their matched rows in the same order (inner), \
         derived from the keys and the run, not from either input's order; outer adds the \
         sender's unmatched rows, then the receiver's, each side writing empty placeholder \
         rows for the other's. Both pass the same; one row a key.",
        "with `--both` (both pass the same), both parties write their matched rows in one \
         order, so that the two outputs line up row for row (vertical federated learning's \
         alignment): `inner` the matched rows alone, ordered by a keyed hash of each key \
         under the run plans' digest (both derive it; it is neither input's order), `outer` \
         then the sender's unmatched rows and the receiver's, each side writing a \
         placeholder row (`\"\"` and empty fields) for each of the other's — the other's \
         count of unmatched rows, its announced size less the intersection, which both know \
         anyway. One row a key: a file with repeated keys is refused ([worked \
         examples](#joins))",
    ),
    RunOption::new("both", Kind::Switch, Group::Party, |s, v| {
        s.both = v.switch()?;
        Ok(())
    })
    .help(
        "Both parties learn the intersection (both must pass it).",
        "both parties learn the intersection (both must pass it; the sender then may pass \
         `--output` too — without `--both` a sender's `--output` is refused: it learns \
         nothing)",
    ),
    RunOption::new("state", Kind::Path, Group::Party, |s, v| {
        s.state = Some(v.path()?);
        Ok(())
    })
    .value_name("FILE")
    .python(Python::No)
    .help(
        "Run only the online phase, with the state `venn precompute` wrote (both parties \
         pass theirs); the state is used up.",
        "run only the online phase, with the state `venn precompute` wrote \
         ([below](#precompute-now-intersect-later))",
    ),
    RunOption::new(
        "bucket-rows",
        Kind::Number {
            min: 1,
            max: u64::MAX,
        },
        Group::Party,
        |s, v| {
            s.bucket_rows = Some(v.number()?);
            Ok(())
        },
    )
    .value_name("N")
    .python(Python::No)
    .conflicts(&["state"])
    .help(
        "Split the input into hash buckets of about N rows on disk and run them one by one, \
         in bounded memory (done by itself for a file over an eighth of --max-memory).",
        "split the input into hash buckets of about N rows on disk and run them one by one, \
         in bounded memory ([below](#files-larger-than-memory))",
    ),
    RunOption::new("bucket-dir", Kind::Path, Group::Party, |s, v| {
        s.bucket_dir = Some(v.path()?);
        Ok(())
    })
    .value_name("DIR")
    .python(Python::No)
    .conflicts(&["state"])
    .help(
        "Where bucket files go (a directory made for the run inside it, removed after, also \
         on Ctrl-C): 16 bytes a row plus its key are needed, about the input's size or more. \
         Default: the system's temporary directory ($TMPDIR), which may be in memory.",
        "where the bucket files go (16 bytes a row plus its key: about the input's size for \
         CSV rows, up to twice it or more for short keys a line; default the system's \
         temporary directory, `$TMPDIR`, which may be in memory)",
    ),
];

/// Why `--column` and `--match-any` do not go together.
fn key_columns_twice() -> venn::Error {
    venn::Error::Usage(
        "give --column (one key of several columns) or --match-any (any one of several \
         identifiers), not both (Python: column=, match_any=)"
            .into(),
    )
}
