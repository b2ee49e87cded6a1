//! Form model generated from a JSON schema (elicitation `requestedSchema` or a tool's
//! `inputSchema`): one field per flat property with the right widget, defaults filled,
//! required marked, validation and coercion to JSON values, plus the JSON-editor fallback.
//! Must not render or send anything.

use serde_json::{Map, Number, Value};
use tui_input::Input;

use super::keys::{Key, KeyCode};
use super::line_edit;
use super::text_area::TextArea;
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// A choice of a select: the value sent and the label shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// What widget a field uses.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        format: Option<String>,
        min_len: Option<u64>,
        max_len: Option<u64>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    Select {
        options: Vec<Choice>,
    },
    Multi {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    /// A JSON document edited as text (the fallback for anything else).
    Json,
}

/// One field and its editing state.
#[derive(Debug, Clone)]
pub struct Field {
    /// Which request (section) the field belongs to.
    pub group: usize,
    pub name: String,
    /// Sanitized label.
    pub label: String,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    pub input: Input,
    pub area: TextArea,
    pub checked: bool,
    /// Single select: chosen option (None = nothing chosen).
    pub chosen: Option<usize>,
    /// Multi select: which options are ticked, and the option under the cursor.
    pub ticked: Vec<bool>,
    pub cursor: usize,
    pub error: Option<String>,
}

impl Field {
    fn new(group: usize, name: &str, required: bool, kind: FieldKind) -> Field {
        let ticked = match &kind {
            FieldKind::Multi { options, .. } => vec![false; options.len()],
            _ => Vec::new(),
        };
        Field {
            group,
            name: name.to_string(),
            label: sanitize_line(name, widths::FIELD_LABEL),
            description: None,
            required,
            kind,
            input: Input::default(),
            area: TextArea::default(),
            checked: false,
            chosen: None,
            ticked,
            cursor: 0,
            error: None,
        }
    }

    /// Whether typed characters go into this field.
    pub fn takes_text(&self) -> bool {
        matches!(
            self.kind,
            FieldKind::Text { .. } | FieldKind::Number { .. } | FieldKind::Json
        )
    }

    /// The field's value, or a validation message.
    pub fn value(&self) -> Result<Option<Value>, String> {
        let missing = || {
            if self.required {
                Err("required".to_string())
            } else {
                Ok(None)
            }
        };
        match &self.kind {
            FieldKind::Text {
                format,
                min_len,
                max_len,
            } => {
                let v = self.input.value();
                if v.is_empty() {
                    return missing();
                }
                let n = v.chars().count() as u64;
                if let Some(min) = min_len.filter(|m| n < *m) {
                    return Err(format!("at least {min} characters"));
                }
                if let Some(max) = max_len.filter(|m| n > *m) {
                    return Err(format!("at most {max} characters"));
                }
                check_format(format.as_deref(), v)?;
                Ok(Some(Value::String(v.to_string())))
            }
            FieldKind::Number { integer, min, max } => {
                let v = self.input.value().trim();
                if v.is_empty() {
                    return missing();
                }
                let num = if *integer {
                    let i: i64 = v
                        .parse()
                        .map_err(|_| "must be a whole number".to_string())?;
                    Value::Number(i.into())
                } else {
                    let f: f64 = v
                        .parse()
                        .ok()
                        .filter(|f: &f64| f.is_finite())
                        .ok_or_else(|| "must be a number".to_string())?;
                    Number::from_f64(f)
                        .map(Value::Number)
                        .ok_or("must be a number")?
                };
                let f = num.as_f64().unwrap_or(0.0);
                if let Some(m) = min.filter(|m| f < *m) {
                    return Err(format!("must be ≥ {m}"));
                }
                if let Some(m) = max.filter(|m| f > *m) {
                    return Err(format!("must be ≤ {m}"));
                }
                Ok(Some(num))
            }
            FieldKind::Bool => Ok(Some(Value::Bool(self.checked))),
            FieldKind::Select { options } => match self.chosen.and_then(|i| options.get(i)) {
                Some(c) => Ok(Some(Value::String(c.value.clone()))),
                None => missing(),
            },
            FieldKind::Multi {
                options,
                min_items,
                max_items,
            } => {
                let picked: Vec<Value> = options
                    .iter()
                    .zip(&self.ticked)
                    .filter(|(_, t)| **t)
                    .map(|(c, _)| Value::String(c.value.clone()))
                    .collect();
                let n = picked.len() as u64;
                // An optional list left empty is left out: `minItems` binds only a list
                // that is sent.
                if n == 0 && !self.required {
                    return Ok(None);
                }
                if n == 0 && min_items.is_none() {
                    return Err("pick at least one".into());
                }
                if let Some(min) = min_items.filter(|m| n < *m) {
                    return Err(format!("pick at least {min}"));
                }
                if let Some(max) = max_items.filter(|m| n > *m) {
                    return Err(format!("pick at most {max}"));
                }
                Ok(Some(Value::Array(picked)))
            }
            FieldKind::Json => {
                let text = self.area.text();
                if text.trim().is_empty() {
                    return missing();
                }
                serde_json::from_str::<Value>(&text)
                    .map(Some)
                    .map_err(|e| format!("invalid JSON: {e}"))
            }
        }
    }

