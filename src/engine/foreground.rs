//! Foreground input: requests a server makes outside any task, waiting for the person.
//! Two routes: a legacy server's request the client keeps (answered through the client),
//! and a round of a call — the modern multi-round-trip `input_required` result, or the
//! URL elicitations a 2025-11-25 `-32042` error requires — that is sent again once every
//! request of the round is answered. Every open request has a deadline.
//!
//! Owns: the bookkeeping (keys, deadlines, rounds). Must not do I/O: the actor acts on
//! what these methods return.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::mcp::input::is_refusal;
use crate::mcp::{InputKind, InputRequest, TaskId};

/// A call is sent again at most this many times for input.
pub const MAX_ROUNDS: u32 = 5;

/// Where an answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// To the client, under the client's key.
    Client(String),
    /// Into round `call_id`, under the server's input key (MRTR) or an index (URL).
    Round { call_id: u64, input_key: String },
}

#[derive(Debug, Clone)]
struct Open {
    route: Route,
    deadline: Instant,
    /// The call that asked (client route: the tag of the reply stream).
    call: Option<u64>,
    /// URL-mode: the id `notifications/elicitation/complete` names.
    elicitation_id: Option<String>,
    /// An elicitation (a refusal is an answer); else a refusal has no wire form here.
    elicitation: bool,
}

/// How a round's call is sent again.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundKind {
    /// `inputResponses` and the echoed `requestState`.
    Mrtr { request_state: Option<Value> },
    /// The same call again, once the URL interactions are done.
    UrlRequired { error: String },
}

/// One call waiting for input before it is sent again.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub tool: String,
    pub arguments: Value,
    pub parent: Option<TaskId>,
    pub kind: RoundKind,
    waiting: BTreeSet<String>,
    pub responses: BTreeMap<String, Value>,
}

/// What an answer (or a completion notice) did.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// Send it to the client under this key.
    Client(String),
    /// The round still waits for other requests.
    Waiting,
    /// Every request of the round is answered: send the call again.
    Ready { call_id: u64, round: Round },
    /// The round cannot go on (a refusal that has no wire form): end the call.
    Refused {
        call_id: u64,
        round: Round,
        why: String,
    },
    /// No open request has this key.
    Unknown,
}

/// How a request of a new round is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Handling {
    /// Without the person (roots from the config).
    Auto(Value),
    /// By the person.
    Person,
    /// Not at all: the kind is not offered for this server.
    NotOffered,
}

/// The call a round belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    pub call_id: u64,
    pub tool: String,
    pub arguments: Value,
    pub parent: Option<TaskId>,
}

/// A request opened for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub key: String,
    pub request: InputRequest,
}

/// What a new round came to.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundStart {
    /// These requests wait for the person.
    Asked(Vec<Opened>),
    /// Everything was answered without the person (roots): send the call again.
    Ready(Round),
    /// The round cannot be answered: end the call with this message.
    Impossible(String),
}

/// Something whose deadline passed.
#[derive(Debug, Clone, PartialEq)]
pub enum Expired {
    /// Answer the client's request on the person's behalf.
    Client { key: String, client_key: String },
    /// The round's call ends unanswered; `keys` are all of its open requests.
    Round {
        call_id: u64,
        round: Round,
        keys: Vec<String>,
    },
}

#[derive(Default)]
pub struct Foreground {
    open: HashMap<String, Open>,
    rounds: HashMap<u64, Round>,
    /// Rounds sent per call so far (bounded by `MAX_ROUNDS`).
    sent: HashMap<u64, u32>,
    /// The tool of each call in flight.
    tools: HashMap<u64, String>,
    /// Bumped on every new connection: client keys of an old one never collide.
    epoch: u64,
}

