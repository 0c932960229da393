//! `venn plan`'s cost model: each protocol variant's time and traffic at a thread count,
//! from `venn bench` rows of this build (`venn plan --fit`), and how a network adds to
//! them.
//!
//! Time and traffic are kept as the points measured on loopback (set sizes 2^k), and read
//! between two points as the power law through them (a protocol whose tables have a
//! floor, such as PSWW18's, is flat there; a linear one is linear); beyond the largest
//! point, at the last segment's cost per item; below the smallest, at the first segment's
//! power.
//!
//! Unequal sets. Each variant is measured on equal sets (the diagonal, `D(n)`) and on
//! two edges where one set stays small (`m` items, 2^10) while the other grows: the
//! sender's set (`S(n)`, the receiver's `m`) and the receiver's (`R(n)`, the sender's
//! `m`). Each quantity — the time, and the bytes of each direction — of `n` items against
//! `k < n` is read from the run of `n` against `m` (its edge), moved towards the run of `n`
//! against `n` (the diagonal) by the share of the growth from `m` to `n` items that the
//! smaller set's `k` items make on the other edge: for a larger sender,
//!
//! ```text
//! q(n, k) = S(n) + (D(n) − S(n)) · w,   w = (R(k) − R(m)) / (R(n) − R(m))
//! ```
//!
//! (and the same with the roles swapped). Where a cost is a sum of one part per set — an
//! OPRF's outputs for the sender's items, an OKVS for the receiver's — this is that sum
//! exactly (`S(n) − S(m)` is the sender's part, `R(k) − R(m)` the receiver's); where it is a
//! product of one factor per set — KKRT16's hashes, the sender's items times hash
//! functions and a stash that shrinks as the receiver's set grows (`w` then from a
//! falling edge) — it is that product exactly too; where it grows with the larger set only
//! — a table sized for both, as in PSWW18's circuit — the edge already equals the diagonal
//! and `w` does not matter; equal sets, and the edges, are read as measured. A smaller
//! set below `m` is read on the other edge below its first segment (its power law), so
//! that a direction carried by that set shrinks with it. A variant measured on equal sets
//! only is read at the larger set (an upper bound).
//!
//! A network adds its transfer time — both directions' bytes at the link's rate, times
//! the share of it the protocol was measured to wait for on a slow link (its directions
//! may overlap each other and its computation) — and the round trips the run waits on its
//! peer — counted from runs on a slow-latency link (`--net` in the rows fitted): their
//! time over the loopback time, in round trips, read through the sizes counted as a power
//! law too (both on equal sets, read at the larger set).

use crate::bench::{parse_net, Row};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use venn::{Error, Result};

/// What was measured at one set size (on an edge: the larger set's).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub(super) struct Point {
    pub log2n: u32,
    /// The slower party's seconds from the handshake to its output (both phases).
    pub seconds: f64,
    /// Bytes the sender sent, and the receiver.
    pub sender_bytes: u64,
    pub receiver_bytes: u64,
    /// Each party's peak resident set in bytes (its process's `VmHWM`, the benchmark's
    /// items included).
    pub sender_peak: u64,
    pub receiver_peak: u64,
    /// Round trips the run waited on its peer, where counted at this size (equal sets).
    pub round_trips: Option<f64>,
    /// The share of both directions' bytes at the link's rate the run took longer on a
    /// slow link, where measured at this size: 1 for a protocol whose directions take
    /// turns, 1/2 for one that sends both ways at once, less where it computes meanwhile.
    pub transfer_share: Option<f64>,
}

/// One protocol variant at one thread count per party.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(super) struct Fit {
    /// `venn bench`'s label: the protocol's name and its options (`kbm23/s32/dealer`).
    pub protocol: String,
    pub threads: usize,
    /// Equal sets, by set size, ascending.
    pub points: Vec<Point>,
    /// The edges' small set, 2^`small_log2n` items (none: measured on equal sets only).
    pub small_log2n: Option<u32>,
    /// The sender's set growing against the small one, by its size, ascending.
    pub larger_sender: Vec<Point>,
    /// The receiver's set growing against the small one, by its size, ascending.
    pub larger_receiver: Vec<Point>,
}

