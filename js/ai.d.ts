// Code mode for the Vercel AI SDK. See docs/typescript.md.
import type { SingleToolApprovalFunction, Tool, ToolApprovalConfiguration, ToolSet } from 'ai'
import type { ExecResult, Session, SessionOptions } from './index.js'

/** The name the model calls the script tool by. */
export declare const EXEC: 'Exec'
/** How many decided Execs a code mode keeps for their execution. */
export declare const MAX_DECIDED: number

/** What the Exec tool returns (the model reads `text`). */
export type ExecOutput = Pick<ExecResult, 'ok' | 'text' | 'value' | 'images'>

export interface CodeMode {
  /** `{ Exec }`: pass to generateText / streamText as `tools`. */
  tools: { Exec: Tool<{ code: string }, ExecOutput> }
  /** Pass to generateText / streamText as `toolApproval` (merge in your own for other tools). */
  toolApproval: { Exec: SingleToolApprovalFunction<{ code: string }, any, any> }
  /** The session the scripts run in. */
  session: Session
  /** Closes the session. */
  close(): Promise<void>
}

/**
 * Opens a session whose tools are the AI SDK `tools`, and returns the `Exec` tool and its
 * approval function. `toolApproval` configures the scripts' calls as the AI SDK's does: a
 * call marked 'user-approval' parks the script and asks for approval of the Exec call.
 */
export declare function codeMode(
  options: Omit<SessionOptions, 'tools' | 'approver'> & { tools: ToolSet; toolApproval?: ToolApprovalConfiguration<ToolSet, unknown> },
): Promise<CodeMode>