impl Foreground {
    /// The earliest deadline of an open request.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|o| o.deadline).min()
    }

    /// A call went out (requests on its reply stream name it).
    pub fn call_started(&mut self, call_id: u64, tool: &str) {
        if self.tools.len() < 4096 {
            self.tools.insert(call_id, tool.to_string());
        }
    }

    /// The tool of call `call_id`, while it is in flight.
    pub fn tool_of(&self, call_id: u64) -> Option<&str> {
        self.tools.get(&call_id).map(String::as_str)
    }

    /// A new connection: the old client's requests are gone. Returns their keys.
    pub fn new_connection(&mut self) -> Vec<String> {
        self.epoch += 1;
        let gone: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| matches!(o.route, Route::Client(_)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.open.remove(k);
        }
        gone
    }

    /// A request the client keeps under `client_key`; returns the engine's key.
    pub fn client_asked(
        &mut self,
        client_key: &str,
        request: &InputRequest,
        call: Option<u64>,
        wait: Duration,
        now: Instant,
    ) -> String {
        let key = format!("c{}/{client_key}", self.epoch);
        self.open.insert(
            key.clone(),
            Open {
                route: Route::Client(client_key.to_string()),
                deadline: now + wait,
                call,
                elicitation_id: url_id(request),
                elicitation: InputKind::of(request).is_elicitation(),
            },
        );
        key
    }

    /// The client no longer waits for `client_key` (the server withdrew it).
    pub fn client_gone(&mut self, client_key: &str) -> Option<String> {
        let key = self
            .open
            .iter()
            .find(|(_, o)| o.route == Route::Client(client_key.to_string()))
            .map(|(k, _)| k.clone())?;
        self.open.remove(&key);
        Some(key)
    }

    /// Open a round for `call`: `handling` says how each request is answered; one that
    /// cannot be makes the round impossible.
    pub fn open_round(
        &mut self,
        call: CallSpec,
        kind: RoundKind,
        requests: BTreeMap<String, InputRequest>,
        handling: impl Fn(&InputRequest) -> Handling,
        wait: Duration,
        now: Instant,
    ) -> RoundStart {
        let CallSpec {
            call_id,
            tool,
            arguments,
            parent,
        } = call;
        let sent = self.sent.entry(call_id).or_insert(0);
        if *sent >= MAX_ROUNDS {
            return RoundStart::Impossible(format!(
                "the server asked for input {MAX_ROUNDS} times in a row; the call was not sent again"
            ));
        }
        if requests.is_empty() && matches!(kind, RoundKind::UrlRequired { .. }) {
            return RoundStart::Impossible(
                "the server required a URL interaction but named none".into(),
            );
        }
        let mut round = Round {
            tool,
            arguments,
            parent,
            kind,
            waiting: BTreeSet::new(),
            responses: BTreeMap::new(),
        };
        let mut asked = Vec::new();
        for (input_key, request) in requests {
            match handling(&request) {
                Handling::Auto(response) => {
                    round.responses.insert(input_key, response);
                    continue;
                }
                Handling::NotOffered => {
                    self.close_round(call_id);
                    return RoundStart::Impossible(format!(
                        "the server asked for {} before answering, which taskrail does not offer here",
                        describe(&request)
                    ));
                }
                Handling::Person => {}
            }
            let key = format!("call{call_id}/{input_key}");
            self.open.insert(
                key.clone(),
                Open {
                    route: Route::Round {
                        call_id,
                        input_key: input_key.clone(),
                    },
                    deadline: now + wait,
                    call: Some(call_id),
                    elicitation_id: url_id(&request),
                    elicitation: InputKind::of(&request).is_elicitation(),
                },
            );
            round.waiting.insert(input_key);
            asked.push(Opened { key, request });
        }
        if asked.is_empty() {
            return RoundStart::Ready(round);
        }
        self.rounds.insert(call_id, round);
        RoundStart::Asked(asked)
    }

    /// A round's call was sent again.
    pub fn round_sent(&mut self, call_id: u64) {
        *self.sent.entry(call_id).or_insert(0) += 1;
    }

    /// The call is over (a task, a result or an error): forget it and its rounds.
    /// Returns the requests still open that it asked, with the client's key for those
    /// the client keeps.
    pub fn call_ended(&mut self, call_id: u64) -> Vec<(String, Option<String>)> {
        self.sent.remove(&call_id);
        self.rounds.remove(&call_id);
        self.tools.remove(&call_id);
        let keys: Vec<(String, Option<String>)> = self
            .open
            .iter()
            .filter(|(_, o)| o.call == Some(call_id))
            .map(|(k, o)| {
                let client = match &o.route {
                    Route::Client(c) => Some(c.clone()),
                    Route::Round { .. } => None,
                };
                (k.clone(), client)
            })
            .collect();
        for (k, _) in &keys {
            self.open.remove(k);
        }
        keys
    }

    /// The person answered `key`.
    pub fn answer(&mut self, key: &str, response: Value) -> Answered {
        let Some(open) = self.open.remove(key) else {
            return Answered::Unknown;
        };
        match open.route {
            Route::Client(client_key) => Answered::Client(client_key),
            Route::Round { call_id, input_key } => {
                let Some(round) = self.rounds.get_mut(&call_id) else {
                    return Answered::Unknown;
                };
                round.waiting.remove(&input_key);
                let url = match &round.kind {
                    RoundKind::UrlRequired { error } => Some(error.clone()),
                    RoundKind::Mrtr { .. } => None,
                };
                if is_refusal(&response) && (url.is_some() || !open.elicitation) {
                    let why = match url {
                        Some(error) => format!(
                            "{}: the link it requires was refused",
                            crate::sanitize::sanitize_line(&error, 200)
                        ),
                        None => "the server's request was refused, and a refusal cannot be sent in its answer".to_string(),
                    };
                    let round = self.close_round(call_id);
                    return Answered::Refused {
                        call_id,
                        round,
                        why,
                    };
                }
                round.responses.insert(input_key, response);
                self.settle(call_id)
            }
        }
    }

    /// `notifications/elicitation/complete` for `elicitation_id`: a URL interaction a
    /// round waits for is done. Returns the key it closed and what that did.
    pub fn url_completed(&mut self, elicitation_id: &str) -> Option<(String, Answered)> {
        let key = self
            .open
            .iter()
            .find(|(_, o)| {
                o.elicitation_id.as_deref() == Some(elicitation_id)
                    && matches!(o.route, Route::Round { .. })
            })
            .map(|(k, _)| k.clone())?;
        let answered = self.answer(&key, serde_json::json!({ "action": "accept" }));
        Some((key, answered))
    }

    fn settle(&mut self, call_id: u64) -> Answered {
        match self.rounds.get(&call_id) {
            Some(r) if r.waiting.is_empty() => {
                let round = self.close_round(call_id);
                Answered::Ready { call_id, round }
            }
            Some(_) => Answered::Waiting,
            None => Answered::Unknown,
        }
    }

    /// Remove a round and every open request of it.
    fn close_round(&mut self, call_id: u64) -> Round {
        self.open
            .retain(|_, o| !matches!(&o.route, Route::Round { call_id: c, .. } if *c == call_id));
        self.rounds.remove(&call_id).unwrap_or(Round {
            tool: String::new(),
            arguments: Value::Null,
            parent: None,
            kind: RoundKind::Mrtr {
                request_state: None,
            },
            waiting: BTreeSet::new(),
            responses: BTreeMap::new(),
        })
    }

    /// Everything whose deadline passed by `now`.
    pub fn expire(&mut self, now: Instant) -> Vec<Expired> {
        let due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for key in due {
            let Some(open) = self.open.get(&key).cloned() else {
                continue; // closed with its round
            };
            match open.route {
                Route::Client(client_key) => {
                    self.open.remove(&key);
                    out.push(Expired::Client { key, client_key });
                }
                Route::Round { call_id, .. } => {
                    let keys: Vec<String> = self
                        .open
                        .iter()
                        .filter(|(_, o)| {
                            matches!(&o.route, Route::Round { call_id: c, .. } if *c == call_id)
                        })
                        .map(|(k, _)| k.clone())
                        .collect();
                    let round = self.close_round(call_id);
                    out.push(Expired::Round {
                        call_id,
                        round,
                        keys,
                    });
                }
            }
        }
        out
    }
}

