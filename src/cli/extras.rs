//! The config file's share of the command line (configured servers as engine specs, the
//! dashboard's settings), and the `export`, `completions` and `man` subcommands.
//!
//! Owns: wiring only. Header values (secrets) go into connect options, nowhere else.

use std::io::Write as _;
use std::path::PathBuf;

use clap::CommandFactory;

use super::args::{Cli, exit};
use super::{Context, fail};
use crate::app::DashboardSettings;
use crate::config::{Config, NotifyConfig, ServerConfig};
use crate::engine::{ServerId, ServerSpec};
use crate::mcp::Endpoint;
use crate::state::Keymap;

/// The engine spec of a configured server: its name, endpoint, headers (after the
/// `--header` ones), read-only flag and poll floor.
pub fn configured_spec(ctx: &Context, s: &ServerConfig) -> Result<ServerSpec, u8> {
    let endpoint = Endpoint::parse(&s.endpoint_spec())
        .map_err(|e| fail(&format!("server {}: {e}", s.name), exit::USAGE))?;
    let mut options = ctx.connect_options()?;
    options.headers.extend(s.headers.iter().cloned());
    let options = ctx.with_auth(&endpoint, s.auth.clone(), options)?;
    let mut spec = ServerSpec::new(endpoint, options);
    spec.id = ServerId::named(&s.name);
    spec.read_only = ctx.read_only || s.read_only;
    spec.poll_floor = s.poll_floor;
    Ok(spec)
}

/// Every server the dashboard shows: the configured ones, then `--server` additions.
pub fn dashboard_specs(ctx: &Context) -> Result<Vec<ServerSpec>, u8> {
    let mut specs = Vec::new();
    for s in &ctx.config.servers {
        specs.push(configured_spec(ctx, s)?);
    }
    for s in &ctx.servers {
        let spec = ctx.spec(s)?;
        if !specs.iter().any(|o| o.id == spec.id) {
            specs.push(spec);
        }
    }
    Ok(specs)
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

/// `taskrail export TASK_ID [-o FILE]`.
pub async fn export(ctx: &Context, prefix: &str, output: Option<PathBuf>) -> u8 {
    let (rec, events) = match super::history::find_with_timeline(ctx, prefix).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    let text = crate::ledger::export::timeline_jsonl(&rec, &events);
    let written = match &output {
        Some(path) => std::fs::write(path, &text),
        None => std::io::stdout().write_all(text.as_bytes()),
    };
    match (written, output) {
        (Ok(()), Some(path)) => {
            eprintln!("{} events written to {}", events.len(), path.display());
            exit::COMPLETED
        }
        (Ok(()), None) => exit::COMPLETED,
        (Err(e), _) => fail(&format!("cannot write the export: {e}"), exit::CONNECTION),
    }
}

/// `taskrail completions SHELL`.
pub fn completions(shell: clap_complete::Shell) -> u8 {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "taskrail", &mut std::io::stdout());
    exit::COMPLETED
}

/// `taskrail man`.
pub fn man() -> u8 {
    let cmd = Cli::command();
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
        return fail(
            &format!("cannot render the man page: {e}"),
            exit::CONNECTION,
        );
    }
    match std::io::stdout().write_all(&out) {
        Ok(()) => exit::COMPLETED,
        Err(e) => fail(&format!("cannot write the man page: {e}"), exit::CONNECTION),
    }
}
