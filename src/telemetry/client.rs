//! The exporter's HTTP client, built on a thread of its own while the command starts (a
//! blocking reqwest client loads the system's CA roots and starts a runtime: tens of
//! milliseconds a command should not wait for), and waited for only by the first export.
//!
//! Owns: that client and its timeout. Must not be built on an async runtime's thread.

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

type Built = Result<reqwest::blocking::Client, String>;

pub struct LazyClient {
    building: Mutex<Option<JoinHandle<Built>>>,
    client: OnceLock<Built>,
}

impl std::fmt::Debug for LazyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyClient")
    }
}

impl LazyClient {
    /// Start building a client whose every request ends within `timeout`.
    pub fn start(timeout: Duration) -> LazyClient {
        let building = std::thread::Builder::new()
            .name("otlp-client".into())
            .spawn(move || {
                reqwest::blocking::Client::builder()
                    .timeout(timeout)
                    .connect_timeout(timeout)
                    .build()
                    .map_err(|e| e.to_string())
            })
            .ok();
        LazyClient {
            building: Mutex::new(building),
            client: OnceLock::new(),
        }
    }

    fn get(&self) -> &Built {
        self.client.get_or_init(|| {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match handle.map(JoinHandle::join) {
                Some(Ok(built)) => built,
                _ => Err("the OTLP client could not be built".to_string()),
            }
        })
    }
}

impl HttpClient for LazyClient {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            match self.get() {
                Ok(client) => client.send_bytes(request).await,
                Err(e) => Err(e.clone().into()),
            }
        })
    }
}
