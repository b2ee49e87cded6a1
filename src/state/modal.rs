//! The modal stack's entries: confirmations, the detail and result views, the views
//! answering input (the form, URL consent, sampling) and whose requests they answer, the
//! roots view, the help, and the new-task pickers and argument form.
//! Builders turn server data into them; they never send anything themselves.

use std::collections::BTreeMap;

use serde_json::Value;

use super::TaskKey;
use super::consent::ConsentView;
use super::detail::{DocLine, json_lines};
use super::form::Form;
use super::offers::Answering;
use super::roots::RootsView;
use super::sampling::SamplingView;
use super::task::TaskRow;
use crate::engine::ServerId;
use crate::mcp::{InputRequest, ToolInfo};
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

/// Whose requests an answering view answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum InputTarget {
    /// A task's input requests.
    Task(TaskKey),
    /// A request outside any task, by the engine's key.
    Foreground { server: ServerId, key: String },
}

impl InputTarget {
    pub fn server(&self) -> &ServerId {
        match self {
            InputTarget::Task(k) => &k.server,
            InputTarget::Foreground { server, .. } => server,
        }
    }
}

/// How one pending request is answered in the input form.
#[derive(Debug, Clone)]
pub enum SectionKind {
    /// Form-mode elicitation; its fields live in the shared `Form` under this group.
    Fields,
    /// A request kind the form cannot answer (only decline).
    Unsupported { method: String, json: Vec<DocLine> },
}

#[derive(Debug, Clone)]
pub struct Section {
    pub input_key: String,
    pub message: String,
    pub kind: SectionKind,
}

/// The form answering form-mode requests (a task's, or one outside any task).
#[derive(Debug, Clone)]
pub struct InputForm {
    pub target: InputTarget,
    /// Sanitized: "Input for deploy 1a2b3c4d", "Input during fetch_data".
    pub title: String,
    pub sections: Vec<Section>,
    pub form: Form,
    pub error: Option<String>,
}

impl InputForm {
    /// The form of `requests` (form-mode elicitations; anything else is shown as JSON).
    pub fn build(
        target: InputTarget,
        title: String,
        requests: &BTreeMap<String, InputRequest>,
    ) -> InputForm {
        let mut form = Form::default();
        let mut sections = Vec::new();
        for (group, (key, req)) in requests.iter().enumerate() {
            let message = sanitize_line(req.message().unwrap_or(""), 500);
            let kind = if Answering::of(req) != Answering::Form {
                SectionKind::Unsupported {
                    method: sanitize_line(&req.method, 60),
                    json: json_lines(&req.params, 200),
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
            target,
            title,
            sections,
            form,
            error: None,
        }
    }

    /// The form of a task's pending requests.
    pub fn for_task(row: &TaskRow) -> InputForm {
        InputForm::build(
            InputTarget::Task(row.key.clone()),
            task_title(row),
            &row.pending,
        )
    }
}

/// "Input for deploy 1a2b3c4d".
pub fn task_title(row: &TaskRow) -> String {
    let tool = row
        .tool
        .as_deref()
        .map(|t| sanitize_line(t, 30))
        .unwrap_or_else(|| "task".into());
    format!("Input for {tool} {}", row.short_id())
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
    /// Consent to a URL-mode request.
    Consent(Box<ConsentView>),
    /// A sampling request: read it, type or produce the reply.
    Sampling(Box<SamplingView>),
    /// What a server is offered as roots, and what it was sent.
    Roots(RootsView),
}

impl Modal {
    /// The requests an answering view answers.
    pub fn target(&self) -> Option<&InputTarget> {
        match self {
            Modal::Input(f) => Some(&f.target),
            Modal::Consent(c) => Some(&c.target),
            Modal::Sampling(v) => Some(&v.target),
            _ => None,
        }
    }
}
