//! The `/` filter line: the typed pattern, its compiled case-insensitive regex (the last
//! valid one while an invalid one is typed, with the error shown inline) and which rows match.

use regex::{Regex, RegexBuilder};
use tui_input::{Input, InputRequest};

use crate::state::task::TaskRow;

/// The `/` filter line.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub input: Input,
    pub editing: bool,
    /// The compiled pattern (the last valid one while an invalid one is being typed).
    pub regex: Option<Regex>,
    pub error: Option<String>,
}

impl Filter {
    /// Replace the pattern (`:filter REGEX`); empty clears it.
    pub fn set(&mut self, text: &str) {
        self.input = Input::new(text.to_string());
        self.recompile();
    }

    pub fn edit(&mut self, req: InputRequest) {
        self.input.handle(req);
        self.recompile();
    }

    fn recompile(&mut self) {
        let text = self.input.value();
        if text.is_empty() {
            self.regex = None;
            self.error = None;
            return;
        }
        match RegexBuilder::new(text)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
        {
            Ok(re) => {
                self.regex = Some(re);
                self.error = None;
            }
            Err(e) => {
                let msg = e.to_string();
                let last = msg.lines().rev().find(|l| !l.trim().is_empty());
                let last = last.unwrap_or("invalid regex").trim();
                self.error = Some(last.trim_start_matches("error:").trim().to_string());
            }
        }
    }

    pub(super) fn matches(&self, row: &TaskRow) -> bool {
        let Some(re) = &self.regex else {
            return true;
        };
        row.tool.as_deref().is_some_and(|t| re.is_match(t))
            || re.is_match(row.key.task_id.as_str())
            || row.status().is_some_and(|s| re.is_match(s.as_str()))
            || (row.tool_error() && re.is_match("tool error"))
            || row
                .task
                .as_ref()
                .and_then(|t| t.status_message.as_deref())
                .is_some_and(|m| re.is_match(m))
    }
}
