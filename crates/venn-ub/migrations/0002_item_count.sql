-- The number of items in the set, kept with each change: an update checks the dataset's
-- size without counting its items (a scan of the whole table: seconds at 2^24).
ALTER TABLE ub_settings ADD COLUMN items BIGINT NOT NULL DEFAULT 0;
UPDATE ub_settings SET items = (SELECT COUNT(*) FROM ub_items);
