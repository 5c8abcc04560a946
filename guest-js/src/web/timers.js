  // ---------------------------------------------------------- timers and microtasks --
  // The host keeps each timer's deadline and wakes the guest when it is due (wait-next);
  // the engine runs the callback as a task of its own. An error a callback throws fails
  // the run, as an uncaught error of the script's body does.
  const timers = {
    setTimeout(handler, timeout = 0, ...args) {
      if (typeof handler !== 'function') {
        throw new TypeErrorCtor('setTimeout() takes a function to call: Exec scripts do not compile code from strings');
      }
      const delay = toLong(timeout);
      return host.startTimer(delay > 0 ? delay : 0, () => { apply(handler, globalThis, args); });
    },
    clearTimeout(id = 0) {
      const n = toLong(id);
      if (n > 0) host.cancelTimer(n);
    },
    queueMicrotask(callback) {
      if (typeof callback !== 'function') throw new TypeErrorCtor('queueMicrotask() takes a function to call');
      nativeQueueMicrotask(() => {
        try {
          apply(callback, undefined, []);
        } catch (error) {
          host.reportError(error);
        }
      });
    },
  };
  install('setTimeout', timers.setTimeout);
  install('clearTimeout', timers.clearTimeout);
  install('queueMicrotask', timers.queueMicrotask);

