//! What a data owner runs: register an identity, upload a dataset under its own key,
//! agree on a run's key with its partners over a Venn link and hand the service its
//! token, and read back which of its rows matched.
//!
//! The dataset key K_i and the order of the upload stay in a key file on the client
//! (owner-only); the service sees points, tokens and positions only.

use crate::api::{
    self, ChunkReceipt, Dataset, DatasetState, Grant, NewDataset, NewPretoken, NewRun, Pretoken,
    PretokenState, Register, Run, RunKind, RunState, Scalar, Seal, Token,
};
use crate::auth::{self, read_secret_file, write_secret_file, Identity};
use crate::crypto::{self, Ciphertext, Secret};
use crate::error::{Error, Result};
use crate::http::{Endpoint, Http};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
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

/// What a client keeps of a dataset it uploaded (a key file, owner-only).
#[derive(Clone, Serialize, Deserialize)]
pub struct DatasetKey {
    /// The service it was uploaded to.
    pub server: String,
    /// Its id there.
    pub dataset: String,
    /// Its name there.
    pub name: String,
    /// K_i, hex.
    key: String,
    /// The seed of the upload's order, hex.
    order_seed: String,
    /// How many keys, and a hash of them in upload order (to check, when reading a
    /// result, that the input is the one uploaded).
    pub items: u64,
    keys_sha256: String,
    /// How the keys were taken (see [`Client::upload`]); absent in key files made before
    /// it was kept.
    #[serde(default)]
    key_form: Option<String>,
    /// The file it was loaded from or saved to (its list of used pre-token labels is
    /// beside it).
    #[serde(skip)]
    path: Option<PathBuf>,
}

impl std::fmt::Debug for DatasetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatasetKey({}, {})", self.dataset, self.name)
    }
}

impl DatasetKey {
    /// A fresh key for uploading `keys` as `dataset`, and the upload's order.
    fn new(server: &str, dataset: &Dataset, keys: &Items, form: &str) -> (DatasetKey, Vec<usize>) {
        let mut seed = [0u8; 32];
        api::getrandom(&mut seed);
        let mut k = DatasetKey {
            server: server.to_owned(),
            dataset: dataset.id.clone(),
            name: dataset.name.clone(),
            key: hex::encode(Secret::random().to_bytes()),
            order_seed: hex::encode(seed),
            items: keys.len() as u64,
            keys_sha256: String::new(),
            key_form: Some(form.to_owned()),
            path: None,
        };
        let order = k.order(keys);
        k.keys_sha256 = k.fingerprint(keys, &order);
        (k, order)
    }

    /// Loads a key file (refused if others may read it).
    pub fn load(path: &Path) -> Result<DatasetKey> {
        let mut key: DatasetKey = serde_json::from_str(&read_secret_file(path)?)
            .map_err(|e| Error::BadRequest(format!("key file '{}': {e}", path.display())))?;
        key.secret()?;
        key.path = Some(path.to_owned());
        Ok(key)
    }

    /// Saves the key file, owner-only, never over an existing file.
    pub fn save(&mut self, path: &Path) -> Result<()> {
        write_secret_file(
            path,
            serde_json::to_string_pretty(self)
                .expect("serialisable")
                .as_bytes(),
        )?;
        self.path = Some(path.to_owned());
        Ok(())
    }

    /// The share R of the pre-token labelled `label`: derived from K_i, so the key file
    /// is all a client keeps.
    fn share(&self, label: &[u8; 32]) -> Result<Secret> {
        Ok(Secret::derive(
            "venn-thunder-R",
            &[&self.secret()?.to_bytes(), label],
        ))
    }

    /// The file of used pre-token labels: the key file's name with `.used` appended.
    fn used_path(&self) -> Result<PathBuf> {
        let path = self.path.as_ref().ok_or_else(|| {
            Error::BadRequest("a dataset key without its file keeps no used pre-tokens".into())
        })?;
        let mut name = path.as_os_str().to_owned();
        name.push(".used");
        Ok(PathBuf::from(name))
    }

    /// K_i.
    pub fn secret(&self) -> Result<Secret> {
        let bytes = api::from_hex::<32>(&self.key, "key")
            .map_err(|_| Error::BadRequest("a key file with a bad key".into()))?;
        Secret::from_bytes(&bytes)
            .map_err(|_| Error::BadRequest("a key file with a bad key".into()))
    }

