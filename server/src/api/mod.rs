//! API machinery types shared by every handler: `Status` errors, object metadata,
//! query options and selectors.

pub mod byte_fields;
pub mod meta;
pub mod options;
pub mod quantity;
pub mod selectors;
pub mod status;
pub mod yaml;

pub use status::{ApiError, StatusCause};
