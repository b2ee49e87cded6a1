//! Reducer tests for the input kinds beyond forms: URL consent, sampling (typed or by the
//! configured command), roots, and requests outside any task.

use std::time::Duration;

use serde_json::{Value, json};

use super::{code, fresh, key, run, srv, task, tk, updated};
use crate::engine::{EngineCommand, EngineEvent, InputOrigin};
use crate::mcp::{Era, InputRequest, TaskStatus};
use crate::state::views::consent::ConsentView;
use crate::state::views::sampling::{Phase, SamplingView};
use crate::state::*;

fn request(method: &str, params: Value) -> InputRequest {
    InputRequest {
        method: method.into(),
        params,
        reply_to: None,
    }
}

fn url_request(url: &str) -> InputRequest {
    request(
        "elicitation/create",
        json!({"mode": "url", "url": url, "message": "Sign in to continue", "elicitationId": "e-1"}),
    )
}

fn sampling_request() -> InputRequest {
    request(
        "sampling/createMessage",
        json!({
            "systemPrompt": "You are a poet.",
            "messages": [{"role": "user", "content": {"type": "text", "text": "Write a haiku"}}],
            "maxTokens": 50,
            "modelPreferences": {"hints": [{"name": "claude-3"}]}
        }),
    )
}

/// A state whose task t1 waits on `requests`.
fn waiting(s: &mut State, requests: Vec<(&str, InputRequest)>) {
    let mut t = task("t1", TaskStatus::InputRequired);
    for (k, r) in requests {
        t.input_requests.insert(k.to_string(), r);
    }
    run(s, vec![updated(t)]);
    s.board.selected = Some(tk("t1"));
}

fn ctrl(c: char) -> Msg {
    Msg::Key(Key::ctrl(c))
}

fn consent(s: &State) -> &ConsentView {
    match s.modals.last() {
        Some(Modal::Consent(c)) => c,
        other => panic!("expected the consent view, got {other:?}"),
    }
}

fn sampling(s: &State) -> &SamplingView {
    match s.modals.last() {
        Some(Modal::Sampling(v)) => v,
        other => panic!("expected the sampling view, got {other:?}"),
    }
}

fn answer_of(fx: &[Effect]) -> (String, Value) {
    let Some(Effect::Engine(EngineCommand::Answer { responses, .. })) = fx.last() else {
        panic!("expected an answer, got {fx:?}");
    };
    let (k, v) = responses.iter().next().unwrap();
    (k.clone(), v.clone())
}

#[test]
fn a_link_opens_the_consent_view_and_done_accepts() {
    let mut s = fresh();
    waiting(
        &mut s,
        vec![("u", url_request("https://auth.example.com/k?x=1"))],
    );
    run(&mut s, vec![key('a')]);
    assert_eq!(s.context(), Context::Consent);
    let c = consent(&s);
    assert_eq!(c.check.host, "auth.example.com");
    assert_eq!(c.message, "Sign in to continue");
    // nothing is opened until asked: the browser on `o`, the clipboard on `y`
    let fx = run(&mut s, vec![key('o')]);
    assert_eq!(
        fx,
        vec![Effect::OpenBrowser("https://auth.example.com/k?x=1".into())]
    );
    let fx = run(&mut s, vec![key('y')]);
    assert_eq!(
        fx,
        vec![Effect::Copy("https://auth.example.com/k?x=1".into())]
    );
    assert!(consent(&s).opened && consent(&s).copied);
    let fx = run(&mut s, vec![key('d')]);
    assert_eq!(answer_of(&fx), ("u".into(), json!({"action": "accept"})));
    assert!(s.modals.is_empty());
    assert!(s.tasks[&tk("t1")].answer.is_some(), "marked answer sent");
}

#[test]
fn a_refused_link_is_never_opened_and_can_only_be_declined() {
    let mut s = fresh();
    waiting(&mut s, vec![("u", url_request("javascript:alert(1)"))]);
    run(&mut s, vec![key('a')]);
    assert!(consent(&s).check.refused.is_some());
    assert!(run(&mut s, vec![key('o'), key('y'), key('d')]).is_empty());
    assert!(consent(&s).error.as_deref().unwrap().contains("refused"));
    let fx = run(&mut s, vec![ctrl('d')]);
    assert_eq!(answer_of(&fx), ("u".into(), json!({"action": "decline"})));
}

