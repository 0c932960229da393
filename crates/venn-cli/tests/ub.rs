//! `venn ub` through the real binary over loopback TCP and TLS: a dataset made, served,
//! updated and given a new key while clients query it, every answer the plain
//! intersection; clients pinned by certificate, each with its own allowance of OPRF
//! evaluations; and the mistakes an operator or a client can make, each a clean error.

use crate::common::*;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// A running `venn ub serve`, killed when dropped; its log goes to `log`.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `venn ub serve` on the dataset `dir` with `extra` options.
fn serve(dir: &Path, log: &Path, extra: &[&str]) -> Server {
    let mut child = venn()
        .args(["ub", "serve", "--listen", "127.0.0.1:0", "--dataset"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("spawn venn ub serve");
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    let addr = (first.trim().strip_prefix("listening "))
        .unwrap_or_else(|| panic!("the server printed '{first}': {}", read(log)))
        .to_string();
    Server { child, addr }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `venn ub ARGS…`.
fn ub(args: &[&str]) -> Output {
    venn().arg("ub").args(args).output().expect("run venn ub")
}

/// A CSV file of keys `email` (with a second column), one row a key, as `each` writes
/// key `i`.
fn keys_file(
    dir: &Path,
    name: &str,
    keys: impl Iterator<Item = u32>,
    each: fn(u32) -> String,
) -> String {
    let body: String = keys.map(|i| format!("{},{i}\n", each(i))).collect();
    let path = write(dir, name, &format!("email,n\n{body}"));
    path.to_str().unwrap().to_string()
}

fn plain(i: u32) -> String {
    format!("user{i}@example.com")
}

/// As a client might have it: other case, spaces around.
fn messy(i: u32) -> String {
    format!(" User{i}@Example.COM ")
}

/// Syncs `state` until the server publishes `version` of `epoch` (it follows the
/// manifest each second); returns what the last sync said.
fn wait_for(addr: &str, state: &str, epoch: u32, version: u64) -> String {
    let want = format!("version {version} of epoch {epoch}");
    let start = Instant::now();
    loop {
        let out = ub(&["sync", "--connect", addr, "--state", state]);
        assert_success(&[&out]);
        if stderr(&out).contains(&want) {
            return stderr(&out);
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{}",
            stderr(&out)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The rows a query should output: the query file's rows whose keys are in `held`.
fn expected(queried: &[u32], held: &BTreeSet<u32>) -> String {
    let rows: String = (queried.iter())
        .filter(|i| held.contains(i))
        .map(|&i| format!("{},{i}\n", messy(i)))
        .collect();
    format!("email,n\n{rows}")
}

/// A client querying with a state file sees the plain intersection after the dataset is
/// made, after an update (which reaches it as a delta, far smaller than the set), and
/// after a new key (the whole set again); a damaged state file is replaced, not trusted,
/// and a file that is not one is left alone.
#[test]
fn queries_are_the_intersection_through_updates_and_a_new_key() {
    let dir = tmp();
    let d = dir.path();
    let big = keys_file(d, "big.csv", 0..3000, plain);
    let queried: Vec<u32> = (2700..3300).collect();
    let query = keys_file(d, "q.csv", queried.iter().copied(), messy);
    let dataset = d.join("ds");
    let ds = dataset.to_str().unwrap();
    let made = ub(&[
        "init",
        "--dataset",
        ds,
        "--input",
        &big,
        "--column",
        "email",
        "--trim",
        "--lowercase",
        "--max-query",
        "256",
    ]);
    assert_success(&[&made]);
    assert!(stderr(&made).contains("3000 keys"), "{}", stderr(&made));
    let log = d.join("serve.log");
    let server = serve(&dataset, &log, &[]);
    let state = d.join("state.bin");
    let state = state.to_str().unwrap();
    let out = d.join("matches.csv");
    let out_s = out.to_str().unwrap();
    let query_args = [
        "query",
        "--connect",
        &server.addr,
        "--state",
        state,
        "--input",
        &query,
        "--column",
        "email",
        "--trim",
        "--lowercase",
    ];
    let run_query = || {
        let o = ub(&[&query_args[..], &["--output", out_s]].concat());
        assert_success(&[&o]);
        stderr(&o)
    };
    let mut held: BTreeSet<u32> = (0..3000).collect();
    let said = run_query();
    assert_eq!(read(&out), expected(&queried, &held), "{said}");
    assert!(said.contains("300 of 600 keys"), "{said}");
    let fresh = d.join("fresh.bin");
    let whole = received(&wait_for(&server.addr, fresh.to_str().unwrap(), 0, 0));

    let upsert = keys_file(d, "add.csv", 3000..3100, plain);
    let delete = keys_file(d, "del.csv", 2900..2950, messy);
    let updated = ub(&[
        "update",
        "--dataset",
        ds,
        "--upsert",
        &upsert,
        "--delete",
        &delete,
        "--column",
        "email",
    ]);
    assert_success(&[&updated]);
    assert!(
        stderr(&updated).contains("added 100 keys (0 held already), removed 50 (0 not held)"),
        "{}",
        stderr(&updated)
    );
    held.extend(3000..3100);
    (2900..2950).for_each(|i| {
        held.remove(&i);
    });
    // A copy of the query's state, brought from version 0 to 1 by the delta alone.
    let probe = d.join("probe.bin");
    std::fs::copy(state, &probe).unwrap();
    let delta = received(&wait_for(&server.addr, probe.to_str().unwrap(), 0, 1));
    assert!(
        delta * 4 < whole,
        "a delta: {delta} bytes, the whole set {whole}"
    );
    let said = run_query();
    assert_eq!(read(&out), expected(&queried, &held), "{said}");

    let rotated = ub(&["rotate-key", "--dataset", ds]);
    assert_success(&[&rotated]);
    wait_for(&server.addr, state, 1, 0);
    let said = run_query();
    assert_eq!(read(&out), expected(&queried, &held), "{said}");
    assert!(read(&log).contains("epoch=1"), "{}", read(&log));

    // A damaged state file is replaced by the whole set, with a warning; a file that
    // is not a state file is refused and left as it was.
    std::fs::write(state, b"venn-ub-state-01 cut short").unwrap();
    let said = run_query();
    assert!(said.contains("warning: the state file"), "{said}");
    assert_eq!(read(&out), expected(&queried, &held), "{said}");
    let said = run_query();
    assert!(
        !said.contains("warning") && said.contains("was current"),
        "{said}"
    );
    std::fs::write(state, b"email\nsomeone@example.com\n").unwrap();
    assert_clean_failure(&ub(&query_args), "not a `venn ub` state file");
    assert_eq!(read(Path::new(state)), "email\nsomeone@example.com\n");
    drop(server);
}

/// A labeled dataset through the real binary: each matched row comes with its key's
/// label, through an update that adds, relabels and removes keys and a new key; an update
/// without the labels' column, and a key given two labels, are refused.
#[test]
fn matched_rows_carry_their_labels() {
    let dir = tmp();
    let d = dir.path();
    let labeled = |d: &Path, name: &str, keys: &[(u32, String)]| {
        let body: String = keys
            .iter()
            .map(|(i, l)| format!("{},{l}\n", plain(*i)))
            .collect();
        let path = write(d, name, &format!("email,case\n{body}"));
        path.to_str().unwrap().to_string()
    };
    let mut model: std::collections::BTreeMap<u32, String> = (0..400)
        .map(|i| (i, format!("case {i}; \"listed\"")))
        .collect();
    let all: Vec<(u32, String)> = model.clone().into_iter().collect();
    let big = labeled(d, "big.csv", &all);
    let dataset = d.join("ds");
    let ds = dataset.to_str().unwrap();
    let init = [
        "init",
        "--dataset",
        ds,
        "--input",
        &big,
        "--column",
        "email",
    ];
    let made = ub(&[&init[..], &["--label-column", "case", "--max-query", "256"]].concat());
    assert_success(&[&made]);
    assert!(
        stderr(&made).contains("labels of up to 32 bytes"),
        "{}",
        stderr(&made)
    );
    let twice = labeled(d, "twice.csv", &[(1, "a".into()), (1, "b".into())]);
    let other = d.join("other");
    let twice = ub(&[
        "init",
        "--dataset",
        other.to_str().unwrap(),
        "--input",
        &twice,
        "--label-column",
        "case",
    ]);
    assert_clean_failure(&twice, "has rows of two labels");

    let log = d.join("serve.log");
    let server = serve(&dataset, &log, &[]);
    let state = d.join("state.bin");
    let query = keys_file(d, "q.csv", 350..460, plain);
    let out = d.join("hits.csv");
    let args = [
        "query",
        "--connect",
        &server.addr,
        "--state",
        state.to_str().unwrap(),
        "--input",
        &query,
        "--column",
        "email",
        "--output",
        out.to_str().unwrap(),
    ];
    let expected = |model: &std::collections::BTreeMap<u32, String>| {
        let rows: String = (350..460)
            .filter_map(|i| model.get(&i).map(|l| (i, l)))
            .map(|(i, l)| match l.contains('"') {
                true => format!("{},{i},\"{}\"\n", plain(i), l.replace('"', "\"\"")),
                false => format!("{},{i},{l}\n", plain(i)),
            })
            .collect();
        format!("email,n,label\n{rows}")
    };
    let said = stderr(&ub(&args));
    assert_eq!(read(&out), expected(&model), "{said}");

    let changes: Vec<(u32, String)> = (400..420)
        .map(|i| (i, format!("new {i}")))
        .chain((360..380).map(|i| (i, format!("moved {i}"))))
        .collect();
    let upsert = labeled(d, "up.csv", &changes);
    let delete = keys_file(d, "del.csv", 380..390, plain);
    let update = [
        "update",
        "--dataset",
        ds,
        "--upsert",
        &upsert,
        "--delete",
        &delete,
        "--column",
        "email",
    ];
    assert_clean_failure(&ub(&update), "name --upsert's with --label-column");
    let updated = ub(&[&update[..], &["--label-column", "case"]].concat());
    assert_success(&[&updated]);
    assert!(
        stderr(&updated).contains("added 20 keys (0 held already, relabelled 20), removed 10"),
        "{}",
        stderr(&updated)
    );
    model.extend(changes);
    (380..390).for_each(|i| _ = model.remove(&i));
    wait_for(&server.addr, d.join("probe.bin").to_str().unwrap(), 0, 1);
    let said = stderr(&ub(&args));
    assert_eq!(read(&out), expected(&model), "{said}");

    assert_success(&[&ub(&["rotate-key", "--dataset", ds])]);
    wait_for(&server.addr, state.to_str().unwrap(), 1, 0);
    let said = stderr(&ub(&args));
    assert_eq!(read(&out), expected(&model), "{said}");
    drop(server);
}

/// The bytes a run says it received.
fn received(said: &str) -> u64 {
    let before = said.split(" bytes received").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Over TLS a server serves only the clients it pins, and keeps an allowance of OPRF
/// evaluations for each by its certificate: a client over its allowance is told when to
/// retry while another is still served.
#[test]
fn pinned_clients_each_have_their_own_allowance() {
    let dir = tmp();
    let d = dir.path();
    let (sc, sk, sf) = keygen(d, "server");
    let (ac, ak, af) = keygen(d, "a");
    let (bc, bk, bf) = keygen(d, "b");
    let (cc, ck, _) = keygen(d, "c");
    let big = keys_file(d, "big.csv", 0..500, plain);
    let query = keys_file(d, "q.csv", 450..550, plain);
    let dataset = d.join("ds");
    let ds = dataset.to_str().unwrap();
    assert_success(&[&ub(&[
        "init",
        "--dataset",
        ds,
        "--input",
        &big,
        "--max-query",
        "256",
    ])]);
    let pins = format!("{af},{bf}");
    let log = d.join("serve.log");
    let server = serve(
        &dataset,
        &log,
        &[
            "--tls-cert",
            &sc,
            "--tls-key",
            &sk,
            "--peer-fingerprint",
            &pins,
            "--rate-burst",
            "256",
            "--rate-per-day",
            "1",
        ],
    );
    let client = |cert: &str, key: &str| {
        ub(&[
            "query",
            "--connect",
            &server.addr,
            "--input",
            &query,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "--peer-fingerprint",
            &sf,
        ])
    };
    let first = client(&ac, &ak);
    assert_success(&[&first]);
    assert!(
        stderr(&first).contains("50 of 100 keys"),
        "{}",
        stderr(&first)
    );
    assert_clean_failure(&client(&ac, &ak), "retry in");
    assert_success(&[&client(&bc, &bk)]);
    let stranger = client(&cc, &ck);
    assert!(!stranger.status.success(), "{}", stderr(&stranger));
    let logged = read(&log);
    assert!(logged.contains(&format!("certificate {af}")), "{logged}");
    assert!(logged.contains("refused=1"), "{logged}");
    drop(server);
}

/// A server that answers a trickle at a time cannot hold a client past its
/// `--session-timeout`, though each message comes within `--timeout`.
#[test]
fn a_trickling_server_is_cut_at_the_session_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        // A description frame's length, then a byte every 200 ms.
        let _ = socket.write_all(&90u32.to_le_bytes());
        for _ in 0..100 {
            if socket.write_all(&[0]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let started = Instant::now();
    let out = ub(&[
        "sync",
        "--connect",
        &addr,
        "--timeout",
        "30",
        "--session-timeout",
        "2",
    ]);
    assert_clean_failure(&out, "time set for it");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    server.join().unwrap();
}

/// An operator's and a client's mistakes are refused before anything is changed or sent:
/// a dataset made where one is or something else is, a query cap that is not a padded size, update files
/// of another key shape, two operators at once (the second is told), a client taking its
/// keys otherwise than the dataset (unless it allows it: then a warning).
#[test]
fn mistakes_are_refused_cleanly() {
    let dir = tmp();
    let d = dir.path();
    let big = keys_file(d, "big.csv", 0..100, plain);
    let dataset = d.join("ds");
    let ds = dataset.to_str().unwrap();
    assert_success(&[&ub(&["init", "--dataset", ds, "--input", &big, "--trim"])]);
    assert_clean_failure(
        &ub(&["init", "--dataset", ds, "--input", &big]),
        "holds a dataset already",
    );
    std::fs::create_dir(d.join("full")).unwrap();
    std::fs::write(d.join("full").join("x"), "x").unwrap();
    assert_clean_failure(
        &ub(&[
            "init",
            "--dataset",
            d.join("full").to_str().unwrap(),
            "--input",
            &big,
        ]),
        "not empty",
    );
    let bad_cap = ub(&[
        "init",
        "--dataset",
        "elsewhere",
        "--input",
        &big,
        "--max-query",
        "100",
    ]);
    assert!(!bad_cap.status.success() && stderr(&bad_cap).contains("padded"));
    assert_clean_failure(
        &ub(&[
            "update",
            "--dataset",
            ds,
            "--upsert",
            &big,
            "--column",
            "email,n",
        ]),
        "columns",
    );
    let lock = std::fs::File::open(dataset.join("writer.lock")).unwrap();
    lock.lock().unwrap();
    assert_clean_failure(
        &ub(&["update", "--dataset", ds, "--upsert", &big]),
        "another `venn ub` command",
    );
    drop(lock);
    let log = d.join("serve.log");
    let server = serve(&dataset, &log, &[]);
    let query = |extra: &[&str]| {
        ub(&[
            &["query", "--connect", &server.addr, "--input", &big][..],
            extra,
        ]
        .concat())
    };
    assert_clean_failure(&query(&[]), "--allow-key-mismatch");
    let warned = query(&["--allow-key-mismatch"]);
    assert_success(&[&warned]);
    assert!(stderr(&warned).contains("warning"), "{}", stderr(&warned));
    assert_success(&[&query(&["--trim"])]);
    drop(server);
}

/// `venn bench --protocol ub-cache` builds, syncs, queries and updates, every answer
/// checked, and says what it measured; it refuses to mix with other protocols. So does
/// `--protocol ub-fhe`, its database built, read back, updated and queried, with labels
/// too (`--label-bytes`, ub-fhe's alone).
#[test]
fn the_benchmark_checks_every_answer() {
    let out = venn()
        .args(["bench", "--protocol", "ub-cache", "--log2n", "11"])
        .args(["--client-items", "1,300", "--json"])
        .output()
        .unwrap();
    assert_success(&[&out]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["ub_cache"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["verified"], true, "{row}");
        assert!(row["query_down_bytes"].as_u64().unwrap() > 32, "{row}");
    }
    let mixed = venn()
        .args(["bench", "--protocol", "ub-cache,rr22", "--log2n", "11"])
        .output()
        .unwrap();
    assert_clean_failure(&mixed, "runs alone");
    let out = venn()
        .args(["bench", "--protocol", "ub-fhe", "--log2n", "11"])
        .args(["--client-items", "1,16,300", "--repeat", "1", "--json"])
        .output()
        .unwrap();
    assert_success(&[&out]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["ub_fhe"].as_array().unwrap();
    let taken: Vec<_> = (rows.iter())
        .map(|row| {
            assert_eq!(row["verified"], true, "{row}");
            (row["set"].as_str(), row["bundles"].as_u64())
        })
        .collect();
    assert_eq!(
        taken,
        [
            (Some("V2M-1"), Some(1)),
            (Some("V128K-256"), Some(1)),
            (Some("V1M-4096"), Some(4))
        ],
        "each query takes the set of the smallest cap it fits"
    );
    // Labeled: every match's label checked, and its parts come down.
    let out = venn()
        .args(["bench", "--protocol", "ub-fhe", "--log2n", "11"])
        .args([
            "--client-items",
            "1",
            "--repeat",
            "1",
            "--label-bytes",
            "64",
            "--json",
        ])
        .output()
        .unwrap();
    assert_success(&[&out]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &json["ub_fhe"][0];
    assert_eq!(
        (&row["verified"], &row["label_bytes"]),
        (&true.into(), &64.into())
    );
    assert!(row["query_down_bytes"].as_u64() > rows[0]["query_down_bytes"].as_u64());
    let cache = venn()
        .args([
            "bench",
            "--protocol",
            "ub-cache",
            "--log2n",
            "11",
            "--label-bytes",
            "8",
        ])
        .output()
        .unwrap();
    assert_clean_failure(&cache, "ub-fhe's");
}

/// What `venn ub` with `args` says once its answer is from `version` (the server
/// follows a publish within a second or so): asked again until then, for up to a minute.
fn once_served(args: &[&str], version: &str) -> String {
    let start = Instant::now();
    loop {
        let said = stderr(&ub(args));
        if said.contains(version) {
            return said;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{said}");
    }
}

/// A labeled dataset served in ub-fhe only, through the real binary: a client without
/// a state file queries it (auto: ub-fhe) and gets the plain intersection with labels,
/// downloading no tags; asking for ub-cache, or a sync, is refused cleanly; after an
/// update (its delta applied to the databases) a single key's query (the single keys'
/// database) follows it, and after a new key (the databases made again under it) every
/// answer does.
#[test]
fn a_dataset_served_in_ub_fhe_only_answers_without_tags() {
    let dir = tmp();
    let d = dir.path();
    let body: String = (0..300)
        .map(|i| format!("{},case {i}\n", plain(i)))
        .collect();
    let big = write(d, "big.csv", &format!("email,case\n{body}"));
    let dataset = d.join("ds");
    let ds = dataset.to_str().unwrap();
    let made = ub(&[
        "init",
        "--dataset",
        ds,
        "--input",
        big.to_str().unwrap(),
        "--column",
        "email",
        "--label-column",
        "case",
        "--max-query",
        "256",
        "--max-items",
        "4096",
        "--mode",
        "fhe",
    ]);
    assert_success(&[&made]);
    assert!(
        stderr(&made).contains("ub-fhe databases (V2M-1 of"),
        "{}",
        stderr(&made)
    );
    let log = d.join("serve.log");
    let server = serve(&dataset, &log, &[]);
    let query = keys_file(d, "q.csv", 280..320, plain);
    let out = d.join("hits.csv");
    let args = [
        "query",
        "--connect",
        &server.addr,
        "--input",
        &query,
        "--column",
        "email",
        "--output",
        out.to_str().unwrap(),
    ];
    let expected = |held: &dyn Fn(u32) -> Option<String>| {
        let rows: String = (280..320)
            .filter_map(|i| held(i).map(|l| format!("{},{i},{l}\n", plain(i))))
            .collect();
        format!("email,n,label\n{rows}")
    };
    let said = stderr(&ub(&args));
    assert!(said.contains("queried in ub-fhe"), "{said}");
    assert_eq!(
        read(&out),
        expected(&|i| (i < 300).then(|| format!("case {i}"))),
        "{said}"
    );
    assert!(received(&said) < 4 << 20, "{said}");
    let cache = ub(&[&args[..], &["--mode", "cache"]].concat());
    assert_clean_failure(&cache, "does not publish its tags");
    let sync = ub(&["sync", "--connect", &server.addr]);
    assert_clean_failure(&sync, "ub-fhe only");

    let up = write(
        d,
        "up.csv",
        "email,case\nuser310@example.com,new 310\nuser285@example.com,moved\n",
    );
    let del = keys_file(d, "del.csv", 290..295, plain);
    let updated = ub(&[
        "update",
        "--dataset",
        ds,
        "--upsert",
        up.to_str().unwrap(),
        "--delete",
        &del,
        "--column",
        "email",
        "--label-column",
        "case",
    ]);
    assert_success(&[&updated]);
    let one = keys_file(d, "one.csv", 310..311, plain);
    let single = d.join("single.csv");
    let asked = [
        "query",
        "--connect",
        &server.addr,
        "--input",
        &one,
        "--column",
        "email",
        "--output",
        single.to_str().unwrap(),
    ];
    let said = once_served(&asked, "version 1 of epoch 0");
    let row = format!("email,n,label\n{},310,new 310\n", plain(310));
    assert_eq!(read(&single), row, "{said}");
    assert_success(&[&ub(&["rotate-key", "--dataset", ds])]);
    let said = once_served(&args, "version 0 of epoch 1");
    let held = |i: u32| match i {
        285 => Some("moved".to_string()),
        310 => Some("new 310".to_string()),
        290..295 => None,
        i => (i < 300).then(|| format!("case {i}")),
    };
    assert_eq!(read(&out), expected(&held), "{said}");
    drop(server);
}
