//! The service end to end, one suite for both stores: each scenario a test on SQLite
//! (`sqlite::…`) and on PostgreSQL (`postgres::…`, in a real cluster the tests start).

mod common;

use common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use venn_cloud::api::{PretokenState, RunKind, RunState, Task, Work, MAX_CHUNK_ITEMS};
use venn_cloud::auth::{Identity, WorkerIdentity};
use venn_cloud::client::Client;
use venn_cloud::crypto::{self, Secret, ITEM_BYTES};
use venn_cloud::http::{Endpoint, Http};
use venn_cloud::worker::{self, WorkerConfig, WorkerLink};
use venn_cloud::Error;
use venn_service::server::{Config, Registration};
use venn_service::spot_check::miss_probability;

/// Two parties, unequal sizes over several chunks, then the empty and the full
/// intersection and an empty dataset.
fn two_parties_get_the_plaintext_intersection(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (alice, bob) = (s.client("alice"), s.client("bob"));
    let a = numbered("k", 0..300);
    let b = numbered("k", 250..400);
    let ka = upload(&w, &alice, "a", &a, 64);
    let kb = upload(&w, &bob, "b", &b, 50);
    let run = pair(&[(&alice, &ka), (&bob, &kb)]);
    assert_eq!(matched(&alice, &ka, &run, &a), truth(&a, &b));
    assert_eq!(matched(&bob, &kb, &run, &b), truth(&a, &b));
    // The result asked for keys taken otherwise than at the upload: refused, naming both.
    let other = "trim, lowercase, 1 key column";
    let err = alice.result(&ka, &run, &keys(&a), other).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains(FORM) && m.contains(other)),
        "{err}"
    );
    let r = alice.run(&run).unwrap();
    assert_eq!(r.matches, Some(50));
    assert_eq!((r.tasks, r.tasks_done), (5 + 3, 8));

    let c = numbered("other", 0..40);
    let kc = upload(&w, &bob, "c", &c, 16);
    let run = pair(&[(&alice, &ka), (&bob, &kc)]);
    assert!(matched(&alice, &ka, &run, &a).is_empty());
    let ka2 = upload(&w, &alice, "a-again", &c, 1000);
    let run = pair(&[(&bob, &kc), (&alice, &ka2)]);
    assert_eq!(matched(&bob, &kc, &run, &c), truth(&c, &c));
    let empty = upload(&w, &alice, "empty", &[], 8);
    let run = pair(&[(&alice, &empty), (&bob, &kb)]);
    assert!(matched(&bob, &kb, &run, &b).is_empty());
}

/// Three parties: only keys all three hold; the two partners never talk.
fn three_parties_get_the_common_keys(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (p1, p2, p3) = (s.client("p1"), s.client("p2"), s.client("p3"));
    let a = numbered("k", 0..60);
    let b = numbered("k", 30..90);
    let mut c = numbered("k", 40..45);
    c.extend(numbered("k", 70..80)); // in b only
    c.extend(numbered("k", 0..5)); // in a only
    let (k1, k2, k3) = (
        upload(&w, &p1, "a", &a, 25),
        upload(&w, &p2, "b", &b, 60),
        upload(&w, &p3, "c", &c, 7),
    );
    let run = pair(&[(&p1, &k1), (&p2, &k2), (&p3, &k3)]);
    let common = truth(&truth(&a, &b), &c);
    assert_eq!(common, numbered("k", 40..45));
    assert_eq!(matched(&p1, &k1, &run, &a), common);
    assert_eq!(matched(&p2, &k2, &run, &b), common);
    assert_eq!(matched(&p3, &k3, &run, &c), common);
}

/// A three-party run whose join would compare more pairs than --max-join-work allows is
/// refused when it is created, the figure named; the same datasets with the smaller two
/// first, or a join of exactly the cap, are not.
fn three_party_join_work_is_capped(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        max_join_work: 12,
        ..config()
    });
    let (p1, p2, p3) = (s.client("p1"), s.client("p2"), s.client("p3"));
    let (k1, k2, k3) = (
        upload(&w, &p1, "a", &numbered("k", 0..4), 8),
        upload(&w, &p2, "b", &numbered("k", 0..4), 8),
        upload(&w, &p3, "c", &numbered("k", 0..3), 8),
    );
    p2.grant(&k2.dataset, "p1").unwrap();
    p3.grant(&k3.dataset, "p1").unwrap();
    let err = post_run(&p1, &[&k1.dataset, &k2.dataset, &k3.dataset]).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("n1·n2 = 4·4 = 16 pairs")
            && m.contains("the 12 this service allows")),
        "{err}"
    );
    post_run(&p1, &[&k1.dataset, &k3.dataset, &k2.dataset]).unwrap();
    // Two parties join in linear time: no cap.
    post_run(&p1, &[&k1.dataset, &k2.dataset]).unwrap();
}

/// Another client's dataset is answered exactly as a missing id is — shown, named in a run,
/// written to or granted — until its owner grants it to the caller (as a follower does for
/// the leader it paired with); then the caller sees it in a run, and only that caller.
fn datasets_are_seen_only_by_partners(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        max_join_work: 1,
        ..config()
    });
    let (a, b, c) = (s.client("a"), s.client("b"), s.client("c"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..4), 4);
    let kb = upload(&w, &b, "d", &numbered("x", 2..9), 4);
    let kc = upload(&w, &c, "d", &numbered("x", 0..3), 4);
    let open = create(&b, "open");
    let missing = hex::encode([7u8; venn_cloud::api::ID_BYTES]);
    // What `a` is told of b's datasets, sealed or open, with its id put for the missing one.
    let told = |id: &str| {
        let as_missing = |r: Result<_, Error>| match r {
            Err(Error::NotFound(m)) => m.replace(id, "ID"),
            other => panic!("{id}: {other:?}"),
        };
        let no_chunk = put(
            &a,
            id,
            0,
            &crypto::encrypt(&keys(&["q"]), &Secret::random())[0],
        );
        [
            as_missing(a.call("GET", &format!("/v1/datasets/{id}"), b"").map(drop)),
            as_missing(post_run(&a, &[&ka.dataset, id]).map(drop)),
            as_missing(post_run(&a, &[&ka.dataset, id, &kc.dataset]).map(drop)),
            as_missing(no_chunk.map(drop)),
            as_missing(a.grant(id, "c")),
        ]
    };
    let expected = told(&missing);
    assert_eq!(told(&kb.dataset), expected);
    assert_eq!(told(&open), expected);
    // Granted to `a`: seen in a's run, with its owner and size (and the join's figure),
    // and still not by c.
    b.grant(&kb.dataset, "a").unwrap();
    let err = post_run(&c, &[&kc.dataset, &kb.dataset]).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    let run = post_run(&a, &[&ka.dataset, &kb.dataset]).unwrap();
    let sides = a.run(&run).unwrap().sides;
    assert_eq!((sides[1].owner.as_str(), sides[1].items), ("b", 7));
    c.grant(&kc.dataset, "a").unwrap();
    let err = post_run(&a, &[&kb.dataset, &ka.dataset, &kc.dataset]).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("7·4")),
        "{err}"
    );
}

/// A grant tells its caller nothing of which names are registered: granting a dataset to
/// a registered client and to a name nobody holds is answered byte for byte alike, and
/// the grant to the free name gives whoever registers it later nothing.
fn grants_do_not_tell_which_names_exist(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (a, _b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..4), 4);
    let path = format!("/v1/datasets/{}/grants", ka.dataset);
    let grant = |to: &str| {
        let body = serde_json::json!({ "client": to }).to_string();
        raw_answer(&s, &a, "POST", &path, body.as_bytes())
    };
    let (known, unknown) = (grant("b"), grant("nobody"));
    assert_eq!(known, unknown);
    assert!(known.starts_with("HTTP/1.1 204"), "{known}");
    let nobody = s.client("nobody");
    let kn = upload(&w, &nobody, "d", &numbered("x", 0..4), 4);
    let err = post_run(&nobody, &[&kn.dataset, &ka.dataset]).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
}

