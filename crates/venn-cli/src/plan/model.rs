//! `venn plan`'s cost model: each protocol variant's time and traffic at a thread count,
//! from `venn bench` rows of this build (`venn plan --fit`), and how a network adds to
//! them.
//!
//! Time and traffic are kept as the points measured on loopback (set sizes 2^k), and read
//! between two points as the power law through them (a protocol whose tables have a
//! floor, such as PSWW18's, is flat there; a linear one is linear); beyond the largest
//! point, at the last segment's cost per item; below the smallest, at the first segment's
//! power. A network adds its transfer time — both directions' bytes at the link's rate,
//! times the share of it the protocol was measured to wait for on a slow link (its
//! directions may overlap each other and its computation) — and the round trips the run
//! waits on its peer — counted from runs on a slow-latency
//! link (`--net` in the rows fitted): their time over the loopback time, in round trips,
//! read through the sizes counted as a power law too.

use crate::bench::{parse_net, Row};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use venn::{Error, Result};

/// What was measured at one set size.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub log2n: u32,
    /// The slower party's seconds from the handshake to its output (both phases).
    pub seconds: f64,
    /// Bytes the sender sent, and the receiver.
    pub sender_bytes: u64,
    pub receiver_bytes: u64,
    /// Round trips the run waited on its peer, where counted at this size.
    pub round_trips: Option<f64>,
    /// The share of both directions' bytes at the link's rate the run took longer on a
    /// slow link, where measured at this size: 1 for a protocol whose directions take
    /// turns, 1/2 for one that sends both ways at once, less where it computes meanwhile.
    pub transfer_share: Option<f64>,
}

/// One protocol variant at one thread count per party.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Fit {
    /// `venn bench`'s label: the protocol's name and its options (`kbm23/s32/dealer`).
    pub protocol: String,
    pub threads: usize,
    /// By set size, ascending.
    pub points: Vec<Point>,
}

/// The committed fit (`costs.json`): where it was measured and each variant's [`Fit`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Costs {
    /// Machine, commit, date and command of the rows fitted.
    pub measured: String,
    pub fits: Vec<Fit>,
}

/// A link: its rate and round trip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Net {
    pub bytes_per_second: f64,
    pub rtt: f64,
}

impl Net {
    /// `lan`, `wan`, another `venn bench --net` preset, or `RATE,RTT`.
    pub fn parse(text: &str) -> Result<Net> {
        let s = parse_net(text).map_err(Error::Usage)?;
        Ok(Net {
            bytes_per_second: s.bytes_per_second,
            rtt: 2.0 * s.one_way.as_secs_f64(),
        })
    }
}

/// A prediction for one run.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Predicted {
    pub seconds: f64,
    /// Of `seconds`: the link's share (transfer and round trips).
    pub network_seconds: f64,
    pub sender_bytes: f64,
    pub receiver_bytes: f64,
    /// Whether n lies beyond the largest size measured (read at its last cost per item).
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

impl Fit {
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

    /// The run of `n` items per party over `net` (loopback without one).
    pub fn predict(&self, n: f64, net: Option<Net>) -> Predicted {
        let along = |f: fn(&Point) -> f64| {
            let xy: Vec<(f64, f64)> = (self.points.iter())
                .map(|p| ((1u64 << p.log2n) as f64, f(p)))
                .collect();
            interpolate(&xy, n)
        };
        let sender_bytes = along(|p| p.sender_bytes as f64);
        let receiver_bytes = along(|p| p.receiver_bytes as f64);
        let network_seconds = net.map_or(0.0, |net| {
            let transfer = (sender_bytes + receiver_bytes) / net.bytes_per_second;
            transfer * self.transfer_share(n) + self.round_trips(n) * net.rtt
        });
        let largest = self.points.last().map_or(0, |p| p.log2n);
        Predicted {
            seconds: along(|p| p.seconds) + network_seconds,
            network_seconds,
            sender_bytes,
            receiver_bytes,
            extrapolated: n > (1u64 << largest) as f64,
        }
    }
}

/// The least round trip of a `--net` row that counts round trips (seconds).
const ROUND_TRIP_PROBE: f64 = 0.01;

