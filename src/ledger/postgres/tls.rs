//! TLS to PostgreSQL on the process's one TLS stack (rustls with ring): libpq's `sslmode`
//! levels as certificate checks, the root certificates they check against, and the
//! driver's TLS connector built on them.
//!
//! Owns what "verified" means for the ledger's connection. `connect.rs` decides when TLS is
//! used; this file only how. No channel binding yet (SCRAM runs without `-PLUS`).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use anyhow::{Context as _, bail};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Encrypt only (`prefer`, `allow`, `require` without a root certificate): the
    /// handshake is still signed by the certificate's key, but nobody vouches for it.
    Nothing,
    /// The certificate chains to a root certificate (`verify-ca`; `require` with one).
    Chain,
    /// The chain, and the certificate names the host connected to (`verify-full`).
    ChainAndHost,
}

/// Where the root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// A PEM file of CA certificates.
    File(PathBuf),
    /// The system's store (`sslrootcert=system`).
    System,
}

/// libpq's default root certificate file, `~/.postgresql/root.crt`.
pub fn default_root_file(home: Option<&Path>) -> Option<PathBuf> {
    home.map(|h| h.join(".postgresql").join("root.crt"))
}

/// The root certificates `roots` names; `mode` only words the error.
fn load_roots(roots: &Roots, mode: &str) -> anyhow::Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            if !path.is_file() {
                bail!(
                    "sslmode={mode} checks the server's certificate against the root \
                     certificate file {}, which does not exist (give one with \
                     sslrootcert=FILE, or sslrootcert=system for the system's)",
                    path.display()
                );
            }
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<_, _>>())
                .map_err(|e| {
                    anyhow::anyhow!(
                        "the root certificate file {} cannot be read as PEM: {e}",
                        path.display()
                    )
                })?;
            let (added, _ignored) = store.add_parsable_certificates(certs);
            if added == 0 {
                bail!(
                    "the root certificate file {} holds no usable certificate",
                    path.display()
                );
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                bail!("sslrootcert=system: this machine's certificate store holds no certificate");
            }
        }
    }
    Ok(store)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The TLS client configuration for `check` (`roots` is read unless nothing is checked).
pub fn client_config(check: Check, roots: &Roots, mode: &str) -> anyhow::Result<Arc<ClientConfig>> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Unchecked(provider.clone())),
        Check::Chain | Check::ChainAndHost => {
            let store = load_roots(roots, mode)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                    .build()
                    .context("the root certificates")?;
            if check == Check::Chain {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Accepts any certificate, but still checks that the handshake is signed by its key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The full check less the host name (`verify-ca`): webpki checks the chain first and
/// the name last, so a name mismatch means the chain was good.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The driver's TLS connector: one configuration, used for each host tried.
#[derive(Clone)]
pub struct Tls {
    config: Arc<ClientConfig>,
    check: Check,
}

impl Tls {
    pub fn new(config: Arc<ClientConfig>, check: Check) -> Tls {
        Tls { config, check }
    }

    /// How much of the server's certificate this connector checks.
    pub fn check(&self) -> Check {
        self.check
    }
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("check", &self.check).finish()
    }
}

impl<S> MakeTlsConnect<S> for Tls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<Connect> {
        let name = match ServerName::try_from(host.to_string()) {
            Ok(name) => name,
            // Only the host check needs the name; the others still need one to send.
            Err(_) if self.check != Check::ChainAndHost => {
                ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into())
            }
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sslmode=verify-full cannot check the host name {host:?}: {e}"),
                ));
            }
        };
        Ok(Connect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One connection's TLS handshake, to the host it names.
pub struct Connect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move { connector.connect(self.name, stream).await.map(Stream) })
    }
}

/// The encrypted connection.
pub struct Stream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for Stream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
