//! Unbalanced PSI: a server's large set, updated over time, queried by many clients with
//! small sets. Every query starts with one round of RFC 9497's OPRF under the dataset's
//! long-lived key ([`crate::crypto::oprf`]): the round's messages and the server's answer
//! ([`oprf_round`]), and the limit on how many evaluations a client gets
//! ([`rate`]) — the OPRF is what stops a client from testing guesses offline, so its
//! evaluations are what is limited. In `ub-cache` ([`cache`]) the client holds the
//! server's tags, a compact sorted set ([`tag_set`]), and looks its answers up there.
//! Labels, a server item's data a client learns with a match, are encrypted under a key
//! from the item's OPRF value ([`labels`]); a `ub-cache` client holds them in a table
//! beside its tags ([`label_table`]). What a client and a server say to each other,
//! whatever the link, is [`link`].

pub mod cache;
#[cfg(feature = "bfv")]
pub mod fhe;
pub mod label_table;
pub mod labels;
pub mod link;
pub mod oprf_round;
pub mod rate;
pub mod tag_set;
