//! The one text-editing mapping every single-line editor shares (form fields, the `/`
//! filter, the `:` command line): printable characters, backspace/delete, cursor moves and
//! the readline keys ctrl+a/e/u/w/k. Keys bound in the keymap never reach it. Pure.

use tui_input::InputRequest;

use super::keys::{Key, KeyCode};

/// The edit `key` asks of a line editor, if it is an editing key.
pub fn request(key: Key) -> Option<InputRequest> {
    if let Some(c) = key.text_char() {
        return Some(InputRequest::InsertChar(c));
    }
    Some(match (key.code, key.ctrl) {
        (KeyCode::Backspace, false) => InputRequest::DeletePrevChar,
        (KeyCode::Backspace, true) | (KeyCode::Char('w'), true) => InputRequest::DeletePrevWord,
        (KeyCode::Delete, false) => InputRequest::DeleteNextChar,
        (KeyCode::Left, false) => InputRequest::GoToPrevChar,
        (KeyCode::Right, false) => InputRequest::GoToNextChar,
        (KeyCode::Left, true) => InputRequest::GoToPrevWord,
        (KeyCode::Right, true) => InputRequest::GoToNextWord,
        (KeyCode::Home, _) | (KeyCode::Char('a'), true) => InputRequest::GoToStart,
        (KeyCode::End, _) | (KeyCode::Char('e'), true) => InputRequest::GoToEnd,
        (KeyCode::Char('u'), true) => InputRequest::DeleteLine,
        (KeyCode::Char('k'), true) => InputRequest::DeleteTillEnd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tui_input::Input;

    fn typed(keys: &[Key]) -> (String, usize) {
        let mut input = Input::new("alpha beta".into());
        for k in keys {
            if let Some(req) = request(*k) {
                input.handle(req);
            }
        }
        (input.value().to_string(), input.cursor())
    }

    #[test]
    fn readline_keys_edit_the_line() {
        assert_eq!(typed(&[Key::ctrl('w')]), ("alpha ".into(), 6));
        assert_eq!(typed(&[Key::ctrl('u')]), ("".into(), 0));
        assert_eq!(
            typed(&[Key::ctrl('a'), Key::char('>')]),
            (">alpha beta".into(), 1)
        );
        assert_eq!(
            typed(&[Key::ctrl('a'), Key::ctrl('e'), Key::char('!')]),
            ("alpha beta!".into(), 11)
        );
        assert_eq!(
            typed(&[Key::ctrl('a'), Key::plain(KeyCode::Right), Key::ctrl('k')]),
            ("a".into(), 1)
        );
        assert_eq!(request(Key::ctrl('s')), None, "bound keys are not edits");
        assert_eq!(request(Key::plain(KeyCode::Enter)), None);
    }
}
