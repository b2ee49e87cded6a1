//! A small multi-line text buffer with a cursor, used as the JSON editor. Pure data.

use super::keys::{Key, KeyCode};

/// Lines of text and a (line, column) cursor counted in chars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextArea {
    pub lines: Vec<String>,
    pub row: usize,
    pub col: usize,
}

impl Default for TextArea {
    fn default() -> Self {
        TextArea {
            lines: vec![String::new()],
            row: 0,
            col: 0,
        }
    }
}

fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

impl TextArea {
    pub fn new(text: &str) -> TextArea {
        let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
        if lines.is_empty() {
            lines.push(String::new());
        }
        TextArea {
            lines,
            row: 0,
            col: 0,
        }
    }

    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    fn line_len(&self) -> usize {
        self.lines[self.row].chars().count()
    }

    /// Apply an editing key. Returns whether it was used.
    pub fn edit(&mut self, key: Key) -> bool {
        if key.ctrl || key.alt {
            return false;
        }
        match key.code {
            KeyCode::Char(c) => {
                let line = &mut self.lines[self.row];
                line.insert(byte_at(line, self.col), c);
                self.col += 1;
            }
            KeyCode::Enter => {
                let line = &mut self.lines[self.row];
                let rest = line.split_off(byte_at(line, self.col));
                let indent: String = line.chars().take_while(|c| *c == ' ').collect();
                self.col = indent.chars().count();
                self.row += 1;
                self.lines.insert(self.row, indent + &rest);
            }
            KeyCode::Backspace => {
                if self.col > 0 {
                    let line = &mut self.lines[self.row];
                    let at = byte_at(line, self.col - 1);
                    line.remove(at);
                    self.col -= 1;
                } else if self.row > 0 {
                    let line = self.lines.remove(self.row);
                    self.row -= 1;
                    self.col = self.line_len();
                    self.lines[self.row].push_str(&line);
                }
            }
            KeyCode::Delete => {
                if self.col < self.line_len() {
                    let line = &mut self.lines[self.row];
                    let at = byte_at(line, self.col);
                    line.remove(at);
                } else if self.row + 1 < self.lines.len() {
                    let next = self.lines.remove(self.row + 1);
                    self.lines[self.row].push_str(&next);
                }
            }
            KeyCode::Left => {
                if self.col > 0 {
                    self.col -= 1;
                } else if self.row > 0 {
                    self.row -= 1;
                    self.col = self.line_len();
                }
            }
            KeyCode::Right => {
                if self.col < self.line_len() {
                    self.col += 1;
                } else if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = 0;
                }
            }
            KeyCode::Up if self.row > 0 => {
                self.row -= 1;
                self.col = self.col.min(self.line_len());
            }
            KeyCode::Down if self.row + 1 < self.lines.len() => {
                self.row += 1;
                self.col = self.col.min(self.line_len());
            }
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.line_len(),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_across_lines() {
        let mut t = TextArea::new("{}");
        t.edit(Key::plain(KeyCode::Right));
        t.edit(Key::plain(KeyCode::Enter));
        for c in "\"a\": 1".chars() {
            t.edit(Key::char(c));
        }
        assert_eq!(t.text(), "{\n\"a\": 1}");
        t.edit(Key::plain(KeyCode::Home));
        t.edit(Key::plain(KeyCode::Backspace));
        assert_eq!(t.text(), "{\"a\": 1}");
        assert!(!t.edit(Key::ctrl('s')));
    }
}
