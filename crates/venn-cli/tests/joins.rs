//! Joins through the binary: a sender reveals columns (`--reveal-columns`), the receiver
//! asks for them (`--peer-columns`) and gets them on each matched row of its output, over
//! TLS as over loopback; `--join left` and `difference` on either party, whole or bucket by
//! bucket; a mismatch, a value too wide, a protocol or a party that cannot carry them are
//! each one clear line.

use crate::common::*;
use std::path::Path;

/// The sender's file: a segment and a score for each key, some needing quotes, a repeated
/// key (each of its rows' columns are revealed) and a key the receiver lacks.
const SENDER: &str = "email,segment,score,secret\n\
ada@x.org,\"sports, outdoor\",7,s1\n\
bob@x.org,\"say \"\"hi\"\"\",,s2\n\
cy@x.org,ünïcode,12,s3\n\
ada@x.org,other,99,s4\n\
dee@x.org,never,1,s5\n";

/// The receiver's file: CRLF line endings, a quoted row, a repeated matched key, a key the
/// sender lacks, and a last row without a line ending.
const RECEIVER: &str =
    "id,email\r\n1,cy@x.org\r\n2,\"ada@x.org\"\r\n3,zed@x.org\r\n4,cy@x.org\r\n5,bob@x.org";

/// The receiver's output: its matched rows as they are, the sender's columns appended,
/// a row once for each of the sender's rows of its key.
const JOINED: &str = "id,email,segment,score\r\n\
1,cy@x.org,ünïcode,12\r\n\
2,\"ada@x.org\",\"sports, outdoor\",7\r\n\
2,\"ada@x.org\",other,99\r\n\
4,cy@x.org,ünïcode,12\r\n\
5,bob@x.org,\"say \"\"hi\"\"\",\n";

/// A party with `args` run against no peer: what it refuses before reaching one.
fn refused(command: &str, args: &[&str]) -> std::process::Output {
    venn()
        .arg(command)
        .args(args)
        .args(["--connect", "127.0.0.1:9", "--timeout", "2"])
        .output()
        .unwrap()
}

/// Each `(command, args, refusal)` refused with one clean line naming `refusal`, before a
/// peer is reached; nothing written to `out`.
fn each_refused(refusals: &[(&str, Vec<&str>, &str)], out: &str) {
    for (command, args, needle) in refusals {
        assert_clean_failure(&refused(command, args), needle);
    }
    assert!(!Path::new(out).exists());
}

/// The receiver's output file once a pair with `receiver`'s and `sender`'s arguments has
/// run, both succeeding.
fn output_of(receiver: &[&str], sender: &[&str], out: &str) -> String {
    let (so, ro) = run_pair(receiver, sender);
    assert_success(&[&so, &ro]);
    std::fs::read_to_string(out).unwrap()
}

fn files(dir: &Path) -> (String, String, String) {
    let s = write(dir, "s.csv", SENDER);
    let r = write(dir, "r.csv", RECEIVER);
    let out = dir.join("out.csv");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    (path(&s), path(&r), path(&out))
}

#[test]
fn the_receiver_gets_the_senders_columns_for_its_matched_rows() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    for protocol in ["rr22", "rr22-m"] {
        let (so, ro) = run_pair(
            &[
                "--input",
                &r,
                "--output",
                &out,
                "--column",
                "email",
                "--peer-columns",
                "segment,score",
                "--protocol",
                protocol,
            ],
            &[
                "--input",
                &s,
                "--reveal-columns",
                "segment,score:4",
                "--protocol",
                protocol,
            ],
        );
        assert_success(&[&so, &ro]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), JOINED, "{protocol}");
    }
}

