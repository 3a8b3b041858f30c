//! The public contract of the page, the CLI and the tests: what a link holds
//! ([`Settings`]), every query key declared once ([`keys`]), the query-string codec,
//! the CLI's JSON report, the explorer's JSON and `--json`'s object of query keys.
//! Pure: serde only.

pub mod accuracy;
pub mod explore;
pub mod keys;
mod nulls;
pub mod query;
pub mod report;
mod settings;

pub use settings::{FitColour, Settings, View};