    /// Pre-fill the field with a schema's `default` (a default of the wrong type is left out).
    fn set_default(&mut self, default: &Value) {
        let _ = self.load(default);
    }

    /// Put a JSON value into the field as if it had been entered: a value of the wrong type,
    /// or an option the field does not offer, is an error (valid options still load).
    pub fn load(&mut self, v: &Value) -> Result<(), String> {
        match (&self.kind, v) {
            (FieldKind::Text { .. }, Value::String(s)) => self.input = Input::new(s.clone()),
            (FieldKind::Text { .. }, _) => return Err("must be a string".into()),
            (FieldKind::Number { .. }, Value::Number(n)) => self.input = Input::new(n.to_string()),
            (FieldKind::Number { integer, .. }, _) => {
                return Err(if *integer {
                    "must be a whole number"
                } else {
                    "must be a number"
                }
                .into());
            }
            (FieldKind::Bool, Value::Bool(b)) => self.checked = *b,
            (FieldKind::Bool, _) => return Err("must be true or false".into()),
            (FieldKind::Select { options }, v) => {
                self.chosen = options.iter().position(|c| c.value == scalar_text(v));
                if self.chosen.is_none() {
                    return Err(one_of(options));
                }
            }
            (FieldKind::Multi { options, .. }, Value::Array(items)) => {
                for (i, c) in options.iter().enumerate() {
                    self.ticked[i] = items.iter().any(|v| v.as_str() == Some(&c.value));
                }
                if let Some(bad) = items
                    .iter()
                    .find(|v| !options.iter().any(|c| v.as_str() == Some(&c.value)))
                {
                    return Err(format!(
                        "{} is not an option ({})",
                        sanitize_line(&bad.to_string(), widths::FIELD_LABEL),
                        one_of(options)
                    ));
                }
            }
            (FieldKind::Multi { .. }, _) => return Err("must be a list of options".into()),
            (FieldKind::Json, v) => {
                self.area = TextArea::new(&serde_json::to_string_pretty(v).unwrap_or_default())
            }
        }
        Ok(())
    }

    /// Handle a key meant for the field itself. Returns whether it was used. A change of
    /// the value clears the field's validation error (it is checked again on submit).
    pub fn edit(&mut self, key: Key) -> bool {
        let before = self.content();
        let used = self.edit_value(key);
        if used && self.content() != before {
            self.error = None;
        }
        used
    }

    /// What the user has entered, for change detection.
    fn content(&self) -> (String, String, bool, Option<usize>, Vec<bool>) {
        (
            self.input.value().to_string(),
            match self.kind {
                FieldKind::Json => self.area.text(),
                _ => String::new(),
            },
            self.checked,
            self.chosen,
            self.ticked.clone(),
        )
    }

