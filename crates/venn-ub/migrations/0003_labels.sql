-- Labels: a dataset made labeled keeps with each item a label of 0 to label_len bytes
-- (label_len fixed when it is made; NULL in a dataset without labels, whose items' and
-- operations' labels are NULL). An item held given another label is an operation too
-- (op 'relabel'); an insert's or a relabel's operation keeps the label it set, so that
-- what is published can be made from the operations alone.
ALTER TABLE ub_settings ADD COLUMN label_len BIGINT;
ALTER TABLE ub_items ADD COLUMN label BYTEA;
ALTER TABLE ub_ops ADD COLUMN label BYTEA;