fn url_id(request: &InputRequest) -> Option<String> {
    match InputKind::of(request) {
        InputKind::Url { elicitation_id, .. } => elicitation_id,
        _ => None,
    }
}

/// "sampling", "the roots list", … for messages.
pub fn describe(request: &InputRequest) -> String {
    match InputKind::of(request) {
        InputKind::Form => "a form".into(),
        InputKind::Url { .. } => "a URL interaction".into(),
        InputKind::Sampling => "sampling (an LLM reply)".into(),
        InputKind::Roots => "the roots list".into(),
        InputKind::Other(m) => format!(
            "{} (unknown to taskrail)",
            crate::sanitize::sanitize_line(&m, 60)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WAIT: Duration = Duration::from_secs(60);

    fn form() -> InputRequest {
        InputRequest {
            method: "elicitation/create".into(),
            params: json!({"message": "name?", "requestedSchema": {"type": "object"}}),
            reply_to: None,
        }
    }

    fn roots() -> InputRequest {
        InputRequest {
            method: "roots/list".into(),
            params: json!({}),
            reply_to: None,
        }
    }

    fn url(id: &str) -> InputRequest {
        InputRequest {
            method: "elicitation/create".into(),
            params: json!({"mode": "url", "url": "https://example.com/a", "elicitationId": id}),
            reply_to: None,
        }
    }

    fn round_of(
        f: &mut Foreground,
        kind: RoundKind,
        requests: Vec<(&str, InputRequest)>,
        now: Instant,
    ) -> RoundStart {
        let requests = requests
            .into_iter()
            .map(|(k, r)| (k.to_string(), r))
            .collect();
        let call = CallSpec {
            call_id: 7,
            tool: "tool".into(),
            arguments: json!({"a": 1}),
            parent: None,
        };
        f.open_round(
            call,
            kind,
            requests,
            |r| match r.method.as_str() {
                "roots/list" => Handling::Auto(json!({"roots": []})),
                "sampling/createMessage" => Handling::NotOffered,
                _ => Handling::Person,
            },
            WAIT,
            now,
        )
    }

    #[test]
    fn an_mrtr_round_is_ready_once_every_request_is_answered() {
        let mut f = Foreground::default();
        let now = Instant::now();
        let kind = RoundKind::Mrtr {
            request_state: Some(json!("s1")),
        };
        let RoundStart::Asked(asked) = round_of(
            &mut f,
            kind,
            vec![("a", form()), ("b", form()), ("r", roots())],
            now,
        ) else {
            panic!("two forms wait");
        };
        assert_eq!(asked.len(), 2);
        assert_eq!(
            f.answer(&asked[0].key, json!({"action": "accept"})),
            Answered::Waiting
        );
        assert_eq!(
            f.answer(&asked[0].key, json!({})),
            Answered::Unknown,
            "answered once"
        );
        let Answered::Ready { call_id, round } =
            f.answer(&asked[1].key, json!({"action": "decline"}))
        else {
            panic!("ready");
        };
        assert_eq!(call_id, 7);
        assert_eq!(
            round.responses.len(),
            3,
            "roots answered without the person"
        );
        assert_eq!(round.responses["b"], json!({"action": "decline"}));
        assert_eq!(
            round.kind,
            RoundKind::Mrtr {
                request_state: Some(json!("s1"))
            }
        );
        assert!(f.next_deadline().is_none());
    }

    #[test]
    fn rounds_that_cannot_be_answered_end_the_call() {
        let mut f = Foreground::default();
        let now = Instant::now();
        let sampling = InputRequest {
            method: "sampling/createMessage".into(),
            params: json!({}),
            reply_to: None,
        };
        let kind = RoundKind::Mrtr {
            request_state: None,
        };
        assert!(matches!(
            round_of(&mut f, kind.clone(), vec![("s", sampling)], now),
            RoundStart::Impossible(m) if m.contains("sampling")
        ));
        assert!(matches!(
            round_of(&mut f, kind.clone(), vec![("r", roots())], now),
            RoundStart::Ready(_)
        ));
        for _ in 0..MAX_ROUNDS {
            f.round_sent(7);
        }
        assert!(matches!(
            round_of(&mut f, kind, vec![("a", form())], now),
            RoundStart::Impossible(_)
        ));
        f.call_ended(7);
        assert!(matches!(
            round_of(
                &mut f,
                RoundKind::Mrtr {
                    request_state: None
                },
                vec![("a", form())],
                now
            ),
            RoundStart::Asked(_)
        ));
    }

    #[test]
    fn url_rounds_finish_on_the_completion_notice_and_end_on_refusal() {
        let mut f = Foreground::default();
        let now = Instant::now();
        let kind = RoundKind::UrlRequired {
            error: "needs auth".into(),
        };
        let RoundStart::Asked(asked) = round_of(&mut f, kind.clone(), vec![("0", url("e1"))], now)
        else {
            panic!()
        };
        let (key, done) = f.url_completed("e1").unwrap();
        assert_eq!(key, asked[0].key);
        assert!(matches!(done, Answered::Ready { .. }));
        assert!(f.url_completed("e1").is_none());

        let RoundStart::Asked(asked) = round_of(&mut f, kind, vec![("0", url("e2"))], now) else {
            panic!()
        };
        assert!(matches!(
            f.answer(&asked[0].key, json!({"action": "cancel"})),
            Answered::Refused { .. }
        ));
    }

    #[test]
    fn a_refused_sampling_request_ends_its_round() {
        let mut f = Foreground::default();
        let sampling = InputRequest {
            method: "sampling/createMessage".into(),
            params: json!({}),
            reply_to: None,
        };
        let call = CallSpec {
            call_id: 9,
            tool: "t".into(),
            arguments: json!({}),
            parent: None,
        };
        let RoundStart::Asked(asked) = f.open_round(
            call,
            RoundKind::Mrtr {
                request_state: None,
            },
            [("s".to_string(), sampling)].into_iter().collect(),
            |_| Handling::Person,
            WAIT,
            Instant::now(),
        ) else {
            panic!()
        };
        assert!(matches!(
            f.answer(&asked[0].key, json!({"action": "decline"})),
            Answered::Refused { call_id: 9, .. }
        ));
    }

    #[test]
    fn deadlines_expire_client_requests_and_whole_rounds() {
        let mut f = Foreground::default();
        let now = Instant::now();
        let c = f.client_asked("input-1", &form(), Some(3), WAIT, now);
        let RoundStart::Asked(asked) = round_of(
            &mut f,
            RoundKind::Mrtr {
                request_state: None,
            },
            vec![("a", form()), ("b", form())],
            now + Duration::from_secs(1),
        ) else {
            panic!()
        };
        assert_eq!(f.next_deadline(), Some(now + WAIT));
        assert!(f.expire(now + Duration::from_secs(10)).is_empty());
        let expired = f.expire(now + WAIT + Duration::from_secs(5));
        assert_eq!(expired.len(), 2);
        assert!(expired.contains(&Expired::Client {
            key: c.clone(),
            client_key: "input-1".into()
        }));
        let round = expired.iter().find_map(|e| match e {
            Expired::Round { keys, .. } => Some(keys.clone()),
            _ => None,
        });
        let mut keys = round.unwrap();
        keys.sort();
        assert_eq!(keys, vec![asked[0].key.clone(), asked[1].key.clone()]);
        assert!(f.next_deadline().is_none());
    }

    #[test]
    fn a_new_connection_drops_the_old_clients_requests() {
        let mut f = Foreground::default();
        let now = Instant::now();
        let old = f.client_asked("input-1", &form(), None, WAIT, now);
        assert_eq!(f.new_connection(), vec![old.clone()]);
        let new = f.client_asked("input-1", &form(), None, WAIT, now);
        assert_ne!(old, new, "keys of two connections never collide");
        assert_eq!(f.call_ended(3), vec![]);
        f.call_started(3, "slow");
        assert_eq!(f.tool_of(3), Some("slow"));
        let tagged = f.client_asked("input-2", &form(), Some(3), WAIT, now);
        assert_eq!(f.call_ended(3), vec![(tagged, Some("input-2".to_string()))]);
        assert_eq!(f.tool_of(3), None);
        assert_eq!(f.client_gone("input-1"), Some(new));
    }
}
