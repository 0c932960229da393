-- Who may see a dataset besides its owner: a client the owner paired with (the leader of a
-- run, which names the dataset). Anyone else is told exactly what a missing id is told.
CREATE TABLE grants (
    dataset TEXT NOT NULL REFERENCES datasets (id),
    client TEXT NOT NULL REFERENCES clients (name),
    created BIGINT NOT NULL,
    PRIMARY KEY (dataset, client)
);
