//! What a data owner runs: register an identity, upload a dataset under its own key,
//! agree on a run's key with its partners over a Venn link and hand the service its
//! token, and read back which of its rows matched.
//!
//! The dataset key K_i and the order of the upload stay in a key file on the client
//! (owner-only); the service sees points, tokens and positions only.

mod dataset_key;
pub mod defaults;
mod link;
mod used_labels;

pub use dataset_key::DatasetKey;
pub use link::{looks_like_pair, PAIR_MAGIC, PAIR_PREFIX};

use crate::api::{
    self, ChunkReceipt, Dataset, DatasetState, Grant, NewDataset, NewPretoken, NewRun, Pretoken,
    PretokenState, Register, Run, RunKind, RunState, Scalar, Seal, Token,
};
use crate::auth::Identity;
use crate::crypto::{self, Secret};
use crate::error::{Error, Result};
use crate::http::{Endpoint, Http};
use link::{exchange_hello, link_secret, recv_json, send_json, Granted, RunAnnounce};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};
use used_labels::{choose, UsedLabels};
use venn::net::Channel;
use venn::Items;

/// A client of the service, signing as `identity`.
pub struct Client {
    http: Http,
    identity: Identity,
    server: String,
}

impl Client {
    /// A client of the service at `server`.
    pub fn new(server: &Endpoint, identity: Identity) -> Result<Client> {
        Ok(Client {
            http: Http::new(server, Duration::from_secs(600))?,
            identity,
            server: server.url.trim_end_matches('/').to_owned(),
        })
    }

    /// The client's name.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// The client's identity.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Sends a signed request; returns the answer's body.
    pub fn call(&self, method: &str, path: &str, body: &[u8]) -> Result<Vec<u8>> {
        let headers = self.identity.sign(method, path, body);
        Ok(self.http.call(method, path, &headers, body)?.1)
    }

