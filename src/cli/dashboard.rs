//! `taskrail` with no subcommand: the dashboard on the configured servers, or on the
//! embedded demo server with a few demo tasks; its timeline comes from the ledger.

use std::sync::Arc;

use super::*;

/// The dashboard on the given servers, or on the embedded demo server with a few demo tasks.
pub(super) async fn board(ctx: &Context, demo: bool) -> CliResult {
    let ledger = ctx.ledger().await?;
    let mut demo_server = None;
    let mut shown = extras::DashboardServers::default();
    if demo {
        match crate::demo::DemoServer::start(crate::demo::DemoOptions::default()).await {
            Ok(server) => {
                let endpoint = Endpoint::Http {
                    url: server.url.clone(),
                };
                let options = ctx.connect_options()?;
                // A stable name: the demo server's port changes on every start.
                let id = ServerId::named("demo");
                shown.shown.push(id.clone());
                shown.specs.push(wire::tapped(ServerSpec {
                    id,
                    ..ServerSpec::new(endpoint, options)
                }));
                demo_server = Some(server);
            }
            Err(e) => {
                return Err(fail(
                    &format!("cannot start the demo server: {e:#}"),
                    exit::CONNECTION,
                ));
            }
        }
    } else {
        match extras::dashboard_specs(ctx) {
            Ok(s) => shown = s,
            Err(e) => return Err(e),
        }
    }
    let extras::DashboardServers {
        specs,
        shown: servers,
        disabled,
    } = shown;
    let config = EngineConfig {
        resume: true,
        history: true,
        adopt: true,
        resolve: Some(ctx.resolver()),
        ..ctx.engine_config()
    };
    if demo {
        // The demo's tasks of earlier runs died with their demo server: they go, so the
        // ledger does not grow by four tasks a start (a demo another shell runs now keeps
        // its own, which it follows).
        let demo_id = &servers[0];
        match ledger
            .remove_unfollowed(demo_id, &crate::ledger::Owner::new())
            .await
        {
            Ok(n) if n > 0 => tracing::info!(n, "removed the demo tasks of earlier runs"),
            Ok(_) => {}
            Err(e) => tracing::warn!("ledger: removing earlier demo tasks failed: {e:#}"),
        }
    }
    let (engine, events, join) = spawn_engine(specs, Some(ledger.clone()), config);
    if demo {
        start_demo_tasks(&engine, &servers[0]).await;
    }
    let dashboard = crate::app::DashboardContext {
        servers,
        disabled,
        commands: engine.sender(),
        events,
        timeline: Arc::new(LedgerTimeline(ledger)),
        read_only: ctx.read_only,
        settings: extras::dashboard_settings(&ctx.config),
        wire: wire::hub(),
    };
    let result = crate::app::run_dashboard(dashboard).await;
    stop_engine(engine, join).await;
    if let Some(s) = demo_server {
        s.shutdown().await;
    }
    match result {
        Ok(()) => Ok(exit::COMPLETED),
        Err(e) => Err(fail(&format!("dashboard: {e:#}"), exit::CONNECTION)),
    }
}

/// A newcomer's first screen: a few tasks that show progress, input and a tool error.
async fn start_demo_tasks(engine: &crate::engine::EngineHandle, server: &ServerId) {
    let calls = [
        ("render_report", serde_json::json!({ "pages": 40 })),
        ("import_rows", serde_json::json!({ "count": 50000 })),
        (
            "deploy",
            serde_json::json!({ "service": "billing", "env": "staging" }),
        ),
        ("lint", serde_json::json!({ "repo": "taskrail" })),
    ];
    for (i, (tool, arguments)) in calls.into_iter().enumerate() {
        // Call ids far from the dashboard's own counter.
        let call_id = 1_000_000 + i as u64;
        engine
            .send(EngineCommand::CallTool {
                server: server.clone(),
                call_id,
                tool: tool.into(),
                arguments,
                parent_task: None,
            })
            .await;
    }
}

/// The dashboard's timeline view, read from the ledger.
struct LedgerTimeline(LedgerHandle);

impl crate::app::TimelineSource for LedgerTimeline {
    fn timeline(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> futures::future::BoxFuture<'static, anyhow::Result<Vec<crate::state::TimelineEntry>>> {
        let ledger = self.0.clone();
        let (server, id) = (server.clone(), task_id.clone());
        Box::pin(async move {
            let events = ledger.timeline(&server, &id).await?;
            Ok(events
                .into_iter()
                .map(|e| crate::state::TimelineEntry {
                    at: e.at,
                    kind: e.kind.as_str().to_string(),
                    latency_ms: e.latency_ms,
                    detail: if e.detail.as_object().is_some_and(|o| o.is_empty()) {
                        String::new()
                    } else {
                        e.detail.to_string()
                    },
                })
                .collect())
        })
    }

    fn export(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> futures::future::BoxFuture<'static, anyhow::Result<String>> {
        let ledger = self.0.clone();
        let (server, id) = (server.clone(), task_id.clone());
        Box::pin(async move {
            let (rec, events) = (ledger.get(&server, &id), ledger.timeline(&server, &id));
            let rec = rec
                .await?
                .ok_or_else(|| anyhow::anyhow!("the task is not in the ledger"))?;
            let events = events.await?;
            Ok(crate::ledger::export::timeline_jsonl(&rec, &events))
        })
    }

    fn payload(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> futures::future::BoxFuture<'static, anyhow::Result<crate::state::payload::Payload>> {
        let ledger = self.0.clone();
        let (server, id) = (server.clone(), task_id.clone());
        Box::pin(async move {
            let rec = ledger
                .get(&server, &id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("the task is not in the ledger"))?;
            let (result, error) = rec.snapshot.map_or((None, None), |t| (t.result, t.error));
            Ok(crate::state::payload::Payload {
                arguments: rec.arguments,
                result,
                error,
            })
        })
    }

    fn stats(
        &self,
        range: crate::state::charts::Range,
        now: chrono::DateTime<chrono::Utc>,
    ) -> futures::future::BoxFuture<'static, anyhow::Result<Box<crate::state::charts::Summary>>>
    {
        let ledger = self.0.clone();
        Box::pin(async move {
            let (summary, took) = super::stats_read::summary(ledger, range, now).await?;
            tracing::debug!(
                "statistics of {} read in {} ms ({} tasks)",
                range.label(),
                took.as_millis(),
                summary.tasks
            );
            Ok(summary)
        })
    }
}
