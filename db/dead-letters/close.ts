/**
 * Closing a business key's open dead letters when its run succeeds another way (R11: a dead letter
 * is a state that needs handling, and one whose key then succeeded — after a Web UI Reset, or a
 * new execution of the key's workflow — needs none). Runs inside the transaction that marks the
 * run succeeded, so a letter is closed exactly when the success commits.
 */
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { DEAD_LETTER_TARGET, recordAudit } from '../audit.ts';

/** Who closes the letters: the run's success, not a person. */
export const RUN_SUCCEEDED_ACTOR = 'system:run-succeeded';

/** The execution a closed letter's reason names. */
function reasonFor(run: { workflowRunId: string | undefined }): string {
  return `the run succeeded in execution ${run.workflowRunId ?? '(unknown)'}`;
}

/**
 * The UPDATE that marks every `open` dead letter of the run `superseded` (closed now, by
 * {@link RUN_SUCCEEDED_ACTOR}, the reason naming the execution that succeeded), returning each
 * letter's id and failed execution — as one statement, or inside a larger one (a data-modifying
 * CTE). Letters a replay holds are closed too: their key needs no replay any more. Idempotent: a
 * repeat finds none open. Follow it with {@link auditSupersededLetters}.
 */
export function supersedeOpenLettersSql(run: {
  fetchRunId: string;
  workflowRunId: string | undefined;
}): Prisma.Sql {
  return Prisma.sql`
    UPDATE dead_letter
       SET status = 'superseded', closed_at = now(), closed_by = ${RUN_SUCCEEDED_ACTOR},
           close_reason = ${reasonFor(run)}, updated_at = now()
     WHERE fetch_run_id = ${run.fetchRunId}::uuid AND status = 'open'
    RETURNING id::text, workflow_run_id`;
}

/** A letter {@link supersedeOpenLettersSql} closed. */
export interface SupersededLetter {
  id: string;
  workflow_run_id: string | null;
}

/** One `dead_letter.supersede` audit entry for each letter closed; returns their ids. */
export async function auditSupersededLetters(
  tx: Pick<PrismaClient, 'auditEntry'>,
  run: { fetchRunId: string; workflowRunId: string | undefined },
  closed: readonly SupersededLetter[],
): Promise<string[]> {
  for (const letter of closed) {
    await recordAudit(tx, {
      actor: RUN_SUCCEEDED_ACTOR,
      action: 'dead_letter.supersede',
      targetType: DEAD_LETTER_TARGET,
      targetId: letter.id,
      reason: reasonFor(run),
      details: {
        fetchRunId: run.fetchRunId,
        failedRunId: letter.workflow_run_id,
        succeededRunId: run.workflowRunId ?? null,
      },
    });
  }
  return closed.map((l) => l.id);
}