/// The whole answer to `client`'s signed request, but for its `date` header.
fn raw_answer(s: &Running, client: &Client, method: &str, path: &str, body: &[u8]) -> String {
    let addr = s.url.trim_start_matches("http://");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in client.identity().sign(method, path, body) {
        head += &format!("{name}: {value}\r\n");
    }
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(&[format!("{head}\r\n").as_bytes(), body].concat())
        .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    answer
        .split("\r\n")
        .filter(|line| !line.to_ascii_lowercase().starts_with("date:"))
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// Runs (i, j) and (j, k) give nothing about (i, k): nobody but i and k can make an
/// (i, k) run, and it needs both their tokens.
fn runs_need_every_owners_token(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (i, j, k) = (s.client("i"), s.client("j"), s.client("k"));
    let names = numbered("x", 0..20);
    let (ki, kj, kk) = (
        upload(&w, &i, "d", &names, 8),
        upload(&w, &j, "d", &names, 8),
        upload(&w, &k, "d", &names, 8),
    );
    let r1 = pair(&[(&i, &ki), (&j, &kj)]);
    let r2 = pair(&[(&j, &kj), (&k, &kk)]);
    assert_eq!(matched(&i, &ki, &r1, &names).len(), 20);
    assert_eq!(matched(&k, &kk, &r2, &names).len(), 20);
    // j may not make a run of i's and k's datasets, even granted both.
    i.grant(&ki.dataset, "j").unwrap();
    k.grant(&kk.dataset, "j").unwrap();
    let err = post_run(&j, &[&ki.dataset, &kk.dataset]).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    // i may, once k granted its dataset to i, but nothing happens without k's token: i
    // cannot give it.
    k.grant(&kk.dataset, "i").unwrap();
    let run = post_run(&i, &[&ki.dataset, &kk.dataset]).unwrap();
    let t = crypto::token(&Secret::random(), &Secret::random());
    let err = give(&i, &run, &kk.dataset, &t).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    give(&i, &run, &ki.dataset, &t).unwrap();
    let r = i.run(&run).unwrap();
    assert_eq!(r.state, RunState::Tokens);
    // Runs are visible to their datasets' owners only.
    assert!(matches!(j.run(&run).unwrap_err(), Error::NotFound(_)));
}

/// Tokens: replayed (into another run, or twice), malformed or of the identity are
/// refused; one made with the wrong key gives an empty intersection.
fn tokens_are_checked(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (a, b) = (s.client("a"), s.client("b"));
    let names = numbered("x", 0..10);
    let (ka, kb) = (
        upload(&w, &a, "d", &names, 8),
        upload(&w, &b, "d", &names, 8),
    );
    b.grant(&kb.dataset, "a").unwrap();
    let run1 = post_run(&a, &[&kb.dataset, &ka.dataset]).unwrap();
    let run2 = post_run(&a, &[&kb.dataset, &ka.dataset]).unwrap();
    let t = crypto::token(&Secret::random(), &Secret::random());
    give(&a, &run1, &ka.dataset, &t).unwrap();
    for err in [
        give(
            &a,
            &run1,
            &ka.dataset,
            &crypto::token(&Secret::random(), &Secret::random()),
        ),
        give(&a, &run2, &ka.dataset, &t),
    ] {
        assert!(matches!(err.unwrap_err(), Error::Conflict(_)));
    }
    let identity = {
        use group::prime::PrimeCurveAffine;
        blstrs::G2Affine::identity().to_compressed()
    };
    for bad in [identity.to_vec(), vec![0x80; 96], vec![1; 95]] {
        let err = give_raw(&a, &run2, &ka.dataset, &hex::encode(&bad)).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_)), "{err}");
    }
    // The right run key but a token for another dataset key: nothing matches.
    let run3 = post_run(&a, &[&kb.dataset, &ka.dataset]).unwrap();
    let k = Secret::random();
    give(
        &a,
        &run3,
        &ka.dataset,
        &crypto::token(&k, &Secret::random()),
    )
    .unwrap();
    let kb_secret = kb.secret().unwrap();
    give(&b, &run3, &kb.dataset, &crypto::token(&k, &kb_secret)).unwrap();
    assert!(matched(&b, &kb, &run3, &names).is_empty());
}

/// Chunks: points off the curve, outside the subgroup, the identity, a ragged or
/// oversized body, duplicates (at sealing), another's dataset, a sealed dataset.
fn chunks_are_checked(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (a, b) = (s.client("a"), s.client("b"));
    let d = create(&a, "open");
    let good = crypto::encrypt(&keys(&["x", "y"]), &Secret::random());
    let outside = (1u8..)
        .map(|x| {
            let mut p = [0u8; 48];
            p[0] = 0x80;
            p[47] = x;
            p
        })
        .find(|p| bool::from(blstrs::G1Affine::from_compressed_unchecked(p).is_some()))
        .unwrap();
    let identity = {
        use group::prime::PrimeCurveAffine;
        blstrs::G1Affine::identity().to_compressed()
    };
    for (bad, what) in [
        ([good[0], [0xff; 48]].concat(), "off the curve"),
        ([good[0], outside].concat(), "outside the subgroup"),
        ([good[0], identity].concat(), "the identity"),
        (good[0][..47].to_vec(), "ragged"),
        (Vec::new(), "empty"),
    ] {
        let err = put(&a, &d, 0, &bad).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_)), "{what}: {err}");
    }
    let big = vec![0u8; (MAX_CHUNK_ITEMS + 1) * 48];
    assert!(matches!(
        put(&a, &d, 0, &big).unwrap_err(),
        Error::TooLarge(_)
    ));
    assert!(matches!(
        put(&b, &d, 0, &good[0]).unwrap_err(),
        Error::NotFound(_)
    ));
    put(&a, &d, 0, &[good[0], good[1]].concat()).unwrap();
    put(&a, &d, 1, &good[1]).unwrap();
    let err = seal(&a, &d, 2, 3).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("twice")),
        "{err}"
    );
    put(&a, &d, 1, &good[0]).unwrap();
    assert!(
        matches!(seal(&a, &d, 3, 3).unwrap_err(), Error::Conflict(_)),
        "a count off"
    );
    assert!(
        matches!(seal(&a, &d, 2, 3).unwrap_err(), Error::Conflict(_)),
        "still twice"
    );
    put(
        &a,
        &d,
        1,
        &crypto::encrypt(&keys(&["z"]), &Secret::random())[0],
    )
    .unwrap();
    seal(&a, &d, 2, 3).unwrap();
    assert!(matches!(
        put(&a, &d, 2, &good[0]).unwrap_err(),
        Error::Conflict(_)
    ));
    // A gap in the chunks.
    let gap = create(&a, "gap");
    put(&a, &gap, 1, &good[0]).unwrap();
    assert!(matches!(
        seal(&a, &gap, 1, 1).unwrap_err(),
        Error::Conflict(_)
    ));
}

/// A client's datasets and items are bounded; deleting a dataset frees its share.
fn quotas_are_kept(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        max_datasets: 2,
        max_client_items: 3,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let points = crypto::encrypt(&keys(&["w", "x", "y", "z"]), &Secret::random());
    let (first, second) = (create(&a, "first"), create(&a, "second"));
    let body = serde_json::json!({ "name": "third" }).to_string();
    let err = a.call("POST", "/v1/datasets", body.as_bytes()).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("2 datasets")),
        "{err}"
    );
    put(&a, &first, 0, &points[..2].concat()).unwrap();
    put(&a, &second, 0, &points[2]).unwrap();
    let err = put(&a, &second, 1, &points[3]).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("3 items")),
        "{err}"
    );
    // Another client has its own share.
    put(&b, &create(&b, "own"), 0, &points[..3].concat()).unwrap();
    a.call("DELETE", &format!("/v1/datasets/{first}"), b"")
        .unwrap();
    let third = create(&a, "third");
    put(&a, &third, 0, &points[..2].concat()).unwrap();
}

/// A deleted dataset's name is free again; a live one's is not.
fn a_deleted_name_is_free_again(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let a = s.client("a");
    let points = crypto::encrypt(&keys(&["x", "y"]), &Secret::random());
    let first = create(&a, "d");
    put(&a, &first, 0, &points[0]).unwrap();
    seal(&a, &first, 1, 1).unwrap();
    a.delete(&first).unwrap();
    let again = create(&a, "d");
    put(&a, &again, 0, &points[1]).unwrap();
    seal(&a, &again, 1, 1).unwrap();
    let err = try_create(&a, "d").unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let mut listed: Vec<(String, &str)> = a
        .datasets()
        .unwrap()
        .into_iter()
        .map(|d| (d.name, d.state.as_str()))
        .collect();
    listed.sort();
    assert_eq!(listed, [("d".into(), "deleted"), ("d".into(), "sealed")]);
}

