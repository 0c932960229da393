-- An unbalanced-PSI dataset's authoritative data. One schema for SQLite and PostgreSQL:
-- BIGINT, TEXT and BYTEA (PostgreSQL's bytes; SQLite keeps a blob in it as it is), times
-- in Unix seconds. What is published from it
-- (the tag sets, their deltas, the manifest naming them) lives in files.

-- The dataset's settings, fixed when it is made: one row.
CREATE TABLE ub_settings (
    id BIGINT PRIMARY KEY,
    max_items BIGINT NOT NULL,
    max_query BIGINT NOT NULL,
    key_trim BIGINT NOT NULL,
    key_lowercase BIGINT NOT NULL,
    key_columns BIGINT NOT NULL,
    key_any BIGINT NOT NULL,
    created BIGINT NOT NULL
);

-- The items in the set now.
CREATE TABLE ub_items (
    item BYTEA PRIMARY KEY
);

-- Every change to the set, in order: an insert of an item the set lacked or a delete of
-- one it held. What is published covers the operations up to a sequence number (the
-- manifest's); a publish interrupted after its operations committed is finished from
-- here.
CREATE TABLE ub_ops (
    seq BIGINT PRIMARY KEY,
    op TEXT NOT NULL,
    item BYTEA NOT NULL,
    created BIGINT NOT NULL
);
