//! Locks that outlive a panic. A thread that panicked while holding one of the host's locks
//! leaves data that is still whole (every critical section of the crate writes whole
//! values), so the next holder takes the lock as it is rather than spreading the panic to
//! every session of the process.

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `Mutex::lock` that never fails on a poisoned lock.
pub trait Unpoisoned<T: ?Sized> {
    /// The lock, held; poisoned or not.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A read and a write of an `RwLock`, poisoned or not.
pub trait UnpoisonedRw<T: ?Sized> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `Condvar::wait`, poisoned or not.
pub fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panic_is_taken_as_it_is() {
        let shared = std::sync::Arc::new((Mutex::new(1), RwLock::new(2)));
        let inside = shared.clone();
        let _ = std::thread::spawn(move || {
            let _held = (inside.0.lock().unwrap(), inside.1.write().unwrap());
            panic!("poisons both");
        })
        .join();
        assert!(shared.0.is_poisoned() && shared.1.is_poisoned());
        assert_eq!((*shared.0.locked(), *shared.1.read_locked()), (1, 2));
        *shared.1.write_locked() = 3;
        assert_eq!(*shared.1.read_locked(), 3);
    }
}
