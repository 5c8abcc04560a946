//! The timers behind a script's `setTimeout`: deadlines the host keeps, so the guest
//! waits for them in `wait-next` like it waits for calls, and never spins.
//!
//! A timer is not a tool call: nothing here reaches a tool, the funnel or the call record.
//! The waiting itself is accounted with the calls' (see [`super::calls::NestedCalls`]).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::limits::MAX_PENDING_TIMERS;

/// Why `setTimeout()` started no timer, as the script is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TimerRefused {
    #[error(
        "setTimeout() was refused: this script already has {MAX_PENDING_TIMERS} timers pending, as many as it may have; clear or await some first"
    )]
    TooManyPending,
    #[error("setTimeout() was refused: this script has started as many timers as it may")]
    IdsUsedUp,
}

/// The pending timers of one script.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// `(deadline, id)`: ids grow with each timer started, so equal deadlines keep the
    /// order the timers were started in.
    queue: BTreeSet<(Instant, u32)>,
    deadlines: HashMap<u32, Instant>,
    /// The id of the last timer started; 0 before the first.
    last_id: u32,
}

impl Timers {
    /// Starts a timer due `delay` from now, or refuses it past [`MAX_PENDING_TIMERS`].
    pub fn start(&mut self, delay: Duration) -> Result<u32, TimerRefused> {
        if self.deadlines.len() >= MAX_PENDING_TIMERS {
            return Err(TimerRefused::TooManyPending);
        }
        let Some(id) = self.last_id.checked_add(1) else {
            return Err(TimerRefused::IdsUsedUp);
        };
        self.last_id = id;
        let deadline = Instant::now() + delay;
        self.queue.insert((deadline, id));
        self.deadlines.insert(id, deadline);
        Ok(id)
    }

    /// Forgets a pending timer; an unknown id is ignored.
    pub fn cancel(&mut self, id: u32) {
        if let Some(deadline) = self.deadlines.remove(&id) {
            self.queue.remove(&(deadline, id));
        }
    }

    /// When the next timer is due.
    /// The pending timers with the time each has left, and the last id given: what a parked
    /// Exec keeps of its timers.
    pub fn left(&self, now: Instant) -> (u32, Vec<(u32, Duration)>) {
        let pending = self.queue.iter().map(|(deadline, id)| (*id, deadline.saturating_duration_since(now))).collect();
        (self.last_id, pending)
    }

    /// Timers as [`Timers::left`] gave them, each due its time left from `now`.
    pub fn restore(&mut self, last_id: u32, pending: &[(u32, Duration)], now: Instant) {
        self.queue.clear();
        self.deadlines.clear();
        self.last_id = last_id;
        for (id, left) in pending.iter().take(MAX_PENDING_TIMERS) {
            let deadline = now + *left;
            self.queue.insert((deadline, *id));
            self.deadlines.insert(*id, deadline);
        }
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.first().map(|(deadline, _)| *deadline)
    }

    /// Takes up to `max` timers due at `now`, in the order they fall due.
    pub fn take_due(&mut self, now: Instant, max: usize) -> Vec<u32> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.queue.first() {
                Some(&(deadline, id)) if deadline <= now => {
                    self.queue.pop_first();
                    self.deadlines.remove(&id);
                    due.push(id);
                }
                _ => break,
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_timers_come_in_deadline_order_and_equal_deadlines_in_start_order() {
        let mut timers = Timers::default();
        let late = timers.start(Duration::from_secs(60)).unwrap();
        let a = timers.start(Duration::ZERO).unwrap();
        let b = timers.start(Duration::ZERO).unwrap();
        let cancelled = timers.start(Duration::ZERO).unwrap();
        timers.cancel(cancelled);
        let due = timers.take_due(Instant::now() + Duration::from_millis(1), 10);
        assert_eq!(due, vec![a, b]);
        assert!(timers.next_deadline().is_some());
        timers.cancel(late);
        assert_eq!(timers.next_deadline(), None);
    }

    #[test]
    fn pending_timers_are_bounded() {
        let mut timers = Timers::default();
        for _ in 0..MAX_PENDING_TIMERS {
            timers.start(Duration::from_secs(1)).unwrap();
        }
        let refused = timers.start(Duration::from_secs(1)).unwrap_err();
        assert!(refused.to_string().contains("1000 timers pending"), "{refused}");
        let first = timers.next_deadline().unwrap();
        assert_eq!(timers.take_due(first, 1).len(), 1);
        assert!(timers.start(Duration::ZERO).is_ok());
    }
}
