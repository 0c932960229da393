//! The HTTP API's bodies and limits, shared by the service, its workers and its clients.
//!
//! Control messages are JSON; points, digests and results travel as raw bytes
//! (`application/octet-stream`): a chunk is `n` 48-byte compressed G1 points, a task's
//! answer `n` digests (two parties, or a preprocessed run's raised values), `n` 288-byte
//! paired values (three) or `n` precomputed values with their digests (a pre-token's), a
//! result `m` little-endian u32 positions.

use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// The most items in one uploaded chunk (3 MiB of points). A chunk is also the unit of a
/// worker's task.
pub const MAX_CHUNK_ITEMS: usize = 1 << 16;
/// Items per uploaded chunk unless the client says otherwise (`--chunk-items`, Python's
/// `chunk_items`): 768 KiB of points, a task of a few seconds on one core.
pub const DEFAULT_CHUNK_ITEMS: usize = 1 << 14;
/// Bytes of a three-party task's answer per item: a paired value's torus encoding.
pub const VALUE_BYTES: usize = 288;
/// The longest JSON body accepted.
pub const MAX_JSON_BYTES: usize = 1 << 16;
/// The longest registration body (a name and a key): the one body read from a client that
/// is not registered yet.
pub const MAX_REGISTRATION_BYTES: usize = 1 << 10;
/// How far a request's time may be from the service's, in seconds.
pub const SIGNATURE_WINDOW: i64 = 300;
/// Bytes of a dataset or run id (hex-encoded in paths and bodies).
pub const ID_BYTES: usize = 16;
/// Bytes of an invite to register (hex-encoded).
pub const INVITE_BYTES: usize = 32;

/// `POST /v1/clients`: registers a name with an Ed25519 public key. The request is
/// signed with that key (proof of possession).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Register {
    /// The name to register (1 to 64 letters, digits, `-`, `_` or `.`).
    pub name: String,
    /// Hex of the 32-byte public key.
    pub public_key: String,
    /// An invite from the service's operator (`venn cloud invite`), where registration is
    /// by invitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite: Option<String>,
}

/// `POST /v1/datasets`: opens a dataset for upload.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewDataset {
    /// The dataset's name, unique among its owner's datasets that are not deleted.
    pub name: String,
}

/// `POST /v1/datasets/{id}/seal`: what the client uploaded, checked before sealing.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Seal {
    /// The chunks the client uploaded.
    pub chunks: u64,
    /// The items in them, all together.
    pub items: u64,
}

/// A dataset as the service describes it to its owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dataset {
    /// Its id (hex).
    pub id: String,
    /// The name its owner gave it.
    pub name: String,
    /// Its owner's name.
    pub owner: String,
    /// Where it is in its life.
    pub state: DatasetState,
    /// Items (counted when sealed; so far while open).
    pub items: u64,
    /// Chunks (counted when sealed; so far while open).
    pub chunks: u64,
}

/// The answer to a chunk upload.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChunkReceipt {
    /// The items in the chunk, as the service counted them.
    pub items: u64,
    /// Hex SHA-256 of the chunk's bytes.
    pub sha256: String,
}

/// `POST /v1/datasets/{id}/grants`: the dataset's owner lets `client` see it (its owner
/// and size) and name it in a run — the partner it paired with, before that partner
/// creates their run. To anyone else another's dataset is answered as a missing one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grant {
    /// The name of the client the dataset is granted to.
    pub client: String,
}

/// `POST /v1/runs`: intersects two or three sealed datasets, in this order (sides 0, 1,
/// 2). The caller must own one of them, and the others' owners must have granted them to
/// the caller ([`Grant`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewRun {
    /// The datasets' ids, side by side.
    pub datasets: Vec<String>,
    /// Two datasets intersected from pre-tokens' values (docs/cloud.md, Pre-tokens): each
    /// owner gives a pre-token and a scalar ([`Scalar`]) instead of a token.
    #[serde(default)]
    pub preprocessed: bool,
}

