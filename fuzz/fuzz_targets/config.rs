//! Fuzz the configuration a user feeds taskrail: the TOML config file (servers, headers
//! with `${VAR}`, keys, themes), `--server` endpoints, `--header` specs, header-value
//! encoding and retention durations.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use taskrail::config::Config;
use taskrail::ledger::parse_duration;
use taskrail::mcp::endpoint::{encode_header_value, expand_env};
use taskrail::mcp::{ConnectOptions, Endpoint};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = Config::parse(
        text,
        |var| (var.len() < 8).then(|| format!("v-{var}")),
        Path::new("/nonexistent"),
    ) {
        for s in &config.servers {
            let _ = Endpoint::parse(&s.endpoint_spec());
        }
    }
    if let Ok(ep) = Endpoint::parse(text) {
        let _ = ep.identity();
    }
    let _ = ConnectOptions::parse_header(text);
    let _ = expand_env(text);
    let encoded = encode_header_value(text);
    assert!(
        encoded.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "encoded header value is not visible ASCII"
    );
    let _ = parse_duration(text);
});
