//! `ub-fhe`, the FHE query mode (CLR17; CHLR18; CMdG+21; APSI's design): the server keeps
//! its items' OPRF hashes as per-slot matching polynomials in BFV-plaintext bundles
//! ([`database`]), a client sends its items' powers encrypted under its own key and gets
//! back each bundle's polynomials evaluated at them ([`query`]): its traffic depends on
//! the server's set only through the bundle count, and the client keeps nothing between
//! queries. The sets of parameters are checked as [`params`] says.

/// Where the mode comes from.
pub const PAPER: &str = "Chen, Laine, Rindal: Fast Private Set Intersection from Homomorphic \
    Encryption (CCS 2017); Chen, Huang, Laine, Rindal: Labeled PSI from Fully Homomorphic \
    Encryption with Malicious Security (CCS 2018); Cong, Moreno, de Gouvêa et al.: Labeled PSI \
    from Homomorphic Encryption with Reduced Computation and Communication (CCS 2021); BFV by \
    fhe.rs";

/// Its security model.
pub const SECURITY: &str = "malicious client (it can ask only of keys whose OPRF values it was \
    given, each counted and limited; each query needs an OPRF round in its session and costs \
    the client's allowance 4,096 evaluations, whatever its keys; a malformed request is refused \
    before BFV), semi-honest server for the client's privacy (its OPRF answers proven, its BFV \
    answers not); BFV N = 4,096 with one 60-bit modulus (at most 109 bits) or N = 8,192 \
    with moduli of at most 218 bits (128-bit), false positives ≤ 2^-40 a query counting \
    every bundle";

/// Who learns what.
pub const LEAKAGE: &str = "The client learns which of its keys the dataset holds (a non-member \
    matches with probability ≤ 2^-40 a query and opens no label), their labels in a labeled \
    dataset, the parameter set, the most bundles an index holds (the set's size class) and \
    the version; a dataset served in ub-fhe only does not tell its size. It keeps nothing \
    between queries. The server learns when a client queries and how many keys (the OPRF \
    round's padded count), never which or whether they matched";

pub mod database;
pub mod dataset;
pub mod messages;
pub mod params;
pub mod plaintexts;
pub mod query;
pub mod session;
