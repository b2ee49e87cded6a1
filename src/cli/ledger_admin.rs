//! `taskrail ledger …`: looking after the ledger itself. `migrate` creates or upgrades a
//! PostgreSQL ledger's schema and its group role; a SQLite ledger upgrades itself when
//! opened, so for one `migrate` just opens it.

use super::Context;
use super::args::{LedgerCommand, exit};
use super::failure::{CliResult, fail};
use super::output::say;
use crate::ledger::{self, Location};

/// Run one `taskrail ledger` command.
pub fn run(ctx: &Context, command: LedgerCommand) -> CliResult {
    match command {
        LedgerCommand::Migrate => migrate(ctx),
    }
}

fn migrate(ctx: &Context) -> CliResult {
    let location = ctx.ledger_location()?;
    match &location {
        Location::File(path) => {
            ledger::open(path).map_err(|e| {
                fail(
                    &format!("cannot open the ledger {location}: {e:#}"),
                    exit::CONNECTION,
                )
            })?;
            say!("the SQLite ledger {location} is current (it upgrades itself when opened)");
        }
        Location::Postgres(url) => {
            let done = ledger::postgres::migrate(url).map_err(|e| {
                fail(
                    &format!("cannot migrate the ledger {location}: {e:#}"),
                    exit::CONNECTION,
                )
            })?;
            if done.from == done.to {
                say!(
                    "the ledger {location} is current (schema version {})",
                    done.to
                );
            } else {
                say!(
                    "the ledger {location} is at schema version {} (was {}); grant \
                     {} to each login role that uses it",
                    done.to,
                    done.from,
                    ledger::postgres::USERS_ROLE
                );
            }
        }
    }
    Ok(exit::COMPLETED)
}
