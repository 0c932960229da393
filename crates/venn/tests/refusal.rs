//! A peer whose announced set would make this party need more than
//! `--max-memory` is refused in the handshake *before* anything is allocated for it, for
//! every protocol, variant and role. Every allocation of this test binary is counted, so
//! a memory model that itself builds something the size of the announced sets (hek12's
//! sorting network: 2.8 GiB for a peer announcing 2^24 items, then a refusal) fails here.
//! One test in its own binary: nothing else allocates meanwhile.

mod common;

use common::{fit_sender, fit_sigma};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use venn::crypto::Block;
use venn::crypto::Prg;
use venn::net::mem_pair;
use venn::protocols::{registry, Options, Protocol};
use venn::session::{handshake, Hello, Mode, Role, WireParams};
use venn::{run, Error, Items, RunOptions};

/// The system allocator, counting the bytes held now and the most held since a reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's arguments unchanged;
// the counters beside it allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What a refused run may allocate: its hellos, thread pool and buffers, nothing that
/// grows with the announced sets.
const REFUSAL_BYTES: usize = 16 << 20;

/// The set size the peer announces: 2^24, which it never holds.
const ANNOUNCED: u64 = 1 << 24;

/// Runs `role` of `p` with `options` against a peer that only announces [`ANNOUNCED`]
/// items; returns the error and the most bytes held meanwhile beyond those held before.
fn refused(p: &'static dyn Protocol, options: Options, role: Role) -> (Error, usize) {
    let mine: Items = (0..10).map(|i| i.to_string()).collect();
    let mine = match role {
        Role::Sender => fit_sender(p, options, &mine),
        Role::Receiver => fit_sigma(options.sigma, &mine),
    };
    let (mut a, mut b) = mem_pair(Duration::from_secs(5));
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let result = std::thread::scope(|sc| {
        sc.spawn(move || {
            let hello = Hello {
                protocol: p.info().name.into(),
                role: role.other(),
                both: false,
                options,
                set_size: ANNOUNCED,
                mode: Mode::Run,
            };
            // The peer does no work for the sizes: it offers no parameters at all.
            let _ = handshake(
                &mut b,
                &hello,
                ANNOUNCED,
                &mut Prg::from_seed(Block::from(3)),
                |_| {
                    Ok(WireParams {
                        encoding: Vec::new(),
                        shown: String::new(),
                    })
                },
            );
        });
        let o = RunOptions {
            options,
            max_peer_items: ANNOUNCED,
            max_memory: 256 << 20,
            ..common::options(p, role, false)
        };
        run(&mut a, &mine, &o)
    });
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let e = result
        .err()
        .unwrap_or_else(|| panic!("{}: accepted", p.info().name));
    (e, peak)
}

#[test]
fn a_peer_exceeding_max_memory_is_refused_before_allocation() {
    for &p in registry() {
        for options in p.variants(&[], &[], p.accepts().offline) {
            for role in [Role::Sender, Role::Receiver] {
                let what = format!(
                    "{} {} as the {}",
                    p.info().name,
                    options.flags(),
                    role.name()
                );
                let (e, peak) = refused(p, options, role);
                assert!(
                    matches!(e, Error::Memory(_))
                        && e.to_string()
                            .contains("GiB here, more than the 0.25 GiB allowed"),
                    "{what}: {e}"
                );
                assert!(
                    peak < REFUSAL_BYTES,
                    "{what}: {} MiB allocated before the refusal",
                    peak >> 20
                );
            }
        }
    }
}
