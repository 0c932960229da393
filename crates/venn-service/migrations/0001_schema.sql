-- Thunder's metadata. One schema for SQLite and PostgreSQL: TEXT and BIGINT only (binary
-- values as hex), times in Unix seconds. Point data and digests live in files.

-- Registered clients and their Ed25519 public keys (hex).
CREATE TABLE clients (
    name TEXT PRIMARY KEY,
    public_key TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL
);

-- Request nonces seen within the signature window: a replayed request is refused.
CREATE TABLE nonces (
    client TEXT NOT NULL,
    nonce TEXT NOT NULL,
    seen BIGINT NOT NULL,
    PRIMARY KEY (client, nonce)
);

-- A dataset is uploaded in chunks while 'open', then 'sealed' (checked, immutable, usable
-- in runs) or 'deleted' (files removed).
CREATE TABLE datasets (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES clients (name),
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    items BIGINT NOT NULL,
    chunks BIGINT NOT NULL,
    created BIGINT NOT NULL,
    UNIQUE (owner, name)
);

-- An acknowledged chunk: its file is complete and synced before this row is committed.
CREATE TABLE chunks (
    dataset TEXT NOT NULL REFERENCES datasets (id),
    idx BIGINT NOT NULL,
    items BIGINT NOT NULL,
    first_item BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (dataset, idx)
);

-- A run intersects two or three sealed datasets once every owner has sent its token:
-- 'tokens' -> 'computing' -> 'done' (or 'failed').
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    creator TEXT NOT NULL REFERENCES clients (name),
    parties BIGINT NOT NULL,
    state TEXT NOT NULL,
    created BIGINT NOT NULL,
    started BIGINT,
    finished BIGINT,
    matches BIGINT,
    error TEXT
);

-- The datasets of a run, by side, and each owner's token once given. A token is used once
-- in the life of the service (UNIQUE): a replay into another run is refused.
CREATE TABLE run_sides (
    run TEXT NOT NULL REFERENCES runs (id),
    side BIGINT NOT NULL,
    dataset TEXT NOT NULL REFERENCES datasets (id),
    token TEXT UNIQUE,
    PRIMARY KEY (run, side)
);

-- A run's work: one task per chunk of each side, leased by a worker until lease_until
-- and redone by another if the lease expires first.
CREATE TABLE tasks (
    run TEXT NOT NULL REFERENCES runs (id),
    side BIGINT NOT NULL,
    chunk BIGINT NOT NULL,
    state TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    leases BIGINT NOT NULL,
    PRIMARY KEY (run, side, chunk)
);
CREATE INDEX tasks_by_state ON tasks (state, lease_until);
