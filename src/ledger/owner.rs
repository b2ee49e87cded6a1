//! Who follows a task: this process's follower token, and whether the process behind a
//! token may still run. The leases themselves are the backend's.
//!
//! A token names its machine as well as its pid, since a shared ledger (PostgreSQL) has
//! followers on many machines: only a token of this machine is judged by its pid; one of
//! another machine (or an older token without a machine) holds until its lease expires.

use std::sync::OnceLock;

/// This machine's id as tokens carry it: the first 16 characters of `/etc/machine-id`
/// (systemd's, stable across reboots), else the host name; letters, digits, `-` and `.`
/// only.
pub fn machine_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        let raw = read("/etc/machine-id")
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(16).collect::<String>())
            .or_else(|| read("/proc/sys/kernel/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_default();
        let clean: String = raw
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
            .take(64)
            .collect();
        if clean.is_empty() {
            "unknown".into()
        } else {
            clean
        }
    })
}

/// This process's follower token: `<pid>:<random>@<machine>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

impl Owner {
    /// A token for this process (unique per engine, so two engines in one process differ).
    pub fn new() -> Owner {
        let rand = uuid::Uuid::new_v4().simple().to_string();
        Owner(format!(
            "{}:{}@{}",
            std::process::id(),
            &rand[..12],
            machine_id()
        ))
    }

    /// A token read back from storage (a lease, a spooled proxy task).
    pub fn stored(token: &str) -> Owner {
        Owner(token.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Owner {
    fn default() -> Self {
        Owner::new()
    }
}

/// Whether the process behind an owner token may still be running: false only when it is
/// a process of this machine whose pid is certainly gone or has exited (Linux `/proc`: no
/// such process, or a zombie whose exit status waits for its parent); for another
/// machine's token, or elsewhere, the lease's expiry decides.
pub fn owner_alive(owner: &str) -> bool {
    if let Some((_, machine)) = owner.rsplit_once('@')
        && machine != machine_id()
    {
        return true;
    }
    let Some(pid) = owner.split(':').next().and_then(|p| p.parse::<u32>().ok()) else {
        return true;
    };
    let proc_dir = std::path::Path::new("/proc");
    if !proc_dir.join("self").exists() {
        return true;
    }
    let dir = proc_dir.join(pid.to_string());
    if !dir.exists() {
        return false;
    }
    match std::fs::read_to_string(dir.join("stat")) {
        // `pid (comm) state …`: the state follows the last `)`.
        Ok(stat) => !matches!(
            stat.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next()),
            Some("Z" | "X")
        ),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_machine_and_only_this_machines_pids_are_judged() {
        let me = Owner::new();
        let (pid, rest) = me.as_str().split_once(':').unwrap();
        assert_eq!(pid, std::process::id().to_string());
        assert!(rest.ends_with(&format!("@{}", machine_id())), "{me:?}");
        assert!(owner_alive(me.as_str()));
        // A pid no process has here: gone on this machine, unknown on another.
        let gone = u32::MAX - 7;
        assert!(!owner_alive(&format!("{gone}:abc@{}", machine_id())));
        assert!(
            !owner_alive(&format!("{gone}:abc")),
            "an older token is this machine's"
        );
        assert!(owner_alive(&format!("{gone}:abc@another-machine")));
    }
}
