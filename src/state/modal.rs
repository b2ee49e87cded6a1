//! The modal stack's entries: confirmations, the detail and result views, the views
//! answering input (the form, URL consent, sampling) and whose requests they answer, the
//! roots view, the help, and the new-task pickers and argument form.
//! Builders turn server data into them; they never send anything themselves.

use std::collections::BTreeMap;

use serde_json::Value;
use tui_input::{Input, InputRequest as EditRequest};

use super::TaskKey;
use super::doc::{DocLine, json_lines};
use super::form::Form;
use super::input_target::InputTarget;
use super::offers::Answering;
use super::task::TaskRow;
use super::views::consent::ConsentView;
use super::views::roots::RootsView;
use super::views::sampling::SamplingView;
use crate::engine::ServerId;
use crate::mcp::{InputRequest, ToolInfo};
use crate::sanitize::sanitize_line;
use crate::state::widths;

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
            let message = sanitize_line(req.message().unwrap_or(""), widths::PROMPT_MESSAGE);
            let kind = if Answering::of(req) != Answering::Form {
                SectionKind::Unsupported {
                    method: sanitize_line(&req.method, widths::METHOD_IN_VIEW),
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
        .map(|t| sanitize_line(t, widths::KEY))
        .unwrap_or_else(|| "task".into());
    format!("Input for {tool} {}", row.short_id())
}

/// What a picker's `/` query is matched against.
pub trait PickerItem {
    fn search_text(&self) -> String;
}

impl PickerItem for ServerId {
    fn search_text(&self) -> String {
        self.as_str().to_string()
    }
}

impl PickerItem for ToolInfo {
    fn search_text(&self) -> String {
        let mut text = self.name.clone();
        for part in [&self.title, &self.description].into_iter().flatten() {
            text.push(' ');
            text.push_str(part);
        }
        text
    }
}

/// A list to pick from (servers, tools), narrowed as you type a `/` query.
#[derive(Debug, Clone)]
pub struct Picker<T> {
    pub items: Vec<T>,
    /// Indices into `items` of the entries the query lets through, in order.
    pub shown: Vec<usize>,
    /// Position in `shown`.
    pub selected: usize,
    /// The query (case-insensitive words, each found somewhere in the entry).
    pub query: Input,
    /// The query line has the keys.
    pub editing: bool,
}

impl<T: PickerItem> Picker<T> {
    pub fn new(items: Vec<T>) -> Picker<T> {
        Picker {
            shown: (0..items.len()).collect(),
            items,
            selected: 0,
            query: Input::default(),
            editing: false,
        }
    }

    pub fn current(&self) -> Option<&T> {
        self.shown
            .get(self.selected)
            .and_then(|&i| self.items.get(i))
    }

    fn refilter(&mut self) {
        let current = self.shown.get(self.selected).copied();
        let words: Vec<String> = self
            .query
            .value()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.shown = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| {
                let text = item.search_text().to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = current
            .and_then(|c| self.shown.iter().position(|&i| i == c))
            .unwrap_or(0);
    }
}

/// What the reducer does to whichever picker is on top, whatever it lists.
pub trait PickerControl {
    /// Move by `delta` entries (clamped: a huge delta jumps to the first or last).
    fn move_by(&mut self, delta: isize);
    /// Edit the query; the list narrows at once, keeping the entry under the cursor when
    /// it is still shown.
    fn edit_query(&mut self, req: EditRequest);
    /// Drop the query: every entry again.
    fn clear_query(&mut self);
    fn editing(&self) -> bool;
    fn set_editing(&mut self, on: bool);
}

impl<T: PickerItem> PickerControl for Picker<T> {
    fn move_by(&mut self, delta: isize) {
        if !self.shown.is_empty() {
            let last = self.shown.len() as isize - 1;
            self.selected = (self.selected as isize)
                .saturating_add(delta)
                .clamp(0, last) as usize;
        }
    }

    fn edit_query(&mut self, req: EditRequest) {
        self.query.handle(req);
        self.refilter();
    }

    fn clear_query(&mut self) {
        self.query = Input::default();
        self.refilter();
    }

    fn editing(&self) -> bool {
        self.editing
    }

    fn set_editing(&mut self, on: bool) {
        self.editing = on;
    }
}

/// The tool picker: `tools` is `None` while `tools/list` is in flight; `error` says why
/// the list does not come (the server is failing, or `tools/list` failed).
#[derive(Debug, Clone)]
pub struct ToolPicker {
    pub server: ServerId,
    pub tools: Option<Picker<ToolInfo>>,
    pub error: Option<String>,
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

impl Modal {
    /// The picker this modal is, if it is one with a list (servers, or tools once listed).
    pub fn picker_mut(&mut self) -> Option<&mut dyn PickerControl> {
        match self {
            Modal::ServerPicker(p) => Some(p),
            Modal::ToolPicker(ToolPicker { tools: Some(p), .. }) => Some(p),
            _ => None,
        }
    }

    pub fn picker(&self) -> Option<&dyn PickerControl> {
        match self {
            Modal::ServerPicker(p) => Some(p),
            Modal::ToolPicker(ToolPicker { tools: Some(p), .. }) => Some(p),
            _ => None,
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
    Inbox(super::views::inbox::InboxView),
    /// Consent to a URL-mode request.
    Consent(Box<ConsentView>),
    /// A sampling request: read it, type or produce the reply.
    Sampling(Box<SamplingView>),
    /// What a server is offered as roots, and what it was sent.
    Roots(RootsView),
    /// The raw JSON-RPC messages of one server or all.
    Wire(super::views::wire::WireView),
    /// Pictures of the work over time (`:stats`).
    Stats(super::views::stats::StatsView),
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
