// How a closed workflow's run is recorded (client/workflow-close.ts): the pure mapping from a
// workflow's end to finishRun's arguments, with real Temporal failure objects.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import { failureFacts, settlementOf } from '../client/workflow-close.ts';

const closed = { runId: 'r1', taskQueue: 'q' };

describe('workflow close', () => {
  it('workflow-close: a failure is recorded as the ApplicationFailure down its cause chain, with its safe code', () => {
    const typed = ApplicationFailure.create({
      type: 'PermissionDenied',
      message: 'partner acme: permission denied (403)',
      nonRetryable: true,
      details: [{ code: 'HTTP_403' }],
    });
    const wrapped = new ActivityFailure(
      'activity failed',
      'fetchPage',
      '1',
      'NON_RETRYABLE_FAILURE',
      'w',
      typed,
    );
    assert.deepEqual(settlementOf({ found: 'failed', ...closed, failure: wrapped }), {
      status: 'dead_lettered',
      errorType: 'PermissionDenied',
      errorMessage: 'partner acme: permission denied (403)',
      errorCode: 'HTTP_403',
      reason: 'workflow failed: PermissionDenied: partner acme: permission denied (403)',
    });
    const timeout = new ActivityFailure(
      'x',
      'fetchPage',
      '1',
      'TIMEOUT',
      'w',
      new TimeoutFailure('t', undefined, 'SCHEDULE_TO_CLOSE'),
    );
    assert.equal(failureFacts(timeout).errorType, 'DeadlineExceeded');
    assert.deepEqual(failureFacts(new Error('boom')), { errorType: 'Internal', errorMessage: 'boom' });
  });

  it('workflow-close: terminated, timed out, cancelled, completed and gone each get their type and code', () => {
    const terminated = settlementOf({ found: 'terminated', ...closed, reason: 'stop it', identity: 'webui' });
    assert.deepEqual(
      [terminated.status, terminated.errorType, terminated.errorCode, terminated.errorMessage],
      ['dead_lettered', 'Internal', 'WORKFLOW_TERMINATED', 'workflow terminated by webui: stop it'],
    );
    const timedOut = settlementOf({ found: 'timed_out', ...closed });
    assert.deepEqual([timedOut.errorType, timedOut.errorCode], ['DeadlineExceeded', 'WORKFLOW_TIMED_OUT']);
    const cancelled = settlementOf({ found: 'cancelled', ...closed });
    assert.deepEqual(
      [cancelled.status, cancelled.errorType, cancelled.errorCode],
      ['cancelled', undefined, undefined],
    );
    const completed = settlementOf({ found: 'completed', ...closed });
    assert.deepEqual(
      [completed.errorType, completed.errorCode],
      ['Internal', 'WORKFLOW_COMPLETED_UNRECORDED'],
    );
    const gone = settlementOf({ found: 'gone' });
    assert.deepEqual(
      [gone.status, gone.errorType, gone.errorCode],
      ['dead_lettered', 'Internal', 'WORKFLOW_GONE'],
    );
  });

  it('workflow-close: an operator reason holding a URL with credentials is redacted and cut short', () => {
    const s = settlementOf({
      found: 'terminated',
      ...closed,
      reason: `see https://bob:hunter2@partner.example/x ${'y'.repeat(1000)}`,
      identity: '',
    });
    assert.doesNotMatch(s.reason, /hunter2/);
    assert.doesNotMatch(s.errorMessage ?? '', /hunter2/);
    assert.ok((s.errorMessage ?? '').length <= 500);
  });
});