#[test]
fn a_link_cancelled_with_ctrl_x_ends_with_a_notice() {
    let mut s = fresh();
    waiting(
        &mut s,
        vec![("u", url_request("https://auth.example.com/k"))],
    );
    run(&mut s, vec![key('a')]);
    assert_eq!(s.context(), Context::Consent);
    let fx = run(&mut s, vec![ctrl('x')]);
    assert_eq!(answer_of(&fx), ("u".into(), json!({"action": "cancel"})));
    assert!(s.modals.is_empty());
    let said: Vec<&str> = s.notices.iter().map(|n| n.text.as_str()).collect();
    assert!(
        said.iter()
            .any(|t| t.contains("link request of task t1") && t.contains("cancelled")),
        "{said:?}"
    );
}

#[test]
fn the_completion_notice_marks_the_consent_view() {
    let mut s = fresh();
    waiting(
        &mut s,
        vec![("u", url_request("https://auth.example.com/k"))],
    );
    run(&mut s, vec![key('a')]);
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::UrlElicitationCompleted {
            server: srv(),
            elicitation_id: "e-1".into(),
        })],
    );
    assert!(consent(&s).completed);
    run(
        &mut s,
        vec![Msg::BrowserFailed("xdg-open: not found".into())],
    );
    assert!(
        consent(&s)
            .error
            .as_deref()
            .unwrap()
            .contains("copy the link")
    );
}

fn offer(s: &mut State, sampling: Option<SamplingSetup>, roots: Option<Vec<String>>) {
    s.input.insert(srv(), ServerInput { sampling, roots });
}

#[test]
fn a_sampling_request_is_answered_by_typing_the_reply() {
    let mut s = fresh();
    offer(&mut s, Some(SamplingSetup::Person), None);
    waiting(&mut s, vec![("s", sampling_request())]);
    run(&mut s, vec![key('a')]);
    assert_eq!(s.context(), Context::Sampling);
    let text: Vec<String> = sampling(&s).doc.iter().map(|l| l.text.clone()).collect();
    assert!(text.iter().any(|t| t == "You are a poet."), "{text:?}");
    assert!(text.iter().any(|t| t == "Write a haiku"), "{text:?}");
    // an empty reply is not sent; letters (even `c`, `q`, `o`) are typed, not actions
    assert!(run(&mut s, vec![ctrl('s')]).is_empty());
    for c in "cool quiet\n".chars() {
        run(&mut s, vec![key(c)]);
    }
    run(&mut s, vec![key('o')]);
    assert_eq!(sampling(&s).reply.text(), "cool quiet\no");
    let fx = run(&mut s, vec![ctrl('s')]);
    let (k, v) = answer_of(&fx);
    assert_eq!(k, "s");
    assert_eq!(v["role"], "assistant");
    assert_eq!(
        v["content"],
        json!({"type": "text", "text": "cool quiet\no"})
    );
    assert_eq!(v["model"], "person");
    assert!(s.modals.is_empty());
}

#[test]
fn a_configured_command_runs_only_after_approval_and_its_output_is_read_first() {
    let mut s = fresh();
    let setup = SamplingSetup::Command {
        command: "/usr/bin/llm -m tiny".into(),
        timeout: Duration::from_secs(9),
    };
    offer(&mut s, Some(setup), None);
    waiting(&mut s, vec![("s", sampling_request())]);
    let fx = run(&mut s, vec![key('a')]);
    assert!(fx.is_empty(), "nothing runs on opening");
    let fx = run(&mut s, vec![ctrl('r')]);
    let Some(Effect::RunSampling {
        command,
        timeout,
        input,
        input_key,
        ..
    }) = fx.first()
    else {
        panic!("{fx:?}")
    };
    assert_eq!(command, "/usr/bin/llm -m tiny");
    assert_eq!(*timeout, Duration::from_secs(9));
    assert_eq!(input_key, "s");
    assert_eq!(input["params"]["maxTokens"], 50);
    assert_eq!(sampling(&s).phase, Phase::Running);
    let target = InputTarget::Task(tk("t1"));
    run(
        &mut s,
        vec![Msg::SamplingFinished {
            target: target.clone(),
            input_key: "s".into(),
            result: Ok("An old pond\n\u{1b}[31ma frog\n".into()),
        }],
    );
    assert_eq!(sampling(&s).phase, Phase::Review);
    assert_eq!(sampling(&s).reply.text(), "An old pond\na frog");
    let fx = run(&mut s, vec![ctrl('s')]);
    let (_, v) = answer_of(&fx);
    assert_eq!(v["content"]["text"], "An old pond\na frog");
    assert_eq!(v["model"], "llm");
}

