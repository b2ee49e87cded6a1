//! The actor's side of foreground input (requests outside any task): a legacy server's
//! requests the client keeps, rounds of a call that asked for input before answering
//! (modern `input_required`, 2025-11-25 `-32042`), deadlines, and roots answered from the
//! config. The person is never awaited: requests go up as events, answers come down as
//! commands.
//!
//! Must not block on the network: answers and re-sent calls run in spawned tasks.

use super::commands::call_with_retry;
use super::*;
use crate::engine::foreground::{
    Answered, CallSpec, Expired, Handling, Round, RoundKind, RoundStart,
};
use crate::mcp::{InputKind, InputRequest, InputSupport, input};

/// 2025-11-25: "URL elicitation required" (`data.elicitations` lists them).
pub(super) const URL_ELICITATION_REQUIRED: i64 = -32042;

/// How a request of a round is answered on a server with `support`.
fn handling(support: &InputSupport, request: &InputRequest) -> Handling {
    match InputKind::of(request) {
        InputKind::Roots => support
            .roots_result()
            .map_or(Handling::NotOffered, Handling::Auto),
        InputKind::Sampling if !support.sampling => Handling::NotOffered,
        InputKind::Other(_) => Handling::NotOffered,
        _ => Handling::Person,
    }
}

impl ServerActor {
    fn origin(&self, call: Option<u64>) -> InputOrigin {
        match call.and_then(|c| self.foreground.tool_of(c).map(|t| (c, t.to_string()))) {
            Some((call_id, tool)) => InputOrigin::Call { call_id, tool },
            None => InputOrigin::Session,
        }
    }

    async fn closed(&self, key: String, reason: String) {
        self.emit(EngineEvent::ForegroundInputClosed {
            server: self.id(),
            key,
            reason,
        })
        .await;
    }

    /// A request the client keeps for the person (`ServerPush::Foreground`). Only one
    /// that came on its call's own stream is moot once the call ends.
    pub(super) async fn foreground_pushed(
        &mut self,
        client_key: String,
        request: InputRequest,
        call: Option<u64>,
        on_call_stream: bool,
    ) {
        let wait = self.cfg.foreground_wait;
        let bound = call.filter(|_| on_call_stream);
        let key = self
            .foreground
            .client_asked(&client_key, &request, bound, wait, Instant::now());
        let origin = self.origin(call);
        self.emit(EngineEvent::ForegroundInputRequested {
            server: self.id(),
            key,
            origin,
            request,
            expires_in: wait,
        })
        .await;
    }

    /// The server withdrew a request the client kept.
    pub(super) async fn foreground_gone(&mut self, client_key: String, reason: String) {
        if let Some(key) = self.foreground.client_gone(&client_key) {
            self.closed(key, reason).await;
        }
    }

    /// A new connection: requests the old one kept can no longer be answered.
    pub(super) async fn foreground_reconnected(&mut self) {
        for key in self.foreground.new_connection() {
            self.closed(key, "the connection to the server was renewed".into())
                .await;
        }
    }

    /// Answer a request the client keeps (spawned: never waits on the network here).
    fn answer_client(&self, key: String, client_key: String, response: Value) {
        let Some(client) = self.client.clone() else {
            return;
        };
        let events = self.events.clone();
        let server = self.id();
        tokio::spawn(async move {
            if let Err(e) = client.answer_foreground(&client_key, &response).await {
                let reason = format!("the answer could not be sent: {e}");
                let _ = events
                    .send(EngineEvent::ForegroundInputClosed {
                        server,
                        key,
                        reason,
                    })
                    .await;
            }
        });
    }

    /// `AnswerForeground`.
    pub(super) async fn answer_foreground(&mut self, key: String, response: Value) {
        if self.refuse_read_only("answer").await.is_some() {
            return;
        }
        match self.foreground.answer(&key, response.clone()) {
            Answered::Client(client_key) => self.answer_client(key, client_key, response),
            Answered::Unknown => {
                self.closed(key, "the request was no longer open".into())
                    .await
            }
            round => self.round_answered(round).await,
        }
    }

    /// A round moved on: send its call again, or end it.
    async fn round_answered(&mut self, answered: Answered) {
        match answered {
            Answered::Ready { call_id, round } => self.send_round(call_id, round),
            Answered::Refused {
                call_id,
                round,
                why,
            } => self.end_call(call_id, round.tool, why).await,
            Answered::Waiting | Answered::Client(_) | Answered::Unknown => {}
        }
    }

    /// Send a round's call again, with its answers.
    fn send_round(&mut self, call_id: u64, round: Round) {
        let Some(client) = self.client.clone() else {
            return;
        };
        self.foreground.round_sent(call_id);
        let retry = match round.kind {
            RoundKind::Mrtr { request_state } => Some((
                serde_json::to_value(&round.responses).unwrap_or_default(),
                request_state,
            )),
            RoundKind::UrlRequired { .. } => None,
        };
        self.stats.request();
        let tx = self.internal_tx.clone();
        let (tool, arguments, parent) = (round.tool, round.arguments, round.parent);
        tokio::spawn(async move {
            let result = call_with_retry(&client, &tool, &arguments, retry, call_id).await;
            let _ = tx
                .send(Internal::Called {
                    call_id,
                    tool,
                    arguments,
                    parent,
                    result,
                })
                .await;
        });
    }