/// The committed fit (`costs.json`): where it was measured and each variant's [`Fit`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(super) struct Costs {
    /// Machine, commit, date and command of the rows fitted.
    pub measured: String,
    pub fits: Vec<Fit>,
}

/// A link: its rate and round trip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Net {
    pub bytes_per_second: f64,
    pub rtt: f64,
}

impl Net {
    /// `lan`, `wan`, another `venn bench --net` preset, or `RATE,RTT`.
    pub(super) fn parse(text: &str) -> Result<Net> {
        let s = parse_net(text).map_err(Error::Usage)?;
        Ok(Net {
            bytes_per_second: s.bytes_per_second,
            rtt: 2.0 * s.one_way.as_secs_f64(),
        })
    }
}

/// A prediction for one run.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub(super) struct Predicted {
    pub seconds: f64,
    /// Of `seconds`: the link's share (transfer and round trips).
    pub network_seconds: f64,
    pub sender_bytes: f64,
    pub receiver_bytes: f64,
    /// Each party's peak resident set, in bytes.
    pub sender_peak: f64,
    pub receiver_peak: f64,
    /// Whether a set lies beyond the largest size measured (read at its last cost per
    /// item).
    pub extrapolated: bool,
}

/// The power law through `(n0, f0)` and `(n1, f1)`, at `n` (linear where either is 0: a
/// direction with no traffic at some size).
fn power_law((n0, f0): (f64, f64), (n1, f1): (f64, f64), n: f64) -> f64 {
    if f0 <= 0.0 || f1 <= 0.0 {
        return f0 + (f1 - f0) * (n - n0) / (n1 - n0);
    }
    f0 * (n / n0).powf((f1 / f0).ln() / (n1 / n0).ln())
}

/// `f` at `n`, from `(n_i, f_i)` ascending in n: see the module's doc.
fn interpolate(points: &[(f64, f64)], n: f64) -> f64 {
    match points {
        [] => 0.0,
        [(_, f)] => *f,
        _ if n <= points[0].0 => power_law(points[0], points[1], n).clamp(0.0, points[0].1),
        _ => match points.iter().position(|p| p.0 >= n) {
            Some(i) => power_law(points[i - 1], points[i], n),
            None => {
                let [(n0, f0), (n1, f1)] = [points[points.len() - 2], points[points.len() - 1]];
                f1 + (n - n1) * ((f1 - f0) / (n1 - n0)).max(0.0)
            }
        },
    }
}

/// `(2^log2n, f(point))` of `points`.
fn curve(points: &[Point], f: fn(&Point) -> f64) -> Vec<(f64, f64)> {
    (points.iter())
        .map(|p| ((1u64 << p.log2n) as f64, f(p)))
        .collect()
}

impl Fit {
    /// For unequal sets read from the edges: the larger set's edge, the other edge and
    /// the small set `m` (none where they are read on the diagonal: equal sets, sets no
    /// larger than `m`, or a variant measured on equal sets only).
    fn edges(&self, sender: f64, receiver: f64) -> Option<(&[Point], &[Point], f64)> {
        let m = (1u64 << self.small_log2n?) as f64;
        let (edge, other) = match sender > receiver {
            true => (&self.larger_sender, &self.larger_receiver),
            false => (&self.larger_receiver, &self.larger_sender),
        };
        let unequal = sender != receiver && sender.max(receiver) > m;
        (unequal && !edge.is_empty() && !other.is_empty()).then_some((edge, other, m))
    }

