//! `venn bench --net`: the papers' network settings, played by each party's writer (see
//! [`Shaping`]) so that a loopback benchmark shows what a LAN or a WAN would.

use std::time::Duration;
use venn::net::Shaping;

/// Named settings: name, rate, round trip, where it comes from.
pub(super) const PRESETS: [(&str, &str, &str, &str); 4] = [
    (
        "lan",
        "10gbit",
        "0.2ms",
        "KKRT16 §6, RR17 §6: 0.2 ms round trip; RR17-DE: 10 Gbit/s",
    ),
    (
        "wan",
        "40mbit",
        "80ms",
        "RR17-DE §7: 40 Mbit/s, 80 ms round trip",
    ),
    (
        "kkrt16-wan",
        "400mbit",
        "96ms",
        "KKRT16 §6: 50 MB/s, 96 ms round trip",
    ),
    (
        "rr17-wan",
        "60mbit",
        "95ms",
        "RR17 §6: 60 Mbit/s, 95 ms round trip",
    ),
];

/// Parses a number followed by one of `units` (suffix, factor).
fn quantity(text: &str, units: &[(&str, f64)]) -> Option<f64> {
    let t = text.trim().to_ascii_lowercase();
    units.iter().find_map(|(suffix, factor)| {
        let v: f64 = t.strip_suffix(suffix)?.trim().parse().ok()?;
        (v.is_finite() && v > 0.0).then_some(v * factor)
    })
}

/// `lan`, `wan`, another preset, or `RATE,RTT` such as `100mbit,80ms` (the round trip is
/// split evenly between the two directions).
pub(crate) fn parse_net(text: &str) -> Result<Shaping, String> {
    let spec = PRESETS
        .iter()
        .find(|p| p.0 == text)
        .map_or(text.to_string(), |p| format!("{},{}", p.1, p.2));
    let bad = || {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
        format!(
            "--net wants {} or RATE,RTT like 100mbit,80ms (rates in kbit/mbit/gbit, round \
             trips in us/ms/s), not '{text}'",
            names.join(", ")
        )
    };
    let (rate, rtt) = spec.split_once(',').ok_or_else(bad)?;
    let bits = quantity(rate, &[("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9)]).ok_or_else(bad)?;
    // Longer suffixes first: "ms" and "us" end in "s".
    let rtt = quantity(rtt, &[("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]).ok_or_else(bad)?;
    if rtt > 60.0 {
        return Err(bad());
    }
    Ok(Shaping {
        bytes_per_second: bits / 8.0,
        one_way: Duration::from_secs_f64(rtt / 2.0),
    })
}

/// [`parse_net`] for clap, keeping the text (it is passed on to the parties).
pub(crate) fn parse_net_arg(text: &str) -> Result<String, String> {
    parse_net(text).map(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_explicit_settings_parse() {
        let wan = parse_net("wan").unwrap();
        assert_eq!(wan, parse_net("40mbit,80ms").unwrap());
        assert_eq!(wan.bytes_per_second, 5e6);
        assert_eq!(wan.one_way, Duration::from_millis(40));
        let lan = parse_net("lan").unwrap();
        assert_eq!(lan.one_way, Duration::from_micros(100));
        assert_eq!(
            parse_net("1gbit,2s").unwrap().one_way,
            Duration::from_secs(1)
        );
        for bad in [
            "",
            "fast",
            "100mbit",
            "100,80ms",
            "100mbit,80",
            "0mbit,1ms",
            "-1mbit,1ms",
        ] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
    }
}