/// With --both each side may reveal columns to the other: the sender's output gets the
/// receiver's for its matched rows, in the same run as the receiver gets the sender's.
#[test]
fn with_both_each_side_gets_the_others_columns() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let sent = dir.path().join("sent.csv");
    let sent = sent.to_str().unwrap();
    for protocol in ["rr22", "rr22-m"] {
        let (so, ro) = run_pair(
            &[
                "--input",
                &r,
                "--output",
                &out,
                "--column",
                "email",
                "--peer-columns",
                "segment",
                "--reveal-columns",
                "id",
                "--both",
                "--protocol",
                protocol,
            ],
            &[
                "--input",
                &s,
                "--output",
                sent,
                "--reveal-columns",
                "segment",
                "--peer-columns",
                "id",
                "--both",
                "--protocol",
                protocol,
            ],
        );
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(sent).unwrap(),
            "email,segment,score,secret,id\n\
             ada@x.org,\"sports, outdoor\",7,s1,2\n\
             bob@x.org,\"say \"\"hi\"\"\",,s2,5\n\
             cy@x.org,ünïcode,12,s3,1\n\
             cy@x.org,ünïcode,12,s3,4\n\
             ada@x.org,other,99,s4,2\n",
            "{protocol}: each matched row, once for each of the receiver's rows of its key"
        );
        let received = std::fs::read_to_string(&out).unwrap();
        assert!(
            received.starts_with("id,email,segment\r\n1,cy@x.org,ünïcode\r\n"),
            "{received}"
        );
    }
}

#[test]
fn columns_go_over_tls_too() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (so, ro) = run_pair(
        &[
            "--input",
            &r,
            "--output",
            &out,
            "--column",
            "email",
            "--peer-columns",
            "segment,score",
            "--tls-cert",
            &cb,
            "--tls-key",
            &kb,
            "--peer-fingerprint",
            &fa,
        ],
        &[
            "--input",
            &s,
            "--reveal-columns",
            "segment,score",
            "--tls-cert",
            &ca,
            "--tls-key",
            &ka,
            "--peer-fingerprint",
            &fb,
        ],
    );
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), JOINED);
}

/// Columns revealed that the receiver did not ask for, or asked in another order, or not
/// revealed at all, are refused by both parties naming both lists; nothing is written.
#[test]
fn columns_that_differ_are_refused_by_both_sides() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    for (reveals, asks) in [
        (Some("segment,score"), Some("score,segment")),
        (Some("segment"), None),
        (None, Some("segment")),
    ] {
        let mut receiver = vec!["--input", &r, "--output", &out, "--column", "email"];
        receiver.extend(asks.iter().flat_map(|a| ["--peer-columns", a]));
        let mut sender = vec!["--input", s.as_str()];
        sender.extend(reveals.iter().flat_map(|c| ["--reveal-columns", c]));
        let (so, ro) = run_pair(&receiver, &sender);
        assert_clean_failure(&ro, "the peer reveals");
        assert_clean_failure(&so, "we reveal");
        assert!(
            stderr(&ro).contains("--reveal-columns on one side must name the columns"),
            "{}",
            stderr(&ro)
        );
        assert!(
            !Path::new(&out).exists(),
            "{reveals:?} {asks:?}: nothing written"
        );
    }
}

/// What cannot carry columns says so before anything runs.
#[test]
fn columns_are_refused_where_they_cannot_go() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let refusals: [(&str, Vec<&str>, &str); 5] = [
        (
            "send",
            vec!["--input", &s, "--reveal-columns", "segment:3"],
            "line 2: the value of the revealed column 'segment' takes 15 bytes, more than its \
             width of 3",
        ),
        (
            "send",
            vec![
                "--input",
                &s,
                "--reveal-columns",
                "segment",
                "--protocol",
                "kkrt16",
            ],
            "'kkrt16' cannot carry a party's columns",
        ),
        (
            "send",
            vec!["--input", &s, "--peer-columns", "id"],
            "drop --peer-columns, or pass --both",
        ),
        (
            "receive",
            vec!["--input", &r, "--output", &out, "--reveal-columns", "id"],
            "the receiver's columns (--reveal-columns) go to the sender only with --both",
        ),
        (
            "send",
            vec!["--input", &s, "--reveal-columns", "nope"],
            "no column named 'nope'",
        ),
    ];
    each_refused(&refusals, &out);
}

