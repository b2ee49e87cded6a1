//! `taskrail answer` from a second shell, in each input kind's own shape, against the
//! TypeScript SDK's `simpleTaskInteractive` (a legacy task whose sampling request the
//! following `call` prints, not having a terminal): the printed hint has the sampling
//! shape and no internal fields, a response in the elicitation shape is refused locally
//! without using up the key, and the `CreateMessageResult` reaches the result.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn a_sampling_request_is_answered_from_another_shell_with_a_create_message_result() {
    let peer = support::sdk_example("simpleTaskInteractive");
    let tr = Taskrail::new();
    let cfg = tr.dir().join("config.toml");
    let server = format!("[[server]]\nname = \"peer\"\nurl = \"{}\"\n", peer.url);
    std::fs::write(&cfg, server).unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    let mut call = tr.spawn(&[
        "--config",
        &cfg,
        "call",
        "-s",
        "peer",
        "write_haiku",
        "--args",
        r#"{"topic":"tide pools"}"#,
    ]);
    let request = call.wait_stderr("request:", LIMIT);
    assert!(request.contains("sampling/createMessage"), "{request}");
    assert!(
        !request.contains("_replyTo"),
        "internal fields stay inside: {request}"
    );
    let hint = call.wait_stderr("answer with:", LIMIT);
    let words = shlex::split(hint.trim().trim_start_matches("answer with:").trim()).unwrap();
    let at = words.iter().position(|w| w == "--json").unwrap();
    let shape: serde_json::Value = serde_json::from_str(&words[at + 1]).unwrap();
    assert_eq!(shape["role"], "assistant", "the sampling shape: {hint}");
    assert!(
        shape["model"].is_string() && shape.get("action").is_none(),
        "{hint}"
    );
    let (id, key) = (words[4].clone(), words[5].clone());
    assert_eq!(key, "sampling-0");

    let answer = |json: &str| {
        tr.run(
            &[
                "--config", &cfg, "answer", "-s", "peer", &id, &key, "--json", json,
            ],
            LIMIT,
        )
    };
    // The elicitation shape the hint used to suggest: refused here, nothing sent.
    let wrong = answer(r#"{"action":"accept","content":{"text":"Still water"}}"#);
    assert_eq!(wrong.code, Some(2), "{wrong:#?}");
    assert!(
        wrong.stderr.contains("CreateMessageResult"),
        "{}",
        wrong.stderr
    );
    let no_model = answer(r#"{"role":"assistant","content":{"type":"text","text":"x"}}"#);
    assert_eq!(no_model.code, Some(2), "{no_model:#?}");
    assert!(
        no_model.stderr.contains("model is missing"),
        "{}",
        no_model.stderr
    );
    // The key is still open: the right shape goes through.
    let ok = answer(
        r#"{"role":"assistant","content":{"type":"text","text":"Still water, small crabs"},"model":"me"}"#,
    );
    assert_eq!(ok.code, Some(0), "{ok:#?}");
    let done = call.finish(LIMIT);
    assert_eq!(done.code, Some(0), "{done:#?}");
    assert!(
        done.stdout.contains("Still water, small crabs"),
        "{done:#?}"
    );
    // Neither the ledger's JSON nor `get` shows internal fields.
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert!(!ls.stdout.contains("_replyTo"), "{}", ls.stdout);
}
