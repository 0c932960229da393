//! `venn cloud` through the real binary: a service without its own pool, two clients,
//! and external workers, one of them killed mid-run.

use crate::common::venn;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a command and reads the address from the first line of `stream` that starts
/// with `prefix`.
fn spawn_until(cmd: &mut std::process::Command, prefix: &str, stdout: bool) -> (Killed, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn venn");
    let stream: Box<dyn std::io::Read + Send> = if stdout {
        Box::new(child.stdout.take().unwrap())
    } else {
        Box::new(child.stderr.take().unwrap())
    };
    let mut reader = BufReader::new(stream);
    let addr = loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "exited before '{prefix}'"
        );
        if let Some(a) = line.trim().strip_prefix(prefix) {
            break a.to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    (Killed(child), addr)
}

fn ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The service's address and its certificate's fingerprint.
struct Server {
    url: String,
    fingerprint: String,
}

impl Server {
    /// `--server URL --server-fingerprint FP`.
    fn args(&self) -> [&str; 4] {
        [
            "--server",
            &self.url,
            "--server-fingerprint",
            &self.fingerprint,
        ]
    }
}

fn client(server: &Server, dir: &Path, name: &str, cmd: &str) -> std::process::Command {
    let mut c = venn();
    c.args(["cloud", cmd])
        .args(server.args())
        .arg("--identity")
        .arg(dir.join(format!("{name}.id")));
    c
}

fn status(server: &Server, dir: &Path, run: &str) -> serde_json::Value {
    serde_json::from_str(&ok(
        client(server, dir, "alice", "status").args(["--run", run])
    ))
    .unwrap()
}