/// `left` keeps every row, flagged, with the peer's columns where it matched; the same
/// rows whether the file is read whole or bucket by bucket.
#[test]
fn a_left_join_keeps_every_row_with_the_peers_columns_where_matched() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let (so, ro) = run_pair(
        &[
            "--input",
            &r,
            "--output",
            &out,
            "--column",
            "email",
            "--peer-columns",
            "segment",
            "--join",
            "left",
        ],
        &["--input", &s, "--reveal-columns", "segment"],
    );
    assert_success(&[&so, &ro]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "id,email,matched,segment\r\n\
         1,cy@x.org,true,ünïcode\r\n\
         2,\"ada@x.org\",true,\"sports, outdoor\"\r\n\
         2,\"ada@x.org\",true,other\r\n\
         3,zed@x.org,false,\r\n\
         4,cy@x.org,true,ünïcode\r\n\
         5,bob@x.org,true,\"say \"\"hi\"\"\"\n"
    );
    for bucket_rows in [None, Some("2")] {
        let mut receiver = vec![
            "--input", &r, "--output", &out, "--column", "email", "--join", "left",
        ];
        receiver.extend(bucket_rows.iter().flat_map(|n| ["--bucket-rows", n]));
        let (so, ro) = run_pair(&receiver, &["--input", &s]);
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id,email,matched\r\n1,cy@x.org,true\r\n2,\"ada@x.org\",true\r\n\
             3,zed@x.org,false\r\n4,cy@x.org,true\r\n5,bob@x.org,true\n",
            "buckets of {bucket_rows:?} rows"
        );
    }
}

/// `difference` gives each party with the intersection its rows the peer lacks: the
/// receiver's, and with --both the sender's, bucket by bucket too.
#[test]
fn a_difference_gives_the_rows_the_peer_lacks() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let sent = dir.path().join("sent.csv");
    let sent = sent.to_str().unwrap();
    for bucket_rows in [None, Some("2")] {
        let mut sender = vec![
            "--input",
            &s,
            "--both",
            "--output",
            sent,
            "--join",
            "difference",
        ];
        sender.extend(bucket_rows.iter().flat_map(|n| ["--bucket-rows", n]));
        let (so, ro) = run_pair(
            &[
                "--input",
                &r,
                "--output",
                &out,
                "--column",
                "email",
                "--both",
                "--join",
                "difference",
            ],
            &sender,
        );
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id,email\r\n3,zed@x.org\r\n"
        );
        assert_eq!(
            std::fs::read_to_string(sent).unwrap(),
            "email,segment,score,secret\ndee@x.org,never,1,s5\n",
            "buckets of {bucket_rows:?} rows"
        );
    }
}

/// A join that cannot be made is refused before anything runs.
#[test]
fn joins_that_cannot_be_made_are_refused() {
    let dir = tmp();
    let (s, r, out) = files(dir.path());
    let lines = write(dir.path(), "k.txt", "a\nb\n")
        .to_str()
        .unwrap()
        .to_string();
    let refusals: [(&str, Vec<&str>, &str); 3] = [
        (
            "send",
            vec!["--input", &s, "--join", "left"],
            "--join left is for a party that learns",
        ),
        (
            "receive",
            vec![
                "--input",
                &r,
                "--output",
                &out,
                "--join",
                "difference",
                "--peer-columns",
                "x",
            ],
            "no --peer-columns to add",
        ),
        (
            "receive",
            vec![
                "--input", &lines, "--output", &out, "--format", "lines", "--join", "left",
            ],
            "--join left adds a column to a CSV or Parquet file's rows",
        ),
    ];
    each_refused(&refusals, &out);
}

