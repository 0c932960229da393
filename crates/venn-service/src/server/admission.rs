//! Which connections the service serves: at most so many in all, from one peer (an IPv4
//! address, or an IPv6 /64: what one host is usually given) and from one network (an IPv4
//! /24, or an IPv6 /48: what one site is usually given), a network's cap below the total.
//!
//! Caps alone are not fair: a connection may wait up to `--request-timeout` for its
//! request, so a few networks at their caps could hold every place that long and shut
//! everyone else out (eight addresses at the default caps did). So when every place is
//! taken, a newcomer within its own caps takes the place of a connection still waiting
//! for its request — the oldest one of the network holding the most connections — which
//! is closed. A connection whose request has arrived whole is being served and keeps its
//! place.
//!
//! Registrations, the one request a client not yet registered may make, are counted per
//! peer too: at most so many a minute ([`RegistrationRate`]).

use crate::error::Result;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use venn_cloud::Error;

/// How many connections the service serves at once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caps {
    /// In all.
    pub total: usize,
    /// From one peer ([`peer_of`]).
    pub per_peer: usize,
    /// From one network ([`network_of`]).
    pub per_network: usize,
}

/// The connections being served, each held by a [`Permit`] until it closes.
pub(crate) struct Admission {
    caps: Caps,
    open: Mutex<Open>,
}

/// The open connections, by id (ids grow with time: the smallest is the oldest), and how
/// many each peer and each network holds.
#[derive(Default)]
struct Open {
    next: u64,
    connections: HashMap<u64, Connection>,
    by_peer: HashMap<IpAddr, usize>,
    by_network: HashMap<IpAddr, usize>,
}

/// An open connection: where it comes from and, while it waits for its request, how to
/// close it.
struct Connection {
    peer: IpAddr,
    network: IpAddr,
    waiting: Option<oneshot::Sender<()>>,
}

/// A connection's place, given by [`Admission::admit`]; counted until dropped, or until
/// the connection is closed to make way for another ([`Admission::admit`] says how).
pub(crate) struct Permit {
    admission: Arc<Admission>,
    id: u64,
}

/// Resolves when the connection of a [`Permit`] is to be closed to make way for another.
pub(crate) type Evicted = oneshot::Receiver<()>;

impl Admission {
    pub(crate) fn new(caps: Caps) -> Arc<Admission> {
        Arc::new(Admission {
            caps,
            open: Mutex::new(Open::default()),
        })
    }

    /// Admits a connection from `address` unless its peer or its network is at its cap,
    /// or every place is taken by connections being served. When every place is taken, the
    /// oldest connection still waiting for its request, of the network holding the most
    /// connections, is closed to make way (its [`Evicted`] resolves).
    pub(crate) fn admit(self: &Arc<Self>, address: IpAddr) -> Option<(Permit, Evicted)> {
        let (peer, network) = (peer_of(address), network_of(address));
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let held = |counts: &HashMap<IpAddr, usize>, key| counts.get(&key).copied().unwrap_or(0);
        if held(&open.by_peer, peer) >= self.caps.per_peer
            || held(&open.by_network, network) >= self.caps.per_network
        {
            return None;
        }
        if open.connections.len() >= self.caps.total {
            let victim = open
                .connections
                .iter()
                .filter(|(_, c)| c.waiting.is_some())
                .max_by_key(|&(&id, c)| (held(&open.by_network, c.network), std::cmp::Reverse(id)))
                .map(|(&id, _)| id)?;
            if let Some(evict) = open.close(victim).and_then(|c| c.waiting) {
                let _ = evict.send(());
            }
        }
        let (evict, evicted) = oneshot::channel();
        let id = open.next;
        open.next += 1;
        *open.by_peer.entry(peer).or_default() += 1;
        *open.by_network.entry(network).or_default() += 1;
        open.connections.insert(
            id,
            Connection {
                peer,
                network,
                waiting: Some(evict),
            },
        );
        let permit = Permit {
            admission: self.clone(),
            id,
        };
        Some((permit, evicted))
    }
}

impl Open {
    /// Forgets connection `id`, if still counted.
    fn close(&mut self, id: u64) -> Option<Connection> {
        let connection = self.connections.remove(&id)?;
        for (counts, key) in [
            (&mut self.by_peer, connection.peer),
            (&mut self.by_network, connection.network),
        ] {
            if let Some(n) = counts.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(&key);
                }
            }
        }
        Some(connection)
    }
}