    fn edit_value(&mut self, key: Key) -> bool {
        if let FieldKind::Json = self.kind {
            return self.area.edit(key);
        }
        if self.takes_text() {
            let Some(req) = line_edit::request(key) else {
                return false;
            };
            self.input.handle(req);
            return true;
        }
        let forward = match key.code {
            KeyCode::Right => true,
            KeyCode::Left => false,
            _ => return false,
        };
        match &self.kind {
            FieldKind::Select { options } if !options.is_empty() => {
                let n = options.len();
                self.chosen = Some(match (self.chosen, forward) {
                    (None, true) => 0,
                    (None, false) => n - 1,
                    (Some(i), true) => (i + 1) % n,
                    (Some(i), false) => (i + n - 1) % n,
                });
                true
            }
            FieldKind::Multi { options, .. } if !options.is_empty() => {
                let n = options.len();
                self.cursor = if forward {
                    (self.cursor + 1) % n
                } else {
                    (self.cursor + n - 1) % n
                };
                true
            }
            _ => false,
        }
    }

    /// Space on a checkbox, select or multi select (clears the validation error).
    pub fn toggle(&mut self) -> bool {
        self.error = None;
        match &self.kind {
            FieldKind::Bool => self.checked = !self.checked,
            FieldKind::Select { options } if !options.is_empty() => {
                self.chosen = Some(self.chosen.map_or(0, |i| (i + 1) % options.len()));
            }
            FieldKind::Multi { .. } => {
                if let Some(t) = self.ticked.get_mut(self.cursor) {
                    *t = !*t;
                }
            }
            _ => return false,
        }
        true
    }
}

fn check_format(format: Option<&str>, v: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => v
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !v.contains(' ')),
        Some("uri") => v.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !v.contains(' ')
        }),
        Some("date") => chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok(),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(v).is_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(match format {
            Some("date") => "expected a date like 2026-07-28".to_string(),
            Some("date-time") => "expected a date-time like 2026-07-28T10:00:00Z".to_string(),
            Some(f) => format!("expected {f}"),
            None => String::new(),
        })
    }
}

fn choices(list: &[Value], labels: Option<&Vec<Value>>) -> Vec<Choice> {
    list.iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let (value, title) = match v {
                Value::Object(o) => (
                    o.get("const").map(scalar_text)?,
                    o.get("title").and_then(Value::as_str).map(str::to_string),
                ),
                other => (
                    scalar_text(other),
                    labels
                        .and_then(|l| l.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                ),
            };
            let label = sanitize_line(title.as_deref().unwrap_or(&value), widths::FIELD_LABEL);
            Some(Choice { value, label })
        })
        .collect()
}