/// With `--both --align`, both outputs list the matched rows in the same order, neither
/// input's; `outer` adds the sender's unmatched rows, then the receiver's, each side
/// writing placeholders for the other's, so that the two files line up row for row.
#[test]
fn aligned_outputs_line_up_row_for_row() {
    let dir = tmp();
    let keys = |range: std::ops::Range<u32>| -> Vec<String> {
        range.map(|i| format!("k{i}@x.org")).collect()
    };
    let shared = keys(0..40);
    let mut s_keys = [shared.clone(), keys(100..105)].concat();
    let mut r_keys = [keys(200..203), shared.clone()].concat();
    r_keys.reverse();
    s_keys.swap(0, 7);
    let file = |name: &str, ks: &[String], tag: &str| {
        let mut text = format!("email,{tag}\n");
        for (i, k) in ks.iter().enumerate() {
            text += &format!("{k},{tag}{i}\n");
        }
        write(dir.path(), name, &text).to_str().unwrap().to_string()
    };
    let (s, r) = (file("s.csv", &s_keys, "s"), file("r.csv", &r_keys, "r"));
    let (s_out, r_out) = (dir.path().join("so.csv"), dir.path().join("ro.csv"));
    let (s_out, r_out) = (s_out.to_str().unwrap(), r_out.to_str().unwrap());
    // Read whole, then either side or both split into buckets (the receiver getting the
    // sender's column `s` through them), each pair lining up alike.
    let whole: &[&str] = &[];
    let buckets: &[&str] = &["--bucket-rows", "8"];
    let columns = (&["--peer-columns", "s"][..], &["--reveal-columns", "s"][..]);
    let runs = [
        (whole, whole, false),
        (buckets, whole, true),
        (whole, buckets, false),
        (buckets, buckets, true),
    ];
    for ((r_extra, s_extra, with_columns), align) in
        (runs.iter()).flat_map(|run| ["inner", "outer"].map(|align| (run, align)))
    {
        let (asks, reveals) = match with_columns {
            true => columns,
            false => (whole, whole),
        };
        let r_args = ["--input", &r, "--output", r_out, "--both", "--align", align];
        let s_args = ["--input", &s, "--output", s_out, "--both", "--align", align];
        let (so, ro) = run_pair(
            &[&r_args[..], r_extra, asks].concat(),
            &[&s_args[..], s_extra, reveals].concat(),
        );
        assert_success(&[&so, &ro]);
        let rows = |path: &str| -> Vec<Vec<String>> {
            let mut rdr = csv::Reader::from_path(path).unwrap();
            rdr.records()
                .map(|r| r.unwrap().iter().map(String::from).collect())
                .collect()
        };
        let (sent, received) = (rows(s_out), rows(r_out));
        let expected = match align {
            "inner" => 40,
            _ => 40 + 5 + 3,
        };
        assert_eq!(
            (sent.len(), received.len()),
            (expected, expected),
            "{align}"
        );
        let run = format!("{align} {r_extra:?} {s_extra:?}");
        for (i, (a, b)) in sent.iter().zip(&received).enumerate() {
            match i {
                _ if i < 40 => assert_eq!(a[0], b[0], "{run}: row {i} lines up"),
                _ if i < 45 => assert!(b[0].is_empty() && !a[0].is_empty(), "{run}: {i}"),
                _ => assert!(a[0].is_empty() && !b[0].is_empty(), "{run}: {i}"),
            }
            if *with_columns && i < 40 {
                assert_eq!(
                    b[2], a[1],
                    "{run}: row {i} has the sender's value of its key"
                );
            }
        }
        let first: Vec<&String> = sent.iter().take(40).map(|r| &r[0]).collect();
        assert_ne!(
            first,
            shared.iter().collect::<Vec<_>>(),
            "not the sender's order"
        );
    }
    // Both must align alike, with --both, one row a key.
    let (so, ro) = run_pair(
        &[
            "--input", &r, "--output", r_out, "--both", "--align", "inner",
        ],
        &["--input", &s, "--output", s_out, "--both"],
    );
    assert_clean_failure(
        &ro,
        "we align our output as --align inner and the peer as --align none",
    );
    assert_clean_failure(&so, "--align none and the peer as --align inner");
    let repeated = write(dir.path(), "rep.csv", "email,id\na,1\na,2\n");
    let repeated = [
        "--input",
        repeated.to_str().unwrap(),
        "--output",
        r_out,
        "--both",
        "--align",
        "inner",
    ];
    for (args, needle) in [
        (
            vec!["--input", &r, "--output", r_out, "--align", "inner"],
            "both pass --both",
        ),
        (repeated.to_vec(), "repeats keys in 1 rows"),
        (
            [&repeated[..], buckets].concat(),
            "--align lines up one row a key, and",
        ),
        (
            [
                &repeated[..],
                buckets,
                &["--column", "email", "--reveal-columns", "id"],
            ]
            .concat(),
            "--align lines up one row a key, and",
        ),
    ] {
        assert_clean_failure(&refused("receive", &args), needle);
    }
}

