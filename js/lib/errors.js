// The errors exec-host throws, besides TypeError for a value it does not take.

/** An error of exec-host (the base of the others). */
export class ExecHostError extends Error {
  constructor(message, options) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A session could not be opened, or was asked what it cannot do (it is closed, say). */
export class SessionError extends ExecHostError {}

/** A parked Exec could not be resumed, listed or discarded. */
export class ResumeError extends ExecHostError {}
