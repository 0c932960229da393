//! Every registered protocol, end to end over the in-memory channel, against the true
//! intersection.

use crate::common::{
    assert_output, each_on_all_cores, fit, fit_sender, fit_sigma, indices, online, options,
    precompute, run_pair, run_pair_with, sets, tampered_pair, tampered_run, test_options, truth,
};
use std::time::Duration;
use venn::crypto::Block;
use venn::crypto::Prg;
use venn::fuzz::cheapest_options;
use venn::net::{mem_pair, Channel};
use venn::protocols::{registry, Options, Output, Protocol, Security, Sizes};
use venn::session::Role;
use venn::{run, Error, Items, RunOptions};

fn check(protocol: &'static dyn Protocol, ns: usize, nr: usize, overlap: usize, both: bool) {
    let (s, r) = sets(ns, nr, overlap, (ns * 31 + nr * 7 + overlap) as u128);
    let (sr, rr) = run_pair(protocol, &s, &r, both);
    let name = protocol.info().name;
    let (sr, rr) = (sr.unwrap(), rr.unwrap());
    let expected = truth(&r, &s);
    assert_eq!(expected.len(), overlap);
    assert_output(
        &rr,
        &r,
        &expected,
        &format!("{name}: receiver's intersection"),
    );
    if both {
        assert_eq!(indices(&sr), truth(&s, &r), "{name}: sender's intersection");
    } else {
        assert_eq!(sr.output, Output::Nothing);
    }
    assert_eq!(sr.traffic.sent, rr.traffic.received);
    assert_eq!(sr.traffic.received, rr.traffic.sent);
}

#[test]
fn random_sets_of_many_shapes() {
    for &p in registry() {
        for (ns, nr, overlap) in [
            (1000, 1000, 300),
            (1 << 14, 1 << 14, 1 << 13),
            (1 << 4, 1 << 12, 10),
            (1 << 12, 1 << 4, 16),
            (0, 100, 0),
            (100, 0, 0),
            (0, 0, 0),
            (1, 1, 1),
            (500, 500, 0),
            (500, 500, 500),
        ] {
            check(p, ns, nr, overlap, false);
        }
    }
}

#[test]
fn every_item_length_a_protocol_takes_gives_the_intersection() {
    for &p in registry() {
        for &sigma in p.accepts().sigma {
            let options = Options {
                sigma: Some(sigma),
                ..Options::default()
            };
            let (s, r) = sets(700, 500, 123, sigma as u128);
            let (sr, rr) = run_pair_with(p, options, &s, &r, false);
            let name = format!("{} --sigma {sigma}", p.info().name);
            sr.unwrap_or_else(|e| panic!("{name}: {e}"));
            let rr = rr.unwrap_or_else(|e| panic!("{name}: {e}"));
            let (fs, fr) = (fit_sigma(Some(sigma), &s), fit_sigma(Some(sigma), &r));
            assert_output(&rr, &r, &truth(&fr, &fs), &name);
        }
    }
}

#[test]
fn both_parties_learn_the_output_when_asked() {
    for &p in registry().iter().filter(|p| p.info().both_allowed) {
        check(p, 3000, 2000, 777, true);
        check(p, 10, 10, 0, true);
    }
}

#[test]
fn malicious_protocols_refuse_both_unless_they_give_it_by_tags() {
    // RR17 §6.7: giving the sender the output too needs more than RR17's protocols do;
    // rr22-m gives it by tags only R's OPRF values make (rr22.md §1.3).
    let (s, r) = sets(10, 10, 5, 5);
    let malicious = || {
        registry()
            .iter()
            .filter(|p| p.info().security == Security::Malicious)
    };
    let with_both: Vec<&str> = malicious()
        .filter(|p| p.info().both_allowed)
        .map(|p| p.info().name)
        .collect();
    assert_eq!(with_both, ["rr22-m"]);
    for &p in malicious().filter(|p| !p.info().both_allowed) {
        let (sr, rr) = run_pair(p, &s, &r, true);
        for e in [sr.unwrap_err(), rr.unwrap_err()] {
            assert!(
                matches!(e, Error::Usage(_)) && e.to_string().contains("--both"),
                "{e}"
            );
        }
    }
}