    /// A quantity (`f` of each point) for `sender` and `receiver` items: see the module's
    /// doc.
    fn at(&self, sender: f64, receiver: f64, f: fn(&Point) -> f64) -> f64 {
        let (n, k) = (sender.max(receiver), sender.min(receiver));
        let diagonal = curve(&self.points, f);
        let d = interpolate(&diagonal, n);
        let Some((edge, other, m)) = self.edges(sender, receiver) else {
            return d;
        };
        // Each edge starts where the diagonal does, at m against m.
        let base = interpolate(&diagonal, m);
        let from_base = |points: &[Point]| {
            let mut c = vec![(m, base)];
            c.extend(curve(points, f));
            c
        };
        let (edge, other) = (from_base(edge), from_base(other));
        let e = interpolate(&edge, n);
        let end = interpolate(&other, n);
        let grown = end - base;
        // Within [-1, 1]: a set below m takes off at most what m's makes (the measured
        // noise of a quantity that hardly moves is not blown up).
        let w = match grown.abs() > base.abs().max(end.abs()) / 100.0 {
            true => ((interpolate(&other, k) - base) / grown).clamp(-1.0, 1.0),
            // The smaller set makes no difference on its edge (less than 1%): nor here.
            false => 0.0,
        };
        (e + (d - e) * w).max(0.0)
    }

