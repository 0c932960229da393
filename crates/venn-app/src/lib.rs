//! The application layer under Venn's front ends: what a party of a run does beyond the
//! protocol — read and normalise its keys ([`input`]) and the columns it reveals for its
//! matched rows ([`columns`]), agree the run plan and go bucket by
//! bucket when the input is larger than memory ([`buckets`], in [`temp_dirs`]), link to the
//! peer over TCP or TLS ([`transport`]), run ([`party`], on one connection or on parallel
//! lanes: [`lanes`]; on as many [`threads`] as the cores allow), hand its output to a sink
//! ([`sink`]: rows, a Parquet input's as Parquet, JSON, where the [`destination`] allows; [`output`]: the statistics), show progress ([`progress`]) — a
//! Thunder client's pairing glue ([`thunder`]), an unbalanced-PSI client ([`ub_client`]), and the TLS identity both front ends make
//! ([`keygen`]). How a party reads its input within `--max-memory` (whole, in buckets, or
//! not at all) is decided before any of it is read (the party's `reading`).
//!
//! The `venn` tool (`venn-cli`), the Python package (`venn-python`) and the fuzz targets
//! are front ends over it; a run's options are one [`party::RunSpec`].

pub mod buckets;
pub mod columns;
pub mod destination;
pub mod input;
pub mod join;
pub mod keygen;
pub mod lanes;
pub mod output;
mod parquet_output;
pub mod party;
pub mod progress;
pub mod run_options;
pub mod sink;
pub mod split_alignment;
pub mod temp_dirs;
pub mod threads;
pub mod thunder;
pub mod transport;
pub mod ub_client;
