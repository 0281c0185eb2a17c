/**
 * The send deadline of non-idempotent calls (`PostOptions.sendBy` in http.ts): a request that has
 * not started being written to its socket by then is aborted unsent.
 */
import type { Dispatcher } from 'undici';
import { failure } from './errors.ts';

/**
 * Wraps a request's handler so that it is aborted, unsent, when `sendBy` has passed. undici's
 * HTTP/1 client calls `onRequestStart` (through the legacy `onConnect`) on the socket it will use,
 * right before it writes the request line and headers (`writeH1` in client-h1.js), and checks for
 * an abort before writing anything: the last moment a request can still be taken back.
 */
export class SendDeadlineHandler implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #sendBy: number;
  readonly #what: string;

  constructor(inner: Dispatcher.DispatchHandler, sendBy: number, what: string) {
    this.#inner = inner;
    this.#sendBy = sendBy;
    this.#what = what;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    if (performance.now() >= this.#sendBy) {
      controller.abort(
        failure('Timeout', 'SEND_DEADLINE_PASSED', `${this.#what}: not sent, its send deadline passed`),
      );
      return;
    }
    this.#inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.#inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>): void {
    this.#inner.onResponseStart?.(...args);
  }

  onResponseData(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseData']>>): void {
    this.#inner.onResponseData?.(...args);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>): void {
    this.#inner.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseError']>>): void {
    this.#inner.onResponseError?.(...args);
  }
}