/// Keys repeated on both sides give every pair of rows, as `pandas.merge` does: each of
/// the receiver's rows once for each of the sender's rows of its key, in the sender's row
/// order; with --both the sender's output likewise with the receiver's columns; a `left`
/// join's unmatched row once, its columns empty.
#[test]
fn keys_repeated_on_both_sides_give_every_pair_of_rows() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k,v\na,1\nb,2\na,3\nd,4\n");
    let r = write(dir.path(), "r.csv", "k,w\na,x\nc,y\na,z\nb,u\nb,t\n");
    let (s, r) = (s.to_str().unwrap(), r.to_str().unwrap());
    let (r_out, s_out) = (dir.path().join("r.out"), dir.path().join("s.out"));
    let (r_out, s_out) = (r_out.to_str().unwrap(), s_out.to_str().unwrap());
    for protocol in ["rr22", "rr22-m"] {
        let (so, ro) = run_pair(
            &[
                "--input",
                r,
                "--output",
                r_out,
                "--peer-columns",
                "v",
                "--reveal-columns",
                "w",
                "--both",
                "--join",
                "left",
                "--protocol",
                protocol,
            ],
            &[
                "--input",
                s,
                "--output",
                s_out,
                "--peer-columns",
                "w",
                "--reveal-columns",
                "v",
                "--both",
                "--protocol",
                protocol,
            ],
        );
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(r_out).unwrap(),
            "k,w,matched,v\na,x,true,1\na,x,true,3\nc,y,false,\na,z,true,1\na,z,true,3\n\
             b,u,true,2\nb,t,true,2\n",
            "{protocol}: the receiver's rows"
        );
        assert_eq!(
            std::fs::read_to_string(s_out).unwrap(),
            "k,v,w\na,1,x\na,1,z\nb,2,u\nb,2,t\na,3,x\na,3,z\n",
            "{protocol}: the sender's rows"
        );
    }
}

/// The sender's records for `--match-any email,phone`: a repeated e-mail, empty
/// identifiers, a record the receiver has nothing of.
const ANY_SENDER: &str = "name,email,phone,segment\n\
S1,ada@x.org,111,gold\n\
S2,bob@x.org,,silver\n\
S3,,333,bronze\n\
S4,ada@x.org,444,tin\n\
S5,eve@x.org,555,lead\n\
S6,dee@x.org,666,iron\n";

/// The receiver's: matched on the e-mail (in another case), on the phone, on both, on the
/// phone with no e-mail, on neither, and an e-mail in the phone column (which matches no
/// e-mail: identifiers match only their own kind).
const ANY_RECEIVER: &str = "id,email,phone\n\
1,ADA@x.org,999\n\
2,zed@x.org,333\n\
3,bob@x.org,555\n\
4,,111\n\
5,cy@x.org,\n\
6,555@x.org,bob@x.org\n";