/// Registration by invitation: none or a malformed, unknown or used invite is refused,
/// and two registrations at once with one invite are one success.
fn registration_is_by_invitation(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        registration: Registration::Invite,
        ..config()
    });
    let invites = w.invites(2);
    let newcomer = |name: &str| {
        Client::new(&Endpoint::plain(&s.url), Identity::generate(name).unwrap()).unwrap()
    };
    let err = newcomer("none").register(None).unwrap_err();
    assert!(
        matches!(err, Error::Forbidden(ref m) if m.contains("invitation")),
        "{err}"
    );
    let err = newcomer("bad").register(Some("x")).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)), "{err}");
    let unknown = "0".repeat(2 * venn_cloud::api::INVITE_BYTES);
    let err = newcomer("unknown").register(Some(&unknown)).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    let raced = at_once(2, |i| {
        newcomer(&format!("racer{i}")).register(Some(&invites[0]))
    });
    assert_eq!(successes(raced, |e| matches!(e, Error::Forbidden(_))), 1);
    let err = newcomer("late").register(Some(&invites[0])).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    newcomer("second").register(Some(&invites[1])).unwrap();
}

/// Service-wide limits on clients, datasets and items, each refused with its figure.
fn service_wide_limits_are_kept(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        max_clients: 2,
        max_total_datasets: 2,
        max_total_items: 3,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let extra = Client::new(&Endpoint::plain(&s.url), Identity::generate("c").unwrap()).unwrap();
    let err = extra.register(None).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("at most 2 clients")),
        "{err}"
    );
    let points = crypto::encrypt(&keys(&["w", "x", "y", "z"]), &Secret::random());
    let (da, db_) = (create(&a, "d"), create(&b, "d"));
    let err = try_create(&a, "more").unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("at most 2 datasets in all")),
        "{err}"
    );
    put(&a, &da, 0, &points[..2].concat()).unwrap();
    let err = put(&b, &db_, 0, &points[2..].concat()).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge(ref m) if m.contains("at most 3 items in all")),
        "{err}"
    );
    put(&b, &db_, 0, &points[2]).unwrap();
}

/// Requests racing each other: a client or dataset name taken at once is one success and
/// clean conflicts, and creations and chunks at once keep the quotas; a seal checks the
/// quotas again (here lowered by a restart).
fn racing_requests_keep_names_and_quotas(db: &Db) {
    let w = World::new(db);
    let config = Config {
        max_datasets: 2,
        max_items: 8,
        max_client_items: 12,
        ..config()
    };
    let s = w.start(config.clone());
    let conflict = |e: &Error| matches!(e, Error::Conflict(_));
    let too_large = |e: &Error| matches!(e, Error::TooLarge(_));
    let registered = at_once(8, |_| {
        let identity = Identity::generate("same").unwrap();
        Client::new(&Endpoint::plain(&s.url), identity)?.register(None)
    });
    assert_eq!(successes(registered, conflict), 1);
    let (a, b) = (s.client("a"), s.client("b"));
    let named = at_once(8, |_| try_create(&a, "same"));
    let same = named.iter().find_map(|r| r.as_ref().ok()).unwrap().clone();
    assert_eq!(successes(named, conflict), 1);
    let created = at_once(8, |i| try_create(&a, &format!("d{i}")));
    assert_eq!(successes(created, too_large), 1, "two datasets in all");
    // Eight chunks of two items at once.
    let points = crypto::encrypt(&keys(&numbered("p", 0..16)), &Secret::random());
    let put_all = |d: &str| at_once(8, |k| put(&b, d, k as u64, &points[2 * k..][..2].concat()));
    let d = create(&b, "d");
    assert_eq!(
        successes(put_all(&d), too_large),
        4,
        "eight items a dataset"
    );
    let e = create(&b, "e");
    assert_eq!(
        successes(put_all(&e), too_large),
        2,
        "twelve items a client"
    );
    for k in 0..4 {
        put(&a, &same, k, &points[2 * k as usize..][..2].concat()).unwrap();
    }
    let (a, s) = (
        a.identity().clone(),
        w.restart(
            s,
            Config {
                max_items: 7,
                ..config
            },
        ),
    );
    let a = Client::new(&Endpoint::plain(&s.url), a).unwrap();
    let err = seal(&a, &same, 4, 8).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
}

