//! Form tests: every elicitation field kind from its schema, defaults, required marks,
//! validation and coercion, URL consent, unsupported requests, decline/cancel, and the
//! JSON-editor fallback of the new-task form.

use serde_json::json;

use super::{code, elicit, fresh, key, run, srv, task, updated};
use crate::mcp::{InputRequest, TaskStatus, ToolInfo};
use crate::state::form::{FieldKind, Form};
use crate::state::modal::{InputForm, ToolForm};
use crate::state::*;

fn every_kind() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Full name", "minLength": 2, "maxLength": 5},
            "email": {"type": "string", "format": "email", "default": "a@b.co"},
            "age": {"type": "integer", "minimum": 18, "maximum": 99},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean", "default": true},
            "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
            "colour": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]},
            "legacy": {"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2, "default": ["a"]},
            "titled": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "Pea"}, {"const": "q", "title": "Queue"}]}}
        },
        "required": ["name", "age"]
    })
}

#[test]
fn builds_the_right_widget_for_every_kind_with_defaults() {
    let mut form = Form::default();
    form.append_schema(0, &every_kind()).unwrap();
    let f = |n: &str| form.fields.iter().find(|f| f.name == n).unwrap();
    assert_eq!(f("name").label, "Full name");
    assert!(f("name").required && f("age").required && !f("email").required);
    assert!(matches!(&f("email").kind, FieldKind::Text { format: Some(x), .. } if x == "email"));
    assert_eq!(f("email").input.value(), "a@b.co");
    assert!(matches!(
        f("age").kind,
        FieldKind::Number {
            integer: true,
            min: Some(18.0),
            ..
        }
    ));
    assert_eq!(f("ratio").input.value(), "0.5");
    assert!(f("ok").checked);
    assert_eq!(f("size").chosen, Some(1));
    let FieldKind::Select { options } = &f("colour").kind else {
        panic!()
    };
    assert_eq!(
        (options[0].value.as_str(), options[0].label.as_str()),
        ("#f00", "Red")
    );
    let FieldKind::Select { options } = &f("legacy").kind else {
        panic!()
    };
    assert_eq!(options[1].label, "Why");
    assert_eq!(f("tags").ticked, vec![true, false, false]);
    let FieldKind::Multi { options, .. } = &f("titled").kind else {
        panic!()
    };
    assert_eq!(options[1].label, "Queue");
}

#[test]
fn validation_errors_are_inline_and_values_are_typed() {
    let mut form = Form::default();
    form.append_schema(0, &every_kind()).unwrap();
    let errs = form.collect(0).unwrap_err();
    assert_eq!(errs, 2);
    let f = |form: &Form, n: &str| {
        form.fields
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .error
            .clone()
    };
    assert_eq!(f(&form, "name").as_deref(), Some("required"));
    assert_eq!(f(&form, "age").as_deref(), Some("required"));
    form.focus_first_error();
    assert_eq!(form.fields[form.focus].name, "name");
    let set = |form: &mut Form, n: &str, v: &str| {
        let field = form.fields.iter_mut().find(|f| f.name == n).unwrap();
        field.input = tui_input::Input::new(v.to_string());
    };
    set(&mut form, "name", "Bobby Tables");
    set(&mut form, "age", "17.5");
    set(&mut form, "email", "nope");
    form.collect(0).unwrap_err();
    assert_eq!(f(&form, "name").as_deref(), Some("at most 5 characters"));
    assert_eq!(f(&form, "age").as_deref(), Some("must be a whole number"));
    assert_eq!(f(&form, "email").as_deref(), Some("expected email"));
    set(&mut form, "name", "Bob");
    set(&mut form, "age", "30");
    set(&mut form, "email", "bob@example.com");
    let content = form.collect(0).unwrap();
    assert_eq!(
        serde_json::Value::Object(content),
        json!({"name":"Bob","email":"bob@example.com","age":30,"ratio":0.5,"ok":true,"size":"m","tags":["a"]})
    );
    set(&mut form, "age", "12");
    form.collect(0).unwrap_err();
    assert_eq!(f(&form, "age").as_deref(), Some("must be ≥ 18"));
}

#[test]
fn select_and_multi_widgets_respond_to_keys() {
    let mut form = Form::default();
    form.append_schema(0, &every_kind()).unwrap();
    let i = form.fields.iter().position(|f| f.name == "tags").unwrap();
    let tags = &mut form.fields[i];
    tags.edit(Key::plain(KeyCode::Right));
    tags.toggle();
    tags.edit(Key::plain(KeyCode::Right));
    tags.toggle();
    assert_eq!(tags.ticked, vec![true, true, true]);
    assert_eq!(tags.value(), Err("pick at most 2".to_string()));
    let j = form.fields.iter().position(|f| f.name == "colour").unwrap();
    let colour = &mut form.fields[j];
    colour.edit(Key::plain(KeyCode::Left));
    assert_eq!(colour.value(), Ok(Some(json!("#0f0"))));
}

fn input_state(requests: Vec<(&str, InputRequest)>) -> State {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::InputRequired);
    for (k, r) in requests {
        t.input_requests.insert(k.to_string(), r);
    }
    run(&mut s, vec![updated(t)]);
    s
}

#[test]
fn unknown_kind_can_only_be_declined() {
    let custom = InputRequest {
        method: "custom/ask".into(),
        params: json!({"message": "?"}),
        reply_to: None,
    };
    let mut s = input_state(vec![("s", custom)]);
    run(&mut s, vec![key('a')]);
    assert!(run(&mut s, vec![code(KeyCode::Enter)]).is_empty());
    let Some(Modal::Input(f)) = s.modals.last() else {
        panic!()
    };
    assert!(f.error.as_deref().unwrap().contains("decline"));
    let fx = run(&mut s, vec![Msg::Key(Key::ctrl('d'))]);
    let Effect::Engine(EngineCommand::Answer { responses, .. }) = &fx[0] else {
        panic!()
    };
    assert_eq!(responses["s"], json!({"action":"decline"}));
    assert!(s.modals.is_empty());
}