    /// The upload order: key indices sorted by a keyed hash of the key, so the stored
    /// order says nothing of the file's order and is the same for the same keys in any
    /// order.
    fn order(&self, keys: &Items) -> Vec<usize> {
        let mut tagged: Vec<(u128, usize)> = (0..keys.len())
            .map(|i| {
                let mut h = Sha256::new();
                h.update(self.order_seed.as_bytes());
                h.update((keys.get(i).len() as u64).to_le_bytes());
                h.update(keys.get(i));
                let tag = u128::from_le_bytes(h.finalize()[..16].try_into().expect("16"));
                (tag, i)
            })
            .collect();
        tagged.sort_unstable();
        tagged.into_iter().map(|t| t.1).collect()
    }

    /// The ciphertexts of `keys` in upload `order`.
    fn encrypt(&self, keys: &Items, order: &[usize]) -> Result<Vec<Ciphertext>> {
        let ordered: Items = order.iter().map(|&i| keys.get(i)).collect();
        Ok(crypto::encrypt(&ordered, &self.secret()?))
    }

    /// A hash of the keys in upload order.
    fn fingerprint(&self, keys: &Items, order: &[usize]) -> String {
        let mut h = Sha256::new();
        for &i in order {
            h.update((keys.get(i).len() as u64).to_le_bytes());
            h.update(keys.get(i));
        }
        hex::encode(h.finalize())
    }
}

/// The pre-token a preprocessed run takes: the first ready one of `dataset` whose label is
/// not on the used list; and the ready ones whose labels are (burned: to withdraw).
/// Labels are compared as the bytes they decode to, so no spelling of a used label (upper
/// case hex, say) passes as a new one.
fn choose(
    listed: &[Pretoken],
    dataset: &str,
    used: &UsedLabels,
) -> (Option<(String, [u8; 32])>, Vec<String>) {
    let ready = listed
        .iter()
        .filter(|p| p.state == PretokenState::Ready && p.dataset == dataset);
    let mut chosen = None;
    let mut burned = Vec::new();
    for p in ready {
        let Ok(label) = api::from_hex::<32>(&p.label, "label") else {
            continue;
        };
        if used.contains(&label) {
            burned.push(p.id.clone());
        } else if chosen.is_none() {
            chosen = Some((p.id.clone(), label));
        }
    }
    (chosen, burned)
}

/// The labels of the pre-tokens a client used, in a file beside the key file (one hex
/// label per line, owner-only, append-only), locked while open.
struct UsedLabels {
    file: std::fs::File,
    path: PathBuf,
    labels: std::collections::HashSet<[u8; 32]>,
}

impl UsedLabels {
    /// Opens (creating) and locks the list, and reads it.
    fn open(path: &Path) -> Result<UsedLabels> {
        let fail = |e: std::io::Error| {
            Error::BadRequest(format!(
                "cannot keep the used pre-tokens in '{}': {e}",
                path.display()
            ))
        };
        let created = !path.exists();
        let mut options = std::fs::OpenOptions::new();
        options.read(true).append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(fail)?;
        file.lock().map_err(fail)?;
        if created {
            venn::util::files::sync_dir(path)?;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).map_err(fail)?;
        let labels = text
            .lines()
            .map(|l| api::from_hex::<32>(l, "used label"))
            .collect::<Result<_>>()
            .map_err(|_| {
                Error::BadRequest(format!(
                    "'{}' is damaged: it holds a line that is no label",
                    path.display()
                ))
            })?;
        Ok(UsedLabels {
            file,
            path: path.to_owned(),
            labels,
        })
    }

    fn contains(&self, label: &[u8; 32]) -> bool {
        self.labels.contains(label)
    }

    /// Appends a label, synced before returning.
    fn record(&mut self, label: &[u8; 32]) -> Result<()> {
        writeln!(self.file, "{}", hex::encode(label))
            .and_then(|_| self.file.sync_all())
            .map_err(|e| {
                Error::BadRequest(format!(
                    "cannot record a used pre-token in '{}': {e}",
                    self.path.display()
                ))
            })?;
        self.labels.insert(*label);
        Ok(())
    }
}

/// The opening of a link's first frame, after its 4-byte length: a listener without TLS
/// takes only connections that open with it.
pub const PAIR_MAGIC: &[u8; 16] = b"venn-cloud-pair2";
/// How many opening bytes [`looks_like_pair`] needs.
pub const PAIR_PREFIX: usize = 4 + PAIR_MAGIC.len();
const MAX_LINK_MESSAGE: usize = 4096;

/// Whether a connection's opening bytes can be a partner's hello.
pub fn looks_like_pair(first: &[u8]) -> bool {
    first.len() >= PAIR_PREFIX
        && u32::from_le_bytes(first[..4].try_into().expect("4 bytes")) as usize <= MAX_LINK_MESSAGE
        && first[4..PAIR_PREFIX] == PAIR_MAGIC[..]
}

