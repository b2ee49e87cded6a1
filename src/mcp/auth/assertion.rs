//! `private_key_jwt` client authentication (RFC 7523 §2.2): a short-lived JWT signed with
//! the client's private key (jsonwebtoken, on ring: the process's one crypto provider).
//!
//! Owns: building and signing the assertion. The key is a secret: never logged.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::AuthError;

/// How long an assertion is valid.
const LIFETIME_SECS: i64 = 300;

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
    jti: String,
}

/// Sign an assertion for `client_id` addressed to `audience` (the issuer identifier).
pub fn sign(
    client_id: &str,
    audience: &str,
    private_key_pem: &str,
    algorithm: &str,
    now: i64,
) -> Result<String, AuthError> {
    let alg: Algorithm = algorithm
        .parse()
        .map_err(|_| AuthError::Settings(format!("unknown signing algorithm {algorithm:?}")))?;
    let pem = private_key_pem.as_bytes();
    let key = match alg {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
            return Err(AuthError::Settings(
                "private_key_jwt needs an asymmetric algorithm (ES256, RS256, EdDSA, …)".into(),
            ));
        }
    }
    .map_err(|e| {
        AuthError::Settings(format!("the private key is not a {algorithm} PEM key: {e}"))
    })?;
    let claims = Claims {
        iss: client_id,
        sub: client_id,
        aud: audience,
        iat: now,
        exp: now + LIFETIME_SECS,
        jti: uuid::Uuid::new_v4().to_string(),
    };
    jsonwebtoken::encode(&Header::new(alg), &claims, &key)
        .map_err(|e| AuthError::Settings(format!("cannot sign the client assertion: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A throwaway P-256 key pair (PKCS#8), made for this test only.
    const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQggWKKLbPda3dgJxLO
gU3gH9LVhe/N6+eMlEJaDXsreVyhRANCAARspuDQiiXj+EAsiv8PcFoZxGpSM3tQ
Laceyjm0n7IyucpZrMVsrfS+ULl0DqpZvCy+p5vxifMmGF3ohE25/PuU
-----END PRIVATE KEY-----
";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEbKbg0Iol4/hALIr/D3BaGcRqUjN7
UC2nHso5tJ+yMrnKWazFbK30vlC5dA6qWbwsvqeb8YnzJhhd6IRNufz7lA==
-----END PUBLIC KEY-----
";

    #[test]
    fn assertions_carry_the_rfc_7523_claims_and_verify() {
        let now = chrono::Utc::now().timestamp();
        let jwt = sign("client-1", "https://as.example", KEY, "ES256", now).unwrap();
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.set_audience(&["https://as.example"]);
        let key = jsonwebtoken::DecodingKey::from_ec_pem(PUBLIC.as_bytes()).unwrap();
        jsonwebtoken::decode::<serde_json::Value>(&jwt, &key, &v).expect("the signature verifies");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        use base64::Engine as _;
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(parts[1])
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["exp"], now + LIFETIME_SECS);
        assert!(claims["jti"].as_str().is_some());
        assert!(sign("c", "a", KEY, "HS256", 0).is_err());
        assert!(sign("c", "a", "not a key", "ES256", 0).is_err());
        assert!(sign("c", "a", KEY, "XX1", 0).is_err());
    }
}