#[test]
fn protocol_mismatch_is_named() {
    let (s, r) = sets(10, 10, 5, 1);
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let reg = registry();
    let (p0, p1) = (reg[0], reg[1]);
    let (e1, e2) = std::thread::scope(|sc| {
        let t = sc.spawn(|| run(&mut b, &r, &options(p1, Role::Receiver, false)));
        (
            run(&mut a, &s, &options(p0, Role::Sender, false)),
            t.join().unwrap(),
        )
    });
    for e in [e1.unwrap_err(), e2.unwrap_err()] {
        assert!(matches!(e, Error::Handshake(_)), "{e}");
        assert!(e.to_string().contains("protocol"), "{e}");
    }
}

#[test]
fn both_mismatch_and_same_roles_are_refused() {
    let (s, r) = sets(10, 10, 5, 2);
    let p = registry()[0];
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let (e1, e2) = std::thread::scope(|sc| {
        let t = sc.spawn(|| run(&mut b, &r, &options(p, Role::Receiver, true)));
        (
            run(&mut a, &s, &options(p, Role::Sender, false)),
            t.join().unwrap(),
        )
    });
    assert!(e1.unwrap_err().to_string().contains("--both"));
    assert!(e2.unwrap_err().to_string().contains("--both"));
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let (e1, _) = std::thread::scope(|sc| {
        let t = sc.spawn(|| run(&mut b, &r, &options(p, Role::Sender, false)));
        (
            run(&mut a, &s, &options(p, Role::Sender, false)),
            t.join().unwrap(),
        )
    });
    assert!(e1
        .unwrap_err()
        .to_string()
        .contains("both parties are senders"));
}

#[test]
fn oversized_peer_set_is_refused_before_allocation() {
    let (s, r) = sets(100, 10, 5, 3);
    let p = registry()[0];
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let (_, e) = std::thread::scope(|sc| {
        let t = sc.spawn(|| {
            let mut o = options(p, Role::Receiver, false);
            o.max_peer_items = 50;
            run(&mut b, &r, &o)
        });
        (
            run(&mut a, &s, &options(p, Role::Sender, false)),
            t.join().unwrap(),
        )
    });
    let e = e.unwrap_err();
    assert!(e.to_string().contains("--max-peer-items"), "{e}");
}

/// `--max-memory` holds the input and the protocol together: a run whose model alone fits
/// but not beside what the input holds is refused in the handshake, the input's share
/// named (a sender of 10^7 short keys peaked at 1.3 GiB under 1000M, its input uncounted).
#[test]
fn the_inputs_memory_counts_against_max_memory() {
    let (s, r) = sets(100, 10, 5, 3);
    let p = registry()[0];
    let sizes = Sizes {
        sender: 100,
        receiver: 10,
    };
    let model = venn::memory_needed(&options(p, Role::Sender, false), sizes);
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let (e, _) = std::thread::scope(|sc| {
        let t = sc.spawn(|| run(&mut b, &r, &options(p, Role::Receiver, false)));
        let o = RunOptions {
            max_memory: model + (50 << 20),
            input_memory: 100 << 20,
            ..options(p, Role::Sender, false)
        };
        (run(&mut a, &s, &o), t.join().unwrap())
    });
    let e = e.unwrap_err();
    assert!(
        matches!(e, Error::Memory(_)) && e.to_string().contains("0.10 GiB of it our input's"),
        "{e}"
    );
}

