//! The public contract: the query-string codec and the CLI's JSON report.
//! Pure: no `leptos`, no `web_sys`.

pub mod explore;
pub mod export;
pub mod learn;
pub mod query;
pub mod report;
pub mod validation;