    fn json<T: for<'de> Deserialize<'de>>(
        &self,
        method: &str,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T> {
        let body = serde_json::to_vec(body).expect("serialisable");
        let answer = self.call(method, path, &body)?;
        serde_json::from_slice(&answer)
            .map_err(|e| Error::Transport(format!("an answer to {method} {path}: {e}")))
    }

    /// Registers the identity's name and public key with the service, showing `invite`
    /// (one of the operator's, from `venn cloud invite`) where registration is by
    /// invitation.
    pub fn register(&self, invite: Option<&str>) -> Result<()> {
        let r = Register {
            name: self.identity.name.clone(),
            public_key: self.identity.public_key(),
            invite: invite.map(str::to_owned),
        };
        self.call(
            "POST",
            "/v1/clients",
            &serde_json::to_vec(&r).expect("serialisable"),
        )?;
        Ok(())
    }

    /// The client's datasets.
    pub fn datasets(&self) -> Result<Vec<Dataset>> {
        self.json("GET", "/v1/datasets", &())
    }

    /// Deletes a dataset of the client's.
    pub fn delete(&self, dataset: &str) -> Result<Dataset> {
        api::check_id(dataset)?;
        self.json("DELETE", &format!("/v1/datasets/{dataset}"), &())
    }

    /// Lets `client` see a dataset of this client's and name it in a run (what a partner
    /// that follows does for the leader; [`Client::pair`] does it).
    pub fn grant(&self, dataset: &str, client: &str) -> Result<()> {
        api::check_id(dataset)?;
        let body = serde_json::to_vec(&Grant {
            client: client.to_owned(),
        })
        .expect("serialisable");
        self.call("POST", &format!("/v1/datasets/{dataset}/grants"), &body)?;
        Ok(())
    }

    /// A run the client is part of.
    pub fn run(&self, run: &str) -> Result<Run> {
        api::check_id(run)?;
        self.json("GET", &format!("/v1/runs/{run}"), &())
    }

    /// Waits until a run is done (or failed), polling; gives up after `timeout`.
    pub fn wait(&self, run: &str, timeout: Duration) -> Result<Run> {
        self.wait_with(run, timeout, timeout, &|_| {})
    }

    /// Waits until a run is done (or failed), polling, telling `progress` of the run at
    /// every poll; gives up after `timeout`, and after `tokens` if the run still waits for
    /// an owner's token (or scalar) then: a partner that never gives its token would
    /// otherwise hold the caller until the service gives up on the run (its token wait, a
    /// day by default).
    pub fn wait_with(
        &self,
        run: &str,
        tokens: Duration,
        timeout: Duration,
        progress: &dyn Fn(&Run),
    ) -> Result<Run> {
        let start = Instant::now();
        loop {
            let r = self.run(run)?;
            progress(&r);
            match r.state {
                RunState::Done => return Ok(r),
                RunState::Failed => {
                    return Err(Error::Conflict(format!(
                        "run {run} failed: {}",
                        r.error.unwrap_or_default()
                    )))
                }
                RunState::Tokens if start.elapsed() >= tokens.min(timeout) => {
                    return Err(Error::Timeout(format!(
                        "run {run}: still waiting for {} after {} s; the service keeps the \
                         run open until its token wait, so the result may be read later",
                        r.awaited(self.name()),
                        start.elapsed().as_secs()
                    )))
                }
                _ if start.elapsed() >= timeout => {
                    return Err(Error::Conflict(format!(
                        "run {run} is still {} after {} s ({} of {} tasks done)",
                        r.state,
                        timeout.as_secs(),
                        r.tasks_done,
                        r.tasks
                    )))
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Uploads `keys` (distinct, normalised) as a new dataset named `name`, under a fresh
    /// key saved first to `key_file` (which must not exist), in chunks of `chunk_items`;
    /// then seals it. `progress` hears of every chunk (items sent, of all).
    /// `form` says how the keys were taken from the user's data (trimmed, lower-cased, of
    /// how many columns): kept in the key file, so that [`result`](Client::result) on keys
    /// taken otherwise can say so.
    pub fn upload(
        &self,
        name: &str,
        keys: &Items,
        form: &str,
        key_file: &Path,
        chunk_items: usize,
        progress: &dyn Fn(u64, u64),
    ) -> Result<DatasetKey> {
        if !(1..=api::MAX_CHUNK_ITEMS).contains(&chunk_items) {
            return Err(Error::BadRequest(format!(
                "chunks hold 1 to {} items",
                api::MAX_CHUNK_ITEMS
            )));
        }
        if key_file.exists() {
            return Err(Error::Conflict(format!(
                "'{}' exists: a key file is never overwritten",
                key_file.display()
            )));
        }
        let dataset: Dataset = self.json(
            "POST",
            "/v1/datasets",
            &NewDataset {
                name: name.to_owned(),
            },
        )?;
        let (mut key, order) = DatasetKey::new(&self.server, &dataset, keys, form);
        key.save(key_file)?;
        let points = key.encrypt(keys, &order)?;
        let total = points.len() as u64;
        let mut sent = 0u64;
        for (k, chunk) in points.chunks(chunk_items).enumerate() {
            let body = chunk.as_flattened();
            let path = format!("/v1/datasets/{}/chunks/{k}", dataset.id);
            let receipt: ChunkReceipt = serde_json::from_slice(&self.call("PUT", &path, body)?)
                .map_err(|e| Error::Transport(format!("a chunk receipt: {e}")))?;
            if receipt.items != chunk.len() as u64
                || receipt.sha256 != hex::encode(Sha256::digest(body))
            {
                return Err(Error::Transport(format!(
                    "chunk {k} was not stored as sent"
                )));
            }
            sent += chunk.len() as u64;
            progress(sent, total);
        }
        let seal = Seal {
            chunks: points.len().div_ceil(chunk_items) as u64,
            items: total,
        };
        let sealed: Dataset =
            self.json("POST", &format!("/v1/datasets/{}/seal", dataset.id), &seal)?;
        if sealed.items != total || sealed.state != DatasetState::Sealed {
            return Err(Error::Transport(
                "the dataset was not sealed as sent".into(),
            ));
        }
        Ok(key)
    }

    /// Hands the service `count` fresh pre-tokens of a dataset (docs/cloud.md, Pre-tokens): each
    /// `h^{R/K_i}` for a share R derived from the dataset key and a random label. The
    /// service precomputes the dataset's values under each; a preprocessed run then needs
    /// only a scalar from this client.
    pub fn make_pretokens(&self, key: &DatasetKey, count: usize) -> Result<Vec<Pretoken>> {
        self.check_server(key)?;
        let secret = key.secret()?;
        (0..count)
            .map(|_| {
                let mut label = [0u8; 32];
                api::getrandom(&mut label);
                let token = crypto::token(&key.share(&label)?, &secret);
                self.json(
                    "POST",
                    &format!("/v1/datasets/{}/pretokens", key.dataset),
                    &NewPretoken {
                        token: hex::encode(token),
                        label: hex::encode(label),
                    },
                )
            })
            .collect()
    }

    /// A dataset's pre-tokens as the service lists them.
    pub fn pretokens(&self, key: &DatasetKey) -> Result<Vec<Pretoken>> {
        self.json(
            "GET",
            &format!("/v1/datasets/{}/pretokens", key.dataset),
            &(),
        )
    }

    /// Waits until the service has computed every pre-token of `made`.
    pub fn wait_pretokens(
        &self,
        key: &DatasetKey,
        made: &[Pretoken],
        timeout: Duration,
    ) -> Result<()> {
        let start = Instant::now();
        loop {
            let listed = self.pretokens(key)?;
            let state = |id: &str| listed.iter().find(|t| t.id == id).map(|t| t.state);
            let mut waiting = 0;
            for t in made {
                match state(&t.id) {
                    Some(PretokenState::Ready) => {}
                    Some(PretokenState::Computing) => waiting += 1,
                    other => {
                        return Err(Error::Conflict(format!(
                            "pre-token {} is {}",
                            t.id,
                            other.map_or("gone".into(), |s| s.to_string())
                        )))
                    }
                }
            }
            if waiting == 0 {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(Error::Conflict(format!(
                    "{waiting} pre-token(s) still computing after {} s",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn check_server(&self, key: &DatasetKey) -> Result<()> {
        match key.server == self.server {
            true => Ok(()),
            false => Err(Error::BadRequest(format!(
                "the key file is for the service at {}, not {}",
                key.server, self.server
            ))),
        }
    }

    /// Agrees on a run with partners over `links` and gives the service this dataset's
    /// token (docs/cloud.md, Runs), or with `preprocessed` a ready pre-token and its scalar
    /// (A.4: two parties, both asking for it).
    ///
    /// With `lead`, this client creates the run (its dataset last: with two links it is
    /// the third party, the only one linked to both others) and tells the partners its id;
    /// otherwise it waits for the run's id from its one link. Each link gives a secret S
    /// by an ephemeral Diffie–Hellman exchange bound to the run and the link's TLS
    /// connection: the service never sees it. Two parties both
    /// use S as the run key K; of three, each partner uses its link's S and the leader
    /// −(S_1 + S_2), so the three values of a common key multiply to 1.
    pub fn pair(
        &self,
        key: &DatasetKey,
        links: &mut [&mut dyn Channel],
        lead: bool,
        preprocessed: bool,
    ) -> Result<Run> {
        self.check_server(key)?;
        match (lead, links.len()) {
            (true, 2) if preprocessed => {
                return Err(Error::BadRequest(
                    "a preprocessed run has two parties".into(),
                ))
            }
            (true, 1 | 2) | (false, 1) => {}
            _ => {
                return Err(Error::BadRequest(
                    "a run has two or three parties: lead one or two links, or follow one".into(),
                ))
            }
        }
        let mut partners = Vec::with_capacity(links.len());
        for link in links.iter_mut() {
            let partner = exchange_hello(&mut **link, &key.dataset, &self.identity.name)?;
            partners.push(partner.dataset);
            // The service shows a dataset to the owner's partner only: the follower lets
            // the leader see its dataset (and name it in the run) before the leader asks.
            if lead {
                let granted: Granted = recv_json(&mut **link)?;
                if granted.dataset != partners[partners.len() - 1] {
                    return Err(Error::BadRequest(
                        "the partner granted another dataset than its own".into(),
                    ));
                }
            } else {
                self.grant(&key.dataset, &partner.client)?;
                let granted = Granted {
                    dataset: key.dataset.clone(),
                };
                send_json(&mut **link, &granted)?;
            }
        }
        let run = if lead {
            let mut datasets = partners.clone();
            datasets.push(key.dataset.clone());
            let new = NewRun {
                datasets,
                preprocessed,
            };
            let run: Run = self.json("POST", "/v1/runs", &new)?;
            for link in links.iter_mut() {
                send_json(
                    &mut **link,
                    &RunAnnounce {
                        run: run.id.clone(),
                    },
                )?;
            }
            run
        } else {
            let announced: RunAnnounce = recv_json(&mut *links[0])?;
            let run = self.run(&announced.run)?;
            let has = |d: &str| run.sides.iter().any(|s| s.dataset == d);
            if run.state != RunState::Tokens || !has(&key.dataset) || !has(&partners[0]) {
                return Err(Error::Conflict(format!(
                    "run {} is not a new run of this dataset and the partner's",
                    run.id
                )));
            }
            let kind = match preprocessed {
                true => RunKind::Preprocessed,
                false => RunKind::Pair,
            };
            if run.kind != kind {
                return Err(Error::Conflict(format!(
                    "run {} is a {:?} run; this side asked for a {kind:?} run",
                    run.id, run.kind
                )));
            }
            run
        };
        let mut secrets = Vec::with_capacity(links.len());
        for (link, partner) in links.iter_mut().zip(&partners) {
            let (leader, follower) = if lead {
                (&key.dataset, partner)
            } else {
                (partner, &key.dataset)
            };
            secrets.push(link_secret(&mut **link, &run.id, leader, follower)?);
        }
        let exponent = match &secrets[..] {
            [s] => s.clone(),
            [s1, s2] => Secret::negated_sum(s1, s2)
                .map_err(|_| Error::Conflict("the run keys cancel: run again".into()))?,
            _ => unreachable!("one or two links"),
        };
        if preprocessed {
            return self.give_scalar(key, &run.id, &exponent);
        }
        let token = crypto::token(&exponent, &key.secret()?);
        self.json(
            "POST",
            &format!("/v1/runs/{}/tokens", run.id),
            &Token {
                dataset: key.dataset.clone(),
                token: hex::encode(token),
            },
        )
    }

    /// Gives a preprocessed run a ready pre-token of the dataset and its scalar
    /// `δ = K / R`. A pre-token is used once: its label goes into the key file's list of
    /// used labels (synced) before δ leaves, and a label on that list is never used
    /// again, whatever the service says (with R used in two runs, the service could
    /// intersect the two partners).
    fn give_scalar(&self, key: &DatasetKey, run: &str, k: &Secret) -> Result<Run> {
        // Locked from the choice until the label is recorded: two runs at once on one key
        // file never take the same pre-token.
        let mut used = UsedLabels::open(&key.used_path()?)?;
        let (chosen, burned) = choose(&self.pretokens(key)?, &key.dataset, &used);
        for id in burned {
            // Recorded as used but never taken by a run (the client stopped after
            // recording it): withdrawn, so that it stops counting against the quota.
            let _ = self.withdraw_pretoken(key, &id);
        }
        let (id, label) = chosen.ok_or_else(|| {
            Error::Conflict(format!(
                "dataset {} has no ready pre-token: make some with `venn cloud pretoken` \
                 (and let the service compute them)",
                key.dataset
            ))
        })?;
        used.record(&label)?;
        drop(used);
        let delta = crypto::delta(k, &key.share(&label)?);
        let given = self.json(
            "POST",
            &format!("/v1/runs/{run}/scalars"),
            &Scalar {
                dataset: key.dataset.clone(),
                pretoken: id.clone(),
                delta: hex::encode(delta.to_bytes()),
            },
        );
        if given.is_err() {
            let _ = self.withdraw_pretoken(key, &id);
        }
        given
    }

    /// Withdraws an unused pre-token of the dataset (the service removes its values).
    pub fn withdraw_pretoken(&self, key: &DatasetKey, id: &str) -> Result<()> {
        api::check_id(id)?;
        let path = format!("/v1/datasets/{}/pretokens/{id}", key.dataset);
        self.call("DELETE", &path, b"")?;
        Ok(())
    }

    /// The key indices of `keys` (the dataset's keys as uploaded) that matched in a done
    /// run, sorted.
    /// `form` as for [`upload`](Client::upload).
    pub fn result(
        &self,
        key: &DatasetKey,
        run: &str,
        keys: &Items,
        form: &str,
    ) -> Result<Vec<usize>> {
        api::check_id(run)?;
        if let Some(uploaded) = key.key_form.as_deref().filter(|&u| u != form) {
            return Err(Error::Conflict(format!(
                "the dataset's keys were uploaded taken with {uploaded}, these with {form}: \
                 take them alike (--trim, --lowercase, --column; Python: trim=, lowercase=)"
            )));
        }
        let order = key.order(keys);
        if key.fingerprint(keys, &order) != key.keys_sha256 || keys.len() as u64 != key.items {
            return Err(Error::Conflict(
                "these keys are not the ones uploaded under this key file".into(),
            ));
        }
        let bytes = self.call(
            "GET",
            &format!("/v1/runs/{run}/result?dataset={}", key.dataset),
            b"",
        )?;
        if !bytes.len().is_multiple_of(4) || bytes.len() / 4 > keys.len() {
            return Err(Error::Transport(format!(
                "a result of {} bytes",
                bytes.len()
            )));
        }
        let mut out = Vec::with_capacity(bytes.len() / 4);
        for p in bytes.chunks_exact(4) {
            let position = u32::from_le_bytes(p.try_into().expect("4 bytes")) as usize;
            let index = *order
                .get(position)
                .ok_or_else(|| Error::Transport(format!("a position {position} out of range")))?;
            out.push(index);
        }
        out.sort_unstable();
        if out.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::Transport("a result naming a position twice".into()));
        }
        Ok(out)
    }
}