/// `POST /v1/datasets/{id}/pretokens`: a one-time pre-token `h^{R/K_i}` (docs/cloud.md) for
/// the service to precompute the dataset's values under. Its precomputation is a run of
/// one side, so the pre-token's id is that run's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewPretoken {
    /// Hex of the 96-byte compressed G2 point.
    pub token: String,
    /// Hex of 32 bytes the client derives R from (kept here for it, meaningless to the
    /// service).
    pub label: String,
}

/// A pre-token as the service describes it to the dataset's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pretoken {
    /// Its id: its precomputation's run id.
    pub id: String,
    /// The id of the dataset its values are of.
    pub dataset: String,
    /// The label its client gave with it (hex), returned as given.
    pub label: String,
    /// Where it is in its life.
    pub state: PretokenState,
}

/// The states of a lifecycle, each with the one word the API and the store's `state`
/// columns spell it with.
macro_rules! states {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// The state's word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The state a word names.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

states! {
    /// Where a dataset is in its life.
    DatasetState {
        /// Taking chunks.
        Open = "open",
        /// Complete: runs may use it.
        Sealed = "sealed",
        /// Deleted by its owner (its name free again).
        Deleted = "deleted",
    }
}

states! {
    /// Where a run is in its life.
    RunState {
        /// Waiting for its owners' tokens (or pre-tokens and scalars).
        Tokens = "tokens",
        /// Its tasks are being worked on.
        Computing = "computing",
        /// Its result is ready.
        Done = "done",
        /// Failed (the error says why).
        Failed = "failed",
    }
}

states! {
    /// Where a pre-token is in its life.
    PretokenState {
        /// Its values are being computed.
        Computing = "computing",
        /// Computed, unused: a preprocessed run may take it.
        Ready = "ready",
        /// Taken by a run: never again.
        Used = "used",
        /// Its computation failed, its dataset was deleted, or its owner withdrew it.
        Failed = "failed",
    }
}

/// What a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// Two or three datasets, a token from each owner.
    Pair,
    /// Two datasets, a pre-token and a scalar from each owner (docs/cloud.md, Pre-tokens).
    Preprocessed,
    /// A pre-token's values: one side, no result.
    Precompute,
}

/// `POST /v1/runs/{id}/scalars`: a dataset owner's part of a preprocessed run, `δ = K / R`
/// for a ready pre-token of the dataset.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scalar {
    /// The id of the owner's dataset in the run.
    pub dataset: String,
    /// The id of that dataset's ready pre-token that the scalar goes with.
    pub pretoken: String,
    /// Hex of the 32-byte little-endian scalar.
    pub delta: String,
}

/// `POST /v1/runs/{id}/tokens`: a dataset owner's token for the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Token {
    /// The id of the owner's dataset in the run.
    pub dataset: String,
    /// Hex of the 96-byte compressed G2 point.
    pub token: String,
}

/// A run as the service describes it to the owners of its datasets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Its id (hex).
    pub id: String,
    /// What it does.
    pub kind: RunKind,
    /// Where it is in its life.
    pub state: RunState,
    /// Its datasets, side by side.
    pub sides: Vec<RunSide>,
    /// Tasks done (while computing and after).
    pub tasks_done: u64,
    /// Tasks in all (while computing and after).
    pub tasks: u64,
    /// The intersection's size, once done.
    pub matches: Option<u64>,
    /// Seconds from the last token to the result, once done.
    pub seconds: Option<u64>,
    /// Why it failed, once failed.
    pub error: Option<String>,
}

impl Run {
    /// What the run still waits for, as `client` would be told: whose token (or scalar,
    /// in a preprocessed run) for which dataset, e.g. "bob's token (dataset ID)".
    pub fn awaited(&self, client: &str) -> String {
        let part = match self.kind {
            RunKind::Preprocessed => "scalar",
            _ => "token",
        };
        let missing: Vec<String> = self
            .sides
            .iter()
            .filter(|side| !side.token_given)
            .map(|side| match side.owner == client {
                true => format!("your {part} (dataset {})", side.dataset),
                false => format!("{}'s {part} (dataset {})", side.owner, side.dataset),
            })
            .collect();
        match missing.is_empty() {
            true => format!("every {part} to be taken"),
            false => missing.join(" and "),
        }
    }
}