impl Permit {
    /// The connection's request has arrived whole: the service works on it now, and the
    /// connection is no longer closed to make way for another.
    pub(crate) fn served(&self) {
        let mut open = self
            .admission
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = open.connections.get_mut(&self.id) {
            c.waiting = None;
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self
            .admission
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        open.close(self.id);
    }
}

/// The peer a connection from `address` counts against: an IPv4 address (also when mapped
/// into IPv6), or an IPv6 address's /64 network.
pub(crate) fn peer_of(address: IpAddr) -> IpAddr {
    prefix(address, 32, 64)
}

/// The network a connection from `address` counts against: an IPv4 /24 (also when mapped
/// into IPv6), or an IPv6 /48.
pub(crate) fn network_of(address: IpAddr) -> IpAddr {
    prefix(address, 24, 48)
}

/// `address`'s first `v4` bits if it is an IPv4 address (or one mapped into IPv6), else
/// its first `v6` bits.
fn prefix(address: IpAddr, v4: u32, v6: u32) -> IpAddr {
    let v6_address = match address {
        IpAddr::V4(a) => return IpAddr::V4((a.to_bits() & mask(v4)).into()),
        IpAddr::V6(a) => a,
    };
    match v6_address.to_ipv4_mapped() {
        Some(a) => IpAddr::V4((a.to_bits() & mask(v4)).into()),
        None => IpAddr::V6(Ipv6Addr::from_bits(
            v6_address.to_bits() & (u128::MAX << (128 - v6)),
        )),
    }
}

/// The mask of an IPv4 address's first `bits` bits.
fn mask(bits: u32) -> u32 {
    u32::MAX << (32 - bits)
}

/// Registrations tried per peer in the current minute: a peer over the limit is refused
/// until the minute is over.
pub(super) struct RegistrationRate {
    per_minute: u32,
    tried: Mutex<(tokio::time::Instant, HashMap<IpAddr, u32>)>,
}

impl RegistrationRate {
    pub(super) fn new(per_minute: u32) -> RegistrationRate {
        RegistrationRate {
            per_minute,
            tried: Mutex::new((tokio::time::Instant::now(), HashMap::new())),
        }
    }

    /// Counts a registration tried from `address`, refusing one over the limit.
    pub(super) fn admit(&self, address: IpAddr) -> Result<()> {
        let mut tried = self.tried.lock().unwrap_or_else(|e| e.into_inner());
        let (started, counts) = &mut *tried;
        if started.elapsed() >= Duration::from_secs(60) {
            (*started, *counts) = (tokio::time::Instant::now(), HashMap::new());
        }
        let count = counts.entry(peer_of(address)).or_insert(0);
        *count += 1;
        match *count > self.per_minute {
            true => Err(Error::TooMany(format!(
                "at most {} registrations a minute from one address: try again later",
                self.per_minute
            ))
            .into()),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn admission(total: usize, per_peer: usize, per_network: usize) -> Arc<Admission> {
        Admission::new(Caps {
            total,
            per_peer,
            per_network,
        })
    }

    /// Connections are capped per peer (an IPv6 /64 is one peer, an IPv4 address mapped
    /// into IPv6 is the address) and per network (an IPv4 /24, an IPv6 /48); a closed
    /// connection frees its place.
    #[test]
    fn connections_are_capped_per_peer_and_per_network() {
        let a = admission(100, 2, 3);
        let first = a.admit(ip("10.0.0.1")).unwrap();
        let _second = a.admit(ip("::ffff:10.0.0.1")).unwrap();
        assert!(a.admit(ip("10.0.0.1")).is_none(), "the peer's cap");
        drop(first);
        let _third = a.admit(ip("10.0.0.1")).unwrap();
        let _same_24 = a.admit(ip("10.0.0.200")).unwrap();
        assert!(a.admit(ip("10.0.0.3")).is_none(), "the /24's cap");
        let _other_24 = a.admit(ip("10.0.1.1")).unwrap();
        let _v6 = a.admit(ip("2001:db8::1")).unwrap();
        let _v6_too = a.admit(ip("2001:db8::2:1")).unwrap();
        assert!(a.admit(ip("2001:db8::ffff")).is_none(), "one /64, one peer");
        let _v6_48 = a.admit(ip("2001:db8:0:1::1")).unwrap();
        assert!(a.admit(ip("2001:db8:0:2::1")).is_none(), "the /48's cap");
        assert_eq!(a.open.lock().unwrap().connections.len(), 7);
    }

    /// When every place is taken, a newcomer within its caps closes the oldest connection
    /// still waiting for its request, of the network holding the most; connections being
    /// served keep their place, and with none waiting the newcomer is refused.
    #[test]
    fn a_full_service_makes_way_for_a_newcomer() {
        let a = admission(4, 2, 2);
        let (served, mut served_evicted) = a.admit(ip("10.0.0.1")).unwrap();
        served.served();
        let (_older, mut older_evicted) = a.admit(ip("10.0.1.1")).unwrap();
        let (_crowded, mut crowded_evicted) = a.admit(ip("10.0.0.2")).unwrap();
        let (_newer, mut newer_evicted) = a.admit(ip("10.0.1.2")).unwrap();
        // 10.0.0/24 and 10.0.1/24 hold two each; 10.0.0.1's is served, so 10.0.1.1's, the
        // oldest waiting of the two fullest, makes way.
        let (newcomer, _) = a.admit(ip("10.0.2.1")).unwrap();
        assert!(older_evicted.try_recv().is_ok(), "closed to make way");
        for kept in [
            &mut served_evicted,
            &mut crowded_evicted,
            &mut newer_evicted,
        ] {
            assert!(kept.try_recv().is_err());
        }
        assert!(a.admit(ip("10.0.0.3")).is_none(), "its network's cap");
        // 10.0.0/24 now holds the most: its waiting one makes way.
        newcomer.served();
        let (second, _) = a.admit(ip("10.0.3.1")).unwrap();
        assert!(crowded_evicted.try_recv().is_ok());
        second.served();
        let (third, _) = a.admit(ip("10.0.4.1")).unwrap();
        assert!(newer_evicted.try_recv().is_ok());
        third.served();
        assert!(a.admit(ip("10.0.5.1")).is_none(), "every place served");
        assert_eq!(a.open.lock().unwrap().connections.len(), 4);
    }
}
