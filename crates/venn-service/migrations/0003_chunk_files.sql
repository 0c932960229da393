-- Chunk files written once: each upload of a chunk goes to a new file in the dataset's
-- directory, named in the transaction that checks the dataset is still open, so a sealed
-- chunk's file is never written over. Chunks stored before keep their name (the chunk's
-- index in eight digits).
ALTER TABLE chunks ADD COLUMN file TEXT NOT NULL DEFAULT '';
UPDATE chunks SET file = substr('0000000' || idx, length('0000000' || idx) - 7, 8);
