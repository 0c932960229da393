//! A dataset's key file: K_i, the seed of the upload's order and a hash of the keys
//! uploaded, kept owner-only by the client that uploaded it.

use crate::api::{self, Dataset};
use crate::auth::{read_secret_file, write_secret_file};
use crate::crypto::{self, Ciphertext, Secret};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use venn::Items;

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
    pub(super) keys_sha256: String,
    /// How the keys were taken (see [`Client::upload`]); absent in key files made before
    /// it was kept.
    #[serde(default)]
    pub(super) key_form: Option<String>,
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
    pub(super) fn new(
        server: &str,
        dataset: &Dataset,
        keys: &Items,
        form: &str,
    ) -> (DatasetKey, Vec<usize>) {
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
    pub(super) fn share(&self, label: &[u8; 32]) -> Result<Secret> {
        Ok(Secret::derive(
            "venn-thunder-R",
            &[&self.secret()?.to_bytes(), label],
        ))
    }

    /// The file of used pre-token labels: the key file's name with `.used` appended.
    pub(super) fn used_path(&self) -> Result<PathBuf> {
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
    pub(super) fn order(&self, keys: &Items) -> Vec<usize> {
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
    pub(super) fn encrypt(&self, keys: &Items, order: &[usize]) -> Result<Vec<Ciphertext>> {
        let ordered: Items = order.iter().map(|&i| keys.get(i)).collect();
        Ok(crypto::encrypt(&ordered, &self.secret()?))
    }

    /// A hash of the keys in upload order.
    pub(super) fn fingerprint(&self, keys: &Items, order: &[usize]) -> String {
        let mut h = Sha256::new();
        for &i in order {
            h.update((keys.get(i).len() as u64).to_le_bytes());
            h.update(keys.get(i));
        }
        hex::encode(h.finalize())
    }
}
