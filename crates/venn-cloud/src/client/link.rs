//! What partners say on their Venn link before a run: hellos that name their datasets,
//! grants and the run's id, and the secret the link agrees.

use crate::api;
use crate::auth;
use crate::crypto::Secret;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use venn::net::Channel;

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
pub(super) struct Hello {
    pub(super) dataset: String,
    pub(super) client: String,
}

/// A follower's second message: its dataset is granted to the leader, who may now name it
/// in a run.
#[derive(Serialize, Deserialize)]
pub(super) struct Granted {
    pub(super) dataset: String,
}

/// The leader's second message: the run's id.
#[derive(Serialize, Deserialize)]
pub(super) struct RunAnnounce {
    pub(super) run: String,
}

pub(super) fn send_json(link: &mut dyn Channel, value: &impl Serialize) -> Result<()> {
    link.send(&serde_json::to_vec(value).expect("serialisable"))?;
    Ok(())
}

pub(super) fn recv_json<T: for<'de> Deserialize<'de>>(link: &mut dyn Channel) -> Result<T> {
    let mut buf = Vec::new();
    link.recv_into(&mut buf, MAX_LINK_MESSAGE)?;
    serde_json::from_slice(&buf).map_err(|e| Error::BadRequest(format!("the partner sent: {e}")))
}

/// Sends our hello (our `dataset` and `client` name) and receives the partner's.
pub(super) fn exchange_hello(link: &mut dyn Channel, dataset: &str, client: &str) -> Result<Hello> {
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
pub(super) fn link_secret(
    link: &mut dyn Channel,
    run: &str,
    leader: &str,
    follower: &str,
) -> Result<Secret> {
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