    /// The transfer share measured nearest to `n` (1 where none was).
    fn transfer_share(&self, n: f64) -> f64 {
        let k = n.log2();
        (self.points.iter())
            .filter_map(|p| Some(((p.log2n as f64 - k).abs(), p.transfer_share?)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(1.0, |(_, share)| share)
    }

    /// The round trips at `n`: the power law through the nearest two sizes counted, its
    /// power never below 0 (a run does not wait less for more items), on either side of
    /// them too (a sorting network's depth grows with log² n, a chunked protocol's round
    /// trips with n: both stay close to a power law over a few doublings).
    fn round_trips(&self, n: f64) -> f64 {
        let counted: Vec<(f64, f64)> = (self.points.iter())
            .filter_map(|p| Some(((1u64 << p.log2n) as f64, p.round_trips?)))
            .collect();
        match counted[..] {
            [] => 0.0,
            [(_, r)] => r,
            _ => {
                let i = (counted.iter().position(|c| c.0 >= n)).unwrap_or(counted.len() - 1);
                let [(n0, r0), (n1, r1)] = [counted[i.max(1) - 1], counted[i.max(1)]];
                if r0 <= 0.0 || r1 <= 0.0 {
                    return r0.max(r1);
                }
                // Fewer at the larger size is noise: the power never below 0.
                power_law((n0, r0), (n1, r1.max(r0)), n)
            }
        }
    }

    /// The run of `sender` and `receiver` items over `net` (loopback without one).
    pub(super) fn predict(&self, sender: f64, receiver: f64, net: Option<Net>) -> Predicted {
        let n = sender.max(receiver);
        let sender_bytes = self.at(sender, receiver, |p| p.sender_bytes as f64);
        let receiver_bytes = self.at(sender, receiver, |p| p.receiver_bytes as f64);
        let network_seconds = net.map_or(0.0, |net| {
            let transfer = (sender_bytes + receiver_bytes) / net.bytes_per_second;
            transfer * self.transfer_share(n) + self.round_trips(n) * net.rtt
        });
        let largest = |points: &[Point]| points.last().map_or(0.0, |p| (1u64 << p.log2n) as f64);
        let beyond = (self.edges(sender, receiver)).is_some_and(|(edge, ..)| n > largest(edge));
        Predicted {
            seconds: self.at(sender, receiver, |p| p.seconds) + network_seconds,
            network_seconds,
            sender_bytes,
            receiver_bytes,
            sender_peak: self.at(sender, receiver, |p| p.sender_peak as f64),
            receiver_peak: self.at(sender, receiver, |p| p.receiver_peak as f64),
            extrapolated: beyond || n > largest(&self.points),
        }
    }
}

/// Where a row's sets put it in a [`Fit`].
enum Sets {
    /// 2^K items each: the diagonal.
    Equal(u32),
    /// 2^`larger` against 2^`smaller`: an edge.
    Unequal {
        larger: u32,
        smaller: u32,
        sender_larger: bool,
    },
}

/// Where `r` goes, or why the fit does not take it (sets that are not powers of two).
fn sets(r: &Row) -> Result<Sets> {
    let log2 = |n: u64| n.is_power_of_two().then(|| n.ilog2());
    let (Some(s), Some(k)) = (log2(r.n_sender), log2(r.n_receiver)) else {
        return Err(Error::Usage(format!(
            "{} at {}: the fit takes sets of 2^K items",
            r.protocol,
            r.sizes_text()
        )));
    };
    Ok(match s == k {
        true => Sets::Equal(s),
        false => Sets::Unequal {
            larger: s.max(k),
            smaller: s.min(k),
            sender_larger: s > k,
        },
    })
}

/// The least round trip of a `--net` row that counts round trips (seconds).
const ROUND_TRIP_PROBE: f64 = 0.01;

/// Fits `rows` (what `venn bench --json` printed): plaintext rows on loopback give each
/// variant's points — of equal sets its diagonal, of unequal ones (one small set of the
/// same size throughout) its edges — and rows with `--net`, of equal sets, its round trips
/// (a link of [`ROUND_TRIP_PROBE`] or more) or its transfer share (a link of less, where its
/// bytes take at least half its loopback time: 1 where they do not). A variant with a
/// `--net` row and no loopback row at the same size and thread count is refused, and so
/// are sets that are not powers of two.
pub(super) fn fit(rows: &[Row], measured: String) -> Result<Costs> {
    let plain = |r: &&Row| !r.tls && !r.precomputed;
    let mut fits: BTreeMap<(String, usize), Fit> = BTreeMap::new();
    for r in rows.iter().filter(plain).filter(|r| r.net.is_none()) {
        let at = || format!("{} at {}", r.protocol, r.sizes_text());
        if !r.verified {
            return Err(Error::Usage(format!(
                "{} did not verify: nothing is fitted to it",
                at()
            )));
        }
        let fit = (fits.entry((r.protocol.clone(), r.threads))).or_insert_with(|| Fit {
            protocol: r.protocol.clone(),
            threads: r.threads,
            points: Vec::new(),
            small_log2n: None,
            larger_sender: Vec::new(),
            larger_receiver: Vec::new(),
        });
        let (log2n, points) = match sets(r)? {
            Sets::Equal(log2n) => (log2n, &mut fit.points),
            Sets::Unequal {
                larger,
                smaller,
                sender_larger,
            } => {
                if *fit.small_log2n.get_or_insert(smaller) != smaller {
                    return Err(Error::Usage(format!(
                        "{}: the fit takes one small set a variant, 2^{} here, not 2^{smaller}",
                        at(),
                        fit.small_log2n.unwrap_or_default()
                    )));
                }
                match sender_larger {
                    true => (larger, &mut fit.larger_sender),
                    false => (larger, &mut fit.larger_receiver),
                }
            }
        };
        let bytes = |mib: f64| (mib * (1u64 << 20) as f64).round() as u64;
        let (Some(sender_peak), Some(receiver_peak)) =
            (r.peak_rss_sender_mib, r.peak_rss_receiver_mib)
        else {
            return Err(Error::Usage(format!(
                "{}: no peak memory measured (venn bench measures it on Linux)",
                at()
            )));
        };
        let point = Point {
            log2n,
            seconds: r.total_s,
            sender_bytes: bytes(r.mib_sender_to_receiver),
            receiver_bytes: bytes(r.mib_receiver_to_sender),
            sender_peak: bytes(sender_peak),
            receiver_peak: bytes(receiver_peak),
            round_trips: None,
            transfer_share: None,
        };
        match points.iter_mut().find(|p| p.log2n == log2n) {
            // A size measured twice: the faster run (the other was slowed by the machine).
            Some(p) if p.seconds > point.seconds => *p = point,
            Some(_) => {}
            None => points.push(point),
        }
    }
    // Round trips first, from the links of 10 ms of round trip or more (fast enough that
    // their transfer time hardly counts); then the transfer share, from the others (slow
    // enough that it counts most), beyond the round trips counted.
    for counting_round_trips in [true, false] {
        for r in rows.iter().filter(plain) {
            let Some(net) = &r.net else { continue };
            let net = Net::parse(net)?;
            let Sets::Equal(log2n) = sets(r)? else {
                return Err(Error::Usage(format!(
                    "{} at {}: the fit takes --net rows of equal sets only",
                    r.protocol,
                    r.sizes_text()
                )));
            };
            let point = (fits.get_mut(&(r.protocol.clone(), r.threads)))
                .and_then(|f| f.points.iter_mut().find(|p| p.log2n == log2n));
            let point = point.ok_or_else(|| {
                Error::Usage(format!(
                    "{} at 2^{log2n} with {} threads was measured with --net only: fit it on \
                     loopback too",
                    r.protocol, r.threads
                ))
            })?;
            let transfer =
                (point.sender_bytes + point.receiver_bytes) as f64 / net.bytes_per_second;
            let waited = r.total_s - point.seconds;
            let tenth = |v: f64| Some((v * 10.0).round() / 10.0);
            if net.rtt >= ROUND_TRIP_PROBE {
                if counting_round_trips {
                    point.round_trips = tenth(((waited - transfer) / net.rtt).max(0.0));
                }
            } else if !counting_round_trips && transfer >= point.seconds / 2.0 {
                // Only where the bytes take long beside the computation: a share of a
                // transfer shorter than the machine's noise would be noise.
                let waits = point.round_trips.unwrap_or(0.0) * net.rtt;
                point.transfer_share = tenth(((waited - waits) / transfer).clamp(0.1, 1.0));
            }
        }
    }
    for fit in fits.values_mut() {
        for points in [
            &mut fit.points,
            &mut fit.larger_sender,
            &mut fit.larger_receiver,
        ] {
            points.sort_by_key(|p| p.log2n);
        }
    }
    Ok(Costs {
        measured,
        fits: fits.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(log2n: u32, seconds: f64) -> Point {
        Point {
            log2n,
            seconds,
            sender_bytes: 100 << log2n,
            receiver_bytes: 0,
            sender_peak: 0,
            receiver_peak: 0,
            round_trips: None,
            transfer_share: None,
        }
    }

    fn of(points: Vec<Point>) -> Fit {
        Fit {
            protocol: "p".into(),
            threads: 1,
            points,
            small_log2n: None,
            larger_sender: Vec::new(),
            larger_receiver: Vec::new(),
        }
    }

    /// The prediction for `n` items on each side.
    fn equal(f: &Fit, n: f64, net: Option<Net>) -> Predicted {
        f.predict(n, n, net)
    }

    #[test]
    fn measured_points_are_read_back_and_between_them_a_power_law() {
        let f = of(vec![point(10, 1.0), point(12, 4.0), point(14, 4.0)]);
        for (log2n, s) in [(10, 1.0), (12, 4.0), (14, 4.0)] {
            assert!((equal(&f, (1u64 << log2n) as f64, None).seconds - s).abs() < 1e-9);
        }
        // Linear between 2^10 and 2^12 (power 1), flat after (a floor).
        assert!((equal(&f, 2048.0, None).seconds - 2.0).abs() < 1e-9);
        assert!((equal(&f, 8192.0, None).seconds - 4.0).abs() < 1e-9);
        assert_eq!(equal(&f, 512.0, None).seconds, 0.5);
        // Bytes: linear, and the direction with none stays at none.
        let p = equal(&f, 3000.0, None);
        assert!((p.sender_bytes - 300_000.0).abs() < 1e-6);
        assert_eq!(p.receiver_bytes, 0.0);
    }

    #[test]
    fn beyond_the_largest_point_the_last_cost_per_item_holds() {
        let f = of(vec![point(10, 1.0), point(11, 3.0)]);
        let p = equal(&f, 4096.0, None);
        // 2 s per 1024 items more.
        assert!((p.seconds - 7.0).abs() < 1e-9);
        assert!(p.extrapolated);
        assert!(!equal(&f, 2048.0, None).extrapolated);
    }

    #[test]
    fn a_network_adds_its_transfer_and_round_trips() {
        let counted = |p: Point, r| Point {
            round_trips: Some(r),
            ..p
        };
        let f = of(vec![
            counted(point(10, 1.0), 3.0),
            point(11, 2.0),
            counted(point(12, 3.0), 5.0),
        ]);
        let net = Net::parse("8mbit,100ms").unwrap();
        let p = equal(&f, 1024.0, Some(net));
        // 102,400 bytes at 1 MB/s, and 3 round trips of 0.1 s.
        assert!((p.network_seconds - (0.1024 + 0.3)).abs() < 1e-9);
        assert!((p.seconds - 1.0 - p.network_seconds).abs() < 1e-9);
        // Round trips: 3 at 2^10 and 5 at 2^12, the power law through them on either side.
        let power = (5.0f64 / 3.0).ln() / 4f64.ln();
        assert!((f.round_trips(2048.0) - 3.0 * 2f64.powf(power)).abs() < 1e-9);
        assert!((f.round_trips(16384.0) - 5.0 * 4f64.powf(power)).abs() < 1e-9);
        // Fewer round trips at a larger size is noise: the count stays.
        let g = of(vec![
            counted(point(10, 1.0), 5.0),
            counted(point(12, 2.0), 4.0),
        ]);
        assert_eq!(g.round_trips(65536.0), 5.0);
    }

    /// A `venn bench --json` row of rr22 on `[sender, receiver]` items, 1 MiB sent by the
    /// sender.
    fn bench_row(sizes: [u64; 2], net: Option<&str>, total_s: f64) -> Row {
        let json = serde_json::json!({
            "protocol": "rr22", "tls": false, "n_sender": sizes[0], "n_receiver": sizes[1],
            "threads": 1, "net": net,
            "offline_s": 0.0, "online_s": total_s, "total_s": total_s,
            "mib_sender_to_receiver": 1.0, "mib_receiver_to_sender": 0.0,
            "peak_rss_sender_mib": 20.0, "peak_rss_receiver_mib": 10.0,
            "memory_model_sender_mib": 1.0, "memory_model_receiver_mib": 1.0,
            "ratio_to_naive": null, "ratio_to_kkrt16": null, "ratio_to_plaintext": null,
            "intersection": 1, "verified": true, "precomputed": false,
            "state_mib_sender": null, "state_mib_receiver": null,
        });
        serde_json::from_value::<Row>(json).unwrap()
    }

    /// Fitting `venn bench` rows: the points measured, the faster of a size measured
    /// twice, and the round trips a `--net` row waited beyond its loopback time.
    #[test]
    fn rows_are_fitted() {
        let row = |log2n, net, total_s| bench_row([1u64 << log2n, 1u64 << log2n], net, total_s);
        let rows = [
            row(12, None, 0.5),
            row(10, None, 0.2),
            row(10, None, 0.1),
            // 4 round trips of 0.1 s on a fast link; 1 MiB at 8 Mbit/s is 1.048576 s,
            // half of it waited, and the 4 round trips of 1 ms.
            row(10, Some("10gbit,100ms"), 0.1 + 0.4),
            row(10, Some("8mbit,1ms"), 0.1 + 1.048576 / 2.0 + 0.004),
        ];
        let costs = fit(&rows, "here".into()).unwrap();
        let [f] = &costs.fits[..] else {
            panic!("one fit")
        };
        let seconds: Vec<(u32, f64)> = f.points.iter().map(|p| (p.log2n, p.seconds)).collect();
        assert_eq!(seconds, [(10, 0.1), (12, 0.5)]);
        assert_eq!(f.points[0].round_trips, Some(4.0));
        assert_eq!(f.points[0].transfer_share, Some(0.5));
        assert_eq!(f.points[0].sender_bytes, 1 << 20);
        assert_eq!(f.points[0].sender_peak, 20 << 20);
        assert_eq!(f.points[0].receiver_peak, 10 << 20);
        // The share measured at 2^10 holds at 2^12 too (where the rows say 1 MiB again).
        let slow = Net::parse("8mbit,100ms").unwrap();
        let p = equal(f, 4096.0, Some(slow));
        assert!(
            (p.network_seconds - (1.048576 / 2.0 + 0.4)).abs() < 1e-6,
            "{p:?}"
        );
        // A share is not measured where the transfer is short beside the computation.
        let quick = [row(10, None, 10.0), row(10, Some("8mbit,1ms"), 10.6)];
        let costs = fit(&quick, String::new()).unwrap();
        assert_eq!(costs.fits[0].points[0].transfer_share, None);
        // A --net row without its loopback row is refused.
        assert!(fit(&[row(14, Some("lan"), 1.0)], String::new()).is_err());
    }

    /// A synthetic variant measured as `venn plan-fit.sh` measures one: equal sets of 2^10
    /// to 2^20, and each set growing from 2^10 to 2^20 against 2^10 of the other. `cost`
    /// gives (seconds, sender's bytes, receiver's bytes) for (sender, receiver) items; each
    /// party's peak is taken to be the bytes it sends (a memory of its own set's items).
    fn measured(cost: fn(f64, f64) -> (f64, f64, f64)) -> Fit {
        let at = |log2n: u32, sender: u32, receiver: u32| {
            let (seconds, s, r) = cost((1u64 << sender) as f64, (1u64 << receiver) as f64);
            Point {
                log2n,
                seconds,
                sender_bytes: s as u64,
                receiver_bytes: r as u64,
                sender_peak: s as u64,
                receiver_peak: r as u64,
                round_trips: None,
                transfer_share: None,
            }
        };
        Fit {
            points: (10..=20).step_by(2).map(|k| at(k, k, k)).collect(),
            small_log2n: Some(10),
            larger_sender: [14, 17, 20].map(|k| at(k, k, 10)).to_vec(),
            larger_receiver: [14, 17, 20].map(|k| at(k, 10, k)).to_vec(),
            ..of(Vec::new())
        }
    }

    fn close(predicted: f64, truth: f64) -> bool {
        (predicted / truth - 1.0).abs() < 1e-6
    }

    /// Unequal sets: a direction carried by one set's items is predicted from that set
    /// alone, whichever set is larger (an OPRF's outputs from the sender's, an OKVS from
    /// the receiver's), and so is a party's memory of its own items; a time that is a sum
    /// of one part per set is that sum.
    #[test]
    fn unequal_sets_are_predicted_from_each_sets_own_part() {
        let f = measured(|s, r| (0.05 + 1e-6 * s + 3e-6 * r, 10.0 * s, 100.0 * r));
        for (s, r) in [(20, 12), (20, 14), (14, 20), (9, 17), (17, 9), (22, 14)] {
            let (s, r) = ((1u64 << s) as f64, (1u64 << r) as f64);
            let p = f.predict(s, r, None);
            assert!(close(p.sender_bytes, 10.0 * s), "{s} {r}: {p:?}");
            assert!(close(p.receiver_bytes, 100.0 * r), "{s} {r}: {p:?}");
            assert!(close(p.sender_peak, 10.0 * s), "{s} {r}: {p:?}");
            assert!(close(p.receiver_peak, 100.0 * r), "{s} {r}: {p:?}");
            assert_eq!(p.extrapolated, s.max(r) > (1 << 20) as f64);
        }
        // Where both sets' sizes are measured points, so is the time.
        let p = f.predict((1 << 20) as f64, (1 << 14) as f64, None);
        assert!(close(
            p.seconds,
            0.05 + 1e-6 * (1 << 20) as f64 + 3e-6 * 16384.0
        ));
        let p = f.predict((1 << 14) as f64, (1 << 20) as f64, None);
        assert!(close(
            p.seconds,
            0.05 + 1e-6 * 16384.0 + 3e-6 * (1 << 20) as f64
        ));
        // Between them, near it (the power law through an affine cost).
        let p = f.predict(1e6, 1e4, None);
        let truth = 0.05 + 1e-6 * 1e6 + 3e-6 * 1e4;
        assert!((p.seconds / truth - 1.0).abs() < 0.02, "{p:?} {truth}");
    }

    /// A cost that grows with the larger set only (tables sized for both) stays at the
    /// larger set's cost whatever the smaller; equal sets read the diagonal.
    #[test]
    fn a_cost_of_the_larger_set_stays_at_it() {
        let f = measured(|s, r| (1e-6 * s.max(r), 8.0 * s.max(r), 8.0 * s.max(r)));
        for (s, r) in [(20, 12), (12, 20), (18, 11)] {
            let (s, r) = ((1u64 << s) as f64, (1u64 << r) as f64);
            let p = f.predict(s, r, None);
            assert!(close(p.seconds, 1e-6 * s.max(r)), "{p:?}");
            assert!(close(p.receiver_bytes, 8.0 * s.max(r)), "{p:?}");
        }
        let p = f.predict(65536.0, 65536.0, None);
        assert!(close(p.seconds, 1e-6 * 65536.0));
    }

    /// Unequal rows make a variant's edges (one small set throughout); sets that are not
    /// powers of two, a second small size, unequal `--net` rows and rows without a peak
    /// are refused.
    #[test]
    fn unequal_rows_are_fitted_to_the_edges() {
        let rows = [
            bench_row([1 << 12, 1 << 12], None, 0.5),
            bench_row([1 << 16, 1 << 12], None, 1.0),
            bench_row([1 << 12, 1 << 18], None, 2.0),
            bench_row([1 << 12, 1 << 14], None, 0.7),
        ];
        let costs = fit(&rows, String::new()).unwrap();
        let f = &costs.fits[0];
        assert_eq!(f.small_log2n, Some(12));
        let log2ns = |p: &[Point]| p.iter().map(|p| p.log2n).collect::<Vec<_>>();
        assert_eq!(log2ns(&f.points), [12]);
        assert_eq!(log2ns(&f.larger_sender), [16]);
        assert_eq!(log2ns(&f.larger_receiver), [14, 18]);
        let unmeasured = Row {
            peak_rss_receiver_mib: None,
            ..bench_row([1 << 14, 1 << 14], None, 1.0)
        };
        for bad in [
            bench_row([10_000, 1 << 12], None, 1.0),
            bench_row([1 << 16, 1 << 10], None, 1.0),
            bench_row([1 << 16, 1 << 12], Some("lan"), 1.0),
            unmeasured,
        ] {
            let mut rows = rows.to_vec();
            rows.push(bad);
            assert!(fit(&rows, String::new()).is_err());
        }
    }

    /// A cost that is a product of one factor per set is that product, also where the
    /// smaller set's factor falls as it grows (KKRT16's hashes: the sender's items times
    /// hash functions and a stash that shrinks as the receiver's set grows).
    #[test]
    fn a_product_of_one_factor_per_set_is_that_product() {
        fn stash(r: f64) -> f64 {
            3.0 + 64.0 / r.log2()
        }
        let f = measured(|s, r| (1e-6 * s * stash(r), 10.0 * s * stash(r), 100.0 * r));
        let (s, r) = ((1u64 << 20) as f64, (1u64 << 17) as f64);
        let p = f.predict(s, r, None);
        // Bytes are measured whole: within their rounding.
        assert!(
            (p.sender_bytes / (10.0 * s * stash(r)) - 1.0).abs() < 1e-4,
            "{p:?}"
        );
        assert!(close(p.seconds, 1e-6 * s * stash(r)), "{p:?}");
    }
}
