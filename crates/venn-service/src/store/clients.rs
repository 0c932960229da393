//! Clients in the store: registration (a key once, a name once, by invitation where the
//! service asks for one), the operator's invites (kept as hashes) and signed requests'
//! nonces (a replay is refused).

use super::{at_most, lock_service, Store};
use crate::error::Result;
use sqlx::Row;
use venn_cloud::api::{self, now};
use venn_cloud::auth::PublicKey;
use venn_cloud::Error;

/// The hash under which an invite is kept (hex SHA-256).
fn invite_hash(invite: &str) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(invite.as_bytes()))
}

/// Refuses an invite that is unknown or used.
async fn check_invite_unused(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    invite: &str,
) -> Result<()> {
    let unused = sqlx::query("SELECT 1 FROM invites WHERE hash = $1 AND used_by IS NULL")
        .bind(invite_hash(invite))
        .fetch_optional(&mut **tx)
        .await?;
    unused.map(|_| ()).ok_or_else(invite_refused)
}

fn invite_refused() -> crate::Error {
    Error::Forbidden("this invite is not one of this service's, or was used".into()).into()
}

/// Marks `invite` used by `client`, refusing one that is unknown or used.
async fn use_invite(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    invite: &str,
    client: &str,
) -> Result<()> {
    let used = sqlx::query("UPDATE invites SET used_by = $1 WHERE hash = $2 AND used_by IS NULL")
        .bind(client)
        .bind(invite_hash(invite))
        .execute(&mut **tx)
        .await?;
    match used.rows_affected() {
        1 => Ok(()),
        _ => Err(invite_refused()),
    }
}

impl Store {
    /// Registers `name` with `public_key` (kept in its canonical form, so that the unique
    /// check compares keys), one of at most `max_clients`, using `invite` if given
    /// (refused unless it is an invite not used before); a name or a key is registered
    /// once. All in one transaction: an invite registers one client.
    pub async fn register(
        &self,
        name: &str,
        public_key: &PublicKey,
        invite: Option<&str>,
        max_clients: u64,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_service(&mut tx).await?;
        // The invite first: without one, nothing (not even whether a name is taken) is told.
        if let Some(invite) = invite {
            check_invite_unused(&mut tx, invite).await?;
        }
        let clients: i64 = sqlx::query("SELECT COUNT(*) FROM clients")
            .fetch_one(&mut *tx)
            .await?
            .get(0);
        at_most(clients as u64 + 1, max_clients, || {
            format!("this service registers at most {max_clients} clients, and has them")
        })?;
        let inserted = sqlx::query(
            "INSERT INTO clients (name, public_key, created) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(name)
        .bind(public_key.as_hex())
        .bind(now())
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "the client name '{name}' or its key is registered already"
            ))
            .into());
        }
        if let Some(invite) = invite {
            use_invite(&mut tx, invite, name).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Makes `count` single-use invites to register, keeping only their hashes.
    pub async fn create_invites(&self, count: u64) -> Result<Vec<String>> {
        let mut tx = self.pool.begin().await?;
        let mut invites = Vec::new();
        for _ in 0..count {
            let mut token = [0u8; api::INVITE_BYTES];
            api::getrandom(&mut token);
            let token = hex::encode(token);
            sqlx::query("INSERT INTO invites (hash, created) VALUES ($1, $2)")
                .bind(invite_hash(&token))
                .bind(now())
                .execute(&mut *tx)
                .await?;
            invites.push(token);
        }
        tx.commit().await?;
        Ok(invites)
    }

    /// A registered client's public key (hex); refused for a client disabled because its
    /// key was registered first under another name (see [`Store::disabled_clients`]).
    pub async fn public_key(&self, name: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT public_key, duplicate_of FROM clients WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) if r.get::<Option<String>, _>(1).is_some() => {
                Err(Error::Unauthenticated(format!(
                    "client {name} is disabled: its key was registered first under another \
                     name, which keeps it (ask the service's operator)"
                ))
                .into())
            }
            row => Ok(row.map(|r| r.get(0))),
        }
    }

    /// The clients disabled, by name, with the client that kept their key: in a store of
    /// a version that compared keys as sent, one key could be registered under several
    /// names (in different cases); the migration to canonical keys kept the oldest
    /// registration and disabled the others, moving nothing between them.
    pub async fn disabled_clients(&self) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query(
            "SELECT name, duplicate_of FROM clients WHERE duplicate_of IS NOT NULL ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Records a signed request's nonce; refuses one seen before (a replay). Nonces older
    /// than the signature window are forgotten: their requests are refused by time.
    pub async fn remember_nonce(&self, client: &str, nonce: &str, at: i64) -> Result<()> {
        sqlx::query("DELETE FROM nonces WHERE seen < $1")
            .bind(at - 2 * api::SIGNATURE_WINDOW)
            .execute(&self.pool)
            .await?;
        let inserted = sqlx::query(
            "INSERT INTO nonces (client, nonce, seen) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(client)
        .bind(nonce)
        .bind(at)
        .execute(&self.pool)
        .await?;
        match inserted.rows_affected() {
            1 => Ok(()),
            _ => Err(Error::Unauthenticated("a replayed request".into()).into()),
        }
    }
}
