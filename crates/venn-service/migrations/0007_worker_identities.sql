-- External workers, each enrolled by the operator under its own name (`venn cloud
-- enrol-worker`) with the SHA-256 of its secret (hex); once one of its answers fails a spot
-- check, when and why it was quarantined (NULL while trusted). A task records who leased it
-- last (NULL: the service's own pool), the one worker whose answer it takes.
CREATE TABLE workers (
    name TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL,
    created BIGINT NOT NULL,
    quarantined BIGINT,
    reason TEXT
);
ALTER TABLE tasks ADD COLUMN worker TEXT;