#[test]
fn dismiss_answers_cancel_and_esc_sends_nothing() {
    let req = elicit(json!({"type":"object","properties":{"x":{"type":"boolean"}}}));
    let mut s = input_state(vec![("k", req)]);
    assert!(run(&mut s, vec![key('a'), code(KeyCode::Esc)]).is_empty());
    assert!(s.modals.is_empty() && s.tasks.values().next().unwrap().needs_input());
    let fx = run(&mut s, vec![key('a'), Msg::Key(Key::ctrl('x'))]);
    let Effect::Engine(EngineCommand::Answer { responses, .. }) = &fx[0] else {
        panic!()
    };
    assert_eq!(responses["k"], json!({"action":"cancel"}));
}

#[test]
fn several_requests_answered_in_one_update() {
    let a = elicit(json!({"type":"object","properties":{"x":{"type":"boolean","default":false}}}));
    let b = elicit(json!({"type":"object","properties":{"y":{"type":"string","default":"hi"}}}));
    let mut s = input_state(vec![("a", a), ("b", b)]);
    run(&mut s, vec![key('a')]);
    let Some(Modal::Input(f)) = s.modals.last() else {
        panic!()
    };
    assert_eq!(f.form.fields.len(), 2);
    let fx = run(&mut s, vec![key(' '), code(KeyCode::Enter)]);
    let Effect::Engine(EngineCommand::Answer { responses, .. }) = &fx[0] else {
        panic!()
    };
    assert_eq!(
        responses["a"],
        json!({"action":"accept","content":{"x":true}})
    );
    assert_eq!(
        responses["b"],
        json!({"action":"accept","content":{"y":"hi"}})
    );
}

#[test]
fn nested_schemas_fall_back_to_the_json_editor() {
    let tool = |schema| ToolInfo {
        name: "t".into(),
        title: None,
        description: None,
        input_schema: schema,
        task_support: None,
    };
    let nested = json!({"type":"object","properties":{"o":{"type":"object","properties":{}}}});
    assert!(ToolForm::build(srv(), tool(nested)).json_fallback);
    let objs =
        json!({"type":"object","properties":{"l":{"type":"array","items":{"type":"object"}}}});
    assert!(ToolForm::build(srv(), tool(objs)).json_fallback);
    assert!(ToolForm::build(srv(), tool(serde_json::Value::Null)).json_fallback);
    let flat = json!({"type":"object","properties":{"q":{"type":"string"}}});
    assert!(!ToolForm::build(srv(), tool(flat)).json_fallback);
}

#[test]
fn json_editor_validates_before_calling() {
    let mut s = fresh();
    let tool = ToolInfo {
        name: "deep".into(),
        title: None,
        description: None,
        input_schema: json!({"type":"object","properties":{"o":{"type":"object"}}}),
        task_support: None,
    };
    s.modals
        .push(Modal::ToolForm(Box::new(ToolForm::build(srv(), tool))));
    // the editor starts as `{}`; break it, then submit with ctrl+s
    run(&mut s, vec![code(KeyCode::End), code(KeyCode::Backspace)]);
    assert!(run(&mut s, vec![Msg::Key(Key::ctrl('s'))]).is_empty());
    let Some(Modal::ToolForm(f)) = s.modals.last() else {
        panic!()
    };
    assert!(f.error.is_some());
    assert!(
        f.form.fields[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("invalid JSON")
    );
    let mut msgs = vec![code(KeyCode::Backspace)];
    msgs.extend("{\"o\": {\"a\": [1]}}".chars().map(key));
    msgs.push(Msg::Key(Key::ctrl('s')));
    let fx = run(&mut s, msgs);
    let Effect::Engine(EngineCommand::CallTool { arguments, .. }) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(arguments, &json!({"o":{"a":[1]}}));
}

#[test]
fn input_form_builds_sections_for_each_pending_request() {
    let mut s = input_state(vec![("k", elicit(every_kind()))]);
    s.ensure_view();
    let row = s.selected_row().unwrap();
    let f = InputForm::for_task(row);
    assert_eq!(f.sections.len(), 1);
    assert_eq!(f.form.fields.len(), 10);
    assert_eq!(f.sections[0].message, "Who are you?");
}

#[test]
fn typing_into_a_field_clears_its_stale_validation_error() {
    let req = elicit(json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"]
    }));
    let mut s = input_state(vec![("k", req)]);
    assert!(run(&mut s, vec![key('a'), code(KeyCode::Enter)]).is_empty());
    let errors = |s: &State| {
        let Some(Modal::Input(f)) = s.modals.last() else {
            panic!("the form closed")
        };
        let fields: Vec<Option<String>> = f.form.fields.iter().map(|f| f.error.clone()).collect();
        (fields, f.error.clone())
    };
    assert_eq!(errors(&s).1.as_deref(), Some("2 fields need fixing"));
    // moving the cursor changes nothing; typing clears only that field's error
    run(&mut s, vec![code(KeyCode::Left), key('x')]);
    let (fields, summary) = errors(&s);
    assert_eq!(fields, vec![None, Some("required".to_string())]);
    assert!(summary.is_some(), "one field still needs fixing");
    run(&mut s, vec![code(KeyCode::Tab), key('y')]);
    assert_eq!(errors(&s), (vec![None, None], None));
    // submitting validates again
    run(&mut s, vec![code(KeyCode::Backspace), code(KeyCode::Enter)]);
    assert_eq!(errors(&s).0, vec![None, Some("required".to_string())]);
}