/// A chunk uploaded again as its dataset is sealed, or as it is deleted, changes nothing:
/// the sealed chunk's file stays as sealed, and a deleted dataset leaves no file; the
/// uploads are refused cleanly.
fn uploads_racing_a_seal_or_a_deletion_change_nothing(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let a = s.client("a");
    let small = crypto::encrypt(&keys(&["small"]), &Secret::random())[0];
    let big = crypto::encrypt(&keys(&numbered("big", 0..2000)), &Secret::random()).concat();
    let files = |d: &str| -> Vec<Vec<u8>> {
        match std::fs::read_dir(s.dir.join("datasets").join(d)) {
            Ok(dir) => dir
                .map(|f| std::fs::read(f.unwrap().path()).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    };
    let clean = |e: &Error| {
        matches!(e, Error::Conflict(_) | Error::NotFound(_))
            && !e.to_string().contains(&*s.dir.to_string_lossy())
    };
    let mut raced = 0;
    for attempt in 0..6u64 {
        let d = create(&a, &format!("sealed{attempt}"));
        put(&a, &d, 0, &small).unwrap();
        let outcomes = at_once(2, |i| match i {
            0 => put(&a, &d, 0, &big),
            _ => {
                std::thread::sleep(Duration::from_millis(5 + 5 * attempt));
                seal(&a, &d, 1, 1)
            }
        });
        if let [Err(e), Ok(())] = &outcomes[..] {
            assert!(clean(e), "{e}");
            assert_eq!(
                files(&d),
                vec![small.to_vec()],
                "the sealed chunk as sealed"
            );
            raced += 1;
        }
    }
    assert!(raced > 0, "no upload raced a seal");
    for attempt in 0..3u64 {
        let d = create(&a, &format!("deleted{attempt}"));
        let outcomes = at_once(4, |i| match i {
            0 => {
                std::thread::sleep(Duration::from_millis(5 * attempt));
                a.delete(&d).map(|_| ())
            }
            k => put(&a, &d, k as u64, &big[..200 * ITEM_BYTES]),
        });
        successes(outcomes, clean);
        assert!(files(&d).is_empty(), "a deleted dataset leaves no file");
        assert!(!s.dir.join("datasets").join(&d).exists());
    }
}

/// Requests: unsigned, forged, stale or replayed ones are refused, and so are keys of
/// small order.
fn requests_are_authenticated(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let a = s.client("a");
    let http = Http::new(&Endpoint::plain(&s.url), Duration::from_secs(30)).unwrap();
    let err = http.call("GET", "/v1/datasets", &[], b"").unwrap_err();
    assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
    let mallory = venn_cloud::auth::Identity::generate("a").unwrap();
    let headers = mallory.sign("GET", "/v1/datasets", b"");
    let err = http.call("GET", "/v1/datasets", &headers, b"").unwrap_err();
    assert!(
        matches!(err, Error::Unauthenticated(_)),
        "a forged signature: {err}"
    );
    // A request signed for one body, sent with another.
    let identity = a.identity().clone();
    let headers = identity.sign("POST", "/v1/datasets", br#"{"name":"x"}"#);
    let err = http
        .call("POST", "/v1/datasets", &headers, br#"{"name":"y"}"#)
        .unwrap_err();
    assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
    // Replayed.
    let headers = identity.sign("POST", "/v1/datasets", br#"{"name":"x"}"#);
    http.call("POST", "/v1/datasets", &headers, br#"{"name":"x"}"#)
        .unwrap();
    let err = http
        .call("POST", "/v1/datasets", &headers, br#"{"name":"x"}"#)
        .unwrap_err();
    assert!(
        matches!(err, Error::Unauthenticated(ref m) if m.contains("replay")),
        "{err}"
    );
    // Stale.
    let mut headers = identity.sign("GET", "/v1/datasets", b"");
    headers[1].1 = (venn_cloud::api::now() - 3600).to_string();
    let err = http.call("GET", "/v1/datasets", &headers, b"").unwrap_err();
    assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
    // Workers need an enrolled identity: not a made-up one, nor an enrolled name with
    // another secret.
    let enrolled = s.enrol("w").bearer();
    let forged = WorkerIdentity::generate("w").unwrap().bearer();
    let unknown = WorkerIdentity::generate("nobody").unwrap().bearer();
    for shown in ["Bearer 00", &forged, &unknown] {
        let err = http.call(
            "POST",
            "/v1/tasks/lease",
            &[("authorization", shown.into())],
            b"",
        );
        assert!(
            matches!(err.unwrap_err(), Error::Unauthenticated(_)),
            "{shown}"
        );
    }
    let (status, _) = http
        .call(
            "POST",
            "/v1/tasks/lease",
            &[("authorization", enrolled)],
            b"",
        )
        .unwrap();
    assert_eq!(status, 204);
    // Keys of small order are refused: with the identity as its key, the one signature
    // (R, S) = (identity, 0) would verify every request.
    let fixed = hex::encode([[1u8].as_slice(), &[0; 63]].concat());
    let order_8 = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05";
    let identity_key = hex::encode([[1u8].as_slice(), &[0; 31]].concat());
    for (name, key) in [("mallory", identity_key.as_str()), ("eve", order_8)] {
        let body = serde_json::json!({ "name": name, "public_key": key }).to_string();
        let signed = |method: &str, path: &str, body: &[u8]| {
            let mut headers = identity.sign(method, path, body);
            headers[0].1 = name.into();
            headers[3].1 = fixed.clone();
            headers
        };
        let headers = signed("POST", "/v1/clients", body.as_bytes());
        let err = http
            .call("POST", "/v1/clients", &headers, body.as_bytes())
            .unwrap_err();
        assert!(
            matches!(err, Error::BadRequest(ref m) if m.contains("small order")),
            "{err}"
        );
        let headers = signed("GET", "/v1/datasets", b"");
        let err = http.call("GET", "/v1/datasets", &headers, b"").unwrap_err();
        assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
    }
    // A name is registered once.
    let again = venn_cloud::client::Client::new(
        &Endpoint::plain(&s.url),
        venn_cloud::auth::Identity::generate("a").unwrap(),
    )
    .unwrap();
    assert!(matches!(
        again.register(None).unwrap_err(),
        Error::Conflict(_)
    ));
}

/// Registers `identity`'s name with `key` (hex, as given), signed with its key.
fn register_with_key(s: &Running, identity: &Identity, key: &str) -> Result<(), Error> {
    let http = Http::new(&Endpoint::plain(&s.url), Duration::from_secs(30)).unwrap();
    let body = serde_json::json!({ "name": identity.name, "public_key": key }).to_string();
    let headers = identity.sign("POST", "/v1/clients", body.as_bytes());
    http.call("POST", "/v1/clients", &headers, body.as_bytes())
        .map(drop)
}

/// The same `identity` under another `name`.
fn renamed(identity: &Identity, name: &str) -> Identity {
    let mut twin = identity.clone();
    twin.name = name.into();
    twin
}

/// A key is registered once whatever the case of its hex digits: sent again in upper or
/// mixed case under another name it is refused as the same key. A key sent in upper case
/// is kept as the key it is (the same key in lower case is refused too).
fn a_key_is_registered_once_whatever_its_case(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let a = s.client("a");
    let key = a.identity().public_key();
    let mixed: String = key
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    for (name, key) in [("b", key.to_uppercase()), ("c", mixed)] {
        let err = register_with_key(&s, &renamed(a.identity(), name), &key).unwrap_err();
        assert!(
            matches!(err, Error::Conflict(ref m) if m.contains("registered already")),
            "{name}: {err}"
        );
    }
    a.datasets().unwrap();
    let upper = Identity::generate("upper").unwrap();
    register_with_key(&s, &upper, &upper.public_key().to_uppercase()).unwrap();
    Client::new(&Endpoint::plain(&s.url), upper.clone())
        .unwrap()
        .datasets()
        .unwrap();
    let err = register_with_key(&s, &renamed(&upper, "lower"), &upper.public_key()).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
}

/// A store of the version before keys were canonical, where one key was registered under
/// two names (in two cases): the oldest registration keeps its name, the later one is
/// disabled (refused, saying so) with nothing of its moved to the other, and every key
/// left is canonical.
fn keys_registered_twice_before_keep_the_oldest_name(db: &Db) {
    let w = World::new(db);
    w.migrate_to(7);
    let first = Identity::generate("first").unwrap();
    let (second, other) = (
        renamed(&first, "second"),
        Identity::generate("other").unwrap(),
    );
    let key = first.public_key();
    for (name, key, created) in [
        ("second", key.to_uppercase(), 20),
        ("first", key.clone(), 10),
        ("other", other.public_key().to_uppercase(), 30),
    ] {
        w.execute(&format!(
            "INSERT INTO clients (name, public_key, created) VALUES ('{name}', '{key}', {created})"
        ));
    }
    w.execute(&format!(
        "INSERT INTO datasets (id, owner, live_name, name, state, items, chunks, created) \
         VALUES ('{}', 'second', 'd', 'd', 'open', 0, 0, 25)",
        "ab".repeat(16)
    ));
    let s = w.start(config());
    let client =
        |identity: &Identity| Client::new(&Endpoint::plain(&s.url), identity.clone()).unwrap();
    assert!(
        client(&first).datasets().unwrap().is_empty(),
        "nothing merged"
    );
    let err = client(&second).datasets().unwrap_err();
    assert!(
        matches!(err, Error::Unauthenticated(ref m) if m.contains("second is disabled")),
        "{err}"
    );
    client(&other).datasets().unwrap();
    let err = register_with_key(&s, &renamed(&other, "again"), &other.public_key()).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
}

/// Nothing acknowledged is lost across a restart; an unsealed upload is never used.
fn a_restart_between_upload_and_run_loses_nothing(db: &Db) {
    let w = World::new(db);
    let names = numbered("x", 0..100);
    let other = numbered("x", 50..120);
    let s = w.start(config());
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &names, 32);
    let kb = upload(&w, &b, "d", &other, 32);
    b.grant(&kb.dataset, "a").unwrap();
    let half = create(&a, "half");
    put(
        &a,
        &half,
        0,
        &crypto::encrypt(&keys(&["q"]), &Secret::random())[0],
    )
    .unwrap();
    let (a, b) = (a.identity().clone(), b.identity().clone());
    let s = w.restart(s, config());
    let a = venn_cloud::client::Client::new(&Endpoint::plain(&s.url), a).unwrap();
    let b = venn_cloud::client::Client::new(&Endpoint::plain(&s.url), b).unwrap();
    let err = post_run(&a, &[&kb.dataset, &half]).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("open")),
        "{err}"
    );
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    assert_eq!(matched(&a, &ka, &run, &names), truth(&names, &other));
}

/// A worker that takes a task and dies: its lease expires and another worker does the
/// task; the result is the same as the service's own pool gives.
fn a_dead_workers_task_is_redone(db: &Db) {
    let w = World::new(db);
    let names = numbered("x", 0..90);
    let other = numbered("x", 60..200);
    let s = w.start(venn_service::server::Config {
        lease_seconds: 1,
        threads: 0,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &names, 32);
    let kb = upload(&w, &b, "d", &other, 32);
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    let (http, secret, abandoned) = lease_by_hand(&s, "w");
    assert_eq!(abandoned.run, run);
    // A worker answering a task with the wrong length is refused.
    let err = http.call(
        "PUT",
        &format!("/v1/tasks/{}/answer", abandoned.path()),
        &[("authorization", secret.bearer())],
        &[0; 15],
    );
    assert!(matches!(err.unwrap_err(), Error::BadRequest(_)));
    let config = WorkerConfig {
        threads: 1,
        poll: Duration::from_millis(100),
        idle_exit: Some(Duration::from_secs(3)),
    };
    let done = worker::run(&Endpoint::plain(&s.url), &secret, &config).unwrap();
    assert_eq!(
        done,
        3 + 5,
        "every task, the abandoned one after its lease expired"
    );
    assert_eq!(matched(&a, &ka, &run, &names), truth(&names, &other));
    assert_eq!(matched(&b, &kb, &run, &other), truth(&names, &other));
}

/// Deleting a dataset fails its open runs; their answers are removed, and an answer that
/// arrives afterwards is dropped, not stored.
fn a_deleted_dataset_fails_its_run_and_leaves_nothing(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        threads: 0,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..40), 16);
    let kb = upload(&w, &b, "d", &numbered("x", 20..60), 16);
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    let secret = s.enrol("w");
    let http = Http::new(&Endpoint::plain(&s.url), Duration::from_secs(30)).unwrap();
    let auth = [("authorization", secret.bearer())];
    let lease = || {
        let (_, body) = http.call("POST", "/v1/tasks/lease", &auth, b"").unwrap();
        let task: Task = serde_json::from_slice(&body).unwrap();
        let path = format!("/v1/tasks/{}", task.path());
        let (_, points) = http
            .call("GET", &format!("{path}/points"), &auth, b"")
            .unwrap();
        (path, worker::answer(&task, &points).unwrap())
    };
    let (first, second) = (lease(), lease());
    http.call("PUT", &format!("{}/answer", first.0), &auth, &first.1)
        .unwrap();
    let answers = s.dir.join("runs").join(&run);
    assert_eq!(std::fs::read_dir(&answers).unwrap().count(), 1);
    a.call("DELETE", &format!("/v1/datasets/{}", ka.dataset), b"")
        .unwrap();
    assert_eq!(a.run(&run).unwrap().state, RunState::Failed);
    assert!(!answers.exists(), "the failed run's answers are gone");
    // A late answer is refused, and not stored.
    let late = http.call("PUT", &format!("{}/answer", second.0), &auth, &second.1);
    assert!(matches!(late.unwrap_err(), Error::NotFound(_)));
    assert!(!answers.exists(), "a late answer is not stored");
    // Nothing is leased for a failed run.
    let (status, _) = http.call("POST", "/v1/tasks/lease", &auth, b"").unwrap();
    assert_eq!(status, 204);
    assert!(!answers.exists());
}

/// Pre-tokens (docs/cloud.md): runs from pre-tokens give the plain runs' results, raising
/// only the smaller side; a pre-token serves one run, of its own dataset, once ready; its
/// own run has no result.
fn preprocessed_runs_match_plain_runs(db: &Db) {
    let w = World::new(db);
    let s = w.start(config());
    let (alice, bob) = (s.client("alice"), s.client("bob"));
    let a = numbered("k", 0..300);
    let b = numbered("k", 250..400);
    let ka = upload(&w, &alice, "a", &a, 64);
    let kb = upload(&w, &bob, "b", &b, 50);
    let mine = alice.make_pretokens(&ka, 1).unwrap();
    let theirs = bob.make_pretokens(&kb, 2).unwrap();
    alice.wait_pretokens(&ka, &mine, WAIT).unwrap();
    bob.wait_pretokens(&kb, &theirs, WAIT).unwrap();
    let result = format!("/v1/runs/{}/result", mine[0].id);
    let err = alice.call("GET", &result, b"").unwrap_err();
    assert!(
        matches!(err, Error::NotFound(ref m) if m.contains("no result")),
        "{err}"
    );
    let run = try_pair(&[(&alice, &ka), (&bob, &kb)], true).unwrap();
    assert_eq!(matched(&alice, &ka, &run, &a), truth(&a, &b));
    assert_eq!(matched(&bob, &kb, &run, &b), truth(&a, &b));
    let r = alice.run(&run).unwrap();
    assert_eq!((r.kind, r.matches), (RunKind::Preprocessed, Some(50)));
    assert_eq!(r.tasks, 3, "only bob's smaller side is raised");
    // Used: listed so, its values gone.
    assert_eq!(alice.pretokens(&ka).unwrap()[0].state, PretokenState::Used);
    assert!(!s.dir.join("runs").join(&mine[0].id).exists());
    // Alice has no pre-token left: her side refuses (and bob's second one is spent).
    let err = try_pair(&[(&alice, &ka), (&bob, &kb)], true).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("no ready pre-token")),
        "{err}"
    );
    // Through the API: a used pre-token, or another dataset's, is refused.
    bob.grant(&kb.dataset, "alice").unwrap();
    let again = post_preprocessed_run(&alice, &[&ka.dataset, &kb.dataset]);
    let delta = hex::encode(Secret::random().to_bytes());
    let err = scalar(&alice, &again, &ka.dataset, &mine[0].id, &delta).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("used before")),
        "{err}"
    );
    let err = scalar(&alice, &again, &ka.dataset, &theirs[0].id, &delta).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    // Plain runs between the same datasets still work.
    let plain = try_pair(&[(&alice, &ka), (&bob, &kb)], false).unwrap();
    assert_eq!(matched(&alice, &ka, &plain, &a), truth(&a, &b));
}

