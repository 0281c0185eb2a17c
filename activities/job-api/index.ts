/**
 * The job API, what a job imports (jobs/ import it from here): `defineJob`, its types, and `failure`
 * for a job to throw one of the engine's error types, `credentialsMissing` for a secret reference
 * of its config that resolves to nothing (docs/jobs.md). For a job that reads responses of any
 * status (`http.readResponse`): the engine's default classification of a refusal
 * (`responseFailure`), the partner's own words scrubbed (`partnerMessageOf`, `partnerText`), and
 * the readers of waits (`parseRetryAfter`, `parseRateLimitReset`).
 */
export * from './define.ts';
export {
  compareWatermarks,
  type RunWindow,
  type StoredWatermark,
  WATERMARK_KINDS,
  type WatermarkKind,
  type WatermarkSpec,
  watermarkText,
} from './watermark.ts';
export { failure, headerOf, partnerMessageOf, partnerText, responseFailure } from '../errors.ts';
export type { HttpResponse } from '../http.ts';
export { parseRateLimitReset, parseRetryAfter } from '../retry/delay.ts';
export { credentialsMissing } from '../sources.ts';
export type { ErrorType } from '../../contract/error-types.ts';
