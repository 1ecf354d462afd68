//! CPU pinning for the one-chat-at-a-time latency figures: the bench on the first CPU, the
//! server on the second, so neither waits for the other's threads to be scheduled off a CPU
//! they share and a figure is the server's work and the hop, not the scheduler's whims. Done
//! with `taskset -a` (every thread of a process; threads started later inherit it), and undone
//! after the phase: the load and throughput phases want every CPU for the server.

use std::process::Command;

/// Client and server pinned to separate CPUs until dropped.
pub struct Pinned {
    server_pid: u32,
    /// The CPUs both ran on before, given back on drop.
    every: String,
    /// What the figures' notes say about where client and server ran.
    pub note: String,
}

/// CPUs this process may run on (`sched_getaffinity`'s count, as `std` reads it).
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn taskset(cpus: &str, pid: u32) -> Result<(), String> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|err| format!("taskset: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -a -p -c {cpus} {pid}: {status}"))
    }
}

impl Pinned {
    /// Pins this process to CPU 0 and `server_pid` to CPU 1; `Err` says why not (one CPU, no
    /// taskset), and then nothing is pinned.
    pub fn apart(server_pid: u32) -> Result<Pinned, String> {
        let count = cpus();
        if count < 2 {
            return Err("one CPU: client and server share it".to_owned());
        }
        let every = format!("0-{}", count - 1);
        taskset("0", std::process::id())?;
        if let Err(err) = taskset("1", server_pid) {
            let _ = taskset(&every, std::process::id());
            return Err(err);
        }
        Ok(Pinned {
            server_pid,
            every,
            note: "bench pinned to CPU 0, server to CPU 1 (taskset -a)".to_owned(),
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // Best effort: a failure leaves a process pinned, which the load figures' notes show as
        // CPU time bounded by one core.
        let _ = taskset(&self.every, self.server_pid);
        let _ = taskset(&self.every, std::process::id());
    }
}
