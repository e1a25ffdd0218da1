//! The failure exit codes of the Contract (README.md) (success is 0), defined once for every error
//! type that maps to them.

/// A runtime failure: a failed batch, a short release, an interrupted wait, a network failure.
pub const RUNTIME: u8 = 1;
/// A usage or configuration error: a bad key or value, a missing API key, the cost guard.
pub const USAGE: u8 = 2;
