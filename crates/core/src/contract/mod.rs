//! The public contract of the page, the CLI and the tests: the query-string codec
//! (every key declared once), the CLI's JSON report and the explorer's JSON.
//! Pure: serde only.

pub mod explore;
pub mod query;
pub mod report;
