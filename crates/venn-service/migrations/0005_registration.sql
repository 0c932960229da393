-- Registration by invitation (`venn cloud invite`): the SHA-256 (hex) of each single-use
-- token and the client it registered. A token is used in the registering transaction, and
-- only while `used_by` is NULL; a client is registered by one token at most (UNIQUE).
CREATE TABLE invites (
    hash TEXT PRIMARY KEY,
    created BIGINT NOT NULL,
    used_by TEXT UNIQUE REFERENCES clients (name)
);
-- One row, taken first by every transaction that checks a service-wide limit (clients,
-- datasets, items), so that such transactions of different clients run one at a time.
CREATE TABLE service (id BIGINT PRIMARY KEY);
INSERT INTO service (id) VALUES (0);
