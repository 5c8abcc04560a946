//! A real `redis-server` for the tests of the Redis state store: started on a free loopback
//! port with nothing saved to disk, and stopped when the handle is dropped. A machine without
//! it gets Debian's package installed (as root, the way the project's scripts install it);
//! where that cannot be done the test fails, saying why, rather than skip.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// One running server.
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    /// Starts a server on a free loopback port; panics with the reason when none can be.
    pub fn start() -> RedisServer {
        let binary = redis_server();
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{binary} did not start: {e}"));
        let server = RedisServer { child, port };
        server.wait_ready();
        server
    }

    /// `redis://127.0.0.1:PORT/DB`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server now (a test of a store whose server went away).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait_ready(&self) {
        use std::io::{Read, Write};
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                let mut answer = [0u8; 7];
                if stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n" {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not answer on port {} within {READY_WITHIN:?}", self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The path of `redis-server`, installed from Debian's packages when missing.
fn redis_server() -> String {
    let found = |name: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(path) = found("redis-server") {
        return path;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/install-redis");
    let installed = Command::new("bash").arg(script).status();
    match (installed, found("redis-server")) {
        (Ok(status), Some(path)) if status.success() => path,
        (status, _) => panic!(
            "the Redis state store tests need redis-server, and installing it with scripts/install-redis failed ({status:?}); install Debian's redis-server package"
        ),
    }
}
