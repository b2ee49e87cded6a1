//! Parsing one message into a `Value` with each task's input requests bounded *while*
//! parsing: an `inputRequests` object keeps its first [`MAX_INPUT_REQUESTS`] entries, the
//! rest are skipped without being built and counted under [`MORE_KEY`] beside it (so a
//! task listing 50,000 requests costs the size of its text, not a tree of 50,000
//! objects). A [`MORE_KEY`] the server sends itself is dropped, so the count is always
//! this parser's. Everything else parses exactly as `serde_json::Value` would (depth
//! limit included).
//!
//! Must not do I/O.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Where the count of skipped input requests goes, beside `inputRequests`.
pub const MORE_KEY: &str = "io.taskrail/moreInputRequests";

/// The most input requests kept (and shown, and prompted) per task snapshot; the rest
/// are counted in `Task::more_input_requests`.
pub const MAX_INPUT_REQUESTS: usize = 32;

/// Parse JSON text as [`serde_json::from_slice`] would, with input requests bounded.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = AnyValue.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A `Value`, with `inputRequests` objects inside it capped.
struct AnyValue;

impl<'de> DeserializeSeed<'de> for AnyValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor { cap: None })
    }
}

/// An `inputRequests` value: an object keeps `cap` entries; returns how many it skipped.
struct CappedValue;

impl<'de> DeserializeSeed<'de> for CappedValue {
    type Value = (Value, u64);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Value, u64), D::Error> {
        let mut skipped = 0;
        let v = d.deserialize_any(ValueVisitor {
            cap: Some((MAX_INPUT_REQUESTS, &mut skipped)),
        })?;
        Ok((v, skipped))
    }
}

