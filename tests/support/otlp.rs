//! A real OTLP/HTTP receiver for tests: accepts `POST /v1/traces`, keeps every raw body
//! (so a test can search the exact bytes sent), and decodes them with the official
//! protobuf definitions (`opentelemetry-proto`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// Each request received: its path and raw body.
type Bodies = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// The receiver, listening until dropped with the test.
pub struct Receiver {
    /// The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
    bodies: Bodies,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let bodies: Bodies = Arc::new(Mutex::new(Vec::new()));
        let keep = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keep = keep.clone();
                std::thread::spawn(move || serve(stream, &keep));
            }
        });
        Receiver { endpoint, bodies }
    }

    /// Every raw body received so far, with its path.
    pub fn bodies(&self) -> Vec<(String, Vec<u8>)> {
        self.bodies.lock().unwrap().clone()
    }

    /// Every span received so far, decoded.
    pub fn spans(&self) -> Vec<Span> {
        self.bodies()
            .iter()
            .filter(|(path, _)| path == "/v1/traces")
            .flat_map(|(_, body)| {
                let req = ExportTraceServiceRequest::decode(body.as_slice())
                    .expect("a valid ExportTraceServiceRequest");
                req.resource_spans
                    .into_iter()
                    .flat_map(|r| r.scope_spans)
                    .flat_map(|s| s.spans)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every metric received so far, decoded: (name, attribute sets of its data points).
    pub fn metrics(&self) -> Vec<(String, Vec<Vec<KeyValue>>)> {
        use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        self.bodies()
            .iter()
            .filter(|(path, _)| path == "/v1/metrics")
            .flat_map(|(_, body)| {
                let req = ExportMetricsServiceRequest::decode(body.as_slice())
                    .expect("a valid ExportMetricsServiceRequest");
                req.resource_metrics
                    .into_iter()
                    .flat_map(|r| r.scope_metrics)
                    .flat_map(|s| s.metrics)
                    .map(|m| {
                        let points = match m.data {
                            Some(Data::Histogram(h)) => {
                                h.data_points.into_iter().map(|p| p.attributes).collect()
                            }
                            Some(Data::Gauge(g)) => {
                                g.data_points.into_iter().map(|p| p.attributes).collect()
                            }
                            _ => Vec::new(),
                        };
                        (m.name, points)
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The resource attributes of the first batch of spans.
    pub fn resource(&self) -> Vec<KeyValue> {
        let bodies = self.bodies();
        let Some((_, body)) = bodies.iter().find(|(path, _)| path == "/v1/traces") else {
            return Vec::new();
        };
        let req = ExportTraceServiceRequest::decode(body.as_slice()).expect("valid");
        req.resource_spans
            .into_iter()
            .next()
            .and_then(|r| r.resource)
            .map(|r| r.attributes)
            .unwrap_or_default()
    }

    /// Wait until a span satisfies `pred`.
    pub fn wait_span(&self, what: &str, limit: Duration, pred: impl Fn(&Span) -> bool) -> Span {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.spans().into_iter().find(&pred) {
                return s;
            }
            if Instant::now() > deadline {
                let names: Vec<String> = self.spans().into_iter().map(|s| s.name).collect();
                panic!("no span {what} in {limit:?}; received: {names:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether `needle` occurs anywhere in the raw bytes received.
    pub fn bytes_contain(&self, needle: &str) -> bool {
        let n = needle.as_bytes();
        self.bodies()
            .iter()
            .any(|(_, b)| !n.is_empty() && b.windows(n.len()).any(|w| w == n))
    }
}

fn serve(stream: TcpStream, keep: &Mutex<Vec<(String, Vec<u8>)>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len.min(64 << 20)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        keep.lock().unwrap().push((path, body));
        let mut out = &stream;
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// An attribute's value as text (strings as they are, numbers and booleans printed).
pub fn attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    let v = attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    text(v)
}

fn text(v: &AnyValue) -> Option<String> {
    Some(match v.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        _ => return None,
    })
}

/// Lower-case hex of an id.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
