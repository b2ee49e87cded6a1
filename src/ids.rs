//! Identities, minted only here: `ServerId` (a configured server's name, or an ad-hoc server's
//! redacted address) and `TaskId` (a server-chosen id that is a bearer secret).
//!
//! A `TaskId` displays (and debug-prints) as its short form, so a full id reaches a log line,
//! a notice or an export only through an explicit `as_str()`; JSON and SQL carry it whole.
//! Must not do I/O.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many characters of a task id the short form keeps.
pub const SHORT_LEN: usize = 8;

/// A hasher for tables keyed by server or task: seeded per process (ids come from
/// servers), and several times cheaper than the standard one on these short keys.
pub type IdHasher = foldhash::fast::RandomState;

/// Equality and hashing of an id are its text's; two clones of one id (what table lookups
/// mostly compare: a key and the key it was cloned from) are equal without reading it.
macro_rules! text_identity {
    ($id:ty) => {
        impl PartialEq for $id {
            fn eq(&self, other: &Self) -> bool {
                Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
            }
        }

        impl Eq for $id {}

        impl std::hash::Hash for $id {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.hash(state);
            }
        }
    };
}

text_identity!(ServerId);
text_identity!(TaskId);

/// A server as the ledger, the board and the CLI know it. Server ids are not secrets: a
/// configured name, or the address with credentials redacted.
#[derive(Clone, PartialOrd, Ord)]
pub struct ServerId(Arc<str>);

impl ServerId {
    /// A server named in the config file (or a fixed name such as the embedded `demo`).
    pub fn named(name: &str) -> ServerId {
        ServerId(name.into())
    }

    /// A server given only by its address (`Endpoint::identity`, already redacted).
    pub fn ad_hoc(identity: &str) -> ServerId {
        ServerId(identity.into())
    }

    /// A server id read back from the ledger.
    pub fn stored(s: &str) -> ServerId {
        ServerId(s.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerId({:?})", &*self.0)
    }
}

/// A task id as the server chose it. Cheap to clone.
#[derive(Clone, PartialOrd, Ord)]
pub struct TaskId(Arc<str>);

impl TaskId {
    /// Wrap an id received from a server, the command line or the ledger.
    pub fn new(id: &str) -> TaskId {
        TaskId(id.into())
    }

    /// The whole id: for the wire, the ledger and JSON the user asked for. Never for a log.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`SHORT_LEN`] characters, made printable (for table columns).
    pub fn prefix(&self) -> String {
        let head: String = self.0.chars().take(SHORT_LEN).collect();
        crate::sanitize::sanitize_line(&head, 2 * SHORT_LEN)
    }

    /// A file name stem for this task (`:export`'s default): the short form with anything
    /// but ASCII letters, digits, `-` and `_` replaced by `_`, then 16 hex digits of a
    /// stable hash of the whole id, so two ids sharing their first characters never
    /// share a file (and the name does not give the id away).
    pub fn file_stem(&self) -> String {
        let head: String = self
            .0
            .chars()
            .take(SHORT_LEN)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // FNV-1a, 64 bits: stable across runs and versions (std's hasher is not).
        let hash = self.0.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        format!("{head}-{hash:016x}")
    }

    /// The loggable form: [`TaskId::prefix`] and an ellipsis when the id is longer.
    pub fn short(&self) -> String {
        let mut s = self.prefix();
        if self.0.chars().count() > SHORT_LEN {
            s.push('…');
        }
        s
    }

    /// `text` with every occurrence of this full id replaced by its short form (server
    /// error texts and FastMCP input keys echo the id).
    pub fn mask(&self, text: &str) -> String {
        if self.0.len() <= SHORT_LEN || !text.contains(&*self.0) {
            return text.to_string();
        }
        text.replace(&*self.0, &self.short())
    }

    /// [`TaskId::mask`] over every string (keys included) of a JSON value.
    pub fn mask_json(&self, v: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(self.mask(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.mask_json(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (self.mask(k), self.mask_json(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.short())
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.short())
    }
}

impl Borrow<str> for TaskId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

macro_rules! string_id_traits {
    ($t:ident, $make:path) => {
        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        string_id_serde!($t, $make);
    };
}

macro_rules! string_id_serde {
    ($t:ident, $make:path) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Ok($make(&s))
            }
        }
    };
}

string_id_traits!(TaskId, TaskId::new);
string_id_traits!(ServerId, ServerId::stored);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_stems_are_plain_and_unique_per_id() {
        let a = TaskId::new("\u{1b}]0;x/../\u{7}abcdef-one");
        let b = TaskId::new("\u{1b}]0;x/../\u{7}abcdef-two");
        let (sa, sb) = (a.file_stem(), b.file_stem());
        assert_ne!(sa, sb, "same 8-character prefix, different files");
        for s in [&sa, &sb] {
            assert!(
                s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{s}"
            );
            assert!(
                !s.contains("abcdef"),
                "the name shows the short form only: {s}"
            );
        }
        assert_eq!(a.file_stem(), sa, "stable");
        assert!(TaskId::new("task-1").file_stem().starts_with("task-1-"));
    }

    #[test]
    fn display_and_debug_are_short() {
        let id = TaskId::new("0123456789abcdef-secret");
        assert_eq!(id.to_string(), "01234567…");
        assert_eq!(format!("{id:?}"), "TaskId(01234567…)");
        assert_eq!(id.as_str(), "0123456789abcdef-secret");
        assert_eq!(TaskId::new("abc").to_string(), "abc");
        assert_eq!(TaskId::new("ééééééééé").to_string(), "éééééééé…");
    }

    #[test]
    fn short_forms_are_printable() {
        let id = TaskId::new("\u{1b}]0;x\u{7}abcdefgh");
        assert!(!id.to_string().contains('\u{1b}'));
        assert!(!id.prefix().contains('\u{7}'));
    }

    #[test]
    fn json_carries_the_whole_id() {
        let id = TaskId::new("0123456789abcdef");
        assert_eq!(
            json!({ "taskId": id }),
            json!({ "taskId": "0123456789abcdef" })
        );
        let back: TaskId = serde_json::from_value(json!("0123456789abcdef")).unwrap();
        assert_eq!(back, id);
    }

    #[test]
    fn masking_replaces_the_full_id_everywhere() {
        let id = TaskId::new("0123456789abcdef");
        assert_eq!(
            id.mask("task 0123456789abcdef not found"),
            "task 01234567… not found"
        );
        let v = json!({ "0123456789abcdef:9f": ["0123456789abcdef", 3] });
        assert_eq!(
            id.mask_json(&v),
            json!({ "01234567…:9f": ["01234567…", 3] })
        );
        assert_eq!(TaskId::new("short").mask("short text"), "short text");
    }

    #[test]
    fn lookups_by_str_work() {
        let mut m = std::collections::HashMap::new();
        m.insert(TaskId::new("abc"), 1);
        assert_eq!(m.get("abc"), Some(&1));
    }
}
