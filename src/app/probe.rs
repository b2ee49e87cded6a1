//! Watching the dashboard's loop from outside: what a `Probe` sees (a message received and
//! folded in, a frame flushed), the probe that watches nothing, and the one that numbers
//! frames in the terminal's title for tests that read the screen in tmux.

use crate::state::{Msg, State};

/// Watches the loop from outside (the `bench` subcommand); the dashboard uses `NoProbe`.
pub trait Probe {
    /// A message is about to be folded into the state.
    fn received(&mut self, _msg: &Msg) {}
    /// The message was folded in.
    fn applied(&mut self) {}
    /// A frame of `state` was drawn and flushed to the backend.
    fn drawn(&mut self, _state: &State) {}
}

/// The probe that watches nothing.
pub struct NoProbe;

impl Probe for NoProbe {}

/// Set (to anything) in the environment, the dashboard numbers its frames in the terminal's
/// title, so a test driving it in tmux reads a screen only between two whole frames.
pub const FRAME_TITLE_ENV: &str = "TASKRAIL_FRAME_TITLE";

/// The probe that titles the terminal `taskrail frame N` after each frame is flushed.
#[derive(Default)]
pub struct FrameTitle {
    frames: u64,
}

impl Probe for FrameTitle {
    fn drawn(&mut self, _state: &State) {
        use std::io::Write;
        self.frames += 1;
        let mut out = std::io::stdout();
        // OSC 2 (window title); a terminal that ignores it shows nothing.
        let _ = write!(out, "\x1b]2;taskrail frame {}\x07", self.frames);
        let _ = out.flush();
    }
}