/// Pre-tokens: checked as tokens are, bounded per dataset, usable only when computed
/// (a worker that dies while computing one has its task redone), and runs take tokens or
/// scalars as their kind says.
fn pretokens_are_checked(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        lease_seconds: 1,
        threads: 0,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..40), 16);
    let kb = upload(&w, &b, "d", &numbered("x", 20..60), 16);
    b.grant(&kb.dataset, "a").unwrap();
    let made = a.make_pretokens(&ka, 2).unwrap();
    assert_eq!(made[0].state, PretokenState::Computing);
    let err = a.make_pretokens(&ka, 1).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
    let err = b.make_pretokens(&ka, 1).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    for (token, label) in [
        (hex::encode([0x80; 96]), hex::encode([1; 32])),
        (
            hex::encode(crypto::token(&Secret::random(), &Secret::random())),
            "zz".into(),
        ),
    ] {
        let body = serde_json::json!({ "token": token, "label": label }).to_string();
        let path = format!("/v1/datasets/{}/pretokens", kb.dataset);
        let err = b.call("POST", &path, body.as_bytes()).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_)), "{err}");
    }
    // Not ready yet: refused.
    let run = post_preprocessed_run(&a, &[&ka.dataset, &kb.dataset]);
    let delta = hex::encode(Secret::random().to_bytes());
    let err = scalar(&a, &run, &ka.dataset, &made[0].id, &delta).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("not ready")),
        "{err}"
    );
    // Runs take what their kind says.
    let t = crypto::token(&Secret::random(), &Secret::random());
    let err = give(&a, &run, &ka.dataset, &t).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let plain = post_run(&a, &[&ka.dataset, &kb.dataset]).unwrap();
    let err = scalar(&a, &plain, &ka.dataset, &made[0].id, &delta).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let err = scalar(&a, &run, &ka.dataset, &made[0].id, &hex::encode([0u8; 32])).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)), "{err}");
    // A worker takes a pre-token's task and dies; another computes everything.
    let (_, secret, abandoned) = lease_by_hand(&s, "w");
    assert!(made.iter().any(|p| p.id == abandoned.run));
    assert!(matches!(abandoned.work, Work::Pair { parties: 1, .. }));
    let config = WorkerConfig {
        threads: 1,
        poll: Duration::from_millis(100),
        idle_exit: Some(Duration::from_secs(3)),
    };
    let theirs = b.make_pretokens(&kb, 1).unwrap();
    let done = worker::run(&Endpoint::plain(&s.url), &secret, &config).unwrap();
    assert_eq!(done, 3 * 3, "three pre-tokens' three chunks");
    a.wait_pretokens(&ka, &made, WAIT).unwrap();
    b.wait_pretokens(&kb, &theirs, WAIT).unwrap();
    let names = (numbered("x", 0..40), numbered("x", 20..60));
    std::thread::scope(|scope| {
        let pairing = scope.spawn(|| try_pair(&[(&a, &ka), (&b, &kb)], true));
        let done = worker::run(&Endpoint::plain(&s.url), &secret, &config).unwrap();
        assert_eq!(done, 3, "one side raised");
        let run = pairing.join().unwrap().unwrap();
        assert_eq!(matched(&a, &ka, &run, &names.0), truth(&names.0, &names.1));
    });
    assert_eq!(b.pretokens(&kb).unwrap()[0].state, PretokenState::Used);
    // Deleting the dataset removes its pre-tokens' values.
    a.delete(&ka.dataset).unwrap();
    assert!(!s.dir.join("runs").join(&made[1].id).exists());
}

