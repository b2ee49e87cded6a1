//! The house rules of the source tree, checked without building anything else: no peers,
//! no tmux, no network.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod drivers;
mod layering;
