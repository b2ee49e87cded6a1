//! The seam where request tracing plugs into the client: one process-wide observer, told
//! of every request this process sends to a server (our own and those forwarded for a
//! proxy's host), free to put W3C trace context into the request's `params._meta`.
//!
//! Owns: the observer's interface and its single installation. Must not depend on any
//! tracing library: the implementation lives above (`telemetry`), and with none installed
//! a request pays one atomic load.

use serde_json::{Map, Value};
use std::sync::OnceLock;

use super::endpoint::Endpoint;

/// What a request is, for its span.
pub struct RequestInfo<'a> {
    pub method: &'a str,
    /// The protocol version spoken on this connection.
    pub protocol_version: &'a str,
    pub endpoint: &'a Endpoint,
}

/// How a traced request ended.
pub enum Ended<'a> {
    /// A JSON-RPC result.
    Result(&'a Value),
    /// A JSON-RPC error with this code.
    Error(i64),
    /// No answer (transport failure, timeout, lost session).
    Failed,
}

/// The observer `telemetry` installs.
pub trait RequestTracer: Send + Sync + 'static {
    /// A request is about to go out with these params (an object): the observer may
    /// read `_meta` (a host's `traceparent` handed on by the proxy) and write into it.
    fn begin(
        &self,
        req: &RequestInfo<'_>,
        params: &mut Map<String, Value>,
    ) -> Option<Box<dyn RequestSpan>>;
}

/// One request in flight, ended once with how it went.
pub trait RequestSpan: Send {
    fn end(self: Box<Self>, ended: Ended<'_>);
}

static TRACER: OnceLock<Box<dyn RequestTracer>> = OnceLock::new();

/// Install the process's observer (the first one wins).
pub fn install(tracer: Box<dyn RequestTracer>) {
    let _ = TRACER.set(tracer);
}

/// Tell the observer, if any, that `params` are about to be sent.
pub(crate) fn begin(req: &RequestInfo<'_>, params: &mut Value) -> Option<Box<dyn RequestSpan>> {
    let tracer = TRACER.get()?;
    if !params.is_object() {
        *params = Value::Object(Map::new());
    }
    tracer.begin(req, params.as_object_mut()?)
}

/// End `span` (if traced) with a reply in the transport's shape.
pub(crate) fn end<E>(
    span: Option<Box<dyn RequestSpan>>,
    reply: &Result<Result<Value, super::types::ErrorObject>, E>,
) {
    if let Some(span) = span {
        span.end(match reply {
            Ok(Ok(v)) => Ended::Result(v),
            Ok(Err(e)) => Ended::Error(e.code),
            Err(_) => Ended::Failed,
        });
    }
}