/// `--match-any`: a record matched on any of its identifiers is output once (once for
/// each of the sender's rows of the first identifier that matched, with its columns),
/// `matched_on` naming the identifiers matched; over TLS, with a `left` join bucket by
/// bucket too, and a sender's `difference` with --both.
#[test]
fn records_match_on_any_identifier() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", ANY_SENDER);
    let r = write(dir.path(), "r.csv", ANY_RECEIVER);
    let (s, r) = (s.to_str().unwrap(), r.to_str().unwrap());
    let out = dir.path().join("out.csv");
    let out = out.to_str().unwrap();
    let any = ["--match-any", "email,phone", "--lowercase"];
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let receiver = [
        &["--input", r, "--output", out, "--peer-columns", "segment"][..],
        &any,
        &[
            "--tls-cert",
            &cb,
            "--tls-key",
            &kb,
            "--peer-fingerprint",
            &fa,
        ],
    ]
    .concat();
    let sender = [
        &["--input", s, "--reveal-columns", "segment"][..],
        &any,
        &[
            "--tls-cert",
            &ca,
            "--tls-key",
            &ka,
            "--peer-fingerprint",
            &fb,
        ],
    ]
    .concat();
    assert_eq!(
        output_of(&receiver, &sender, out),
        "id,email,phone,matched_on,segment\n\
         1,ADA@x.org,999,email,gold\n\
         1,ADA@x.org,999,email,tin\n\
         2,zed@x.org,333,phone,bronze\n\
         3,bob@x.org,555,email|phone,silver\n\
         4,,111,phone,gold\n"
    );
    let sent = dir.path().join("sent.csv");
    let sent = sent.to_str().unwrap();
    for bucket_rows in [None, Some("2")] {
        let mut receiver = [&["--input", r, "--output", out, "--join", "left"][..], &any].concat();
        receiver.extend(bucket_rows.iter().flat_map(|n| ["--bucket-rows", n]));
        receiver.push("--both");
        let sender = [
            &[
                "--input",
                s,
                "--both",
                "--output",
                sent,
                "--join",
                "difference",
            ][..],
            &any,
        ]
        .concat();
        assert_eq!(
            output_of(&receiver, &sender, out),
            "id,email,phone,matched,matched_on\n\
             1,ADA@x.org,999,true,email\n\
             2,zed@x.org,333,true,phone\n\
             3,bob@x.org,555,true,email|phone\n\
             4,,111,true,phone\n\
             5,cy@x.org,,false,\n\
             6,555@x.org,bob@x.org,false,\n",
            "buckets of {bucket_rows:?} rows"
        );
        assert_eq!(
            std::fs::read_to_string(sent).unwrap(),
            "name,email,phone,segment\nS6,dee@x.org,666,iron\n",
            "buckets of {bucket_rows:?} rows"
        );
    }
    // Both must match on any of the same number of identifiers.
    let (so, ro) = run_pair(
        &[&["--input", r, "--output", out][..], &any].concat(),
        &[
            "--input",
            s,
            "--column",
            "email",
            "--lowercase",
            "--skip-empty",
        ],
    );
    assert_clean_failure(&ro, "ours with no trim, lowercase, any of 2 key columns");
    assert_clean_failure(
        &so,
        "the peer's with no trim, lowercase, any of 2 key columns",
    );
    std::fs::remove_file(out).unwrap();
    // The command line's parser says so as it says any value refused.
    let both = refused(
        "receive",
        &[
            "--input",
            r,
            "--output",
            out,
            "--match-any",
            "a,b",
            "--column",
            "id",
        ],
    );
    assert!(!both.status.success());
    assert!(stderr(&both).contains("give --column (one key of several columns) or --match-any"));
    let receive = |extra: &[&'static str]| -> Vec<&str> {
        [&["--input", r, "--output", out][..], extra].concat()
    };
    each_refused(
        &[
            (
                "receive",
                receive(&["--match-any", "email"]),
                "names 2 to 16",
            ),
            (
                "receive",
                receive(&["--match-any", "email,phone,email"]),
                "names the column 'email' twice",
            ),
            (
                "receive",
                receive(&["--match-any", "a,b", "--format", "lines"]),
                "CSV or Parquet",
            ),
            (
                "receive",
                receive(&["--match-any", "email,phone", "--protocol", "rr22-ca"]),
                "'rr22-ca' outputs no records",
            ),
            (
                "receive",
                receive(&["--match-any", "email,phone", "--both", "--align", "inner"]),
                "cannot go with --align",
            ),
        ],
        out,
    );
}

/// Both parties' outputs of a run with `--both` (the receiver's at `out`, the sender's at
/// `sent`).
fn both_outputs(receiver: &[&str], sender: &[&str], (out, sent): (&str, &str)) -> (String, String) {
    let (so, ro) = run_pair(receiver, sender);
    assert_success(&[&so, &ro]);
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    (read(out), read(sent))
}

/// With `split` added to either party's arguments or both, the outputs are `whole`.
fn split_gives_the_same(
    receiver: &[&str],
    sender: &[&str],
    split: &[&str],
    whole: &(String, String),
    files: (&str, &str),
) {
    let (receiver_split, sender_split) = ([receiver, split].concat(), [sender, split].concat());
    for (r, s) in [
        (&receiver_split[..], sender),
        (receiver, &sender_split[..]),
        (&receiver_split[..], &sender_split[..]),
    ] {
        assert_eq!(&both_outputs(r, s, files), whole, "{r:?} {s:?}");
    }
}

/// Generated files with many repeated keys on both sides (a third of each side's keys
/// shared, up to four rows a key): bucket by bucket, either side split or both, `inner`
/// and `left`, each party's output is the one the same run gives without buckets.
#[test]
fn repeated_keys_columns_in_buckets_match_one_run() {
    let dir = tmp();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut file = |name: &str, header: &str, keys: std::ops::Range<u64>| {
        let mut text = format!("{header}\n");
        for (row, key) in keys.enumerate() {
            for copy in 0..1 + next() % 4 {
                text += &format!(
                    "k{key}@x.org,v{row}-{copy}-{},{}\n",
                    next() % 1000,
                    next() % 7
                );
            }
        }
        write(dir.path(), name, &text).to_str().unwrap().to_string()
    };
    let s = file("s.csv", "email,segment,score", 0..120);
    let r = file("r.csv", "email,id,flag", 80..200);
    let (out, sent) = (dir.path().join("out.csv"), dir.path().join("sent.csv"));
    let (out, sent) = (out.to_str().unwrap(), sent.to_str().unwrap());
    let split = ["--bucket-rows", "40"];
    for join in ["inner", "left"] {
        let receiver = [
            "--input",
            &r,
            "--output",
            out,
            "--column",
            "email",
            "--join",
            join,
            "--both",
            "--peer-columns",
            "segment,score",
            "--reveal-columns",
            "id",
        ];
        let sender = [
            "--input",
            &s,
            "--output",
            sent,
            "--column",
            "email",
            "--join",
            join,
            "--both",
            "--peer-columns",
            "id",
            "--reveal-columns",
            "segment,score",
        ];
        let whole = both_outputs(&receiver, &sender, (out, sent));
        assert!(whole.0.lines().count() > 100, "{}", whole.0);
        split_gives_the_same(&receiver, &sender, &split, &whole, (out, sent));
    }
}

