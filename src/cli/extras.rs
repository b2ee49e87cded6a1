//! The config file's share of the command line (configured servers as engine specs, the
//! dashboard's settings), and the `export`, `completions` and `man` subcommands.
//!
//! Owns: wiring only. Header values (secrets) go into connect options, nowhere else.

use std::path::PathBuf;

use clap::CommandFactory;

use super::args::{Cli, exit};
use super::output::{finish, say};
use super::{CliResult, Context, fail};
use crate::app::DashboardSettings;
use crate::config::{Config, NotifyConfig, ServerConfig};
use crate::engine::{ServerId, ServerSpec};
use crate::mcp::Endpoint;
use crate::state::Keymap;

/// The engine spec of a configured server: its name, endpoint, headers (after the
/// `--header` ones), read-only flag, poll floor and the input kinds it is offered.
pub fn configured_spec(ctx: &Context, s: &ServerConfig) -> CliResult<ServerSpec> {
    if let Some(why) = &s.disabled {
        return Err(fail(&disabled_text(s, why), exit::USAGE));
    }
    let endpoint = Endpoint::parse(&s.endpoint_spec())
        .map_err(|e| fail(&format!("server {}: {e}", s.name), exit::USAGE))?;
    let mut options = ctx.connect_options()?;
    options.headers.extend(s.headers.iter().cloned());
    options.input = s.input_support();
    let options = ctx.with_auth(&endpoint, s.auth.clone(), options)?;
    let mut spec = ServerSpec::new(endpoint, options);
    spec.id = ServerId::named(&s.name);
    spec.read_only = ctx.read_only || s.read_only;
    spec.poll_floor = s.poll_floor;
    Ok(super::wire::tapped(spec))
}

/// Why a configured server is not used, for the user.
pub fn disabled_text(s: &ServerConfig, why: &str) -> String {
    format!("server {} is disabled: {why}", s.name)
}

/// The servers the dashboard shows.
#[derive(Default)]
pub struct DashboardServers {
    /// The ones to connect to.
    pub specs: Vec<ServerSpec>,
    /// Every one, in the order shown: the configured ones, then `--server` additions.
    pub shown: Vec<ServerId>,
    /// Configured servers shown as disabled, with why (never connected).
    pub disabled: Vec<(ServerId, String)>,
}

/// Every server the dashboard shows: the configured ones, then `--server` additions.
pub fn dashboard_specs(ctx: &Context) -> CliResult<DashboardServers> {
    let mut out = DashboardServers::default();
    for s in &ctx.config.servers {
        let id = ServerId::named(&s.name);
        match &s.disabled {
            Some(why) => out.disabled.push((id.clone(), why.clone())),
            None => out.specs.push(configured_spec(ctx, s)?),
        }
        out.shown.push(id);
    }
    for s in &ctx.servers {
        let spec = ctx.spec(s)?;
        if !out.shown.contains(&spec.id) {
            out.shown.push(spec.id.clone());
            out.specs.push(spec);
        }
    }
    Ok(out)
}

/// Keymap, themes, notifications and mouse from the config. `TASKRAIL_NO_NOTIFY=1`
/// turns notifications off (the end-to-end tests set it).
pub fn dashboard_settings(config: &Config) -> DashboardSettings {
    let mut settings = DashboardSettings {
        keymap: config.apply_keys(Keymap::default_keymap()),
        notify: config.notify.clone(),
        mouse: config.mouse,
        ..Default::default()
    };
    if std::env::var_os("TASKRAIL_NO_NOTIFY").is_some_and(|v| !v.is_empty() && v != "0") {
        settings.notify = NotifyConfig::off();
    }
    settings.input = configured_input(config);
    if let (Some(name), Some(theme)) = (&config.theme_name, &config.theme) {
        if !settings.themes.iter().any(|(n, _)| n == name) {
            settings
                .themes
                .push((name.clone(), crate::ui::Theme::from_spec(theme)));
        }
        settings.theme = name.clone();
    }
    settings
}

/// The prompt of `call` on a terminal: the configured keymap and what each configured
/// server is offered.
pub fn prompt_settings(ctx: &Context) -> crate::prompt::PromptSettings {
    let config = &ctx.config;
    crate::prompt::PromptSettings {
        keymap: config.apply_keys(Keymap::default_keymap()),
        input: configured_input(config),
    }
}

/// What each configured server is offered, by its id.
fn configured_input(
    config: &Config,
) -> std::collections::HashMap<ServerId, crate::state::ServerInput> {
    config
        .servers
        .iter()
        .map(|s| (ServerId::named(&s.name), s.server_input()))
        .collect()
}

/// `taskrail export TASK_ID [-o FILE]`.
pub async fn export(ctx: &Context, prefix: &str, output: Option<PathBuf>) -> CliResult {
    let (rec, events) = super::history::find_with_timeline(ctx, prefix).await?;
    let text = crate::ledger::export::timeline_jsonl(&rec, &events);
    let Some(path) = output else {
        return Ok(finish(&text, exit::COMPLETED));
    };
    match crate::app::export_file::write_new_private(&path, text.as_bytes()) {
        Ok(()) => {
            say!(
                "{} event{} written to {}",
                events.len(),
                if events.len() == 1 { "" } else { "s" },
                path.display()
            );
            Ok(exit::COMPLETED)
        }
        Err(e) => Err(fail(&format!("export not written: {e}"), exit::CONNECTION)),
    }
}

/// `taskrail completions SHELL`.
pub fn completions(shell: clap_complete::Shell) -> u8 {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "taskrail", &mut out);
    finish(&String::from_utf8_lossy(&out), exit::COMPLETED)
}

/// `taskrail man`.
pub fn man() -> u8 {
    let cmd = Cli::command();
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
        return fail(
            &format!("cannot render the man page: {e}"),
            exit::CONNECTION,
        )
        .report();
    }
    finish(&String::from_utf8_lossy(&out), exit::COMPLETED)
}