#[test]
fn silent_peer_times_out() {
    let (_s, r) = sets(10, 10, 5, 4);
    let (_a, mut b) = mem_pair(Duration::from_millis(300));
    let start = std::time::Instant::now();
    let e = run(&mut b, &r, &options(registry()[0], Role::Receiver, false)).unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn items_of_every_length_class_including_empty() {
    // 0..=15 bytes are encoded, 16 bytes taken as they are, longer ones hashed.
    let lengths = [2usize, 14, 15, 16, 17, 31, 32, 100, 1000];
    let mk = |tag: u8| -> Vec<Vec<u8>> {
        lengths
            .iter()
            .flat_map(|&l| (0..3u8).map(move |v| [vec![tag, v], vec![0xAA; l - 2]].concat()))
            .collect()
    };
    // The empty item and a one-byte item are shared; the rest are distinct by prefix.
    let shared: Vec<Vec<u8>> = [vec![vec![], vec![7]], mk(0x40)].concat();
    let sender: Items = shared.iter().chain(mk(0x10).iter()).collect();
    let receiver: Items = mk(0x20).iter().chain(shared.iter()).collect();
    for &p in registry() {
        let (_, rr) = run_pair(p, &sender, &receiver, false);
        assert_output(
            &rr.unwrap(),
            &receiver,
            &truth(&receiver, &sender),
            p.info().name,
        );
    }
}

#[test]
fn more_threads_give_the_same_result() {
    let (s, r) = sets(5000, 4000, 1234, 9);
    for &p in registry() {
        let (fs, fr) = (fit_sender(p, test_options(p), &s), fit(p, &r));
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let (_, rr) = std::thread::scope(|sc| {
            let t = sc.spawn(|| {
                let mut o = options(p, Role::Receiver, false);
                o.threads = 2;
                run(&mut b, &fr, &o)
            });
            let mut o = options(p, Role::Sender, false);
            o.threads = 2;
            (run(&mut a, &fs, &o), t.join().unwrap())
        });
        assert_output(&rr.unwrap(), &r, &truth(&fr, &fs), p.info().name);
    }
}

/// A sender cut off before frame k, or with a byte of frame k altered, for k from 1 to 70:
/// the receiver ends, with an error or an answer, in bounded time. On each protocol's
/// cheapest items ([`cheapest_options`]), the protocols side by side, one a core.
#[test]
fn every_protocol_survives_a_sender_cut_off_or_corrupted_at_any_frame() {
    let (s, r) = sets(300, 200, 50, 11);
    each_on_all_cores(registry(), |&p| {
        let name = p.info().name;
        for k in [1, 2, 3, 4, 5, 6, 8, 10, 13, 17, 25, 40, 70] {
            let start = std::time::Instant::now();
            // Cut off before frame k: the receiver must fail cleanly.
            let cut = tampered_run(p, cheapest_options(p), &s, &r, |i, _| i < k);
            if let Err(e) = &cut {
                assert!(!e.to_string().is_empty());
            }
            // Flip a byte of frame k: no panic, and an answer (any) in bounded time.
            let _ = tampered_run(p, cheapest_options(p), &s, &r, |i, f| {
                if i == k && !f.is_empty() {
                    let at = f.len() / 2;
                    f[at] ^= 0x40;
                }
                true
            });
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{name}: frame {k} took too long"
            );
        }
    });
}

/// The lengths of the frames the sender sends in an honest run of `p` on `s` and `r`.
fn sent_frame_lengths(p: &'static dyn Protocol, o: Options, s: &Items, r: &Items) -> Vec<usize> {
    let mut lengths = Vec::new();
    let result = tampered_run(p, o, s, r, |_, frame| {
        lengths.push(frame.len());
        true
    });
    result.unwrap_or_else(|e| panic!("{}: an honest run failed: {e}", p.info().name));
    lengths
}

/// A sender that sends values for more items than it announced is refused. Which frame
/// carries the values, and how many bytes one item's take, is read from two honest runs,
/// the sender's set one item larger in the second: one more item's bytes are appended to
/// the last frame that grew. Where none grew (a circuit's last frame is a share of fixed
/// size), one surplus byte is appended to the protocol's last frame, the one before the
/// session's confirmation of the transcripts.
#[test]
fn a_sender_with_more_values_than_its_set_size_is_refused() {
    let (s, r) = sets(300, 200, 50, 12);
    let mut larger: Items = (0..s.len()).map(|i| s.get(i).to_vec()).collect();
    larger.push(b"one item more than the sender announced".as_slice());
    each_on_all_cores(registry(), |&p| {
        let name = p.info().name;
        let o = test_options(p);
        let (honest, grown) = (
            sent_frame_lengths(p, o, &s, &r),
            sent_frame_lengths(p, o, &larger, &r),
        );
        assert_eq!(
            honest.len(),
            grown.len(),
            "{name}: one more item changed the frames"
        );
        let grew = (0..honest.len()).rev().find(|&i| grown[i] > honest[i]);
        let (frame, extra) = match grew {
            Some(i) => (i + 1, grown[i] - honest[i]),
            None => (honest.len() - 1, 1),
        };
        let result = tampered_run(p, o, &s, &r, |i, f| {
            if i == frame {
                f.extend(vec![0x55; extra]);
            }
            true
        });
        let e = result
            .err()
            .unwrap_or_else(|| panic!("{name}: surplus values accepted (frame {frame})"));
        assert!(matches!(e, Error::Protocol { .. }), "{name}: {e}");
    });
}

