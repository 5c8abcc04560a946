// What an Exec or a tool call comes to, read from the library's report (the JSON
// `exec-host run --json` prints), in JavaScript's names.

/** A parked Exec as the report gives it. */
export function pausedFrom(report) {
  return {
    handle: report.handle,
    approvals: report.approvals.map(({ id, tool, input, why }) => ({ id, tool, input, why })),
    execId: report.exec_id ?? null,
  }
}

/** An ExecResult from a report. */
export function resultFrom(report) {
  return {
    ok: report.ok,
    value: report.value ?? null,
    text: report.text,
    logs: report.logs ?? [],
    images: (report.images ?? []).map((image) => ({ mimeType: image.mimeType, base64: image.bytes })),
    calls: report.calls ?? [],
    callDetails: (report.call_details ?? []).map((detail) => ({
      name: detail.name,
      ok: detail.ok,
      stage: detail.stage ?? null,
      ms: detail.ms,
      note: detail.note ?? null,
    })),
    summary: report.summary ?? '',
    error: report.error == null ? null : { stage: report.error_stage ?? null, message: report.error },
    paused: report.paused ? pausedFrom(report.paused) : null,
    messages: report.messages ?? [],
  }
}
