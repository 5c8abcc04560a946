//! A real nginx in front of `serve` replicas, configured by the deployment's own file
//! (`deploy/nginx/exec-host.conf`): its upstream servers become the given replicas and it
//! listens on a free loopback port; everything nginx writes stays in a temporary folder, and
//! it is stopped when the handle is dropped. A machine without nginx gets Debian's package
//! installed (`scripts/install-nginx`); where that cannot be done the test fails, saying why.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started nginx may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// The deployment's configuration, as the repository ships it.
pub fn deploy_config() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nginx/exec-host.conf");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `config` with its upstream's servers replaced by `replicas` (`host:port`), each keeping
/// the parameters the file gives its first server, and its `listen` by `127.0.0.1:port`.
/// Panics when the file no longer has the lines this relies on, so the two cannot drift.
pub fn configure(config: &str, replicas: &[String], port: u16) -> String {
    let mut out = String::new();
    let (mut in_upstream, mut servers_written, mut listen_written) = (false, false, false);
    for line in config.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("upstream ") {
            in_upstream = true;
        } else if in_upstream && trimmed == "}" {
            in_upstream = false;
        }
        if in_upstream && trimmed.starts_with("server ") {
            if !servers_written {
                let indent = &line[..line.len() - line.trim_start().len()];
                let parameters = trimmed.trim_end_matches(';').split_whitespace().skip(2).collect::<Vec<_>>().join(" ");
                for replica in replicas {
                    out.push_str(&format!("{indent}server {replica} {parameters};\n"));
                }
                servers_written = true;
            }
            continue;
        }
        if trimmed.starts_with("listen ") {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}listen 127.0.0.1:{port};\n"));
            listen_written = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(servers_written && listen_written, "deploy/nginx/exec-host.conf lost its upstream servers or its listen line");
    out
}

/// One running nginx.
pub struct Nginx {
    child: Child,
    pub port: u16,
    folder: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx balancing over `replicas` (`host:port` each) with the deployment's file.
    pub fn start(replicas: &[String]) -> Nginx {
        let binary = nginx_binary();
        let folder = tempfile::tempdir().expect("a temporary folder");
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = folder.path();
        std::fs::write(dir.join("exec-host.conf"), configure(&deploy_config(), replicas, port)).unwrap();
        // The main file: logs, pid and buffers in the folder; the deployment's file included
        // as a conf.d file is.
        let main = format!(
            "worker_processes auto;\nerror_log {d}/error.log warn;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             include {d}/exec-host.conf;\n}}\n",
            d = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        let child = Command::new(&binary)
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} did not start: {e}", binary.display()));
        let mut nginx = Nginx { child, port, folder };
        nginx.wait_ready();
        nginx
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What nginx logged (errors and warnings), for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.path().join("error.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("nginx exited ({status}):\n{}", self.log());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("nginx did not listen on port {} within {READY_WITHIN:?}:\n{}", self.port, self.log());
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown; its workers leave with the master.
        // SAFETY: kill(2) with a child's pid and a signal number has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The path of `nginx`, installed from Debian's packages when missing.
fn nginx_binary() -> PathBuf {
    let found = || {
        let on_path = Command::new("sh")
            .args(["-c", "command -v nginx"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        on_path.or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.exists()))
    };
    if let Some(path) = found() {
        return path;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-nginx");
    let installed = Command::new("bash").arg(&script).status();
    match (installed, found()) {
        (Ok(status), Some(path)) if status.success() => path,
        (status, _) => panic!(
            "the load-balancer test needs nginx, and installing it with scripts/install-nginx failed ({status:?}); install Debian's nginx package"
        ),
    }
}