fn one_of(options: &[Choice]) -> String {
    let names: Vec<&str> = options.iter().map(|c| c.value.as_str()).collect();
    format!(
        "must be one of: {}",
        sanitize_line(&names.join(", "), widths::CHOICES)
    )
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The widget for one property schema, or `None` if a form cannot express it.
pub fn field_kind(schema: &Value) -> Option<FieldKind> {
    let o = schema.as_object()?;
    let u = |k: &str| o.get(k).and_then(Value::as_u64);
    let f = |k: &str| o.get(k).and_then(Value::as_f64);
    let ty = o.get("type").and_then(Value::as_str);
    if let Some(list) = o.get("enum").and_then(Value::as_array) {
        return Some(FieldKind::Select {
            options: choices(list, o.get("enumNames").and_then(Value::as_array)),
        });
    }
    if let Some(list) = o.get("oneOf").and_then(Value::as_array) {
        if list.iter().all(|v| v.get("const").is_some()) {
            return Some(FieldKind::Select {
                options: choices(list, None),
            });
        }
        return None;
    }
    match ty? {
        "string" => Some(FieldKind::Text {
            format: o.get("format").and_then(Value::as_str).map(str::to_string),
            min_len: u("minLength"),
            max_len: u("maxLength"),
        }),
        t @ ("number" | "integer") => Some(FieldKind::Number {
            integer: t == "integer",
            min: f("minimum"),
            max: f("maximum"),
        }),
        "boolean" => Some(FieldKind::Bool),
        "array" => {
            let items = o.get("items")?;
            let list = items
                .get("enum")
                .or_else(|| items.get("anyOf"))
                .or_else(|| items.get("oneOf"))
                .and_then(Value::as_array)?;
            if list
                .iter()
                .any(|v| v.is_object() && v.get("const").is_none())
            {
                return None;
            }
            Some(FieldKind::Multi {
                options: choices(list, None),
                min_items: u("minItems"),
                max_items: u("maxItems"),
            })
        }
        _ => None,
    }
}

/// A list of fields with a focus.
#[derive(Debug, Clone, Default)]
pub struct Form {
    pub fields: Vec<Field>,
    pub focus: usize,
}

impl Form {
    /// Fields for every property of an object schema; `None` when some property cannot be
    /// expressed as a flat field (the caller falls back to the JSON editor).
    pub fn append_schema(&mut self, group: usize, schema: &Value) -> Option<()> {
        let props = schema.get("properties").and_then(Value::as_object)?;
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (name, prop) in props {
            let kind = field_kind(prop)?;
            let mut field = Field::new(group, name, required.contains(&name.as_str()), kind);
            if let Some(title) = prop.get("title").and_then(Value::as_str) {
                field.label = sanitize_line(title, widths::FIELD_LABEL);
            }
            field.description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(|d| sanitize_line(d, widths::DESCRIPTION));
            if let Some(d) = prop.get("default") {
                field.set_default(d);
            }
            fields.push(field);
        }
        self.fields.extend(fields);
        Some(())
    }

    /// A single JSON-editor field, pre-filled with `initial`.
    pub fn json_editor(group: usize, name: &str, initial: &Value) -> Form {
        let mut field = Field::new(group, name, true, FieldKind::Json);
        field.set_default(initial);
        Form {
            fields: vec![field],
            focus: 0,
        }
    }

    pub fn focused(&mut self) -> Option<&mut Field> {
        self.fields.get_mut(self.focus)
    }

    pub fn move_focus(&mut self, forward: bool) {
        let n = self.fields.len();
        if n > 0 {
            self.focus = if forward {
                (self.focus + 1) % n
            } else {
                (self.focus + n - 1) % n
            };
        }
    }

    /// Validate every field of `group`; errors are stored on the fields.
    pub fn collect(&mut self, group: usize) -> Result<Map<String, Value>, usize> {
        let mut out = Map::new();
        let mut errors = 0;
        for field in self.fields.iter_mut().filter(|f| f.group == group) {
            match field.value() {
                Ok(v) => {
                    field.error = None;
                    if let Some(v) = v {
                        out.insert(field.name.clone(), v);
                    }
                }
                Err(e) => {
                    field.error = Some(e);
                    errors += 1;
                }
            }
        }
        if errors == 0 { Ok(out) } else { Err(errors) }
    }

    /// Focus the first field with an error.
    pub fn focus_first_error(&mut self) {
        if let Some(i) = self.fields.iter().position(|f| f.error.is_some()) {
            self.focus = i;
        }
    }
}

/// Where a response's `content` does not fit the request's `requestedSchema`: the field
/// (sanitized) and why, in the words the form uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentProblem {
    pub field: String,
    pub why: String,
}

/// Check `content` against `schema` as the input form checks what a person entered:
/// required fields, types, lengths, formats, ranges, options; a key the schema does not
/// have is a problem too. A schema the form cannot express is not checked. Pure.
pub fn check_content(schema: &Value, content: &Map<String, Value>) -> Result<(), ContentProblem> {
    let mut form = Form::default();
    if form.append_schema(0, schema).is_none() {
        return Ok(());
    }
    let problem = |field: &str, why: String| ContentProblem {
        field: sanitize_line(field, widths::FIELD_NAME),
        why,
    };
    for field in &mut form.fields {
        let Some(v) = content.get(&field.name) else {
            if field.required {
                return Err(problem(&field.name, "required".into()));
            }
            continue;
        };
        field.load(v).map_err(|why| problem(&field.name, why))?;
        field.value().map_err(|why| problem(&field.name, why))?;
    }
    if let Some(extra) = content
        .keys()
        .find(|k| !form.fields.iter().any(|f| &f.name == *k))
    {
        let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
        return Err(problem(
            extra,
            format!(
                "not a field of the request (fields: {})",
                sanitize_line(&names.join(", "), widths::CHOICES)
            ),
        ));
    }
    Ok(())
}