#[test]
fn a_failed_command_leaves_the_reply_and_a_closed_view_keeps_the_output() {
    let mut s = fresh();
    let setup = SamplingSetup::Command {
        command: "llm".into(),
        timeout: Duration::from_secs(9),
    };
    offer(&mut s, Some(setup), None);
    waiting(&mut s, vec![("s", sampling_request())]);
    run(&mut s, vec![key('a'), ctrl('r')]);
    let target = InputTarget::Task(tk("t1"));
    let done = |r: Result<String, String>| Msg::SamplingFinished {
        target: target.clone(),
        input_key: "s".into(),
        result: r,
    };
    run(&mut s, vec![done(Err("exit status: 1: no key".into()))]);
    assert!(matches!(&sampling(&s).phase, Phase::Failed(e) if e.contains("no key")));
    run(
        &mut s,
        vec![ctrl('r'), code(KeyCode::Esc), done(Ok("later".into()))],
    );
    assert!(s.modals.is_empty());
    run(&mut s, vec![key('a')]);
    assert_eq!(
        sampling(&s).reply.text(),
        "later",
        "the output waited for the view"
    );
}

#[test]
fn sampling_not_offered_says_so_and_the_row_names_the_way_out() {
    let mut s = fresh();
    waiting(&mut s, vec![("s", sampling_request())]);
    let (wants, note) = s.input_note(&s.tasks[&tk("t1")]).unwrap();
    assert_eq!(wants, "wants sampling");
    assert!(
        note.contains("does not offer it") && note.contains("c cancels"),
        "{note}"
    );
    run(&mut s, vec![key('a')]);
    assert!(sampling(&s).setup.is_none());
    for c in "hi".chars() {
        run(&mut s, vec![key(c)]);
    }
    assert_eq!(sampling(&s).reply.text(), "", "nothing to type into");
    assert!(run(&mut s, vec![ctrl('s'), ctrl('r')]).is_empty());
    // a modern task's sampling request has no refusal: the way out is cancelling the task
    assert!(run(&mut s, vec![ctrl('d')]).is_empty());
    assert!(
        sampling(&s)
            .error
            .as_deref()
            .unwrap()
            .contains("cancel the task")
    );
    run(&mut s, vec![code(KeyCode::Esc), key('c')]);
    assert!(matches!(s.modals.last(), Some(Modal::Confirm(_))));
}

#[test]
fn a_legacy_task_can_refuse_sampling() {
    let mut s = fresh();
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ServerConnected {
            server: srv(),
            era: Era::Legacy,
            push: true,
            server_name: None,
        })],
    );
    offer(&mut s, Some(SamplingSetup::Person), None);
    waiting(&mut s, vec![("s", sampling_request())]);
    let fx = run(&mut s, vec![key('a'), ctrl('d')]);
    assert_eq!(answer_of(&fx), ("s".into(), json!({"action": "decline"})));
}

#[test]
fn roots_view_shows_what_is_offered_and_sent() {
    let mut s = fresh();
    offer(&mut s, None, Some(vec!["file:///work/repo".into()]));
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::RootsShared {
            server: srv(),
            task_id: Some(crate::engine::TaskId::new("t9abcdefgh")),
            roots: vec!["file:///work/repo".into()],
        })],
    );
    run(&mut s, vec![key('o')]);
    assert_eq!(s.context(), Context::Detail);
    let Some(Modal::Roots(v)) = s.modals.last() else {
        panic!()
    };
    let doc = views::roots::roots_doc(&s, &v.server);
    let text: Vec<String> = doc.iter().map(|l| l.text.clone()).collect();
    assert!(
        text.iter().any(|t| t.contains("file:///work/repo")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|t| t.contains("to task t9abcdef: 1 root")),
        "{text:?}"
    );
    // without roots offered, a task asking for them says so and the roots view opens
    let mut s = fresh();
    waiting(&mut s, vec![("r", request("roots/list", json!({})))]);
    assert_eq!(s.input_note(&s.tasks[&tk("t1")]).unwrap().0, "wants roots");
    run(&mut s, vec![key('a')]);
    let Some(Modal::Roots(v)) = s.modals.last() else {
        panic!("{:?}", s.modals)
    };
    let text: Vec<String> = views::roots::roots_doc(&s, &v.server)
        .into_iter()
        .map(|l| l.text)
        .collect();
    assert!(text.iter().any(|t| t.contains("Not offered")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("t1")), "{text:?}");
}

