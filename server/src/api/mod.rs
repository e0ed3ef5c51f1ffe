//! API machinery types shared by every handler: `Status` errors and object metadata.

pub mod meta;
pub mod selectors;
pub mod status;

pub use status::{ApiError, StatusCause};