#[test]
fn a_run_survives_a_killed_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    // The API over TLS, its certificate pinned by every client and worker.
    let fingerprint = ok(venn().args(["keygen", "--out"]).arg(dir.join("tls")));
    let (_service, addr) = spawn_until(
        venn()
            .args([
                "cloud",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--threads",
                "0",
            ])
            .args(["--lease-seconds", "2", "--data"])
            .arg(&data)
            .arg("--tls-cert")
            .arg(dir.join("tls/venn.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls/venn.key")),
        "listening ",
        true,
    );
    let server = Server {
        url: format!("https://{addr}"),
        fingerprint: fingerprint.trim().to_owned(),
    };
    // Another certificate's fingerprint, plain HTTP to the TLS port, or no way to check
    // the certificate: refused before anything is registered.
    let other = ok(venn().args(["keygen", "--out"]).arg(dir.join("other")));
    let impostor = Server {
        url: server.url.clone(),
        fingerprint: other.trim().to_owned(),
    };
    let plain = format!("http://{addr}");
    for (args, what) in [
        (impostor.args().to_vec(), "another certificate"),
        (vec!["--server", &plain], "plain HTTP"),
        (vec!["--server", &server.url], "no fingerprint"),
    ] {
        let out = venn()
            .args(["cloud", "register", "--name", "mallory", "--identity"])
            .arg(dir.join("mallory.id"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{what}");
        assert!(!dir.join("mallory.id").exists(), "{what}");
    }
    // Alice: 3000 keys, some repeated and padded; Bob: 2000, 1000 of them Alice's, in a
    // file separated by semicolons (--delimiter).
    let mut a = String::from("email,n\n");
    for i in 0..3000 {
        a += &format!(" user{i}@example.com ,{i}\n");
    }
    a += " user2500@example.com ,again\n";
    let mut b = String::from("id;email\n");
    for i in 2000..4000 {
        b += &format!("{i};user{i}@example.com\n");
    }
    std::fs::write(dir.join("a.csv"), &a).unwrap();
    std::fs::write(dir.join("b.csv"), &b).unwrap();
    for (name, file, delimiter) in [("alice", "a.csv", ","), ("bob", "b.csv", ";")] {
        ok(client(&server, dir, name, "register").args(["--name", name]));
        let id = dir.join(format!("{name}.id"));
        assert_eq!(
            std::fs::metadata(&id).unwrap().permissions().mode() & 0o777,
            0o600
        );
        ok(client(&server, dir, name, "upload")
            .args([
                "--dataset",
                "emails",
                "--column",
                "email",
                "--delimiter",
                delimiter,
                "--trim",
                "--chunk-items",
                "400",
            ])
            .arg("--input")
            .arg(dir.join(file))
            .arg("--key-file")
            .arg(dir.join(format!("{name}.key"))));
        let key = dir.join(format!("{name}.key"));
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // A key file is never overwritten.
    let again = client(&server, dir, "alice", "upload")
        .args(["--dataset", "other", "--input"])
        .arg(dir.join("a.csv"))
        .arg("--key-file")
        .arg(dir.join("alice.key"))
        .output()
        .unwrap();
    assert!(!again.status.success());

    let (mut alice, pair_addr) = spawn_until(
        client(&server, dir, "alice", "pair")
            .args(["--listen", "127.0.0.1:0", "--key-file"])
            .arg(dir.join("alice.key")),
        "venn cloud: listening on ",
        false,
    );
    let run = ok(client(&server, dir, "bob", "pair")
        .args(["--connect", &pair_addr, "--key-file"])
        .arg(dir.join("bob.key")));
    let run = run.trim().to_owned();
    // The leader gives its token after the partner has the run: wait for it (killing it
    // now could cut it off before).
    assert!(alice.0.wait().unwrap().success());

    // The operator enrols the workers (owner-only identity files; a name once).
    let enrol = |name: &str| {
        let mut c = venn();
        c.args(["cloud", "enrol-worker", "--name", name, "--data"])
            .arg(&data)
            .arg("--out")
            .arg(dir.join(format!("{name}.worker")));
        c
    };
    for name in ["first", "second"] {
        ok(&mut enrol(name));
        let file = dir.join(format!("{name}.worker"));
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    std::fs::remove_file(dir.join("first.worker")).unwrap();
    assert!(!enrol("first").output().unwrap().status.success());
    // A worker that dies once it has done some of the work, holding a lease.
    let worker = |name: &str, idle: &str| {
        let mut c = venn();
        c.args(["cloud", "worker", "--idle-exit", idle])
            .args(server.args())
            .arg("--worker-identity")
            .arg(dir.join(format!("{name}.worker")));
        c
    };
    ok(enrol("first").arg("--replace"));
    let mut first = Killed(worker("first", "60").stderr(Stdio::null()).spawn().unwrap());
    let start = Instant::now();
    while status(&server, dir, &run)["tasks_done"].as_u64().unwrap() == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(50));
    }
    first.0.kill().unwrap();
    let s = status(&server, dir, &run);
    assert_ne!(s["state"], "done", "killed mid-run: {s}");
    let second = worker("second", "4").output().unwrap();
    assert!(second.status.success());
    // The operator's list: both enrolled, neither quarantined (honest answers).
    let listed: serde_json::Value =
        serde_json::from_str(&ok(venn().args(["cloud", "workers", "--data"]).arg(&data))).unwrap();
    let names: Vec<(&str, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["name"].as_str().unwrap(), w["quarantined"].is_null()))
        .collect();
    assert_eq!(names, [("first", true), ("second", true)]);

    // Keys taken otherwise than at the upload (lower-cased too): refused, naming both.
    let refused = client(&server, dir, "alice", "result")
        .args(["--run", &run, "--column", "email", "--trim", "--lowercase"])
        .arg("--output")
        .arg(dir.join("refused.out"))
        .arg("--input")
        .arg(dir.join("a.csv"))
        .arg("--key-file")
        .arg(dir.join("alice.key"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains(
            "uploaded taken with trim, no lowercase, 1 key column, these with trim, lowercase"
        ),
        "{err}"
    );
    assert!(!dir.join("refused.out").exists());
    for (name, file, delimiter, expected) in
        [("alice", "a.csv", ",", 1001), ("bob", "b.csv", ";", 1000)]
    {
        let out = dir.join(format!("{name}.out"));
        ok(client(&server, dir, name, "result")
            .args(["--run", &run, "--column", "email", "--trim"])
            .args(["--delimiter", delimiter, "--output"])
            .arg(&out)
            .arg("--input")
            .arg(dir.join(file))
            .arg("--key-file")
            .arg(dir.join(format!("{name}.key"))));
        let rows: Vec<String> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .skip(1)
            .map(str::to_owned)
            .collect();
        assert_eq!(
            rows.len(),
            expected,
            "{name}'s rows (Alice has user2500 twice)"
        );
        for r in &rows {
            assert!(r.contains(delimiter), "rows as in the input: {r}");
            let n: u32 = r
                .split("user")
                .nth(1)
                .and_then(|t| t.split('@').next())
                .and_then(|t| t.parse().ok())
                .unwrap();
            assert!((2000..3000).contains(&n), "{r}");
        }
    }
    let s = status(&server, dir, &run);
    assert_eq!(s["matches"], 1000);
    // Reading a result with another input (taken alike) is refused.
    let wrong = client(&server, dir, "bob", "result")
        .args(["--run", &run, "--column", "email", "--trim", "--output"])
        .arg(dir.join("x.out"))
        .arg("--input")
        .arg(dir.join("a.csv"))
        .arg("--key-file")
        .arg(dir.join("bob.key"))
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("not the ones uploaded"));
    assert!(!dir.join("x.out").exists());

    // A preprocessed run (docs/cloud.md, Pre-tokens): pre-tokens computed by a worker, then
    // a run of scalars that gives the same rows.
    let mut precomputing = Killed(worker("second", "4").stderr(Stdio::null()).spawn().unwrap());
    for name in ["alice", "bob"] {
        let made = ok(client(&server, dir, name, "pretoken")
            .args(["--wait", "60", "--key-file"])
            .arg(dir.join(format!("{name}.key"))));
        assert_eq!(made.lines().count(), 1, "{made}");
    }
    assert!(precomputing.0.wait().unwrap().success());
    let (mut alice, pair_addr) = spawn_until(
        client(&server, dir, "alice", "pair")
            .args(["--listen", "127.0.0.1:0", "--preprocessed", "--key-file"])
            .arg(dir.join("alice.key")),
        "venn cloud: listening on ",
        false,
    );
    let preprocessed = ok(client(&server, dir, "bob", "pair")
        .args(["--connect", &pair_addr, "--preprocessed", "--key-file"])
        .arg(dir.join("bob.key")));
    let preprocessed = preprocessed.trim().to_owned();
    assert!(alice.0.wait().unwrap().success());
    let used = dir.join("bob.key.used");
    assert_eq!(
        std::fs::metadata(&used).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&used).unwrap().lines().count(), 1);
    assert!(worker("second", "4").output().unwrap().status.success());
    let out = dir.join("bob-preprocessed.out");
    ok(client(&server, dir, "bob", "result")
        .args([
            "--run",
            &preprocessed,
            "--column",
            "email",
            "--trim",
            "--delimiter",
            ";",
            "--output",
        ])
        .arg(&out)
        .arg("--input")
        .arg(dir.join("b.csv"))
        .arg("--key-file")
        .arg(dir.join("bob.key")));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(dir.join("bob.out")).unwrap()
    );
    let s = status(&server, dir, &preprocessed);
    assert_eq!(
        (&s["kind"], &s["matches"]),
        (&"preprocessed".into(), &1000.into())
    );
    let listed = ok(client(&server, dir, "bob", "pretoken")
        .args(["--count", "0", "--key-file"])
        .arg(dir.join("bob.key")));
    assert!(listed.trim().ends_with(" used"), "{listed}");
}