/// A relay that flips one bit of any one frame (or fills an empty one), in either
/// direction, must never let a party finish with a wrong output; the party that received
/// the altered frame fails. The protocols run side by side, one a core, each on its
/// cheapest items ([`cheapest_options`]).
#[test]
fn a_flipped_bit_in_any_frame_never_gives_a_wrong_output() {
    let (s, r) = sets(200, 150, 40, 13);
    each_on_all_cores(registry(), |&p| {
        let started = std::time::Instant::now();
        let name = p.info().name;
        let both = p.info().both_allowed;
        let o = cheapest_options(p);
        let (fs, fr) = (fit_sigma(o.sigma, &s), fit_sigma(o.sigma, &r));
        let (want_s, want_r) = (truth(&fs, &fr), truth(&fr, &fs));
        for incoming in [false, true] {
            let mut frames = 0;
            let (sr, rr) = tampered_pair(p, o, &s, &r, both, incoming, |_, _| {
                frames += 1;
                true
            });
            assert!(sr.is_ok() && rr.is_ok(), "{name}: honest run failed");
            // Every frame of a run of up to 24; of a longer run (rr22's VOLE, kbm23's
            // comparisons, and psww18's and hek12's triples: hundreds or thousands of
            // 64 KiB frames of OT rows alike, up to two seconds a run) the first and last
            // 8, where every kind of message is, and 4 spread between. (The first and
            // last 12 and 8 between took psww18's two circuits 114 s each here.)
            let step = (frames / 4).max(1);
            let ks =
                (1..=frames).filter(|&k| frames <= 24 || k <= 8 || k + 8 > frames || k % step == 0);
            for k in ks {
                let (sr, rr) = tampered_pair(p, o, &s, &r, both, incoming, |i, f| {
                    if i == k && f.is_empty() {
                        // Nothing to flip: the relay slips in a byte instead.
                        f.push(1);
                    } else if i == k {
                        let bit = (k * 7919 + 13) % (8 * f.len());
                        f[bit / 8] ^= 1 << (bit % 8);
                    }
                    true
                });
                let what = format!(
                    "{name}: bit flipped in frame {k} to the {}",
                    if incoming { "sender" } else { "receiver" }
                );
                if let Ok(rep) = &rr {
                    assert_output(rep, &r, &want_r, &format!("{what}: receiver output"));
                }
                if let Ok(rep) = &sr {
                    if both {
                        assert_eq!(
                            rep.output.indices(),
                            Some(&want_s[..]),
                            "{what}: sender output"
                        );
                    }
                }
                let victim = if incoming { &sr } else { &rr };
                assert!(victim.is_err(), "{what}: the altered frame went unnoticed");
            }
        }
        eprintln!("{name}: {:?}", started.elapsed());
    });
}

/// Frames recorded in one session and replayed into another are refused.
#[test]
fn a_replayed_session_is_refused() {
    let (s, r) = sets(50, 50, 10, 14);
    for &p in registry() {
        for replay_sender in [true, false] {
            // Record what one party sends in an honest session.
            let mut recorded = Vec::new();
            let (sr, rr) =
                tampered_pair(p, test_options(p), &s, &r, false, !replay_sender, |_, f| {
                    recorded.push(f.clone());
                    true
                });
            assert!(sr.is_ok() && rr.is_ok());
            // Replay it, blindly, to a fresh party of the other role.
            let (mut a, mut b) = mem_pair(Duration::from_secs(5));
            let (role, items) = if replay_sender {
                (Role::Receiver, fit(p, &r))
            } else {
                (Role::Sender, fit_sender(p, test_options(p), &s))
            };
            let result = std::thread::scope(|sc| {
                let t = sc.spawn(|| run(&mut b, &items, &options(p, role, false)));
                for f in &recorded {
                    if a.send(f).is_err() {
                        break;
                    }
                }
                let result = t.join().unwrap();
                drop(a);
                result
            });
            let e = result.err().unwrap_or_else(|| {
                panic!(
                    "{}: a replayed {} was accepted",
                    p.info().name,
                    if replay_sender { "sender" } else { "receiver" }
                )
            });
            assert!(matches!(e, Error::Integrity(_)), "{}: {e}", p.info().name);
        }
    }
}

