//! `x-mcp-header` tool arguments: the `Mcp-Param-{Name}` headers a modern HTTP client
//! must send for properties of a tool's `inputSchema` annotated with `x-mcp-header`.
//!
//! Rules (Streamable HTTP, `2026-07-28`): only properties reachable through `properties`
//! chains, of type string, integer or boolean; the header is omitted when the argument is
//! absent or null; a tool whose annotation breaks the rules is not offered. Pure.

use serde_json::Value;

use super::endpoint::encode_header_value;

/// One annotated property: the header suffix and the path of property names to it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamHeader {
    pub name: String,
    pub path: Vec<String>,
}

fn valid_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b))
}

/// Every `x-mcp-header` annotation of a schema, or why the annotations are invalid.
pub fn annotations(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out)?;
    let mut names: Vec<String> = out.iter().map(|h| h.name.to_ascii_lowercase()).collect();
    names.sort();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("two properties name the same x-mcp-header".into());
    }
    Ok(out)
}

fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(annotation) = prop.get("x-mcp-header") {
            let name = annotation
                .as_str()
                .filter(|n| valid_token(n))
                .ok_or_else(|| {
                    format!("x-mcp-header of {} is not a header name", path.join("."))
                })?;
            let kind = prop.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(kind, "string" | "integer" | "boolean") {
                return Err(format!(
                    "x-mcp-header on {} of type {kind:?}",
                    path.join(".")
                ));
            }
            out.push(ParamHeader {
                name: name.to_string(),
                path: path.clone(),
            });
        }
        walk(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

/// The headers for one call's arguments.
pub fn headers(annotated: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    annotated
        .iter()
        .filter_map(|h| {
            let value = h.path.iter().try_fold(arguments, |v, k| v.get(k))?;
            let text = match value {
                Value::String(s) => encode_header_value(s),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                _ => return None,
            };
            Some((format!("Mcp-Param-{}", h.name), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotated_properties_become_headers() {
        let schema = json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "opts": { "type": "object", "properties": {
                "dry": { "type": "boolean", "x-mcp-header": "Dry-Run" },
                "n": { "type": "integer", "x-mcp-header": "Count" } } },
            "plain": { "type": "string" } } });
        let ann = annotations(&schema).unwrap();
        assert_eq!(ann.len(), 3);
        let h = headers(
            &ann,
            &json!({ "region": "eu-west 1 ", "opts": { "dry": true, "n": null }, "plain": "x" }),
        );
        assert_eq!(
            h,
            vec![
                (
                    "Mcp-Param-Region".to_string(),
                    "=?base64?ZXUtd2VzdCAxIA==?=".to_string()
                ),
                ("Mcp-Param-Dry-Run".to_string(), "true".to_string()),
            ],
            "trailing space forces base64; null is omitted"
        );
    }

    #[test]
    fn invalid_annotations_are_rejected() {
        for bad in [
            json!({ "properties": { "x": { "type": "number", "x-mcp-header": "X" } } }),
            json!({ "properties": { "x": { "type": "string", "x-mcp-header": "bad name" } } }),
            json!({ "properties": { "x": { "type": "string", "x-mcp-header": 3 } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "X" }, "b": { "type": "string", "x-mcp-header": "x" } } }),
        ] {
            assert!(annotations(&bad).is_err(), "{bad}");
        }
        assert_eq!(annotations(&json!({})).unwrap(), vec![]);
    }
}