    /// The call ends without a result (`message` says why).
    async fn end_call(&mut self, call_id: u64, tool: String, message: String) {
        self.call_settled(call_id).await;
        self.emit(EngineEvent::CallFinished {
            server: self.id(),
            call_id,
            tool,
            result: CallResult::Error {
                message,
                code: None,
            },
        })
        .await;
    }

    /// A call's outcome that asks for input before it can finish. Returns `None` when a
    /// round is open (or the call was sent again at once), else the error to report.
    pub(super) async fn input_round(
        &mut self,
        call: CallSpec,
        kind: RoundKind,
        requests: BTreeMap<String, InputRequest>,
    ) -> Option<String> {
        let call_id = call.call_id;
        let wait = self.cfg.foreground_wait;
        let support = self.spec.options.input.clone();
        let start = self.foreground.open_round(
            call,
            kind,
            requests,
            |r| handling(&support, r),
            wait,
            Instant::now(),
        );
        match start {
            RoundStart::Asked(asked) => {
                let origin = self.origin(Some(call_id));
                for opened in asked {
                    self.emit(EngineEvent::ForegroundInputRequested {
                        server: self.id(),
                        key: opened.key,
                        origin: origin.clone(),
                        request: opened.request,
                        expires_in: wait,
                    })
                    .await;
                }
                None
            }
            RoundStart::Ready(round) => {
                self.send_round(call_id, round);
                None
            }
            RoundStart::Impossible(message) => Some(message),
        }
    }

    /// Forget a finished call's rounds; close (and answer `cancel` to) requests its reply
    /// stream carried that nobody answered.
    pub(super) async fn call_settled(&mut self, call_id: u64) {
        for (key, client_key) in self.foreground.call_ended(call_id) {
            if let Some(client_key) = client_key {
                self.answer_client(key.clone(), client_key, input::unanswered());
            }
            self.closed(key, "the call ended before it was answered".into())
                .await;
        }
    }

    /// Deadlines: the engine answers on the person's behalf.
    pub(super) async fn expire_foreground(&mut self) {
        let secs = self.cfg.foreground_wait.as_secs();
        let mins = if secs < 120 {
            format!("{secs} s")
        } else {
            format!("{} min", secs.div_ceil(60))
        };
        for expired in self.foreground.expire(Instant::now()) {
            match expired {
                Expired::Client { key, client_key } => {
                    self.answer_client(key.clone(), client_key, input::unanswered());
                    let reason = format!("no answer within {mins}; cancelled");
                    self.closed(key, reason).await;
                }
                Expired::Round {
                    call_id,
                    round,
                    keys,
                } => {
                    for key in keys {
                        self.closed(key, format!("no answer within {mins}")).await;
                    }
                    let message = format!(
                        "the server asked for input and nobody answered within {mins}; the call was not sent again"
                    );
                    self.end_call(call_id, round.tool, message).await;
                }
            }
        }
    }

    /// `notifications/elicitation/complete`: a URL interaction a round waits for is done.
    pub(super) async fn url_completed(&mut self, elicitation_id: String) {
        if let Some((key, answered)) = self.foreground.url_completed(&elicitation_id) {
            self.closed(
                key,
                "the server reports the URL interaction complete".into(),
            )
            .await;
            self.round_answered(answered).await;
        }
        self.emit(EngineEvent::UrlElicitationCompleted {
            server: self.id(),
            elicitation_id,
        })
        .await;
    }

    /// New input requests of a task that need no person (roots from the config) are
    /// answered here; the rest go up. Returns the requests for the person.
    pub(super) async fn answer_without_person(
        &mut self,
        task_id: &TaskId,
        inputs: Vec<(String, InputRequest)>,
    ) -> Vec<(String, InputRequest)> {
        let mut auto = BTreeMap::new();
        let mut rest = Vec::new();
        for (key, request) in inputs {
            match (
                InputKind::of(&request),
                self.spec.options.input.roots_result(),
            ) {
                (InputKind::Roots, Some(result)) if !self.spec.read_only => {
                    auto.insert(key, result);
                }
                _ => rest.push((key, request)),
            }
        }
        if !auto.is_empty() {
            self.emit(EngineEvent::RootsShared {
                server: self.id(),
                task_id: Some(task_id.clone()),
                roots: self.spec.options.input.roots.clone().unwrap_or_default(),
            })
            .await;
            self.answer(task_id.clone(), auto, None).await;
        }
        rest
    }
}

/// The URL elicitations a `-32042` error lists, keyed by position.
pub(super) fn url_requests(data: Option<&Value>) -> Option<BTreeMap<String, InputRequest>> {
    let list = data?.get("elicitations")?.as_array()?;
    let map: BTreeMap<String, InputRequest> = list
        .iter()
        .take(16)
        .enumerate()
        .filter(|(_, e)| e.is_object())
        .map(|(i, e)| {
            let mut params = e.clone();
            params["mode"] = json!("url");
            (
                i.to_string(),
                InputRequest {
                    method: "elicitation/create".into(),
                    params,
                    reply_to: None,
                },
            )
        })
        .collect();
    (!map.is_empty()).then_some(map)
}
