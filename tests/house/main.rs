//! The house rules of the source tree, checked without building anything else: no peers,
//! no tmux, no network. `scan` reads the tree; each other module is one rule.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod crate_map;
mod files;
mod folders;
mod layering;
mod purity;
mod scan;
