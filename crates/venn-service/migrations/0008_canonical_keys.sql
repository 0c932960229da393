-- Public keys kept in one form, lower-case hex, so that the unique check compares keys: a
-- key used to be kept as sent, and one key could register again in another case. Where a
-- key was registered under several names, the oldest registration keeps it; each later
-- name is disabled, `duplicate_of` naming the client that kept the key, and its key is
-- replaced by text that is no key (so no request of its verifies). Nothing moves between
-- names: a disabled client's datasets, runs and grants stay as they were, reachable by
-- nobody. The service logs every disabled client when it starts.
ALTER TABLE clients ADD COLUMN duplicate_of TEXT REFERENCES clients (name);
UPDATE clients SET duplicate_of = (
    SELECT k.name FROM clients k
    WHERE lower(k.public_key) = lower(clients.public_key)
        AND (k.created < clients.created OR (k.created = clients.created AND k.name < clients.name))
    ORDER BY k.created, k.name
    LIMIT 1
);
UPDATE clients SET public_key = 'disabled:' || name WHERE duplicate_of IS NOT NULL;
UPDATE clients SET public_key = lower(public_key) WHERE duplicate_of IS NULL;