struct ValueVisitor<'a> {
    /// For an `inputRequests` object: entries to keep, and the count of the rest.
    cap: Option<(usize, &'a mut u64)>,
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // An `inputRequests` array is not a valid shape (it is ignored later); it is
        // bounded all the same, and not counted.
        let keep = self.cap.map_or(usize::MAX, |(k, _)| k);
        let mut out = Vec::new();
        while out.len() < keep {
            match seq.next_element_seed(AnyValue)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        if let Some((keep, count)) = self.cap {
            // The `inputRequests` object itself: its keys are the server's request keys.
            while let Some(key) = map.next_key::<String>()? {
                if out.len() >= keep && !out.contains_key(&key) {
                    map.next_value::<IgnoredAny>()?;
                    *count = count.saturating_add(1);
                } else {
                    out.insert(key, map.next_value_seed(AnyValue)?);
                }
            }
            return Ok(Value::Object(out));
        }
        while let Some(key) = map.next_key::<String>()? {
            if key == MORE_KEY {
                // Only a count this parser wrote means anything: the server's is dropped.
                map.next_value::<IgnoredAny>()?;
            } else if key == "inputRequests" {
                let (v, more) = map.next_value_seed(CappedValue)?;
                // A repeated `inputRequests` replaces the earlier one, count included.
                if more > 0 {
                    out.insert(MORE_KEY.to_string(), Value::from(more));
                } else {
                    out.shift_remove(MORE_KEY);
                }
                out.insert(key, v);
            } else {
                out.insert(key, map.next_value_seed(AnyValue)?);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task_with(n: usize) -> Value {
        let mut requests = Map::new();
        for i in 0..n {
            requests.insert(
                format!("k{i:05}"),
                json!({ "method": "elicitation/create", "params": { "message": "?" } }),
            );
        }
        json!({ "taskId": "t", "status": "input_required", "inputRequests": requests })
    }

    #[test]
    fn parses_like_serde_json() {
        for text in [
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u001b\u2028"}"#,
            "[]",
            "{}",
            "12",
            "-0",
            "1e300",
            "18446744073709551615",
            "-9223372036854775808",
            "123456789012345678901234567890",
            r#""s\ud83d\ude00""#,
            r#"{"z":1,"a":2,"m":{"y":[],"b":null}}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"inputRequests":null,"x":{"inputRequests":[1,2]}}"#,
            r#"{"inputRequests":{"a":{"inputRequests":{"b":1}}}}"#,
            " \n{\"k\" : [ ] }\n ",
        ] {
            let ours = parse(text.as_bytes()).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
            // Key order is kept as serde_json keeps it.
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
        for bad in [
            &b"{\"a\":1} trailing"[..],
            b"{\"a\":",
            b"",
            b"{\"a\":\"\xff\"}",
            b"[1,]",
            b"NaN",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
            assert!(serde_json::from_slice::<Value>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(deep.as_bytes()).is_err());
        let deep = "{\"inputRequests\":".repeat(50_000) + "1" + &"}".repeat(50_000);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn fifty_thousand_input_requests_keep_the_first_and_count_the_rest() {
        let n = 50_000;
        let msg = json!({ "jsonrpc": "2.0", "id": 1, "result": task_with(n) });
        let v = parse(msg.to_string().as_bytes()).unwrap();
        let kept = v["result"]["inputRequests"].as_object().unwrap();
        assert_eq!(kept.len(), MAX_INPUT_REQUESTS);
        let first: Vec<_> = (0..MAX_INPUT_REQUESTS)
            .map(|i| format!("k{i:05}"))
            .collect();
        assert_eq!(kept.keys().cloned().collect::<Vec<_>>(), first);
        assert_eq!(v["result"][MORE_KEY], json!(n - MAX_INPUT_REQUESTS));
        let task = crate::mcp::Task::from_wire(&v["result"]).unwrap();
        assert_eq!(task.input_requests.len(), MAX_INPUT_REQUESTS);
        assert_eq!(task.more_input_requests, n - MAX_INPUT_REQUESTS);

        // The same through the message classifier every transport uses.
        let Ok(crate::mcp::jsonrpc::Incoming::Response { outcome: Ok(r), .. }) =
            crate::mcp::jsonrpc::Incoming::parse(&msg.to_string())
        else {
            panic!("not a response");
        };
        assert_eq!(
            r["inputRequests"].as_object().unwrap().len(),
            MAX_INPUT_REQUESTS
        );

        // At or under the bound nothing is added.
        let exact = parse(task_with(MAX_INPUT_REQUESTS).to_string().as_bytes()).unwrap();
        assert_eq!(exact, task_with(MAX_INPUT_REQUESTS));
        assert!(exact.get(MORE_KEY).is_none());

        // Repeated keys inside the bound do not count as skipped.
        let mut text = task_with(MAX_INPUT_REQUESTS).to_string();
        text.insert_str(
            text.len() - 2,
            r#","k00000":{"method":"elicitation/create"}"#,
        );
        assert!(parse(text.as_bytes()).unwrap().get(MORE_KEY).is_none());

        // An inputRequests array (not a valid shape) is bounded too.
        let arr = json!({ "inputRequests": vec![1; 1000] });
        let v = parse(arr.to_string().as_bytes()).unwrap();
        assert_eq!(
            v["inputRequests"].as_array().unwrap().len(),
            MAX_INPUT_REQUESTS
        );
    }

    #[test]
    fn a_count_the_server_sends_is_not_taken() {
        // Alone, before or after the requests, or inside them: never a count.
        for text in [
            format!(r#"{{"taskId":"t","status":"working","{MORE_KEY}":999999}}"#),
            format!(
                r#"{{"taskId":"t","status":"input_required","{MORE_KEY}":7,"inputRequests":{{"a":{{"method":"elicitation/create"}}}}}}"#
            ),
            format!(
                r#"{{"taskId":"t","status":"input_required","inputRequests":{{"a":{{"method":"elicitation/create"}}}},"{MORE_KEY}":7}}"#
            ),
        ] {
            let v = parse(text.as_bytes()).unwrap();
            assert!(v.get(MORE_KEY).is_none(), "{text}");
            assert_eq!(
                crate::mcp::Task::from_wire(&v).unwrap().more_input_requests,
                0,
                "{text}"
            );
        }
        // With real overflow, the server's number cannot replace or inflate ours.
        let mut t = task_with(40);
        t[MORE_KEY] = json!(1_000_000_000u64);
        let v = parse(t.to_string().as_bytes()).unwrap();
        assert_eq!(v[MORE_KEY], json!(40 - MAX_INPUT_REQUESTS));
        // A later, smaller inputRequests replaces the earlier one and its count.
        let mut text = task_with(40).to_string();
        text.insert_str(text.len() - 1, r#","inputRequests":{}"#);
        let v = parse(text.as_bytes()).unwrap();
        assert!(v.get(MORE_KEY).is_none());
        assert_eq!(v["inputRequests"], json!({}));
        // A request key that happens to be the count's name is just a key.
        let text =
            format!(r#"{{"inputRequests":{{"{MORE_KEY}":{{"method":"elicitation/create"}}}}}}"#);
        let v = parse(text.as_bytes()).unwrap();
        assert!(v["inputRequests"].get(MORE_KEY).is_some());
        assert!(v.get(MORE_KEY).is_none());
    }
}
