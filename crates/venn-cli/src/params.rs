//! `venn params`: each protocol's security model and its parameters for given set sizes.

use venn::protocols::{find, registry, Protocol, Sizes};
use venn::session::Role;
use venn::Result;

/// Prints the parameters of `protocols` (all if empty) for each `(n_sender, n_receiver)`.
pub fn print_params(protocols: &[String], sizes: &[(u64, u64)]) -> Result<()> {
    let list: Vec<&'static dyn Protocol> = if protocols.is_empty() {
        registry().to_vec()
    } else {
        protocols.iter().map(|p| find(p)).collect::<Result<_>>()?
    };
    for p in list {
        let info = p.info();
        println!("{} — {}", info.name, info.paper);
        println!("  security: {}", info.security.name());
        println!("  who learns what: {}", info.leakage);
        for r in info.roles {
            println!(
                "  {}: {}, learns {}{}; memory about {} B per peer item and {} B per own item",
                r.role.name(),
                r.security.name(),
                r.output.name(),
                if r.role == Role::Sender && info.both_allowed {
                    " (the intersection too with --both)"
                } else {
                    ""
                },
                r.peer_item_bytes,
                r.own_item_bytes
            );
        }
        println!(
            "  parameters: κ = {}, λ = {}",
            venn::COMPUTATIONAL_SECURITY,
            venn::STATISTICAL_SECURITY
        );
        let tables: Vec<_> = sizes
            .iter()
            .map(|&(sender, receiver)| {
                p.params(Sizes { sender, receiver })
                    .map(|t| (sender, receiver, t.table()))
            })
            .collect::<Result<_>>()?;
        if let Some((_, _, first)) = tables.first() {
            let mut header = format!("  {:>12} {:>12}", "n_sender", "n_receiver");
            for (k, _) in &first.0 {
                header += &format!(" {k:>10}");
            }
            println!("{header}");
            for (ns, nr, t) in &tables {
                let mut line = format!("  {:>12} {:>12}", size(*ns), size(*nr));
                for (_, v) in &t.0 {
                    line += &format!(" {v:>10}");
                }
                println!("{line}");
            }
        }
        println!();
    }
    Ok(())
}

/// `2^k` for powers of two, the number otherwise.
fn size(n: u64) -> String {
    if n.is_power_of_two() && n >= 4 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}