/// One dataset of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSide {
    /// The dataset's id.
    pub dataset: String,
    /// Its owner's name.
    pub owner: String,
    /// Its items.
    pub items: u64,
    /// Whether its token (or pre-token and scalar) was given.
    pub token_given: bool,
}

/// `POST /v1/tasks/lease`'s answer: a chunk of one side of a run to work on until
/// `lease_seconds` have passed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Task {
    /// The run's id.
    pub run: String,
    /// The side of the run (its dataset's place in [`NewRun::datasets`]).
    pub side: u64,
    /// The chunk's number in that side's dataset.
    pub chunk: u64,
    /// The items in the chunk.
    pub items: u64,
    /// What to compute over them.
    #[serde(flatten)]
    pub work: Work,
    /// How long the task is this worker's; after that it may go to another.
    pub lease_seconds: u64,
}

/// What a task computes over its input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Work {
    /// Pairs stored points with a token; answers digests (`parties` 2), values (3) or
    /// precomputed values with their digests (1: a pre-token's run).
    Pair {
        /// Hex of the token.
        token: String,
        /// The run's parties: 2 or 3, or 1 for a pre-token's run.
        parties: u64,
    },
    /// Raises a pre-token's precomputed values to `exponent` and answers their digests
    /// under the `target` pre-token's id (the online step: docs/cloud.md, Pre-tokens).
    Raise {
        /// Hex of the 32-byte little-endian exponent `δ_i / δ_j`.
        exponent: String,
        /// The id of the pre-token the digests are taken under (the other side's).
        target: String,
    },
}

impl Task {
    /// The bytes of the input's items: points, or precomputed values.
    pub fn input_width(&self) -> usize {
        match self.work {
            Work::Pair { .. } => crate::crypto::ITEM_BYTES,
            Work::Raise { .. } => crate::crypto::PRECOMPUTED_BYTES,
        }
    }

    /// The bytes of the answer's items.
    pub fn answer_width(&self) -> usize {
        match self.work {
            Work::Pair { parties, .. } => answer_width(parties),
            Work::Raise { .. } => crate::crypto::DIGEST_BYTES,
        }
    }

    /// The task's path below `/v1/tasks/`.
    pub fn path(&self) -> String {
        format!("{}/{}/{}", self.run, self.side, self.chunk)
    }
}

/// The bytes of an item of a pairing task's answer in a run of `parties`: a pre-token's
/// precomputed item (1), a digest (2), a paired value (3).
pub fn answer_width(parties: u64) -> usize {
    match parties {
        1 => crate::crypto::PRECOMPUTED_BYTES,
        3 => VALUE_BYTES,
        _ => crate::crypto::DIGEST_BYTES,
    }
}

/// The most bytes of a task's input or answer.
pub const MAX_TASK_BYTES: usize = MAX_CHUNK_ITEMS * crate::crypto::PRECOMPUTED_BYTES;

/// A fresh random id, hex-encoded.
pub fn new_id() -> String {
    let mut id = [0u8; ID_BYTES];
    getrandom(&mut id);
    hex::encode(id)
}

/// Fills `bytes` from the operating system's generator.
pub fn getrandom(bytes: &mut [u8]) {
    use rand_core::{OsRng, RngCore};
    OsRng.fill_bytes(bytes)
}

/// `N` bytes from their hex form (`what` names them in the error).
pub fn from_hex<const N: usize>(text: &str, what: &str) -> crate::Result<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out)
        .map_err(|_| crate::Error::BadRequest(format!("a {what} is {N} bytes in hex")))?;
    Ok(out)
}

/// Whether `id` is an id's hex form (ids from outside go into paths of files).
pub fn is_id(id: &str) -> bool {
    id.len() == 2 * ID_BYTES && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Refuses anything but an id's hex form.
pub fn check_id(id: &str) -> crate::Result<()> {
    match is_id(id) {
        true => Ok(()),
        false => Err(crate::Error::BadRequest(format!(
            "'{}' is not an id (32 hex digits)",
            venn::peer_text(id)
        ))),
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