/// A run that waits past `--token-wait` fails without any request to notice, and a token
/// that comes later is refused.
fn a_run_waits_no_longer_than_the_token_wait(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        token_wait_seconds: 1,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..4), 4);
    let kb = upload(&w, &b, "d", &numbered("x", 2..6), 4);
    b.grant(&kb.dataset, "a").unwrap();
    let run = post_run(&a, &[&ka.dataset, &kb.dataset]).unwrap();
    give(
        &a,
        &run,
        &ka.dataset,
        &crypto::token(&Secret::random(), &ka.secret().unwrap()),
    )
    .unwrap();
    let start = Instant::now();
    while a.run(&run).unwrap().state == RunState::Tokens {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the run still waits"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(a.run(&run).unwrap().state, RunState::Failed);
    let late = crypto::token(&Secret::random(), &kb.secret().unwrap());
    let err = give(&b, &run, &kb.dataset, &late).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert_eq!(b.run(&run).unwrap().state, RunState::Failed);
}

/// Pre-tokens' values on disk are bounded: one given to a run counts until the run ends,
/// a run that waits too long for its scalars fails (freeing them), and an unused one can be
/// withdrawn.
fn pretokens_on_disk_are_bounded(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        token_wait_seconds: 1,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..20), 8);
    let kb = upload(&w, &b, "d", &numbered("x", 10..30), 8);
    b.grant(&kb.dataset, "a").unwrap();
    let made = a.make_pretokens(&ka, 2).unwrap();
    a.wait_pretokens(&ka, &made, WAIT).unwrap();
    let run = post_preprocessed_run(&a, &[&ka.dataset, &kb.dataset]);
    let delta = hex::encode(Secret::random().to_bytes());
    scalar(&a, &run, &ka.dataset, &made[0].id, &delta).unwrap();
    // The used one still counts: its run waits.
    let err = a.make_pretokens(&ka, 1).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
    std::thread::sleep(Duration::from_millis(2200));
    let third = a.make_pretokens(&ka, 1).unwrap();
    let r = a.run(&run).unwrap();
    assert_eq!(r.state, RunState::Failed, "{r:?}");
    assert!(!s.dir.join("runs").join(&made[0].id).exists());
    // Withdrawn: its values gone, no longer counted; a used one cannot be.
    a.withdraw_pretoken(&ka, &made[1].id).unwrap();
    assert!(!s.dir.join("runs").join(&made[1].id).exists());
    let listed = a.pretokens(&ka).unwrap();
    let state = |id: &str| listed.iter().find(|p| p.id == id).unwrap().state;
    assert_eq!(state(&made[0].id), PretokenState::Used);
    assert_eq!(state(&made[1].id), PretokenState::Failed);
    let err = a.withdraw_pretoken(&ka, &made[0].id).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let err = b.withdraw_pretoken(&kb, &third[0].id).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    a.make_pretokens(&ka, 1).unwrap();
}

/// A failure inside the service is answered with a request id, never with its cause (a
/// path in the data directory, the store's error), which goes to the service's log.
fn internal_failures_are_not_told(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        threads: 0,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..8), 8);
    let kb = upload(&w, &b, "d", &numbered("x", 4..12), 8);
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    let (http, secret, task) = lease_by_hand(&s, "w");
    let (auth, path) = ([("authorization", secret.bearer())], task.path());
    let points = http.call("GET", &format!("/v1/tasks/{path}/points"), &auth, b"");
    let answer = worker::answer(&task, &points.unwrap().1).unwrap();
    // The run's directory gone: its answer cannot be written.
    std::fs::remove_dir_all(s.dir.join("runs").join(&run)).unwrap();
    let err = http.call("PUT", &format!("/v1/tasks/{path}/answer"), &auth, &answer);
    let data = s.dir.to_string_lossy().into_owned();
    let told = |err: &Error, inside: &str| match err {
        Error::Internal(m) => m.contains("request ") && !m.contains(inside),
        _ => false,
    };
    let err = err.unwrap_err();
    assert!(told(&err, &data), "{err}");
    // A table gone: the store fails.
    w.execute("DROP TABLE tasks");
    let err = a.run(&run).unwrap_err();
    assert!(told(&err, "tasks"), "{err}");
}

/// Workers run outside the service's trust: an answer with a wrong item is refused (403)
/// by the spot check, whether every item is wrong or one of a chunk no larger than the
/// checks (every item checked). The worker is quarantined: its requests are refused (403),
/// also after a restart, and the operator sees why; the task it held, and the one it had
/// answered of the run, go back to the queue at once (leases are for 60 s), so an honest
/// worker does every task and the result is the honest one. Enrolled again with a new
/// secret, the name works again.
fn a_lying_worker_is_quarantined(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        threads: 0,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let (names, other) = (numbered("x", 0..40), numbered("x", 20..64));
    let ka = upload(&w, &a, "d", &names, 8);
    let kb = upload(&w, &b, "d", &other, 8);
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    assert_eq!(a.run(&run).unwrap().tasks, 5 + 6);
    let server = Endpoint::plain(&s.url);
    let honest_answer =
        |link: &WorkerLink, task: &Task| worker::answer(task, &link.input(task).unwrap()).unwrap();
    let quarantined = |e: &Error| matches!(e, Error::Forbidden(m) if m.contains("quarantined"));
    // Mallory falsifies every item.
    let mallory = s.enrol("mallory");
    let m = WorkerLink::new(&server, &mallory).unwrap();
    let task = m.lease().unwrap().unwrap();
    let mut lie = honest_answer(&m, &task);
    for item in lie.chunks_mut(task.answer_width()) {
        item[0] ^= 1;
    }
    let err = m.hand_in(&task, &lie).unwrap_err();
    assert!(quarantined(&err), "{err}");
    for err in [m.lease().unwrap_err(), m.input(&task).unwrap_err()] {
        assert!(quarantined(&err), "{err}");
    }
    // Eve answers a task honestly, then falsifies the last item of the next.
    let e = WorkerLink::new(&server, &s.enrol("eve")).unwrap();
    let first = e.lease().unwrap().unwrap();
    assert_eq!(first.path(), task.path(), "mallory's task is back at once");
    e.hand_in(&first, &honest_answer(&e, &first)).unwrap();
    assert_eq!(a.run(&run).unwrap().tasks_done, 1);
    let next = e.lease().unwrap().unwrap();
    let mut lie = honest_answer(&e, &next);
    lie[(next.items as usize - 1) * next.answer_width()] ^= 0x80;
    let err = e.hand_in(&next, &lie).unwrap_err();
    assert!(quarantined(&err), "{err}");
    assert_eq!(a.run(&run).unwrap().tasks_done, 0, "eve's answer is redone");
    let honest = WorkerConfig {
        threads: 1,
        poll: Duration::from_millis(100),
        idle_exit: Some(Duration::from_secs(2)),
    };
    let done = worker::run(&server, &s.enrol("honest"), &honest).unwrap();
    assert_eq!(done, 11, "every task, none waiting for a lease to expire");
    assert_eq!(matched(&a, &ka, &run, &names), truth(&names, &other));
    assert_eq!(matched(&b, &kb, &run, &other), truth(&names, &other));
    // The operator's list; the quarantine outlives a restart.
    let listed = s.enrolment().workers().unwrap();
    let status: Vec<(&str, bool)> = listed
        .iter()
        .map(|w| (w.name.as_str(), w.quarantined.is_some()))
        .collect();
    assert_eq!(
        status,
        [("eve", true), ("honest", false), ("mallory", true)]
    );
    let reason = listed[2].reason.as_deref().unwrap();
    assert!(reason.contains(&task.path()), "{reason}");
    let s = w.restart(
        s,
        Config {
            threads: 0,
            ..config()
        },
    );
    let err = m.lease().unwrap_err();
    assert!(quarantined(&err), "{err}");
    // A name is enrolled once, unless replaced: then the old secret is refused.
    let enrolment = s.enrolment();
    let err = enrolment
        .enrol("eve", false, &w.path("eve-again"))
        .unwrap_err()
        .0;
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(!w.path("eve-again").exists());
    let renewed = enrolment
        .enrol("mallory", true, &w.path("mallory-again"))
        .unwrap();
    let err = m.lease().unwrap_err();
    assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
    let again = WorkerLink::new(&server, &renewed).unwrap();
    assert!(again.lease().unwrap().is_none(), "no work left");
}

