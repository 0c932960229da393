-- Spec A.4's preprocessing. A pre-token's precomputation is a run of one side (parties 1)
-- whose answers are kept as the pre-token's values until a run uses them; `label` is the
-- client's (it derives the pre-token's share from it). A preprocessed run takes, per side,
-- a pre-token of the side's dataset and a scalar instead of a token; a pre-token serves
-- one run in the life of the service (the unique index).
ALTER TABLE runs ADD COLUMN preprocessed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN label TEXT;
ALTER TABLE run_sides ADD COLUMN pretoken TEXT;
ALTER TABLE run_sides ADD COLUMN delta TEXT;
CREATE UNIQUE INDEX run_sides_by_pretoken ON run_sides (pretoken);
