-- Query modes: which a dataset serves, fixed when it is made — 1 ub-cache (its tags
-- published), 2 ub-fhe (a BFV database of its items), 3 both. Datasets made before
-- served ub-cache only.
ALTER TABLE ub_settings ADD COLUMN modes BIGINT NOT NULL DEFAULT 1;
