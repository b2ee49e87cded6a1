//! The consent view's data: a URL-mode request's link as taskrail reads it before anyone
//! opens it (`check_url`: the whole link with its host, what disguises a host, plain http to
//! another machine, schemes refused) and the view's fields. Must not change `State`.

use crate::mcp::{InputKind, InputRequest};
use crate::sanitize::sanitize_line;
use crate::state::input_target::InputTarget;
use crate::state::widths;

/// Links longer than this are refused (nobody can check them).
pub const MAX_URL: usize = 8192;

/// What taskrail makes of a link before anyone opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlCheck {
    /// The link as parsed and normalised: what is opened or copied ("" when refused).
    pub url: String,
    /// The whole link as shown (sanitized; the raw text when it could not be parsed).
    pub shown: String,
    /// The host as written (ASCII; punycode stays punycode).
    pub host: String,
    /// The letters a punycode host stands for.
    pub unicode_host: Option<String>,
    /// Reasons to look twice, in words.
    pub warnings: Vec<String>,
    /// Why the link is not offered at all.
    pub refused: Option<String>,
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Check a link a server sent.
pub fn check_url(raw: &str) -> UrlCheck {
    let mut check = UrlCheck {
        url: String::new(),
        shown: sanitize_line(raw, widths::RAW_LINK),
        host: String::new(),
        unicode_host: None,
        warnings: Vec::new(),
        refused: None,
    };
    if raw.len() > MAX_URL {
        check.refused = Some(format!(
            "the link is {} bytes long; taskrail shows links up to {MAX_URL} bytes",
            raw.len()
        ));
        return check;
    }
    let parsed = match url::Url::parse(raw.trim()) {
        Ok(u) => u,
        Err(e) => {
            check.refused = Some(format!("this is not a valid link ({e})"));
            return check;
        }
    };
    // The parsed form is ASCII: hosts in punycode, everything else percent-encoded.
    check.shown = sanitize_line(parsed.as_str(), MAX_URL);
    let scheme = parsed.scheme().to_string();
    if scheme != "http" && scheme != "https" {
        check.refused = Some(format!(
            "taskrail opens only http and https links; this one is `{}:`",
            sanitize_line(&scheme, widths::SCHEME)
        ));
        return check;
    }
    let Some(host) = parsed.host() else {
        check.refused = Some("the link names no host".into());
        return check;
    };
    check.host = sanitize_line(&host.to_string(), widths::LINK);
    if let url::Host::Domain(d) = host
        && d.split('.')
            .any(|l| l.to_ascii_lowercase().starts_with("xn--"))
    {
        let (unicode, _) = idna::domain_to_unicode(d);
        let unicode = sanitize_line(&unicode, widths::LINK);
        check.warnings.push(format!(
            "the host is written in punycode: {} stands for \u{201c}{unicode}\u{201d}; letters of other scripts can imitate a name you know",
            check.host
        ));
        check.unicode_host = Some(unicode);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        check.warnings.push(format!(
            "the link carries a user name or password before the host; the site is {}, not what comes before the @",
            check.host
        ));
    }
    if scheme == "http" && !is_loopback(&host) {
        check.warnings.push(format!(
            "plain http to {}: what you send there travels unencrypted",
            check.host
        ));
    }
    check.url = parsed.to_string();
    check
}

/// The consent view of one URL-mode request.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsentView {
    pub target: InputTarget,
    pub input_key: String,
    /// Sanitized: whose request, for the title.
    pub title: String,
    /// Sanitized: the server's reason.
    pub message: String,
    pub check: UrlCheck,
    /// 2025-11-25: the id `notifications/elicitation/complete` names.
    pub elicitation_id: Option<String>,
    pub opened: bool,
    pub copied: bool,
    /// The server said the interaction is over (before the person said done).
    pub completed: bool,
    pub scroll: usize,
    /// Why the last key did nothing, display-safe (made so when set).
    pub error: Option<String>,
}

impl ConsentView {
    pub fn build(
        target: InputTarget,
        title: String,
        input_key: &str,
        request: &InputRequest,
    ) -> ConsentView {
        let (url, elicitation_id) = match InputKind::of(request) {
            InputKind::Url {
                url,
                elicitation_id,
            } => (url, elicitation_id),
            _ => (String::new(), None),
        };
        ConsentView {
            target,
            input_key: input_key.to_string(),
            title,
            message: sanitize_line(request.message().unwrap_or(""), widths::PROMPT_MESSAGE),
            check: check_url(&url),
            elicitation_id,
            opened: false,
            copied: false,
            completed: false,
            scroll: 0,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_https_link_has_no_warning() {
        let c = check_url("https://mcp.example.com/ui/set_api_key?x=1");
        assert_eq!(c.refused, None);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.host, "mcp.example.com");
        assert_eq!(c.url, "https://mcp.example.com/ui/set_api_key?x=1");
    }

    #[test]
    fn punycode_hosts_are_spelled_out() {
        let c = check_url("https://xn--pple-43d.com/login");
        assert_eq!(c.unicode_host.as_deref(), Some("\u{0430}pple.com"));
        assert!(c.warnings[0].contains("punycode"), "{:?}", c.warnings);
        // a host typed in another script is shown as the punycode it becomes
        let c = check_url("https://\u{0430}pple.com/");
        assert_eq!(c.host, "xn--pple-43d.com");
        assert!(c.shown.starts_with("https://xn--pple-43d.com/"));
    }

    #[test]
    fn credentials_and_plain_http_warn() {
        let c = check_url("https://good.example@evil.example/x");
        assert_eq!(c.host, "evil.example");
        assert!(c.warnings.iter().any(|w| w.contains("before the @")));
        let c = check_url("http://example.com/pay");
        assert!(c.warnings.iter().any(|w| w.contains("plain http")));
        for local in [
            "http://localhost:3000/a",
            "http://127.0.0.1:9/",
            "http://[::1]/",
            "http://app.localhost/",
        ] {
            assert!(check_url(local).warnings.is_empty(), "{local}");
        }
    }

    #[test]
    fn other_schemes_and_junk_are_refused() {
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,hi",
            "not a url",
            "",
        ] {
            let c = check_url(bad);
            assert!(c.refused.is_some(), "{bad} must be refused");
            assert!(c.url.is_empty());
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        assert!(check_url(&long).refused.unwrap().contains("bytes"));
        // escape sequences never reach the screen
        let c = check_url("https://example.com/\u{1b}[31m");
        assert!(!c.shown.contains('\u{1b}'));
    }
}
