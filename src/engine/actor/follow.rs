//! Which tasks this actor follows, and how: resumed from the ledger, tracked by id (only
//! recorded once the server confirms it), adopted from another process's writes; polled when
//! this engine holds the lease, mirrored from the ledger when another process does, and taken
//! over when that process's lease lapses.
//!
//! Must not poll: it schedules, and leaves `tasks/get` to the polling code.

use super::*;
use crate::ledger::Tombstone;

/// Records read from the ledger per chunk when resuming.
const RESUME_CHUNK: usize = 256;

/// The ledger holds a terminal state for the task.
fn terminal(rec: &TaskRecord) -> bool {
    crate::mcp::is_finished(rec.snapshot.as_ref(), rec.terminal)
}

/// Nothing more will happen to the task: terminal, or a tombstone.
fn finished(rec: &TaskRecord) -> bool {
    crate::mcp::is_finished(rec.snapshot.as_ref(), rec.terminal || rec.expired)
}

impl ServerActor {
    /// Report every task the ledger holds for this server and follow the unfinished ones.
    /// The ledger thread reads in chunks while this actor reports the previous one, the
    /// finished tasks of a chunk in one event; the unfinished tasks are adopted once
    /// reading is over (adopting one may need the ledger, which is busy reading until
    /// then).
    pub(super) async fn resume_from_ledger(&mut self) {
        let Some(ledger) = self.ledger.clone() else {
            return;
        };
        let (server, history) = (self.id(), self.cfg.history);
        let (tx, mut chunks) = mpsc::channel::<Vec<TaskRecord>>(2);
        // Only finished tasks are reported in chunks, and only with history.
        let total = if history {
            ledger.count_server(&server).await
        } else {
            Ok(0)
        };
        let (total, read): (usize, Op<()>) = match total {
            Ok(n) => (n, ledger.scan_server(&server, history, RESUME_CHUNK, tx)),
            Err(e) => (0, Box::pin(async move { Err(e) })),
        };
        let mut unfinished = Vec::new();
        let mut read_so_far = 0;
        while let Some(chunk) = chunks.recv().await {
            read_so_far += chunk.len();
            let mut tasks = Vec::with_capacity(chunk.len());
            for rec in chunk {
                if finished(&rec) {
                    tasks.push(self.enter(rec).0);
                } else {
                    unfinished.push(rec);
                }
            }
            if tasks.is_empty() {
                continue;
            }
            let noted: Vec<TaskId> = tasks.iter().map(|t| t.task_id.clone()).collect();
            self.emit(EngineEvent::TasksResumed {
                server: self.id(),
                tasks,
                more: total.saturating_sub(read_so_far),
            })
            .await;
            for id in noted {
                self.report_note(&id).await;
            }
        }
        if let Err(e) = read.await {
            tracing::warn!("ledger: {e:#}");
            self.notice(NoticeLevel::Error, format!("ledger read failed: {e:#}"))
                .await;
        }
        for rec in unfinished {
            self.adopt(rec, false).await;
        }
        self.claim_unowned().await;
        self.update_listen_ids();
    }

