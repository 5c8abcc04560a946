//! Threads of ours that run Python: the sync tools, and the settling of every awaitable. Each
//! keeps its Python thread state for its whole life (made once, not per call: making and
//! freeing one costs a mapping, its unmapping and the interrupts that follow), runs jobs one
//! after another with the GIL, and waits for the next with the GIL released. A thread is added
//! when a job finds none idle (a sync tool may hold its thread for long), and leaves after
//! [`KEEP_ALIVE`] idle. At exit, [`stop`] ends them before the interpreter finalizes: a thread
//! that took the GIL back after that would be ended by CPython in a way Rust cannot unwind
//! through.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// How long a thread waits idle for a job before it leaves.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Work to do with the GIL.
pub type Job = Box<dyn FnOnce(Python<'_>) + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
    /// Threads alive.
    threads: usize,
    stopping: bool,
}

struct Pool {
    queue: Mutex<Queue>,
    ready: Condvar,
}

static POOL: Pool =
    Pool { queue: Mutex::new(Queue { jobs: VecDeque::new(), idle: 0, threads: 0, stopping: false }), ready: Condvar::new() };

fn locked() -> MutexGuard<'static, Queue> {
    POOL.queue.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `job` on one of the threads, soon; refused (and handed back) once they stop.
pub fn run(job: Job) -> Result<(), Job> {
    let mut queue = locked();
    if queue.stopping {
        return Err(job);
    }
    queue.jobs.push_back(job);
    if queue.idle >= queue.jobs.len() {
        POOL.ready.notify_one();
        return Ok(());
    }
    queue.threads += 1;
    drop(queue);
    let started = std::thread::Builder::new().name("exec-host-python".into()).spawn(serve);
    if started.is_err() {
        // No thread to be had: the queued job waits for one that frees up.
        locked().threads -= 1;
    }
    Ok(())
}

/// One thread's life: its thread state made once, jobs run with the GIL until it stops or
/// idles out.
fn serve() {
    let attached = Python::try_attach(|py| {
        while let Some(job) = py.detach(next_job) {
            // A job that panics ends itself, never the thread or the others waiting on it.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(py)));
        }
    });
    if attached.is_none() {
        // The interpreter is finalizing: nothing here may touch it.
        locked().threads -= 1;
    }
}

/// The next job, or `None` when the thread should leave (stopping, or idle too long); a
/// thread that leaves is no longer counted.
fn next_job() -> Option<Job> {
    let mut queue = locked();
    let until = Instant::now() + KEEP_ALIVE;
    loop {
        if let Some(job) = queue.jobs.pop_front() {
            return Some(job);
        }
        let now = Instant::now();
        if queue.stopping || now >= until {
            queue.threads -= 1;
            POOL.ready.notify_all();
            return None;
        }
        queue.idle += 1;
        queue = POOL.ready.wait_timeout(queue, until - now).unwrap_or_else(|e| e.into_inner()).0;
        queue.idle -= 1;
    }
}

/// Stops the threads: no new job is taken, queued ones are dropped, idle threads leave, and
/// this waits (the GIL released) until every thread has left or `until`.
pub fn stop(py: Python<'_>, until: Instant) {
    let dropped = {
        let mut queue = locked();
        queue.stopping = true;
        POOL.ready.notify_all();
        std::mem::take(&mut queue.jobs)
    };
    drop(dropped);
    py.detach(|| {
        let mut queue = locked();
        while queue.threads > 0 {
            let now = Instant::now();
            if now >= until {
                break;
            }
            queue = POOL.ready.wait_timeout(queue, until - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    });
}
