//! Rendering a [`crate::analysis::Report`]: plain text for people, JSON for programs.

pub mod json;
pub mod text;
