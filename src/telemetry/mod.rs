//! OpenTelemetry export: a task is one span from the `tools/call` that created it to its
//! terminal state, each request a short span, W3C trace context in every request's
//! `params._meta`; sent over OTLP/HTTP to whatever the standard `OTEL_*` variables (or the
//! config's `[telemetry]` table) name, and nowhere when none is set.
//!
//! Owns: the exporter's life (started before the runtime, shut down after it, bounded
//! both ways), the span registry (`spans`). May import `ids`, `sanitize`, `mcp`. Must
//! never export a task id (not in names, attributes or events) nor a session id, and
//! must never make a command wait on a collector beyond one export timeout at exit.

mod client;
mod metrics;
pub mod settings;
mod spans;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::HttpClient;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use settings::Settings;
pub use spans::{
    TRACE_EVENT, task_context, task_ended, task_event, task_known, task_resumed, task_updated,
};

/// The attribute prefix of everything taskrail adds beyond the semantic conventions.
pub const PREFIX: &str = "taskrail.task.";

/// The most spans waiting for export; more are dropped (and counted), never waited for.
const MAX_QUEUE: usize = 2048;

/// What runs while exporting: the tracer, the meter (when a metrics endpoint is known),
/// and the export timeout.
type Running = (SdkTracerProvider, Option<SdkMeterProvider>, Duration);

static PROVIDER: Mutex<Option<Running>> = Mutex::new(None);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static EXPORTED: AtomicU64 = AtomicU64::new(0);

/// Start exporting if `settings` say where to. Call before any runtime starts (the
/// blocking HTTP client is built on a thread of its own).
pub fn init(settings: Option<Settings>) {
    let Some(s) = settings else {
        return;
    };
    let client: Arc<dyn HttpClient> = Arc::new(client::LazyClient::start(s.timeout));
    let resource = resource(&s);
    let tracer = match build(&s, &client, resource.clone()) {
        Ok(provider) => provider,
        Err(e) => return tracing::warn!("OTLP export not started: {e}"),
    };
    let meter =
        s.metrics_url
            .as_deref()
            .and_then(|url| match build_meter(&s, url, &client, resource) {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!("OTLP metrics not started: {e}");
                    None
                }
            });
    spans::install(tracer.tracer("taskrail"));
    if let Some(m) = &meter {
        metrics::install(m);
    }
    tracing::info!(url = %s.traces_url, metrics = meter.is_some(), "exporting over OTLP");
    *PROVIDER.lock().unwrap_or_else(|e| e.into_inner()) = Some((tracer, meter, s.timeout));
}

fn resource(s: &Settings) -> opentelemetry_sdk::Resource {
    opentelemetry_sdk::Resource::builder()
        .with_attributes(
            s.resource
                .iter()
                .map(|(k, v)| opentelemetry::KeyValue::new(k.clone(), v.clone())),
        )
        .with_service_name(s.service_name.clone())
        .build()
}

fn protocol(s: &Settings) -> opentelemetry_otlp::Protocol {
    match s.protocol {
        settings::Protocol::Protobuf => opentelemetry_otlp::Protocol::HttpBinary,
        settings::Protocol::Json => opentelemetry_otlp::Protocol::HttpJson,
    }
}

fn build_meter(
    s: &Settings,
    url: &str,
    client: &Arc<dyn HttpClient>,
    resource: opentelemetry_sdk::Resource,
) -> Result<SdkMeterProvider, String> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_endpoint(url.to_string())
        .with_protocol(protocol(s))
        .with_timeout(s.timeout)
        .with_headers(s.headers.iter().cloned().collect())
        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_shared_http_client(client.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let reader = PeriodicReader::builder(exporter)
        .with_interval(Duration::from_secs(30))
        .build();
    Ok(SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build())
}

fn build(
    s: &Settings,
    client: &Arc<dyn HttpClient>,
    resource: opentelemetry_sdk::Resource,
) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(s.traces_url.clone())
        .with_protocol(protocol(s))
        .with_timeout(s.timeout)
        .with_headers(s.headers.iter().cloned().collect())
        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_shared_http_client(client.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUE)
        .with_scheduled_delay(Duration::from_secs(2))
        .build();
    let processor = BatchSpanProcessor::builder(Counting(exporter))
        .with_batch_config(batch)
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

/// End the spans still open (their tasks run on: a later process continues the trace)
/// and send what is queued, waiting at most one export timeout.
pub fn shutdown() {
    let Some((provider, meter, timeout)) =
        PROVIDER.lock().unwrap_or_else(|e| e.into_inner()).take()
    else {
        return;
    };
    spans::close_all();
    let started = std::time::Instant::now();
    // Both at once: a collector that hangs costs one timeout, not two.
    std::thread::scope(|scope| {
        if let Some(meter) = &meter {
            scope.spawn(move || {
                if let Err(e) = meter.shutdown_with_timeout(timeout) {
                    tracing::warn!("OTLP metrics at exit: {e}");
                }
            });
        }
        if let Err(e) = provider.shutdown_with_timeout(timeout) {
            tracing::warn!("OTLP export at exit: {e}");
        }
    });
    let (sent, dropped) = (
        EXPORTED.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed),
    );
    if dropped > 0 {
        tracing::warn!(
            sent,
            dropped,
            "OTLP: spans dropped (collector unreachable or slow)"
        );
    } else {
        tracing::info!(sent, "OTLP: spans exported");
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "OTLP shutdown");
}

/// Spans whose export failed, counted (the queue's own overflow is counted by the SDK
/// and logged at shutdown).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// The OTLP exporter, with each batch's fate counted.
#[derive(Debug)]
struct Counting(opentelemetry_otlp::SpanExporter);

impl SpanExporter for Counting {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let r = self.0.export(batch).await;
        match &r {
            Ok(()) => EXPORTED.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                let total = DROPPED.fetch_add(n, Ordering::Relaxed) + n;
                tracing::warn!(spans = n, total, "OTLP export failed: {e}");
                total
            }
        };
        r
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}

/// Whether spans are being exported.
pub fn enabled() -> bool {
    spans::TRACER.get().is_some()
}
