//! The modal stack's entries: confirmations, the detail and result views, the input form
//! answering a task's requests, the help, and the new-task pickers and argument form.
//! Builders turn server data into them; they never send anything themselves.

use serde_json::Value;

use super::TaskKey;
use super::detail::{DocLine, json_lines};
use super::form::Form;
use super::task::TaskRow;
use crate::engine::ServerId;
use crate::mcp::ToolInfo;
use crate::sanitize::sanitize_line;

/// What a confirmation does when accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfirmOp {
    CancelTask(TaskKey),
    /// Call the task's tool again with the same arguments.
    Rerun(TaskKey),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub title: String,
    pub body: String,
    pub on_confirm: ConfirmOp,
}

/// Loading state of a task's timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineState {
    Loading,
    Loaded(Vec<super::TimelineEntry>),
    Failed(String),
}

/// The detail view of one task.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailView {
    pub key: TaskKey,
    pub scroll: usize,
    pub timeline: TimelineState,
}

/// A scrollable document (a plain tool result, or similar).
#[derive(Debug, Clone, PartialEq)]
pub struct DocView {
    pub title: String,
    pub lines: Vec<DocLine>,
    pub scroll: usize,
}

/// How one pending request is answered.
#[derive(Debug, Clone)]
pub enum SectionKind {
    /// Form-mode elicitation; its fields live in the shared `Form` under this group.
    Fields,
    /// URL-mode elicitation: consent only.
    Url { url: String },
    /// A request kind the dashboard cannot answer (only decline).
    Unsupported { method: String, json: Vec<DocLine> },
}

#[derive(Debug, Clone)]
pub struct Section {
    pub input_key: String,
    pub message: String,
    pub kind: SectionKind,
}

/// The form answering a task's pending input requests.
#[derive(Debug, Clone)]
pub struct InputForm {
    pub key: TaskKey,
    pub tool: Option<String>,
    pub sections: Vec<Section>,
    pub form: Form,
    pub error: Option<String>,
}

impl InputForm {
    pub fn build(row: &TaskRow) -> InputForm {
        let mut form = Form::default();
        let mut sections = Vec::new();
        for (group, (key, req)) in row.pending.iter().enumerate() {
            let message = sanitize_line(req.message().unwrap_or(""), 500);
            let mode = req.params.get("mode").and_then(Value::as_str);
            let kind = if req.method != "elicitation/create" {
                SectionKind::Unsupported {
                    method: sanitize_line(&req.method, 60),
                    json: json_lines(&req.params, 200),
                }
            } else if mode == Some("url") {
                SectionKind::Url {
                    url: req
                        .params
                        .get("url")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                }
            } else {
                let schema = req
                    .params
                    .get("requestedSchema")
                    .cloned()
                    .unwrap_or(Value::Null);
                let mut sub = Form::default();
                match sub.append_schema(group, &schema) {
                    Some(()) => {
                        form.fields.extend(sub.fields);
                        SectionKind::Fields
                    }
                    None => SectionKind::Unsupported {
                        method: "elicitation/create (schema not supported)".to_string(),
                        json: json_lines(&req.params, 200),
                    },
                }
            };
            sections.push(Section {
                input_key: key.clone(),
                message,
                kind,
            });
        }
        InputForm {
            key: row.key.clone(),
            tool: row.tool.clone(),
            sections,
            form,
            error: None,
        }
    }
}

/// A list to pick from (servers, tools).
#[derive(Debug, Clone, PartialEq)]
pub struct Picker<T> {
    pub items: Vec<T>,
    pub selected: usize,
}

impl<T> Picker<T> {
    pub fn new(items: Vec<T>) -> Picker<T> {
        Picker { items, selected: 0 }
    }

    pub fn move_by(&mut self, delta: isize) {
        if !self.items.is_empty() {
            let last = self.items.len() as isize - 1;
            self.selected = (self.selected as isize + delta).clamp(0, last) as usize;
        }
    }

    pub fn current(&self) -> Option<&T> {
        self.items.get(self.selected)
    }
}

/// The tool picker: `tools` is `None` while `tools/list` is in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPicker {
    pub server: ServerId,
    pub tools: Option<Picker<ToolInfo>>,
}

/// Arguments for a tool call.
#[derive(Debug, Clone)]
pub struct ToolForm {
    pub server: ServerId,
    pub tool: ToolInfo,
    pub form: Form,
    /// True when the schema could not be expressed and the JSON editor is used.
    pub json_fallback: bool,
    pub error: Option<String>,
}

impl ToolForm {
    pub fn build(server: ServerId, tool: ToolInfo) -> ToolForm {
        let schema = &tool.input_schema;
        let mut form = Form::default();
        let flat = schema.get("type").and_then(Value::as_str) == Some("object")
            && form.append_schema(0, schema).is_some();
        let (form, json_fallback) = if flat {
            (form, false)
        } else {
            (
                Form::json_editor(0, "arguments", &serde_json::json!({})),
                true,
            )
        };
        ToolForm {
            server,
            tool,
            form,
            json_fallback,
            error: None,
        }
    }
}

/// One entry of the modal stack (top = last).
#[derive(Debug, Clone)]
pub enum Modal {
    Confirm(Confirm),
    Detail(DetailView),
    Doc(DocView),
    Input(Box<InputForm>),
    Help {
        scroll: usize,
    },
    ServerPicker(Picker<ServerId>),
    ToolPicker(ToolPicker),
    ToolForm(Box<ToolForm>),
    /// Every pending input request, oldest first.
    Inbox(super::inbox::InboxView),
}