/// A service listening beyond loopback registers by invitation unless told otherwise:
/// without an invite, with an unknown one or with a used one, registration is refused
/// and leaves no identity file; `venn cloud invite` makes single-use invites.
#[test]
fn registration_is_by_invitation_beyond_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    let fingerprint = ok(venn().args(["keygen", "--out"]).arg(dir.join("tls")));
    let (_service, addr) = spawn_until(
        venn()
            .args(["cloud", "serve", "--listen", "0.0.0.0:0", "--threads", "0"])
            .arg("--data")
            .arg(&data)
            .arg("--tls-cert")
            .arg(dir.join("tls/venn.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls/venn.key")),
        "listening ",
        true,
    );
    let port = addr.rsplit(':').next().unwrap();
    let server = Server {
        url: format!("https://127.0.0.1:{port}"),
        fingerprint: fingerprint.trim().to_owned(),
    };
    let register = |name: &str, invite: Option<&str>| {
        let mut c = client(&server, dir, name, "register");
        c.args(["--name", name]);
        if let Some(invite) = invite {
            c.args(["--invite", invite]);
        }
        c.output().unwrap()
    };
    let invites = ok(venn()
        .args(["cloud", "invite", "--count", "2", "--data"])
        .arg(&data));
    let invites: Vec<&str> = invites.lines().collect();
    assert_eq!(invites.len(), 2, "{invites:?}");
    let unknown = "0".repeat(64);
    for (name, invite, why) in [
        ("none", None, "invitation"),
        ("unknown", Some(unknown.as_str()), "invite"),
    ] {
        let out = register(name, invite);
        assert!(!out.status.success(), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{name}: {stderr}");
        assert!(!dir.join(format!("{name}.id")).exists(), "{name}");
    }
    assert!(register("alice", Some(invites[0])).status.success());
    let reused = register("mallory", Some(invites[0]));
    assert!(!reused.status.success());
    assert!(!dir.join("mallory.id").exists());
    assert!(register("bob", Some(invites[1])).status.success());
}

