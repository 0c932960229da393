//! How a party reaches its peer: the protocol its options name, the run's options, the
//! link (listening or connecting, with the spinner told what is waited for), the run plans'
//! exchange, the dealer's link, and the statistics file.

use super::{Link, PeerAddr};
use crate::destination::Destination;
use crate::output::Stats;
use crate::progress::Spinner;
use std::net::SocketAddr;
use venn::net::{Channel, Retry};
use venn::protocols::{find, DealerLink, Progress, Protocol, Security};
use venn::session::run_plan::{self, Agreed, Plan};
use venn::session::Role;
use venn::{Error, Result, RunOptions};

impl Link {
    /// The protocol, refusing an insecure one unless `--insecure` was given.
    pub(crate) fn protocol(&self) -> Result<&'static dyn Protocol> {
        let protocol = find(&self.spec.protocol)?;
        let info = protocol.info();
        if info.security == Security::Insecure && !self.spec.insecure {
            return Err(Error::Usage(format!(
                "protocol '{}' is INSECURE (a benchmark baseline that reveals hashes of all items); \
                 pass --insecure if you really mean it",
                info.name
            )));
        }
        self.spec.options.check(info, protocol.accepts())?;
        Ok(protocol)
    }

    /// The run's options on `threads` threads (the link's, [bounded](threads::bounded)),
    /// for a party that holds no input yet (a run sets what its input holds:
    /// [`RunOptions::input_memory`]).
    pub(super) fn options<'a>(
        &self,
        protocol: &'static dyn Protocol,
        role: Role,
        both: bool,
        threads: usize,
        progress: Option<&'a dyn Progress>,
        dealer: Option<&'a DealerLink<'a>>,
    ) -> RunOptions<'a> {
        RunOptions {
            protocol,
            role,
            both,
            options: self.spec.options,
            max_peer_items: self.spec.max_peer_items,
            max_memory: self.spec.max_memory,
            input_memory: 0,
            threads,
            seed: None,
            progress,
            dealer,
            upload_deadline: self.spec.upload_deadline,
            in_buckets: None,
        }
    }

    /// Sends our run plan and receives the peer's ([`run_plan::exchange`]), under this
    /// link's bounds; a key-form mismatch the user allowed is warned of here.
    pub(crate) fn exchange(
        &self,
        chan: &mut dyn Channel,
        plan: Plan,
        role: Role,
    ) -> Result<Agreed> {
        let agreed = run_plan::exchange(
            chan,
            plan,
            role,
            self.spec.max_peer_items,
            self.spec.key_mismatch,
        )?;
        if let Some(why) = &agreed.warning {
            eprintln!("venn: warning: {why}");
        }
        Ok(agreed)
    }

    /// How to open the link to the dealer, if `--dealer` was given.
    pub(super) fn dealer_link(&self) -> Option<impl Fn() -> Result<Box<dyn Channel>> + Sync + '_> {
        let d = self.dealer.as_ref()?;
        Some(move || d.transport.connect(&d.addr, self.spec.timeout, &mut |_| {}))
    }

    /// Checks the peer's address (or ours to listen on) against the TLS rule: done before
    /// the input is read, so that a refusal comes first.
    pub(crate) fn check_endpoint(&self) -> Result<()> {
        match &self.peer {
            PeerAddr::Listen(a) | PeerAddr::Connect(a) => self.transport.check_endpoint(a),
        }
    }

    /// Reaches the peer; `spinner` (on a terminal) shows what is waited for: the address
    /// listened on, or the one connected to with why the last attempt failed.
    pub(crate) fn connect(
        &self,
        on_bound: impl FnOnce(SocketAddr),
        spinner: Option<&Spinner>,
    ) -> Result<Box<dyn Channel>> {
        let timeout = self.spec.timeout;
        let chan = match &self.peer {
            PeerAddr::Listen(a) => self.transport.listen(a, timeout, |bound| {
                on_bound(bound);
                if let Some(s) = spinner {
                    s.phase(&format!("waiting for the peer on {bound}"));
                }
            }),
            PeerAddr::Connect(a) => {
                if let Some(s) = spinner {
                    s.phase(&format!("connecting to {a}"));
                }
                let mut retrying = |r: &Retry| {
                    if let Some(s) = spinner {
                        s.message(&r.to_string());
                    }
                };
                self.transport.connect(a, timeout, &mut retrying)
            }
        }?;
        if let Some(s) = spinner {
            s.phase("agreeing on the run with the peer");
        }
        Ok(chan)
    }

    /// Writes the statistics to `--stats-json`, if given.
    pub(super) fn write_stats(&self, stats: &Stats) -> Result<()> {
        match &self.stats_json {
            Some(path) => Destination::of(path, "--stats-json")?.write(|w| {
                serde_json::to_writer_pretty(&mut *w, stats)?;
                w.write_all(b"\n")
            }),
            None => Ok(()),
        }
    }
}