    /// Start following a ledger record: report it, then follow it unless it is finished.
    /// `claim`: try to take its lease now (else the caller claims a batch).
    pub(super) async fn adopt(&mut self, rec: TaskRecord, claim: bool) {
        let (known, session, follow) = self.enter(rec);
        let task_id = known.task_id.clone();
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task: known,
        })
        .await;
        self.report_note(&task_id).await;
        if follow {
            self.ensure_connecting();
            if let Some(s) = session {
                self.join_session(s).await;
            }
            if claim {
                self.claim(vec![task_id]).await;
            }
        }
    }

    /// Enter a ledger record in the task table and say what to report of it: the known
    /// task, its legacy session, and whether it is to be followed (not finished).
    fn enter(&mut self, rec: TaskRecord) -> (KnownTask, Option<i64>, bool) {
        let mut tr = TrackedTask {
            local: rec.origin == crate::ledger::Origin::Proxy,
            note: TaskNote::of(&rec).map(Box::new),
            answered: rec.answered_keys.iter().cloned().collect(),
            expired: rec.expired,
            session: rec.session,
            cancel_requested: rec.cancel == Some(true),
            ..Default::default()
        };
        tr.terminal = terminal(&rec);
        let follow = tr.live();
        // A finished task needs no snapshot here (it is never polled or merged again):
        // the board keeps the only copy.
        if follow {
            tr.last = rec.snapshot.clone().map(Box::new);
        }
        let pending = tr.pending_in(rec.snapshot.as_ref());
        // Keys already pending are not reported again as new.
        if let Some(last) = &tr.last {
            for (k, req) in &last.input_requests {
                tr.reported.insert(k.clone(), req.fingerprint());
            }
        }
        let known = KnownTask {
            task_id: rec.task_id.clone(),
            tool: rec.tool,
            arguments: rec.arguments,
            recorded_at: rec.recorded_at,
            last: rec.snapshot,
            end: rec.end.or(rec.expired.then_some(Tombstone::Expired)),
            parent_task: rec.parent_task,
            pending,
            cancel: rec.cancel,
            started_by: rec.started_by,
            lean: rec.lean,
        };
        let session = tr.session;
        self.tasks.insert(rec.task_id, Box::new(tr));
        (known, session, follow)
    }

    /// Take the lease of every live task not owned yet; schedule the ones we got.
    pub(super) async fn claim_unowned(&mut self) {
        let ids: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.live() && !t.owned && !t.provisional)
            .map(|(id, _)| id.clone())
            .collect();
        self.claim(ids).await;
    }

    /// Try to take the lease of `ids`; without a ledger every task is ours.
    pub(super) async fn claim(&mut self, ids: Vec<TaskId>) {
        // A server this process cannot reach: whoever can follows its tasks.
        if ids.is_empty() || self.spec.unreachable.is_some() {
            return;
        }
        let got: Vec<TaskId> = if self.ledger.is_some() {
            let (server, owner, ttl) = (self.id(), self.owner.clone(), self.cfg.lease_ttl);
            let all = ids.clone();
            match self
                .ledger(move |l| l.claim(&server, &ids, &owner, ttl))
                .await
            {
                Some(got) => got,
                // The database cannot say who follows them while it is away: follow them
                // meanwhile (two followers for a while cost a few polls; none would lose
                // what happens to them). The leases are taken once it is back.
                None if self.ledger_offline() => all,
                None => Vec::new(),
            }
        } else {
            ids
        };
        let now = Instant::now();
        let mut lost = Vec::new();
        for id in got {
            if let Some(t) = self.tasks.get_mut(&id)
                && !t.owned
            {
                t.owned = true;
                if t.local {
                    // A proxy's own task whose proxy is gone (its lease was free): nobody
                    // can learn how the call ended.
                    lost.push(id);
                } else {
                    self.schedule.set(&id, now);
                }
            }
        }
        for id in lost {
            self.end_task(&id, Tombstone::ProxyLost, true).await;
        }
        self.update_listen_ids();
    }

    /// Give the lease of a task up (it ended, or we stop following it).
    pub(super) fn release(&mut self, task_id: &TaskId) {
        let Some(t) = self.tasks.get_mut(task_id) else {
            return;
        };
        if !t.owned {
            return;
        }
        t.owned = false;
        let (server, id, owner) = (self.id(), task_id.clone(), self.owner.clone());
        self.ledger_queue(move |l| l.release(&server, &[id], &owner));
    }

    /// Mirrored tasks whose follower is gone: take them over.
    pub(super) async fn take_over_lapsed(&mut self) {
        let mirrored: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.live() && !t.owned && !t.provisional)
            .map(|(id, _)| id.clone())
            .collect();
        if mirrored.is_empty() || self.ledger.is_none() {
            return;
        }
        // Read first: a write only when a lease is really free, so mirrors of one task in
        // several processes do not wake each other up.
        let (_, free) = self.by_follower(mirrored).await;
        if !free.is_empty() {
            tracing::debug!(server = %self.spec.id, n = free.len(), "taking over tasks whose follower is gone");
            self.claim(free).await;
        }
    }

    /// `ids` split into those another live process follows now and the rest (both empty
    /// when the ledger cannot say).
    async fn by_follower(&self, ids: Vec<TaskId>) -> (Vec<TaskId>, Vec<TaskId>) {
        let (server, owner) = (self.id(), self.owner.clone());
        let Some(taken) = self
            .ledger(|l| l.followed_by_others(&server, &ids, &owner))
            .await
        else {
            return Default::default();
        };
        ids.into_iter().partition(|id| taken.contains(id))
    }

    /// Owned tasks whose lease another live process holds now (ours lapsed while this
    /// process could not renew it, e.g. stopped): stop polling them and mirror instead.
    pub(super) async fn drop_lost_leases(&mut self) {
        let owned = self.owned_ids();
        if owned.is_empty() || self.ledger.is_none() {
            return;
        }
        let (lost, _) = self.by_follower(owned).await;
        if lost.is_empty() {
            return;
        }
        tracing::debug!(server = %self.spec.id, n = lost.len(), "another process took these tasks over");
        for id in lost {
            if let Some(t) = self.tasks.get_mut(&id) {
                t.owned = false;
            }
            self.schedule.remove(&id);
        }
        self.update_listen_ids();
    }

    /// `Track`: follow a task by id. One the ledger knows is adopted; an unknown one is
    /// followed provisionally, and recorded only once its server confirms it.
    pub(super) async fn track(&mut self, task_id: TaskId) {
        if let Some(t) = self.tasks.get(&task_id) {
            if t.owned || t.provisional {
                self.start_get(&task_id, UpdateSource::Resync);
            }
            return;
        }
        let (server, id) = (self.id(), task_id.clone());
        let rec = self.ledger(move |l| l.get(&server, &id)).await.flatten();
        match rec {
            // Mirrored from the ledger when this process cannot reach the server.
            Some(rec) => self.adopt(rec, true).await,
            None if self.spec.unreachable.is_some() => {
                let text = format!(
                    "task {task_id} is not in the ledger, and {} cannot be reached from here",
                    self.spec.id
                );
                self.notice(NoticeLevel::Warn, text).await;
            }
            None => {
                let tr = TrackedTask {
                    provisional: true,
                    owned: true,
                    ..Default::default()
                };
                self.tasks.insert(task_id.clone(), Box::new(tr));
                self.schedule.set(&task_id, Instant::now());
            }
        }
        self.update_listen_ids();
    }

    /// The server confirmed a provisional task: record it, report it, and take its lease.
    pub(super) async fn confirm(&mut self, task_id: &TaskId) {
        let Some(t) = self.tasks.get_mut(task_id) else {
            return;
        };
        if !t.provisional {
            return;
        }
        t.provisional = false;
        let (server, id) = (self.id(), task_id.clone());
        let era = self.client.as_ref().map(|c| c.era());
        let session = self.home_session;
        let (owner, ttl) = (self.owner.clone(), self.cfg.lease_ttl);
        // One trip to the ledger thread: record it, read it back, take its lease.
        let (recorded, claimed) = self
            .ledger(|l| {
                let claimed = l.track_and_claim(&server, era, &id, session, &owner, ttl);
                let recorded = l.get(&server, &id);
                Box::pin(async move {
                    let claimed = claimed.await?;
                    Ok((recorded.await?, claimed))
                })
            })
            .await
            .unwrap_or((None, true));
        let recorded_at = recorded
            .as_ref()
            .map(|r| r.recorded_at)
            .unwrap_or_else(chrono::Utc::now);
        let t = self.tasks.get_mut(task_id);
        if let Some(t) = t {
            t.session = session;
        }
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task: KnownTask {
                task_id: task_id.clone(),
                tool: recorded.as_ref().and_then(|r| r.tool.clone()),
                arguments: None,
                recorded_at,
                last: None,
                end: None,
                parent_task: None,
                pending: Vec::new(),
                cancel: None,
                started_by: None,
                lean: false,
            },
        })
        .await;
        if !claimed && let Some(t) = self.tasks.get_mut(task_id) {
            // Another process follows it already: mirror what it records.
            t.owned = false;
            self.schedule.remove(task_id);
        }
    }

    /// Report a task's notes, if it has any.
    async fn report_note(&mut self, task_id: &TaskId) {
        let Some(note) = self.tasks.get(task_id).and_then(|t| t.note.clone()) else {
            return;
        };
        self.emit(EngineEvent::TaskNoted {
            server: self.id(),
            task_id: task_id.clone(),
            note: *note,
        })
        .await;
    }

    /// A task row another process changed: fold in what it learnt.
    pub(super) async fn on_ledger_record(&mut self, rec: TaskRecord) {
        let task_id = rec.task_id.clone();
        let Some(t) = self.tasks.get_mut(&task_id) else {
            if self.cfg.adopt {
                self.adopt(rec, true).await;
            }
            return;
        };
        if t.provisional {
            return;
        }
        let note = TaskNote::of(&rec).map(Box::new);
        let note_news = note != t.note;
        if note_news {
            t.note = note;
        }
        let before = t.pending_keys();
        t.answered.extend(rec.answered_keys.iter().cloned());
        let newly_answered = t.pending_keys() != before;
        if let Some(s) = rec.session.filter(|_| t.session.is_none()) {
            t.session = Some(s);
        }
        let cancel_news = match rec.cancel {
            Some(acked) if !t.cancel_requested => {
                t.cancel_requested = acked;
                Some(acked)
            }
            _ => None,
        };
        if rec.expired {
            let why = rec.end.unwrap_or(Tombstone::Expired);
            self.end_task(&task_id, why, false).await;
            return;
        }
        if note_news {
            self.report_note(&task_id).await;
        }
        if let Some(acked) = cancel_news {
            self.emit(EngineEvent::CancelSent {
                server: self.id(),
                task_id: task_id.clone(),
                acked,
            })
            .await;
        }
        match rec.snapshot {
            Some(snap) => {
                self.seq += 1;
                let applied = self.fold_external(snap, self.seq).await;
                if !applied && newly_answered {
                    self.report_pending(&task_id).await;
                }
            }
            None if newly_answered => self.report_pending(&task_id).await,
            None => {}
        }
    }

    /// Another process's snapshot, under the tracker's rules: reported (not written back).
    async fn fold_external(&mut self, task: Task, observed: u64) -> bool {
        let task_id = task.task_id.clone();
        let Some(tr) = self.tasks.get_mut(&task_id) else {
            return false;
        };
        let r = tr.ingest(task.clone(), observed);
        if r.payload {
            if let Some(last) = tr.last.as_deref().cloned() {
                let ev = self.updated(last, UpdateSource::Ledger, None);
                self.emit(ev).await;
            }
            return true;
        }
        if !r.applied || !r.changed {
            return false;
        }
        let ev = self.updated(task, UpdateSource::Ledger, None);
        self.emit(ev).await;
        for (key, request) in r.new_inputs {
            self.emit(EngineEvent::InputRequested {
                server: self.id(),
                task_id: task_id.clone(),
                key,
                request,
            })
            .await;
        }
        if r.became_terminal {
            self.schedule.remove(&task_id);
            self.release(&task_id);
            self.update_listen_ids();
        }
        true
    }

    /// The set of pending keys changed without a new snapshot (answered elsewhere).
    async fn report_pending(&mut self, task_id: &TaskId) {
        if let Some(last) = self
            .tasks
            .get(task_id)
            .and_then(|t| t.last.as_deref().cloned())
        {
            let ev = self.updated(last, UpdateSource::Ledger, None);
            self.emit(ev).await;
        }
    }

    /// A task ends without a terminal state: a tombstone (`record`: write it to the ledger,
    /// unless another process did).
    pub(super) async fn end_task(&mut self, task_id: &TaskId, why: Tombstone, record: bool) {
        self.flush_quiet_polls(task_id);
        if let Some(t) = self.tasks.get_mut(task_id) {
            if t.terminal || t.expired {
                return;
            }
            t.expired = true;
        }
        self.schedule.remove(task_id);
        self.release(task_id);
        if record {
            let (server, id) = (self.id(), task_id.clone());
            self.ledger(move |l| l.mark_ended(&server, &id, why)).await;
        }
        self.emit(EngineEvent::TaskExpired {
            server: self.id(),
            task_id: task_id.clone(),
            why,
        })
        .await;
        self.update_listen_ids();
    }
}
