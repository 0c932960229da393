//! How long a client call waits, and how much it makes, when its caller does not say: the
//! one place the `venn cloud` commands' flags and the Python client's keywords take them
//! from.

/// Seconds `pair` waits for its partners to link.
pub const PAIR_TIMEOUT_SECONDS: u64 = 60;
/// Pre-tokens a dataset's owner hands in at a time.
pub const PRETOKEN_COUNT: u64 = 1;
/// Seconds the owner waits for the service to compute them (0: not at all).
pub const PRETOKEN_WAIT_SECONDS: u64 = 0;
/// Seconds `result` waits for the run to finish.
pub const RESULT_WAIT_SECONDS: u64 = 3600;
/// Seconds `result` waits for the partners' tokens, which `pair` gives at once: a run still
/// waiting for one after this is given up on (the service keeps it until its token wait).
pub const PARTNER_WAIT_SECONDS: u64 = 120;
