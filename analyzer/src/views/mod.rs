//! What the drawing commands show, as data: a loaded recording as [`scene::Scenes`], a task's or
//! violation's [`chain`], the crash/retry [`boundaries`], the run's [`timeline`], and two runs
//! side by side ([`compare`], [`diff`]). Nothing here draws; `crate::render` does.

pub mod boundaries;
pub mod chain;
pub mod compare;
pub mod coverage;
pub mod diff;
pub mod scene;
pub mod timeline;
