//! Who follows a task: this process's follower token, and whether the process behind a
//! token may still run. The leases themselves are the backend's.

/// This process's follower token: `<pid>:<random>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

impl Owner {
    /// A token for this process (unique per engine, so two engines in one process differ).
    pub fn new() -> Owner {
        let rand = uuid::Uuid::new_v4().simple().to_string();
        Owner(format!("{}:{}", std::process::id(), &rand[..12]))
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

/// Whether the process behind an owner token may still be running: false only when its pid
/// is certainly gone or has exited (Linux `/proc`: no such process, or a zombie whose exit
/// status waits for its parent); elsewhere the lease's expiry decides.
pub fn owner_alive(owner: &str) -> bool {
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