/// Revealed columns go bucket by bucket from an input split into buckets to a party whose
/// input is read whole or split too (the receiver and, with --both, the sender), keys
/// with several rows on either side included: the sender's later rows after the last
/// bucket, the receiver's in their buckets. Each output is the one the same run gives
/// without buckets.
#[test]
fn columns_go_bucket_by_bucket() {
    let dir = tmp();
    let (s, r, _) = files(dir.path());
    let out = dir.path().join("out.csv");
    let out = out.to_str().unwrap();
    let sent = dir.path().join("sent.csv");
    let sent = sent.to_str().unwrap();
    let receiver = [
        "--input",
        &r,
        "--output",
        out,
        "--column",
        "email",
        "--peer-columns",
        "segment,score",
    ];
    let sender = ["--input", &s, "--reveal-columns", "segment,score"];
    let split = ["--bucket-rows", "2"];
    let sender_split = [&sender[..], &split].concat();
    for protocol in ["rr22", "rr22-m"] {
        let p = ["--protocol", protocol];
        let (receiver, sender_split) = (
            [&receiver[..], &p].concat(),
            [&sender_split[..], &p].concat(),
        );
        assert_eq!(
            output_of(&receiver, &sender_split, out),
            JOINED,
            "{protocol}"
        );
        // Both split: the receiver's rows find their records by row number (its repeated
        // key's rows each), a `left` join's unmatched rows none.
        let split_receiver = [&receiver[..], &split].concat();
        assert_eq!(output_of(&split_receiver, &sender_split, out), JOINED);
        let left = [&split_receiver[..], &["--join", "left"]].concat();
        assert_eq!(
            output_of(&left, &sender_split, out),
            "id,email,matched,segment,score\r\n\
             1,cy@x.org,true,ünïcode,12\r\n\
             2,\"ada@x.org\",true,\"sports, outdoor\",7\r\n\
             2,\"ada@x.org\",true,other,99\r\n\
             3,zed@x.org,false,,\r\n\
             4,cy@x.org,true,ünïcode,12\r\n\
             5,bob@x.org,true,\"say \"\"hi\"\"\",\n"
        );
    }
    // With --both the receiver (a repeated key of its own) reveals its ids to the sender
    // (whose key ada@x.org has two rows): each side split or not, the same outputs.
    let ids = write(
        dir.path(),
        "ids.csv",
        "id,email\n1,cy@x.org\n2,ada@x.org\n5,bob@x.org\n6,cy@x.org\n7,nobody@x.org\n",
    );
    let receiver = [
        "--input",
        ids.to_str().unwrap(),
        "--output",
        out,
        "--both",
        "--reveal-columns",
        "id",
        "--column",
        "email",
        "--peer-columns",
        "segment",
    ];
    let sender = [
        "--input",
        &s,
        "--both",
        "--output",
        sent,
        "--peer-columns",
        "id",
        "--reveal-columns",
        "segment",
    ];
    let whole = both_outputs(&receiver, &sender, (out, sent));
    assert_eq!(
        whole.1,
        "email,segment,score,secret,id\n\
         ada@x.org,\"sports, outdoor\",7,s1,2\n\
         bob@x.org,\"say \"\"hi\"\"\",,s2,5\n\
         cy@x.org,ünïcode,12,s3,1\n\
         cy@x.org,ünïcode,12,s3,6\n\
         ada@x.org,other,99,s4,2\n"
    );
    split_gives_the_same(&receiver, &sender, &split, &whole, (out, sent));
}
