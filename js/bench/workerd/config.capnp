# workerd serving worker.mjs (bundled to worker.bundle.mjs) on loopback, with a Worker Loader.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "bench", worker = .bench)],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "bench")]
);

const bench :Workerd.Worker = (
  modules = [(name = "worker.mjs", esModule = embed "worker.bundle.mjs")],
  compatibilityDate = "2025-06-01",
  compatibilityFlags = ["nodejs_compat", "experimental"],
  bindings = [(name = "LOADER", workerLoader = (id = "codemode"))]
);
