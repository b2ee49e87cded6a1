//! Fuzz the schema → form builder: any schema builds a form or falls back, and editing,
//! toggling and collecting its fields never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use taskrail::state::form::{Form, field_kind};
use taskrail::state::{Key, KeyCode};

const KEYS: [Key; 12] = [
    Key::char('a'),
    Key::char('1'),
    Key::char('-'),
    Key::char('.'),
    Key::char('é'),
    Key::char(' '),
    Key::plain(KeyCode::Backspace),
    Key::plain(KeyCode::Delete),
    Key::plain(KeyCode::Left),
    Key::plain(KeyCode::Right),
    Key::plain(KeyCode::Home),
    Key::plain(KeyCode::Enter),
];

fuzz_target!(|data: &[u8]| {
    // The last bytes drive the edits; the rest is the schema.
    let split = data.len().saturating_sub(16);
    let (schema, edits) = data.split_at(split);
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let _ = field_kind(&schema);
    let mut form = Form::default();
    if form.append_schema(0, &schema).is_none() {
        form = Form::json_editor(0, "response", &schema);
    }
    for &b in edits {
        if form.fields.is_empty() {
            break;
        }
        match b % 4 {
            0 => form.move_focus(b & 0x80 != 0),
            1 => {
                if let Some(f) = form.focused() {
                    f.toggle();
                }
            }
            _ => {
                if let Some(f) = form.focused() {
                    f.edit(KEYS[usize::from(b >> 4) % KEYS.len()]);
                }
            }
        }
    }
    for f in &form.fields {
        let _ = f.value();
    }
    if form.collect(0).is_err() {
        form.focus_first_error();
    }
});