/// Only the worker holding a task's lease fetches its input and answers it: not another
/// worker, not for a task nobody leased, and not once its lease expired and another
/// worker leased the task.
fn only_a_tasks_leaseholder_answers_it(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        threads: 0,
        lease_seconds: 1,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..16), 8);
    let kb = upload(&w, &b, "d", &numbered("x", 8..24), 8);
    let run = pair(&[(&a, &ka), (&b, &kb)]);
    let server = Endpoint::plain(&s.url);
    let first = WorkerLink::new(&server, &s.enrol("first")).unwrap();
    let second = WorkerLink::new(&server, &s.enrol("second")).unwrap();
    let task = first.lease().unwrap().unwrap();
    let answer = worker::answer(&task, &first.input(&task).unwrap()).unwrap();
    let not_leased_to = |who: &str, e: Error| {
        let refused = format!("not leased to worker {who}");
        assert!(
            matches!(&e, Error::Forbidden(m) if m.contains(&refused)),
            "{e}"
        );
    };
    not_leased_to("second", second.input(&task).unwrap_err());
    not_leased_to("second", second.hand_in(&task, &answer).unwrap_err());
    let unleased = Task {
        chunk: 1 - task.chunk,
        ..task.clone()
    };
    not_leased_to("second", second.hand_in(&unleased, &answer).unwrap_err());
    // The first worker's lease expires and the second leases the task (after the others).
    let start = Instant::now();
    let again = loop {
        match second.lease().unwrap() {
            Some(t) if t.path() == task.path() => break t,
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the lease never expired"
        );
    };
    not_leased_to("first", first.hand_in(&task, &answer).unwrap_err());
    second.hand_in(&again, &answer).unwrap();
    assert_eq!(a.run(&run).unwrap().tasks_done, 1);
    // Refusals quarantine nobody.
    let workers = s.enrolment().workers().unwrap();
    assert!(
        workers.iter().all(|w| w.quarantined.is_none()),
        "{workers:?}"
    );
}

/// End to end, liars are caught at the rate the formula gives: with 2 checks of chunks of
/// 4 items, an answer with one item falsified is refused with probability
/// 1 − C(3, 2)/C(4, 2) = 1/2. Each trial is a new worker leasing a task and falsifying one
/// item of its answer (a caught worker's task goes back to the queue, a missed one's is
/// done), until no task is left.
fn liars_are_caught_at_the_predicted_rate(db: &Db) {
    let w = World::new(db);
    let s = w.start(Config {
        threads: 0,
        spot_checks: 2,
        ..config()
    });
    let (a, b) = (s.client("a"), s.client("b"));
    let ka = upload(&w, &a, "d", &numbered("x", 0..320), 4);
    let kb = upload(&w, &b, "d", &numbered("x", 0..4), 4);
    pair(&[(&a, &ka), (&b, &kb)]);
    let (enrolment, server) = (s.enrolment(), Endpoint::plain(&s.url));
    let (mut trials, mut caught) = (0usize, 0usize);
    loop {
        let name = format!("liar{trials}");
        let liar = enrolment.enrol(&name, false, &w.path(&name)).unwrap();
        let link = WorkerLink::new(&server, &liar).unwrap();
        let Some(task) = link.lease().unwrap() else {
            break;
        };
        let mut lie = worker::answer(&task, &link.input(&task).unwrap()).unwrap();
        lie[trials % 4 * task.answer_width()] ^= 1;
        trials += 1;
        match link.hand_in(&task, &lie) {
            Ok(()) => {}
            Err(Error::Forbidden(_)) => caught += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let (rate, expected) = (
        caught as f64 / trials as f64,
        1.0 - miss_probability(4, 1, 2),
    );
    let sigma = (expected * (1.0 - expected) / trials as f64).sqrt();
    eprintln!("caught {caught} of {trials} lying answers ({rate:.3}; predicted {expected:.3})");
    assert!(trials >= 120, "{trials} trials");
    assert!(
        (rate - expected).abs() <= 4.0 * sigma,
        "{rate} against {expected}"
    );
}

// --- helpers ---------------------------------------------------------------------------

/// A task leased as a worker would, by hand, by a new worker named `name`: the worker's
/// HTTP client and identity, and the task.
fn lease_by_hand(s: &Running, name: &str) -> (Http, WorkerIdentity, Task) {
    let secret = s.enrol(name);
    let http = Http::new(&Endpoint::plain(&s.url), Duration::from_secs(30)).unwrap();
    let auth = [("authorization", secret.bearer())];
    let (_, body) = http.call("POST", "/v1/tasks/lease", &auth, b"").unwrap();
    (http, secret, serde_json::from_slice(&body).unwrap())
}

fn post_run(c: &venn_cloud::client::Client, datasets: &[&str]) -> Result<String, Error> {
    let body = serde_json::json!({ "datasets": datasets }).to_string();
    let run: serde_json::Value =
        serde_json::from_slice(&c.call("POST", "/v1/runs", body.as_bytes())?).unwrap();
    Ok(run["id"].as_str().unwrap().to_owned())
}

fn post_preprocessed_run(c: &venn_cloud::client::Client, datasets: &[&str]) -> String {
    let body = serde_json::json!({ "datasets": datasets, "preprocessed": true }).to_string();
    let run: serde_json::Value =
        serde_json::from_slice(&c.call("POST", "/v1/runs", body.as_bytes()).unwrap()).unwrap();
    assert_eq!(run["kind"], "preprocessed");
    run["id"].as_str().unwrap().to_owned()
}

fn scalar(
    c: &venn_cloud::client::Client,
    run: &str,
    dataset: &str,
    pretoken: &str,
    delta: &str,
) -> Result<(), Error> {
    let body = serde_json::json!({ "dataset": dataset, "pretoken": pretoken, "delta": delta });
    c.call(
        "POST",
        &format!("/v1/runs/{run}/scalars"),
        body.to_string().as_bytes(),
    )
    .map(|_| ())
}

/// How long a test waits for pre-tokens.
const WAIT: Duration = Duration::from_secs(60);

fn give(
    c: &venn_cloud::client::Client,
    run: &str,
    dataset: &str,
    token: &[u8; 96],
) -> Result<(), Error> {
    give_raw(c, run, dataset, &hex::encode(token))
}

fn give_raw(
    c: &venn_cloud::client::Client,
    run: &str,
    dataset: &str,
    token: &str,
) -> Result<(), Error> {
    let body = serde_json::json!({ "dataset": dataset, "token": token }).to_string();
    c.call("POST", &format!("/v1/runs/{run}/tokens"), body.as_bytes())
        .map(|_| ())
}

fn create(c: &venn_cloud::client::Client, name: &str) -> String {
    try_create(c, name).unwrap()
}

fn try_create(c: &venn_cloud::client::Client, name: &str) -> Result<String, Error> {
    let body = serde_json::json!({ "name": name }).to_string();
    let d: serde_json::Value =
        serde_json::from_slice(&c.call("POST", "/v1/datasets", body.as_bytes())?).unwrap();
    Ok(d["id"].as_str().unwrap().to_owned())
}

/// Runs `f(0)`, …, `f(n - 1)` on `n` threads released together.
fn at_once<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = std::sync::Barrier::new(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (f, barrier) = (&f, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    f(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// How many of `outcomes` succeeded; every other one must be an error that `refused` accepts.
fn successes<T>(outcomes: Vec<Result<T, Error>>, refused: impl Fn(&Error) -> bool) -> usize {
    let mut ok = 0;
    for outcome in outcomes {
        match outcome {
            Ok(_) => ok += 1,
            Err(e) => assert!(refused(&e), "{e}"),
        }
    }
    ok
}

fn put(c: &venn_cloud::client::Client, d: &str, k: u64, body: &[u8]) -> Result<(), Error> {
    c.call("PUT", &format!("/v1/datasets/{d}/chunks/{k}"), body)
        .map(|_| ())
}

fn seal(c: &venn_cloud::client::Client, d: &str, chunks: u64, items: u64) -> Result<(), Error> {
    let body = serde_json::json!({ "chunks": chunks, "items": items }).to_string();
    c.call("POST", &format!("/v1/datasets/{d}/seal"), body.as_bytes())
        .map(|_| ())
}

// --- the suite, on each store ----------------------------------------------------------

/// Each scenario as a `#[test]` of its own on each store (`sqlite::quotas_are_kept`,
/// `postgres::quotas_are_kept`), so one failure hides none of the others; every scenario
/// makes a store of its own (a database of the shared cluster, for PostgreSQL), so they
/// run side by side.
macro_rules! on_each_store {
    ($($scenario:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(&super::Db::Sqlite)
                }
            )*
        }

        mod postgres {
            $(
                #[test]
                fn $scenario() {
                    if let Some(db) = super::postgres() {
                        super::$scenario(&db)
                    }
                }
            )*
        }
    };
}

on_each_store!(
    two_parties_get_the_plaintext_intersection,
    three_parties_get_the_common_keys,
    three_party_join_work_is_capped,
    runs_need_every_owners_token,
    tokens_are_checked,
    chunks_are_checked,
    quotas_are_kept,
    datasets_are_seen_only_by_partners,
    grants_do_not_tell_which_names_exist,
    registration_is_by_invitation,
    service_wide_limits_are_kept,
    a_deleted_name_is_free_again,
    racing_requests_keep_names_and_quotas,
    uploads_racing_a_seal_or_a_deletion_change_nothing,
    requests_are_authenticated,
    a_key_is_registered_once_whatever_its_case,
    keys_registered_twice_before_keep_the_oldest_name,
    a_restart_between_upload_and_run_loses_nothing,
    a_dead_workers_task_is_redone,
    a_deleted_dataset_fails_its_run_and_leaves_nothing,
    preprocessed_runs_match_plain_runs,
    pretokens_are_checked,
    pretokens_on_disk_are_bounded,
    a_run_waits_no_longer_than_the_token_wait,
    internal_failures_are_not_told,
    a_lying_worker_is_quarantined,
    only_a_tasks_leaseholder_answers_it,
    liars_are_caught_at_the_predicted_rate,
);

/// The PostgreSQL cluster the suite's scenarios share, started by the first that needs it
/// and stopped when the test binary exits.
static CLUSTER: OnceLock<Result<Postgres, String>> = OnceLock::new();

/// The shared cluster as a store, or None where PostgreSQL cannot start (the reason
/// printed) — except where CI sets VENN_REQUIRE_POSTGRES: there it fails the test.
fn postgres() -> Option<Db> {
    extern "C" fn stop() {
        if let Some(Ok(pg)) = CLUSTER.get() {
            pg.stop();
        }
    }
    let cluster = CLUSTER.get_or_init(|| {
        let pg = Postgres::start();
        if pg.is_ok() {
            // SAFETY: `stop` is a plain function that never unwinds out (it ignores
            // every error), run once at exit.
            unsafe { libc::atexit(stop) };
        }
        pg
    });
    match cluster {
        Ok(pg) => Some(Db::Postgres(pg.url.clone())),
        Err(why) if std::env::var_os("VENN_REQUIRE_POSTGRES").is_some() => {
            panic!("the PostgreSQL store's suite cannot run: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: the PostgreSQL store's suite: {why}");
            None
        }
    }
}

// --- connections (the same on either store) --------------------------------------------

/// A request whose body trickles on for ever is cut off at the request's deadline (no
/// account needed: registration reads its body before any signature can be checked), and
/// the service serves others meanwhile.
#[test]
fn a_trickling_body_is_cut_at_the_deadline() {
    let w = World::new(&Db::Sqlite);
    let s = w.start(Config {
        request_seconds: 2,
        ..config()
    });
    let addr = s.url.trim_start_matches("http://");
    let mut head = format!("POST /v1/clients HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 999\r\n");
    for (name, value) in Identity::generate("slow")
        .unwrap()
        .sign("POST", "/v1/clients", b"{}")
    {
        head += &format!("{name}: {value}\r\n");
    }
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(format!("{head}\r\n{{").as_bytes()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let start = Instant::now();
    let (mut answer, mut others) = (Vec::new(), 0);
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "the body still trickles after {:?}",
            start.elapsed()
        );
        if tcp.write_all(b" ").is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                others += 1;
                s.client(&format!("other{others}"));
            }
            Err(_) => break,
        }
    }
    assert!(start.elapsed() > Duration::from_secs(1), "cut early");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
}

