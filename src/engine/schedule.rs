//! The poll schedule: when each followed task is next due for a `tasks/get`.
//!
//! A min-heap with lazy deletion, so rescheduling one of thousands of tasks is O(log n).
//! Pure: callers pass instants.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;
use tokio::time::Instant;

use crate::ids::TaskId;

/// Wake-ups fall on this grid: the tasks due within one step go out together, so a
/// poll costs a share of one wake-up instead of one each (it only ever delays a poll).
pub const GRID: Duration = Duration::from_millis(50);

pub struct Schedule {
    heap: BinaryHeap<Reverse<(Instant, u64, TaskId)>>,
    current: HashMap<TaskId, u64>,
    next_gen: u64,
    /// Origin of the wake-up grid.
    epoch: Instant,
}

impl Default for Schedule {
    fn default() -> Self {
        Self::starting_at(Instant::now())
    }
}

impl Schedule {
    /// An empty schedule whose wake-up grid starts at `epoch`.
    pub fn starting_at(epoch: Instant) -> Self {
        Self {
            heap: BinaryHeap::new(),
            current: HashMap::new(),
            next_gen: 0,
            epoch,
        }
    }

    /// When to wake for the next due task: its due time rounded up to the grid.
    pub fn next_wake(&mut self) -> Option<Instant> {
        let due = self.next_due()?;
        let Some(since) = due.checked_duration_since(self.epoch) else {
            return Some(due);
        };
        let step = GRID.as_nanos();
        let steps = since.as_nanos().div_ceil(step);
        let up = u64::try_from(steps * step).unwrap_or(u64::MAX);
        Some(
            self.epoch
                .checked_add(Duration::from_nanos(up))
                .unwrap_or(due),
        )
    }

    /// Schedule `task_id` at `due`, replacing any earlier schedule for it.
    pub fn set(&mut self, task_id: &TaskId, due: Instant) {
        self.next_gen += 1;
        self.current.insert(task_id.clone(), self.next_gen);
        self.heap
            .push(Reverse((due, self.next_gen, task_id.clone())));
    }

    /// Schedule unless the task is already due earlier.
    pub fn set_if_earlier(&mut self, task_id: &TaskId, due: Instant) {
        if self.due(task_id).is_none_or(|d| due < d) {
            self.set(task_id, due);
        }
    }

    pub fn remove(&mut self, task_id: &TaskId) {
        self.current.remove(task_id);
    }

    fn clean_top(&mut self) {
        while let Some(Reverse((_, generation, id))) = self.heap.peek() {
            if self.current.get(id) == Some(generation) {
                break;
            }
            self.heap.pop();
        }
    }

    /// When the next task is due.
    pub fn next_due(&mut self) -> Option<Instant> {
        self.clean_top();
        self.heap.peek().map(|Reverse((due, _, _))| *due)
    }

    /// Take one task that is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<TaskId> {
        self.clean_top();
        let Reverse((due, _, _)) = self.heap.peek()?;
        if *due > now {
            return None;
        }
        let Reverse((_, _, id)) = self.heap.pop()?;
        self.current.remove(&id);
        Some(id)
    }

    fn due(&self, task_id: &TaskId) -> Option<Instant> {
        let generation = self.current.get(task_id)?;
        self.heap
            .iter()
            .find(|Reverse((_, g, id))| g == generation && id == task_id)
            .map(|Reverse((d, _, _))| *d)
    }

    pub fn len(&self) -> usize {
        self.current.len()
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn pops_in_due_order_and_honours_reschedules() {
        let t0 = Instant::now();
        let mut s = Schedule::default();
        s.set(&TaskId::new("a"), t0 + Duration::from_secs(3));
        s.set(&TaskId::new("b"), t0 + Duration::from_secs(1));
        s.set(&TaskId::new("a"), t0 + Duration::from_secs(2));
        s.set(&TaskId::new("c"), t0 + Duration::from_secs(5));
        s.remove(&TaskId::new("c"));
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(s.pop_due(t0), None);
        let later = t0 + Duration::from_secs(10);
        assert_eq!(s.pop_due(later).as_ref().map(TaskId::as_str), Some("b"));
        assert_eq!(s.pop_due(later).as_ref().map(TaskId::as_str), Some("a"));
        assert_eq!(s.pop_due(later), None);
        assert!(s.is_empty());
    }

    #[test]
    fn set_if_earlier_keeps_the_sooner_time() {
        let t0 = Instant::now();
        let mut s = Schedule::default();
        s.set(&TaskId::new("a"), t0 + Duration::from_secs(1));
        s.set_if_earlier(&TaskId::new("a"), t0 + Duration::from_secs(9));
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(1)));
        s.set_if_earlier(&TaskId::new("a"), t0);
        assert_eq!(s.next_due(), Some(t0));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn wake_ups_fall_on_the_grid_and_never_before_a_due_time() {
        let t0 = Instant::now();
        let mut s = Schedule::starting_at(t0);
        assert_eq!(s.next_wake(), None);
        s.set(&TaskId::new("a"), t0 + Duration::from_millis(1_010));
        s.set(&TaskId::new("b"), t0 + Duration::from_millis(1_030));
        s.set(&TaskId::new("c"), t0 + Duration::from_millis(1_070));
        // One wake-up at 1,050 ms takes both tasks due before it, none after.
        let wake = s.next_wake().unwrap();
        assert_eq!(wake, t0 + Duration::from_millis(1_050));
        assert_eq!(s.pop_due(wake).as_ref().map(TaskId::as_str), Some("a"));
        assert_eq!(s.pop_due(wake).as_ref().map(TaskId::as_str), Some("b"));
        assert_eq!(s.pop_due(wake), None);
        assert_eq!(s.next_wake(), Some(t0 + Duration::from_millis(1_100)));
        // A due time on the grid is kept as it is.
        s.set(&TaskId::new("d"), t0 + Duration::from_millis(500));
        assert_eq!(s.next_wake(), Some(t0 + Duration::from_millis(500)));
    }
}
