//! How a party of `venn send`/`venn receive` reads its input within `--max-memory`, decided
//! before any of it is read (from the file's size and line breaks, or a Parquet file's
//! footer: [`Footprint`]):
//! - whole, when reading it, and then holding it beside the protocol's part for its own
//!   keys, fit;
//! - otherwise split into hash buckets on disk ([`crate::buckets`]), in segments and
//!   buckets sized to fit, where the run can go bucket by bucket;
//! - otherwise whole if reading it fits (the handshake then counts it beside the
//!   protocol for both sets, and refuses a run that would pass the budget), and if it does
//!   not, refused with the figure and the flag named.
//!
//! A pipe (`--input <(zcat keys.gz)`) cannot be measured before it is read: it is read
//! whole, and what it holds counted in the handshake. The budget is `--max-memory` less the process's base ([`venn::BASE_MEMORY`]).

use super::PartyArgs;
use crate::buckets;
use crate::input::footprint::Footprint;
use crate::input::{parquet_file, Format};
use venn::protocols::{OutputKind, Protocol, Sizes};
use venn::session::Role;
use venn::util::memory::gib;
use venn::{Error, Result};

/// How a party reads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reading {
    /// Read whole.
    Whole,
    /// Split into buckets of about `bucket_rows` rows, read in segments of
    /// `segment_bytes`.
    Split {
        bucket_rows: u64,
        segment_bytes: usize,
    },
}

/// How `args`'s input is to be read as `role` of `protocol`, or why it cannot be.
pub(super) fn choose(args: &PartyArgs, protocol: &dyn Protocol, role: Role) -> Result<Reading> {
    let budget = args.link.spec.max_memory;
    let room = budget.saturating_sub(venn::BASE_MEMORY);
    if let Some(bucket_rows) = args.bucket_rows {
        return Ok(Reading::Split {
            bucket_rows,
            segment_bytes: buckets::segment_bytes(room, &args.keys),
        });
    }
    // A pipe's size is known only once it is read: it is read whole, and counted then.
    let regular = std::fs::metadata(&args.input).map_or(true, |m| m.is_file());
    if !regular {
        return Ok(Reading::Whole);
    }
    let f = match args.keys.format {
        Format::Parquet => parquet_file::footprint(&args.input, &args.keys)?,
        Format::Csv | Format::Lines => Footprint::of_file(&args.input, &args.keys)?,
    };
    // The protocol's part for our keys alone (the peer's set is not known yet).
    let (sender, receiver) = match role {
        Role::Sender => (f.rows, 1),
        Role::Receiver => (1, f.rows),
    };
    let protocol_part = protocol.memory(role, Sizes { sender, receiver }, args.link.spec.options);
    if f.reading <= room && f.held.saturating_add(protocol_part) <= room {
        return Ok(Reading::Whole);
    }
    let in_buckets = protocol.info().role(Role::Receiver).output == OutputKind::Indices;
    if args.state.is_none() && in_buckets {
        return Ok(Reading::Split {
            bucket_rows: buckets::rows_within(room, &f, protocol, role),
            segment_bytes: buckets::segment_bytes(room, &args.keys),
        });
    }
    if f.reading <= room {
        return Ok(Reading::Whole);
    }
    let why = match args.state {
        Some(_) => "a precomputed state (--state) runs on a file read whole".to_string(),
        None => format!("'{}' cannot run bucket by bucket", protocol.info().name),
    };
    Err(Error::Memory(format!(
        "reading '{}' ({} bytes, up to {} rows) would need about {} here, more than the {} \
         allowed (--max-memory); {why}",
        args.input.display(),
        f.size,
        f.rows,
        gib(f.reading.saturating_add(venn::BASE_MEMORY)),
        gib(budget)
    )))
}