/// `result` waits for a partner's token no longer than --partner-wait: it says what it
/// waits for (whose token, which run), and when the wait is over says so in one line and
/// exits non-zero, writing nothing — long before the service would give up on the run.
#[test]
fn result_gives_up_on_a_partner_that_never_gives_its_token() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fingerprint = ok(venn().args(["keygen", "--out"]).arg(dir.join("tls")));
    let (_service, addr) = spawn_until(
        venn()
            .args([
                "cloud",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--threads",
                "0",
            ])
            .arg("--data")
            .arg(dir.join("data"))
            .arg("--tls-cert")
            .arg(dir.join("tls/venn.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls/venn.key")),
        "listening ",
        true,
    );
    let server = Server {
        url: format!("https://{addr}"),
        fingerprint: fingerprint.trim().to_owned(),
    };
    std::fs::write(dir.join("keys.txt"), "x\ny\nz\n").unwrap();
    let mut datasets = Vec::new();
    for name in ["alice", "bob"] {
        ok(client(&server, dir, name, "register").args(["--name", name]));
        let id = ok(client(&server, dir, name, "upload")
            .args(["--dataset", "d", "--format", "lines", "--input"])
            .arg(dir.join("keys.txt"))
            .arg("--key-file")
            .arg(dir.join(format!("{name}.key"))));
        datasets.push(id.trim().to_owned());
    }
    // Bob lets Alice make a run of their datasets, but never gives his token; Alice gives
    // hers.
    let endpoint =
        venn_app::thunder::endpoint(&server.url, Some(&server.fingerprint), None, false).unwrap();
    let as_client = |name: &str| {
        let identity = venn_cloud::auth::Identity::load(&dir.join(format!("{name}.id"))).unwrap();
        venn_cloud::client::Client::new(&endpoint, identity).unwrap()
    };
    let (alice, bob) = (as_client("alice"), as_client("bob"));
    bob.grant(&datasets[1], "alice").unwrap();
    let body = serde_json::json!({ "datasets": [&datasets[1], &datasets[0]] }).to_string();
    let run: serde_json::Value =
        serde_json::from_slice(&alice.call("POST", "/v1/runs", body.as_bytes()).unwrap()).unwrap();
    let run = run["id"].as_str().unwrap().to_owned();
    let key = venn_cloud::client::DatasetKey::load(&dir.join("alice.key")).unwrap();
    let token = venn_cloud::crypto::token(
        &venn_cloud::crypto::Secret::random(),
        &key.secret().unwrap(),
    );
    let body = serde_json::json!({ "dataset": &datasets[0], "token": token.map(|b| format!("{b:02x}")).concat() });
    alice
        .call(
            "POST",
            &format!("/v1/runs/{run}/tokens"),
            body.to_string().as_bytes(),
        )
        .unwrap();

    let start = Instant::now();
    let out = client(&server, dir, "alice", "result")
        .args([
            "--run",
            &run,
            "--partner-wait",
            "2",
            "--format",
            "lines",
            "--input",
        ])
        .arg(dir.join("keys.txt"))
        .arg("--key-file")
        .arg(dir.join("alice.key"))
        .arg("--output")
        .arg(dir.join("alice.out"))
        .output()
        .unwrap();
    let waited = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(waited < Duration::from_secs(30), "{waited:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.contains(&run) && l.contains("bob's token")),
        "says what it waits for: {stderr}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.contains(&run) && last.contains("bob") && last.contains("2 s"),
        "says why it gave up: {stderr}"
    );
    assert!(!dir.join("alice.out").exists());
}

