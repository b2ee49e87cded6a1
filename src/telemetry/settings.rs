//! Where traces go: the standard `OTEL_*` variables, else the same keys in the config's
//! `[telemetry]` table, resolved into one `Settings` (or none: nothing is exported).
//!
//! Owns: that resolution, pure (the lookup is passed in). Must not start anything.

use std::time::Duration;

/// Every key taskrail reads, as the variable is spelled (the config table takes them
/// too, in either case).
pub const KEYS: [&str; 11] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
];

/// How long one export may take by default: a collector that does not answer costs a
/// command at most this, once, at exit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);

/// The wire encoding of OTLP over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Protobuf,
    Json,
}

/// Resolved export settings.
#[derive(Clone, PartialEq)]
pub struct Settings {
    /// The full URL spans are POSTed to (`…/v1/traces`).
    pub traces_url: String,
    /// Where metrics go (`…/v1/metrics`); none when only a traces endpoint is given.
    pub metrics_url: Option<String>,
    pub protocol: Protocol,
    /// Extra request headers (often a secret: never logged).
    pub headers: Vec<(String, String)>,
    pub service_name: String,
    pub resource: Vec<(String, String)>,
    pub timeout: Duration,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("traces_url", &self.traces_url)
            .field("protocol", &self.protocol)
            .field("headers", &self.headers.len())
            .field("service_name", &self.service_name)
            .finish()
    }
}

/// Resolve from `lookup` (the environment first, then the config table). `Ok(None)`:
/// nothing to export (no endpoint, or `OTEL_SDK_DISABLED=true`).
pub fn resolve(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Settings>, String> {
    let get = |k: &str| {
        lookup(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let traces_url = match (
        get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        get("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(url), _) => url,
        (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let metrics_url = get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").or_else(|| {
        get("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| format!("{}/v1/metrics", base.trim_end_matches('/')))
    });
    for u in std::iter::once(&traces_url).chain(metrics_url.as_ref()) {
        let parsed = url::Url::parse(u).map_err(|e| format!("OTLP endpoint {u:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("OTLP endpoint {u:?}: not http or https"));
        }
    }
    let protocol = match get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .as_deref()
    {
        None | Some("http/protobuf") => Protocol::Protobuf,
        Some("http/json") => Protocol::Json,
        Some(other) => {
            return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL {other:?}: taskrail speaks http/protobuf and http/json"
            ));
        }
    };
    let mut headers = pairs(get("OTEL_EXPORTER_OTLP_HEADERS").as_deref());
    for (k, v) in pairs(get("OTEL_EXPORTER_OTLP_TRACES_HEADERS").as_deref()) {
        headers.retain(|(old, _)| !old.eq_ignore_ascii_case(&k));
        headers.push((k, v));
    }
    let resource = pairs(get("OTEL_RESOURCE_ATTRIBUTES").as_deref());
    let service_name = get("OTEL_SERVICE_NAME")
        .or_else(|| {
            resource
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| "taskrail".to_string());
    let timeout = match get("OTEL_EXPORTER_OTLP_TIMEOUT") {
        None => DEFAULT_TIMEOUT,
        Some(ms) => Duration::from_millis(
            ms.parse::<u64>()
                .map_err(|_| format!("OTEL_EXPORTER_OTLP_TIMEOUT {ms:?}: not milliseconds"))?,
        ),
    };
    Ok(Some(Settings {
        traces_url,
        metrics_url,
        protocol,
        headers,
        service_name,
        resource,
        timeout,
    }))
}

/// `k1=v1,k2=v2` (the W3C baggage shape the OTLP variables use; values percent-decoded).
fn pairs(text: Option<&str>) -> Vec<(String, String)> {
    text.unwrap_or("")
        .split(',')
        .filter_map(|item| {
            let (k, v) = item.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (percent_decode(k), percent_decode(v.trim())))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Option<Settings>, String> {
        resolve(|k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn nothing_set_exports_nothing() {
        assert_eq!(from(&[]), Ok(None));
        let disabled = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ];
        assert_eq!(from(&disabled), Ok(None));
    }

    #[test]
    fn the_base_endpoint_gains_the_signal_path_the_traces_one_is_taken_as_is() {
        let s = from(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(s.traces_url, "http://c:4318/v1/traces");
        assert_eq!(s.metrics_url.as_deref(), Some("http://c:4318/v1/metrics"));
        assert_eq!(s.protocol, Protocol::Protobuf);
        assert_eq!(s.service_name, "taskrail");
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        let s = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://wrong:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c/x"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.traces_url, "https://c/x");
        assert_eq!(s.protocol, Protocol::Json);
    }

    #[test]
    fn headers_resource_and_service_name_parse_like_the_spec_says() {
        let s = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X=2"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=team-proxy,deployment.environment=prod",
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            s.headers,
            [("api-key".into(), "a b".into()), ("X".into(), "2".into())]
        );
        assert_eq!(s.service_name, "team-proxy");
        assert_eq!(s.timeout, Duration::from_millis(250));
        assert!(
            !format!("{s:?}").contains("a b"),
            "headers are never printed"
        );
    }

    #[test]
    fn grpc_and_bad_urls_are_refused_with_the_key_named() {
        let e = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert!(e.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{e}");
        assert!(from(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")]).is_err());
    }
}