/// A protocol whose receiver learns only how many items the sets share, with a state to
/// precompute: HEK12's sorting network.
fn counting() -> &'static dyn Protocol {
    venn::protocols::find("hek12-ca").unwrap()
}

/// Every protocol's offline phase saved to state files, loaded and run online: the same
/// output as one run, every phase of it online, both states used up.
#[test]
fn every_protocol_runs_online_from_states_in_files() {
    let (s, r) = sets(300, 200, 77, 21);
    let want = truth(&r, &s);
    each_on_all_cores(registry(), |&p| {
        let name = p.info().name;
        let o = test_options(p);
        let (fs, fr) = (fit_sender(p, o, &s), fit(p, &r));
        let dir = tempfile::tempdir().unwrap();
        let paths = precompute(p, o, [400, 250], dir.path());
        let (sr, rr) = online(p, o, &paths, &fs, &fr);
        assert_eq!(sr.unwrap().output, Output::Nothing, "{name}");
        let rr = rr.unwrap_or_else(|e| panic!("{name}: {e}"));
        // The output against the sets as made (what fitting them to σ bits keeps).
        assert_output(&rr, &r, &want, name);
        assert!(
            rr.phases.iter().all(|p| !p.offline),
            "{name}: the run from a state is all online"
        );
        assert!(
            !paths[0].exists() && !paths[1].exists(),
            "{name}: both states used up"
        );
    });
}

/// The online run of a precomputation is keyed with the secret agreed in
/// it, so a stranger who echoes the (public) offline session id cannot start it, and the
/// state is not used up by the attempt.
#[test]
fn a_stranger_cannot_use_up_a_precomputed_state() {
    use venn::session::{handshake, Hello, Mode, Resume, WireParams};
    let (s, r) = sets(30, 20, 5, 22);
    let dir = tempfile::tempdir().unwrap();
    let paths = precompute(counting(), test_options(counting()), [30, 20], dir.path());
    let opts = |role| options(counting(), role, false);
    let header = venn::state::file::StateFile::open(&paths[1])
        .unwrap()
        .header
        .clone();
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let result = std::thread::scope(|sc| {
        sc.spawn(move || {
            // Everything public about the precomputation, but not its secret.
            let hello = Hello {
                protocol: counting().info().name.into(),
                role: Role::Sender,
                both: false,
                options: Default::default(),
                set_size: 30,
                mode: Mode::Resume(Resume {
                    session: header.session,
                    sizes: header.sizes,
                    secret: [0; 32],
                }),
            };
            let _ = handshake(
                &mut a,
                &hello,
                20,
                &mut Prg::from_seed(Block::from(1)),
                |sizes| {
                    Ok(WireParams {
                        encoding: counting().params(sizes, Options::default())?.encode(),
                        shown: String::new(),
                    })
                },
            );
        });
        let o = opts(Role::Receiver);
        venn::run_online(&mut b, &r, venn::load_state(&paths[1], &o).unwrap(), &o)
    });
    let e = result.expect_err("a stranger was accepted");
    assert!(matches!(e, Error::Integrity(_)), "{e}");
    assert!(paths[1].exists(), "the state survives the attempt");

    // A stranger that reflects our own hello (its role flipped) and our own proof.
    let (mut a, mut b) = mem_pair(Duration::from_secs(10));
    let result = std::thread::scope(|sc| {
        sc.spawn(move || {
            let chan = &mut a as &mut dyn Channel;
            let Ok(mut hello) = chan.recv(1 << 10) else {
                return;
            };
            let role_at = 8 + 2 + 1 + counting().info().name.len();
            hello[role_at] ^= 1;
            let _ = chan.send(&hello);
            if let Ok(proof) = chan.recv(1 << 12) {
                let _ = chan.send(&proof);
            }
            let _ = chan.recv(1 << 12);
        });
        let o = opts(Role::Receiver);
        venn::run_online(&mut b, &r, venn::load_state(&paths[1], &o).unwrap(), &o)
    });
    let e = result.expect_err("a reflected handshake was accepted");
    assert!(matches!(e, Error::Integrity(_)), "{e}");
    assert!(paths[1].exists(), "the state survives a reflection");
    let _ = s;
}