/// Fits `rows` (what `venn bench --json` printed): plaintext rows on loopback give each
/// variant's points, rows with `--net` its round trips (a link of [`ROUND_TRIP_PROBE`] or
/// more) or its transfer share (a link of less, where its bytes take at least half its
/// loopback time: 1 where they do not). A variant with a `--net`
/// row and no loopback row at the same size and thread count is refused.
pub fn fit(rows: &[Row], measured: String) -> Result<Costs> {
    let plain = |r: &&Row| !r.tls && !r.precomputed;
    let mut fits: BTreeMap<(String, usize), Fit> = BTreeMap::new();
    for r in rows.iter().filter(plain).filter(|r| r.net.is_none()) {
        if !r.verified {
            return Err(Error::Usage(format!(
                "{} at 2^{} did not verify: nothing is fitted to it",
                r.protocol, r.log2n
            )));
        }
        let fit = (fits.entry((r.protocol.clone(), r.threads))).or_insert_with(|| Fit {
            protocol: r.protocol.clone(),
            threads: r.threads,
            points: Vec::new(),
        });
        let mib = (1u64 << 20) as f64;
        let point = Point {
            log2n: r.log2n,
            seconds: r.total_s,
            sender_bytes: (r.mib_sender_to_receiver * mib).round() as u64,
            receiver_bytes: (r.mib_receiver_to_sender * mib).round() as u64,
            round_trips: None,
            transfer_share: None,
        };
        match fit.points.iter_mut().find(|p| p.log2n == r.log2n) {
            // A size measured twice: the faster run (the other was slowed by the machine).
            Some(p) if p.seconds > point.seconds => *p = point,
            Some(_) => {}
            None => fit.points.push(point),
        }
    }
    // Round trips first, from the links of 10 ms of round trip or more (fast enough that
    // their transfer time hardly counts); then the transfer share, from the others (slow
    // enough that it counts most), beyond the round trips counted.
    for counting_round_trips in [true, false] {
        for r in rows.iter().filter(plain) {
            let Some(net) = &r.net else { continue };
            let net = Net::parse(net)?;
            let point = (fits.get_mut(&(r.protocol.clone(), r.threads)))
                .and_then(|f| f.points.iter_mut().find(|p| p.log2n == r.log2n));
            let point = point.ok_or_else(|| {
                Error::Usage(format!(
                    "{} at 2^{} with {} threads was measured with --net only: fit it on \
                     loopback too",
                    r.protocol, r.log2n, r.threads
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
        fit.points.sort_by_key(|p| p.log2n);
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
            round_trips: None,
            transfer_share: None,
        }
    }

    fn of(points: Vec<Point>) -> Fit {
        Fit {
            protocol: "p".into(),
            threads: 1,
            points,
        }
    }

    #[test]
    fn measured_points_are_read_back_and_between_them_a_power_law() {
        let f = of(vec![point(10, 1.0), point(12, 4.0), point(14, 4.0)]);
        for (log2n, s) in [(10, 1.0), (12, 4.0), (14, 4.0)] {
            assert!((f.predict((1u64 << log2n) as f64, None).seconds - s).abs() < 1e-9);
        }
        // Linear between 2^10 and 2^12 (power 1), flat after (a floor).
        assert!((f.predict(2048.0, None).seconds - 2.0).abs() < 1e-9);
        assert!((f.predict(8192.0, None).seconds - 4.0).abs() < 1e-9);
        assert_eq!(f.predict(512.0, None).seconds, 0.5);
        // Bytes: linear, and the direction with none stays at none.
        let p = f.predict(3000.0, None);
        assert!((p.sender_bytes - 300_000.0).abs() < 1e-6);
        assert_eq!(p.receiver_bytes, 0.0);
    }

    #[test]
    fn beyond_the_largest_point_the_last_cost_per_item_holds() {
        let f = of(vec![point(10, 1.0), point(11, 3.0)]);
        let p = f.predict(4096.0, None);
        // 2 s per 1024 items more.
        assert!((p.seconds - 7.0).abs() < 1e-9);
        assert!(p.extrapolated);
        assert!(!f.predict(2048.0, None).extrapolated);
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
        let p = f.predict(1024.0, Some(net));
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

    /// Fitting `venn bench` rows: the points measured, the faster of a size measured
    /// twice, and the round trips a `--net` row waited beyond its loopback time.
    #[test]
    fn rows_are_fitted() {
        let row = |log2n, net: Option<&str>, total_s| {
            let json = serde_json::json!({
                "protocol": "rr22", "tls": false, "log2n": log2n, "threads": 1, "net": net,
                "offline_s": 0.0, "online_s": total_s, "total_s": total_s,
                "mib_sender_to_receiver": 1.0, "mib_receiver_to_sender": 0.0,
                "peak_rss_sender_mib": null, "peak_rss_receiver_mib": null,
                "memory_model_sender_mib": 1.0, "memory_model_receiver_mib": 1.0,
                "ratio_to_naive": null, "ratio_to_kkrt16": null, "ratio_to_plaintext": null,
                "intersection": 1, "verified": true, "precomputed": false,
                "state_mib_sender": null, "state_mib_receiver": null,
            });
            serde_json::from_value::<Row>(json).unwrap()
        };
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
        // The share measured at 2^10 holds at 2^12 too (where the rows say 1 MiB again).
        let slow = Net::parse("8mbit,100ms").unwrap();
        let p = f.predict(4096.0, Some(slow));
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
}
