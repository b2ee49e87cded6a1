//! A command that cannot go on: what to tell the person, any advice, and the exit code —
//! carried up to the top of the command and printed there, once.

use super::output::say;

/// Why a command stopped: the message (said as `error: …`), an optional line of advice,
/// and the exit code (`args::exit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    code: u8,
    message: String,
    advice: Option<String>,
}

/// A command's result: its own exit code when it ran to the end, or why it stopped.
pub type CliResult<T = u8> = Result<T, CliError>;

impl CliError {
    /// `message` with exit code `code`.
    pub fn new(message: impl Into<String>, code: u8) -> CliError {
        CliError {
            code,
            message: message.into(),
            advice: None,
        }
    }

    /// The same, with a line of advice said after the error.
    pub fn advise(mut self, advice: impl Into<String>) -> CliError {
        self.advice = Some(advice.into());
        self
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// Say it on stderr (display-safe, bounded) and give its exit code.
    pub fn report(&self) -> u8 {
        say!(
            "error: {}",
            crate::sanitize::sanitize_line(&self.message, 1000)
        );
        if let Some(advice) = &self.advice {
            say!("{}", crate::sanitize::sanitize_line(advice, 1000));
        }
        self.code
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `CliError::new`, the short form every command uses.
pub(crate) fn fail(message: &str, code: u8) -> CliError {
    CliError::new(message, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_its_code_and_advice() {
        let e = fail("no such task", 5).advise("try: taskrail ls");
        assert_eq!(e.code(), 5);
        assert_eq!(e.to_string(), "no such task");
        assert_eq!(e.advice.as_deref(), Some("try: taskrail ls"));
    }
}
