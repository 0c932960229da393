-- A deleted dataset's name is free again: the unique (owner, name) now holds `live_name`,
-- the name while the dataset is open or sealed and '/' and its id once deleted (no name has
-- a '/'); `name` keeps the name as given.
ALTER TABLE datasets RENAME COLUMN name TO live_name;
ALTER TABLE datasets ADD COLUMN name TEXT NOT NULL DEFAULT '';
UPDATE datasets SET name = live_name;
UPDATE datasets SET live_name = '/' || id WHERE state = 'deleted';