/// The first message on a link: the sender's dataset and name at the service.
#[derive(Serialize, Deserialize)]
struct Hello {
    dataset: String,
    client: String,
}

/// A follower's second message: its dataset is granted to the leader, who may now name it
/// in a run.
#[derive(Serialize, Deserialize)]
struct Granted {
    dataset: String,
}

/// The leader's second message: the run's id.
#[derive(Serialize, Deserialize)]
struct RunAnnounce {
    run: String,
}

fn send_json(link: &mut dyn Channel, value: &impl Serialize) -> Result<()> {
    link.send(&serde_json::to_vec(value).expect("serialisable"))?;
    Ok(())
}

fn recv_json<T: for<'de> Deserialize<'de>>(link: &mut dyn Channel) -> Result<T> {
    let mut buf = Vec::new();
    link.recv_into(&mut buf, MAX_LINK_MESSAGE)?;
    serde_json::from_slice(&buf).map_err(|e| Error::BadRequest(format!("the partner sent: {e}")))
}

/// Sends our hello (our `dataset` and `client` name) and receives the partner's.
fn exchange_hello(link: &mut dyn Channel, dataset: &str, client: &str) -> Result<Hello> {
    let mut frame = PAIR_MAGIC.to_vec();
    serde_json::to_writer(
        &mut frame,
        &Hello {
            dataset: dataset.to_owned(),
            client: client.to_owned(),
        },
    )
    .expect("serialisable");
    link.send(&frame)?;
    let mut buf = Vec::new();
    link.recv_into(&mut buf, MAX_LINK_MESSAGE)?;
    let theirs: Hello = buf
        .strip_prefix(&PAIR_MAGIC[..])
        .and_then(|json| serde_json::from_slice(json).ok())
        .ok_or_else(|| {
            Error::BadRequest("the partner's hello is not a venn cloud pair hello".into())
        })?;
    if !api::is_id(&theirs.dataset) || theirs.dataset == dataset {
        return Err(Error::BadRequest(
            "the partner named no dataset of its own".into(),
        ));
    }
    auth::check_name(&theirs.client)
        .map_err(|_| Error::BadRequest("the partner named no client".into()))?;
    Ok(theirs)
}

/// The secret of a link: an ephemeral Diffie–Hellman exchange on it, bound to the TLS
/// connection (if any), the run and both datasets (leader's first).
fn link_secret(link: &mut dyn Channel, run: &str, leader: &str, follower: &str) -> Result<Secret> {
    let binding = link.binding().unwrap_or([0; 32]);
    let mut sid = Sha256::new();
    for part in [
        &binding[..],
        run.as_bytes(),
        leader.as_bytes(),
        follower.as_bytes(),
    ] {
        sid.update((part.len() as u64).to_le_bytes());
        sid.update(part);
    }
    let sid: [u8; 32] = sid.finalize().into();
    let shared = venn::session::agree_secret(link, &sid, &mut venn::crypto::Prg::from_entropy())?;
    Ok(Secret::derive("venn-thunder-K", &[&shared, &sid]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A used label is recognised however the service spells it; ready pre-tokens with
    /// used labels are burned; the list survives reopening and refuses damage.
    #[test]
    fn used_labels_are_never_chosen_again() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("k.used");
        let pretoken = |id: &str, label: String, state| Pretoken {
            id: id.into(),
            dataset: "d".into(),
            label,
            state,
        };
        let (l1, l2) = ([1u8; 32], [0xab; 32]);
        {
            let mut used = UsedLabels::open(&path).unwrap();
            used.record(&l2).unwrap();
        }
        let used = UsedLabels::open(&path).unwrap();
        let listed = [
            pretoken("a", hex::encode(l2).to_uppercase(), PretokenState::Ready),
            pretoken("b", hex::encode(l1), PretokenState::Computing),
            pretoken("c", hex::encode(l2), PretokenState::Ready),
            pretoken("d", "not hex".into(), PretokenState::Ready),
        ];
        assert_eq!(
            choose(&listed, "d", &used),
            (None, vec!["a".into(), "c".into()])
        );
        let listed = [
            pretoken("e", hex::encode(l1), PretokenState::Ready),
            pretoken("f", hex::encode(l2), PretokenState::Ready),
        ];
        assert_eq!(
            choose(&listed, "d", &used),
            (Some(("e".into(), l1)), vec!["f".into()])
        );
        assert!(choose(&listed, "other", &used).0.is_none());
        drop(used);
        std::fs::write(&path, "zz\n").unwrap();
        assert!(UsedLabels::open(&path).is_err());
    }
}
