//! The operator's side of external workers (`venn cloud enrol-worker`, `venn cloud
//! workers`) and of registration by invitation (`venn cloud invite`), acting on the
//! service's store directly (beside a running service or not).
//!
//! Each external worker is enrolled under its own name with a fresh secret, so that one
//! whose answer fails a spot check ([`crate::spot_check`]) is quarantined alone: its
//! requests are refused from then on (also after a restart) while the others work on.
//! Enrolling the name again with `replace` gives it a new secret and lifts the quarantine.
//! The service's own pool of workers needs no identity: it runs inside the service.

use crate::error::Result;
use crate::store::{Store, Worker};
use std::path::Path;
use venn_cloud::auth::WorkerIdentity;
use venn_cloud::Error;

/// The service's store, opened for the operator's commands.
pub struct Enrolment {
    runtime: tokio::runtime::Runtime,
    store: Store,
}

impl Enrolment {
    /// Opens the store at `database` (`sqlite://FILE` or `postgres://…`) over the data
    /// directory `dir`, as `venn cloud serve` does.
    pub fn open(database: &str, dir: &Path) -> Result<Enrolment> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let store = runtime.block_on(Store::open(database, dir))?;
        Ok(Enrolment { runtime, store })
    }

    /// Enrols worker `name` with a fresh secret and writes its identity to `out`, a new
    /// file readable by its owner only (for `venn cloud worker --worker-identity`). A name
    /// enrolled already is refused unless `replace` (its old secret then stops working and
    /// its quarantine, if any, is lifted).
    pub fn enrol(&self, name: &str, replace: bool, out: &Path) -> Result<WorkerIdentity> {
        let identity = WorkerIdentity::generate(name)?;
        identity.save(out)?;
        let enrolled = self.runtime.block_on(self.store.enrol_worker(
            name,
            &identity.secret_hash(),
            replace,
        ));
        match enrolled {
            Ok(()) => Ok(identity),
            Err(e) => {
                std::fs::remove_file(out).map_err(|r| {
                    Error::Internal(format!("{e}; and removing '{}': {r}", out.display()))
                })?;
                Err(e)
            }
        }
    }

    /// Makes `count` single-use invites to register, for the operator to hand out; the
    /// store keeps only their hashes.
    pub fn invites(&self, count: u64) -> Result<Vec<String>> {
        self.runtime.block_on(self.store.create_invites(count))
    }

    /// The enrolled workers, by name; quarantined ones with when and why.
    pub fn workers(&self) -> Result<Vec<Worker>> {
        self.runtime.block_on(self.store.workers())
    }
}

impl Drop for Enrolment {
    fn drop(&mut self) {
        self.runtime.block_on(self.store.close());
    }
}