fn asked(key: &str, origin: InputOrigin, request: InputRequest) -> Msg {
    Msg::Engine(EngineEvent::ForegroundInputRequested {
        server: srv(),
        key: key.into(),
        origin,
        request,
        expires_in: Duration::from_secs(600),
    })
}

#[test]
fn a_request_outside_any_task_opens_for_our_own_call_and_is_answered_through_the_engine() {
    let mut s = fresh();
    s.calls.insert(7, (srv(), "register_user".into()));
    let req = super::elicit(json!({"type": "object", "properties": {"name": {"type": "string"}}}));
    let origin = InputOrigin::Call {
        call_id: 7,
        tool: "register_user".into(),
    };
    let fx = run(&mut s, vec![asked("c1/input-1", origin, req)]);
    assert!(matches!(fx.first(), Some(Effect::Alert(_))));
    let Some(Modal::Input(f)) = s.modals.last() else {
        panic!("the form opens for our own call: {:?}", s.modals)
    };
    assert_eq!(f.title, "Input during register_user");
    assert_eq!(s.inbox(&srv()), 1);
    for c in "Ada".chars() {
        run(&mut s, vec![key(c)]);
    }
    let fx = run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::AnswerForeground {
            server: srv(),
            key: "c1/input-1".into(),
            response: json!({"action": "accept", "content": {"name": "Ada"}}),
        })]
    );
    assert!(s.foreground.is_empty() && s.modals.is_empty());
}

#[test]
fn a_session_request_waits_in_the_inbox_and_closes_when_withdrawn() {
    let mut s = fresh();
    run(
        &mut s,
        vec![asked(
            "c1/input-2",
            InputOrigin::Session,
            url_request("https://pay.example.com/c"),
        )],
    );
    assert!(s.modals.is_empty(), "nothing pops up over the board");
    assert!(s.notices.last().unwrap().text.contains("asks for input"));
    let entries = views::inbox::entries(&s);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].short_id(), "—");
    run(&mut s, vec![key('i'), code(KeyCode::Enter)]);
    assert_eq!(consent(&s).check.host, "pay.example.com");
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ForegroundInputClosed {
            server: srv(),
            key: "c1/input-2".into(),
            reason: "no answer within 10 min; cancelled".into(),
        })],
    );
    assert!(
        !matches!(s.modals.last(), Some(Modal::Consent(_))),
        "the view closed"
    );
    assert!(s.foreground.is_empty());
    assert!(s.notices.last().unwrap().text.contains("10 min"));
    let fx = run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(fx.is_empty());
}

#[test]
fn a_failed_task_says_why_in_one_line() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::Failed);
    t.error = Some(Box::new(crate::mcp::ErrorObject {
        code: -32603,
        message: "Upstream unavailable".into(),
        data: None,
    }));
    run(&mut s, vec![updated(t)]);
    assert_eq!(
        s.tasks[&tk("t1")].failure_reason().as_deref(),
        Some("Upstream unavailable (error -32603)")
    );
    // a legacy tool error carries its reason in the result text
    let mut t = task("t2", TaskStatus::Failed);
    t.result = Some(Box::new(
        json!({"isError": true, "content": [{"type": "text", "text": "Error: McpError -32601"}]}),
    ));
    run(&mut s, vec![updated(t)]);
    let key2 = TaskKey::new(&srv(), &crate::engine::TaskId::new("t2"));
    assert_eq!(
        s.tasks[&key2].failure_reason().as_deref(),
        Some("Error: McpError -32601")
    );
    let t = task("t3", TaskStatus::Failed);
    run(&mut s, vec![updated(t)]);
    let key3 = TaskKey::new(&srv(), &crate::engine::TaskId::new("t3"));
    assert_eq!(
        s.tasks[&key3].failure_reason().as_deref(),
        Some("the server gave no reason")
    );
}