/// The service's log (RUST_LOG=debug: everything it may write): each request in a span of
/// its own id, method and route, closed by its status; the coordinator's work under its
/// run's id; and none of the secrets the test used — the invite, the client's signing key,
/// the dataset key, the worker's secret — anywhere in it.
#[test]
fn the_service_log_names_requests_and_runs_but_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    let log = dir.join("service.log");
    let mut service = Killed(
        venn()
            .args([
                "cloud",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--threads",
                "1",
            ])
            .args(["--registration", "invite", "--data"])
            .arg(&data)
            .env("RUST_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    BufReader::new(service.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = format!(
        "http://{}",
        first.trim().strip_prefix("listening ").unwrap()
    );
    let cloud = |cmd: &str| {
        let mut c = venn();
        c.args(["cloud", cmd, "--server", &url]);
        c
    };
    let invite = ok(venn().args(["cloud", "invite", "--data"]).arg(&data));
    let invite = invite.trim();
    let (id, key) = (dir.join("alice.id"), dir.join("alice.key"));
    ok(cloud("register")
        .args(["--name", "alice", "--invite", invite, "--identity"])
        .arg(&id));
    std::fs::write(dir.join("a.txt"), "k1\nk2\nk3\nk4\nk5\n").unwrap();
    ok(cloud("upload")
        .args(["--dataset", "d", "--chunk-items", "2", "--identity"])
        .arg(&id)
        .arg("--input")
        .arg(dir.join("a.txt"))
        .arg("--key-file")
        .arg(&key));
    // A pre-token: a run the service's own pool computes.
    let pretoken = ok(cloud("pretoken")
        .args(["--wait", "60", "--identity"])
        .arg(&id)
        .arg("--key-file")
        .arg(&key));
    let pretoken = pretoken.trim();
    ok(venn()
        .args(["cloud", "enrol-worker", "--name", "w", "--data"])
        .arg(&data)
        .arg("--out")
        .arg(dir.join("w.worker")));
    ok(cloud("worker")
        .args(["--idle-exit", "0", "--worker-identity"])
        .arg(dir.join("w.worker")));
    drop(service);
    let log = std::fs::read_to_string(&log).unwrap();

    // Every request answered in a span of its own: a 64-bit id, its method and route.
    let mut ids = std::collections::HashSet::new();
    let mut routes = Vec::new();
    for line in log.lines().filter(|l| l.contains(" answered status=")) {
        let span = line.split("request{id=").nth(1).expect(line);
        let (id, rest) = span.split_once(' ').expect(line);
        assert!(
            id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{line}"
        );
        assert!(ids.insert(id.to_owned()), "an id twice: {line}");
        routes.push(rest.split("}: ").next().unwrap().to_owned());
    }
    for route in [
        "method=POST route=/v1/clients",
        "method=PUT route=/v1/datasets/{id}/chunks/{chunk}",
        "method=POST route=/v1/datasets/{id}/pretokens",
        "method=POST route=/v1/tasks/lease",
    ] {
        assert!(
            routes.iter().any(|r| r.starts_with(route)),
            "{route}: {log}"
        );
    }
    // The pre-token's run: in its request's span, then in the pool's and the coordinator's.
    for span in [
        format!("route=/v1/datasets/{{id}}/pretokens run={pretoken}}}"),
        format!("task{{run={pretoken} side=0 chunk=0}}"),
        format!("run{{run={pretoken}}}"),
    ] {
        assert!(log.contains(&span), "{span}: {log}");
    }
    // No secret of the test's, whole or as the half a careless format might cut.
    let field = |file: &Path, name: &str| -> String {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        v[name].as_str().unwrap().to_owned()
    };
    let worker = std::fs::read_to_string(dir.join("w.worker")).unwrap();
    let secrets = [
        ("invite", invite.to_owned()),
        ("signing key", field(&id, "secret_key")),
        ("dataset key", field(&key, "key")),
        (
            "worker secret",
            worker.trim().split(':').nth(1).unwrap().to_owned(),
        ),
    ];
    for (what, secret) in secrets {
        assert!(secret.len() >= 32, "{what}: {secret}");
        assert!(
            !log.contains(&secret[..secret.len() / 2]),
            "{what} in the log"
        );
        assert!(
            !log.contains(&secret[secret.len() / 2..]),
            "{what} in the log"
        );
    }
}

/// RUST_LOG filters the service's log as it does any Rust program's: an invalid filter is
/// refused (naming it) before the service starts, not silently dropped.
#[test]
fn an_invalid_rust_log_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut service = Killed(
        venn()
            .args(["cloud", "serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(tmp.path().join("data"))
            .env("RUST_LOG", "venn_service=loudest")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = service.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "served under an invalid RUST_LOG"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut service.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(stderr.contains("RUST_LOG"), "{stderr}");
}
