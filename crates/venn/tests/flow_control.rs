//! Flow control: every registered protocol, with its default options and each
//! option variant it takes, over real loopback TCP whose socket buffers are a few KiB and
//! whose send queues hold little. A protocol in which both parties send more than a
//! queue's worth without reading — or wait for the peer to read while it does the same —
//! stalls here and fails with a timeout, where the in-memory pair (unbounded) and
//! loopback's default buffers (megabytes) would hide it until a large run hangs.

use crate::common::{assert_output, fit_receiver, fit_sender, fit_sigma, options, sets, truth};
use socket2::{Domain, Socket, Type};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use venn::net::{tcp_channel, TcpChannel};
use venn::protocols::{registry, Offline, Options, Output, Protocol, Stash};
use venn::session::Role;
use venn::{run, Items, RunOptions};

/// Each socket's send and receive buffer as asked of the kernel (Linux doubles it and
/// keeps a floor of a few KiB).
const SOCKET_BUFFER: usize = 4 << 10;

/// Bytes a party may queue unread before sending blocks: the production queue (16 MiB at
/// up to 2^24 items a party) scaled to these runs' 2^12 items. Protocols whose parties
/// send at once size their windows from it ([`venn::net::Channel::window`]), so what
/// fails here is a backlog that grows with the sets.
const QUEUE: usize = 4 << 10;

/// How long a party waits for any one message: a stalled run fails well within it.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The run's size: 2^12 items a party.
const N: usize = 1 << 12;

/// A socket whose buffers are [`SOCKET_BUFFER`] from the start, so the windows it
/// advertises are small from the handshake on (a buffer shrunk after connecting leaves the
/// peer waiting for a window as large as it first saw).
fn small_socket() -> Socket {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket.set_send_buffer_size(SOCKET_BUFFER).unwrap();
    socket.set_recv_buffer_size(SOCKET_BUFFER).unwrap();
    socket
}

/// Two connected channels over loopback with small buffers and small send queues.
fn tight_pair() -> (TcpChannel, TcpChannel) {
    let listener = small_socket();
    listener
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    listener.listen(1).unwrap();
    let client = small_socket();
    client.connect(&listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    let channel = |socket: Socket| {
        tcp_channel(TcpStream::from(socket), TIMEOUT)
            .unwrap()
            .with_queue_limit(QUEUE)
    };
    (channel(client), channel(server))
}

/// Runs `p` with `options` over a [`tight_pair`] and checks the receiver's output (and,
/// where the receiver's records go to the sender, with `--both`, the sender's).
fn run_tight(p: &'static dyn Protocol, options: Options) {
    let name = format!("{} {} {options:?}", p.info().name, options.flags());
    let (s, r) = sets(N, N, N / 3, 32);
    let (sender, receiver): (Items, Items) =
        (fit_sender(p, options, &s), fit_receiver(options, &r));
    let both = options.receiver_payload.is_some();
    let opts = |role| RunOptions {
        options,
        ..self::options(p, role, both)
    };
    let (mut a, mut b) = tight_pair();
    let (sr, rr) = std::thread::scope(|scope| {
        let t = scope.spawn(|| run(&mut b, &receiver, &opts(Role::Receiver)));
        let sr = run(&mut a, &sender, &opts(Role::Sender));
        (sr, t.join().unwrap())
    });
    let sr = sr.unwrap_or_else(|e| panic!("{name}: sender: {e}"));
    let rr = rr.unwrap_or_else(|e| panic!("{name}: receiver: {e}"));
    if both {
        assert_output(&sr, &s, &truth(&s, &r), &name);
    }
    let expected = truth(&receiver, &fit_sigma(options.sigma, &s));
    match (&rr.output, options.threshold) {
        (Output::Threshold { reached, .. }, Some(t)) => {
            assert_eq!(*reached, expected.len() as u64 >= t, "{name}")
        }
        _ => assert_output(&rr, &r, &expected, &name),
    }
}

/// The variants a test runs `p` with: each [`venn::protocols::Accepts::variants`] but the
/// dealer's (a third party: the CLI's dealer tests run it over TCP) and the IKNP triples'
/// but with the default key length and stash (the same circuit with another source of
/// triples), for a protocol with records its default options with the sender's and with
/// the receiver's (with `--both`), and for a protocol with a threshold, its default
/// options with one.
fn variants(p: &dyn Protocol) -> Vec<Options> {
    let mut all: Vec<Options> = (p.variants(&[], &[], p.accepts().offline).into_iter())
        .filter(|o| o.offline != Offline::Dealer)
        .filter(|o| {
            o.offline != Offline::Iknp || (o.stash == Stash::default() && o.sigma.is_none())
        })
        .collect();
    if p.accepts().payload {
        all.push(Options {
            payload: Some(48),
            ..all[0]
        });
        all.push(Options {
            receiver_payload: Some(48),
            ..all[0]
        });
    }
    if p.accepts().threshold {
        all.push(Options {
            threshold: Some(N as u64 / 3),
            ..all[0]
        });
    }
    all
}

#[test]
fn every_protocol_and_variant_runs_over_tight_tcp() {
    let only = std::env::var("FLOW_ONLY").ok();
    for &p in registry()
        .iter()
        .filter(|p| only.as_deref().is_none_or(|o| o == p.info().name))
    {
        for options in variants(p) {
            let started = std::time::Instant::now();
            run_tight(p, options);
            eprintln!(
                "{} {}: {:?}",
                p.info().name,
                options.flags(),
                started.elapsed()
            );
        }
    }
}
