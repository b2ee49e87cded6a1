//! TLS to PostgreSQL on the process's one TLS stack (rustls with ring): libpq's `sslmode`
//! levels as certificate checks, the root certificates they check against, and the
//! driver's TLS connector built on them.
//!
//! Owns what "verified" means for the ledger's connection, and the connection's channel
//! binding (`tls-server-end-point`, RFC 5929: SCRAM-SHA-256-PLUS ties the password proof to
//! the certificate the client saw, so a relay in the middle cannot use it). `connect.rs`
//! decides when TLS is used; this file only how.

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
    #[cfg(test)]
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
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| server_end_point(cert.as_ref()))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point` of a DER certificate: its hash by the hash of its
/// signature algorithm (MD5 and SHA-1 become SHA-256); `None` for an algorithm without one
/// (Ed25519, RSA-PSS) or a certificate that does not parse.
pub fn server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    use sha2::{Digest, Sha256, Sha384, Sha512};
    // 1.2.840.113549.1.1.{4,5,11,12,13}: RSA with MD5, SHA-1, SHA-256, SHA-384, SHA-512.
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    // 1.2.840.10045.4.1 (ECDSA with SHA-1) and 1.2.840.10045.4.3.{2,3,4}.
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    let oid = signature_algorithm(cert)?;
    let bits = if let Some(rest) = oid.strip_prefix(RSA) {
        match rest {
            [4 | 5 | 11] => 256,
            [12] => 384,
            [13] => 512,
            _ => return None,
        }
    } else if let Some(rest) = oid.strip_prefix(ECDSA) {
        match rest {
            [1] | [3, 2] => 256,
            [3, 3] => 384,
            [3, 4] => 512,
            _ => return None,
        }
    } else {
        return None;
    };
    Some(match bits {
        256 => Sha256::digest(cert).to_vec(),
        384 => Sha384::digest(cert).to_vec(),
        _ => Sha512::digest(cert).to_vec(),
    })
}

/// One DER element at the start of `der`: (tag, content, the rest).
fn der_element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The OID of a certificate's `signatureAlgorithm` (the outer one, RFC 5280 §4.1.1.2).
fn signature_algorithm(cert: &[u8]) -> Option<&[u8]> {
    const SEQUENCE: u8 = 0x30;
    const OID: u8 = 0x06;
    let (SEQUENCE, certificate, _) = der_element(cert)? else {
        return None;
    };
    let (SEQUENCE, _tbs, rest) = der_element(certificate)? else {
        return None;
    };
    let (SEQUENCE, algorithm, _) = der_element(rest)? else {
        return None;
    };
    match der_element(algorithm)? {
        (OID, oid, _) => Some(oid),
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256, Sha384};
    use std::process::Command;

    /// A self-signed certificate made by `openssl req` with `key_args`, as DER.
    fn certificate(dir: &Path, name: &str, key_args: &[&str]) -> Vec<u8> {
        let pem = dir.join(format!("{name}.pem"));
        let out = Command::new("openssl")
            .args(["req", "-x509", "-nodes", "-days", "1", "-subj", "/CN=t"])
            .args(key_args)
            .arg("-keyout")
            .arg(dir.join(format!("{name}.key")))
            .arg("-out")
            .arg(&pem)
            .output()
            .expect("openssl");
        assert!(out.status.success(), "{out:?}");
        CertificateDer::from_pem_file(&pem).unwrap().to_vec()
    }

    #[test]
    fn the_server_end_point_hashes_by_the_signature_algorithm() {
        let dir = tempfile::tempdir().unwrap();
        let ec = certificate(
            dir.path(),
            "ec",
            &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
        );
        assert_eq!(server_end_point(&ec), Some(Sha256::digest(&ec).to_vec()));
        let rsa = certificate(dir.path(), "rsa", &["-newkey", "rsa:2048", "-sha384"]);
        assert_eq!(server_end_point(&rsa), Some(Sha384::digest(&rsa).to_vec()));
        let ed = certificate(dir.path(), "ed", &["-newkey", "ed25519"]);
        assert_eq!(server_end_point(&ed), None, "Ed25519 has no hash to use");
        assert_eq!(server_end_point(&ec[..ec.len() / 2]), None);
        assert_eq!(server_end_point(&[]), None);
    }
}