/// Connections are capped per peer: past the cap one is closed at once (an idle flood
/// holds no more), and an honest client gets through once the flood ends.
#[test]
fn a_connection_flood_is_refused_past_the_cap() {
    let w = World::new(&Db::Sqlite);
    let s = w.start(Config {
        max_connections_per_peer: 4,
        ..config()
    });
    let addr = s.url.trim_start_matches("http://");
    let flood: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for _ in 0..3 {
        let mut refused = TcpStream::connect(addr).unwrap();
        refused
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let closed = match refused.read(&mut [0u8; 64]) {
            Ok(n) => n == 0,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        };
        assert!(closed, "a connection past the cap is closed at once");
    }
    drop(flood);
    let start = Instant::now();
    let honest = Client::new(
        &Endpoint::plain(&s.url),
        Identity::generate("honest").unwrap(),
    )
    .unwrap();
    while let Err(e) = honest.register(None) {
        assert!(start.elapsed() < Duration::from_secs(5), "{e}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A flood from eight addresses (in eight /24 networks), each at its cap, that holds every
/// connection the service serves leaves a ninth client served: the oldest connection still
/// waiting for its request makes way. The flood's own address stays capped meanwhile.
#[test]
fn a_flood_from_eight_addresses_leaves_a_ninth_client_served() {
    let w = World::new(&Db::Sqlite);
    let s = w.start(Config {
        max_connections: 16,
        max_connections_per_peer: 2,
        ..config()
    });
    let service: std::net::SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let connect_from = |source: String| {
        rt.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket
                .bind(std::net::SocketAddr::new(source.parse().unwrap(), 0))
                .unwrap();
            let tcp = socket.connect(service).await.unwrap().into_std().unwrap();
            tcp.set_nonblocking(false).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            tcp
        })
    };
    let mut flood: Vec<TcpStream> = (1..=8)
        .flat_map(|i| [format!("127.0.{i}.1"), format!("127.0.{i}.1")])
        .map(connect_from)
        .collect();
    // Accepted in order: once this one is closed for its address's cap, the whole flood
    // is in.
    assert!(
        closed(&mut connect_from("127.0.1.1".into())),
        "the peer's cap"
    );
    let ninth = Client::new(
        &Endpoint::plain(&s.url),
        Identity::generate("ninth").unwrap(),
    )
    .unwrap();
    ninth.register(None).unwrap();
    ninth.datasets().unwrap();
    assert!(
        closed(&mut flood[0]),
        "the oldest waiting connection made way"
    );
}

/// Whether the service closed `tcp` (before it said anything).
fn closed(tcp: &mut TcpStream) -> bool {
    match tcp.read(&mut [0u8; 64]) {
        Ok(n) => n == 0,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

/// Registrations from one address past --registrations-per-minute are refused with a 429,
/// before their signature is checked.
#[test]
fn registrations_are_rate_limited() {
    let w = World::new(&Db::Sqlite);
    let s = w.start(Config {
        registrations_per_minute: 2,
        ..config()
    });
    s.client("a");
    s.client("b");
    let late = Client::new(&Endpoint::plain(&s.url), Identity::generate("c").unwrap()).unwrap();
    let err = late.register(None).unwrap_err();
    assert!(
        matches!(err, Error::TooMany(ref m) if m.contains("2 registrations a minute")),
        "{err}"
    );
}
