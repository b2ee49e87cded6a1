//! Task ids out of the wire log: a task id is a bearer secret (whoever holds it may read,
//! answer and cancel the task), so every id a message names is masked before a record is
//! written or shown.
//!
//! The rule: every string value found under a `taskId` key, anywhere in a message (params,
//! result, `task.taskId`, `_meta`'s `io.modelcontextprotocol/related-task`, lists of
//! tasks), and every string of a `taskIds` array (a listen request's filter) is a task id,
//! and so is every id an earlier message named (the last
//! [`REMEMBERED`] are kept). Each occurrence of a known id of [`MIN_SUBSTRING`] characters or
//! more, in any string value or object key, becomes its first 4 characters and `…`; a
//! shorter id is replaced where a whole string equals it, by `…` alone (its first 4
//! characters would be all of it). Must not do I/O.

use serde_json::{Map, Value};
use std::collections::{HashSet, VecDeque};

/// How many task ids are remembered across messages.
pub const REMEMBERED: usize = 4096;

/// Ids at least this long are masked inside longer strings too.
pub const MIN_SUBSTRING: usize = 8;

/// The task ids seen so far (bounded, oldest forgotten first).
#[derive(Debug, Default)]
pub struct KnownIds {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl KnownIds {
    fn learn(&mut self, id: &str) {
        if id.is_empty() || self.set.contains(id) {
            return;
        }
        if self.order.len() >= REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        self.set.insert(id.to_string());
        self.order.push_back(id.to_string());
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// The masked form of one task id.
pub fn masked(id: &str) -> String {
    if id.chars().count() < MIN_SUBSTRING {
        return "…".to_string();
    }
    let head: String = id.chars().take(4).collect();
    format!("{head}…")
}

/// Learn the ids `msg` names, then mask every known id in it.
pub fn mask(msg: &mut Value, known: &mut KnownIds) {
    collect(msg, known);
    if known.is_empty() {
        return;
    }
    // Longest first, so an id that contains another is masked whole.
    let mut long: Vec<&str> = known
        .order
        .iter()
        .map(String::as_str)
        .filter(|id| id.chars().count() >= MIN_SUBSTRING)
        .collect();
    long.sort_by_key(|id| std::cmp::Reverse(id.len()));
    rewrite(msg, known, &long);
}

fn collect(v: &Value, known: &mut KnownIds) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                match (k.as_str(), child) {
                    ("taskId", Value::String(id)) => known.learn(id),
                    ("taskIds", Value::Array(ids)) => ids
                        .iter()
                        .filter_map(Value::as_str)
                        .for_each(|id| known.learn(id)),
                    _ => {}
                }
                collect(child, known);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, known)),
        _ => {}
    }
}

fn rewrite(v: &mut Value, known: &KnownIds, long: &[&str]) {
    match v {
        Value::String(s) => {
            if let Some(m) = mask_text(s, known, long) {
                *s = m;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rewrite(i, known, long)),
        Value::Object(map) => {
            let renamed = map.keys().any(|k| mask_text(k, known, long).is_some());
            if renamed {
                let old = std::mem::take(map);
                let mut fresh = Map::new();
                for (k, mut child) in old {
                    rewrite(&mut child, known, long);
                    let k = mask_text(&k, known, long).unwrap_or(k);
                    fresh.insert(k, child);
                }
                *map = fresh;
            } else {
                map.values_mut().for_each(|c| rewrite(c, known, long));
            }
        }
        _ => {}
    }
}

/// `s` with known ids masked, or `None` when it names none.
fn mask_text(s: &str, known: &KnownIds, long: &[&str]) -> Option<String> {
    if known.set.contains(s) {
        return Some(masked(s));
    }
    let mut out: Option<String> = None;
    for id in long {
        let current = out.as_deref().unwrap_or(s);
        if current.contains(id) {
            out = Some(current.replace(id, &masked(id)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_masked_wherever_they_appear() {
        let mut known = KnownIds::default();
        let mut msg = json!({
            "jsonrpc": "2.0", "id": 3,
            "result": {
                "task": { "taskId": "a1b2c3d4-secret-tail", "status": "working" },
                "content": [{ "type": "text", "text": "started a1b2c3d4-secret-tail now" }],
                "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "a1b2c3d4-secret-tail" } },
                "byId": { "a1b2c3d4-secret-tail": 1 }
            }
        });
        mask(&mut msg, &mut known);
        let text = msg.to_string();
        assert!(!text.contains("secret-tail"), "{text}");
        assert_eq!(msg["result"]["task"]["taskId"], "a1b2…");
        assert_eq!(msg["result"]["content"][0]["text"], "started a1b2… now");
        assert_eq!(msg["result"]["byId"]["a1b2…"], 1);
    }

    #[test]
    fn an_id_seen_once_is_masked_in_later_messages() {
        let mut known = KnownIds::default();
        mask(
            &mut json!({ "params": { "taskId": "0123456789abcdef" } }),
            &mut known,
        );
        let mut later = json!({ "result": { "content": [{ "text": "0123456789abcdef done" }] } });
        mask(&mut later, &mut known);
        assert_eq!(later["result"]["content"][0]["text"], "0123… done");
    }

    #[test]
    fn a_short_id_is_masked_only_where_a_whole_string_is_it() {
        let mut known = KnownIds::default();
        let mut msg = json!({ "params": { "taskId": "t7" }, "note": "t7x", "same": "t7" });
        mask(&mut msg, &mut known);
        assert_eq!(msg["params"]["taskId"], "…");
        assert_eq!(msg["same"], "…");
        assert_eq!(msg["note"], "t7x");
    }

    #[test]
    fn a_listen_filter_names_task_ids_too() {
        let mut known = KnownIds::default();
        let mut msg = json!({ "method": "subscriptions/listen",
            "params": { "notifications": { "taskIds": ["ce7a9c29-4ed0-4465-8cb4"] } } });
        mask(&mut msg, &mut known);
        assert_eq!(msg["params"]["notifications"]["taskIds"][0], "ce7a…");
    }

    #[test]
    fn the_memory_is_bounded() {
        let mut known = KnownIds::default();
        for i in 0..REMEMBERED + 10 {
            known.learn(&format!("task-{i:08}"));
        }
        assert_eq!(known.len(), REMEMBERED);
        assert!(!known.set.contains("task-00000000"));
    }
}
