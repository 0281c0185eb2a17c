// The validation of a fault spec: which fields fit which route and kind, and why a spec is refused.
import { z } from 'zod';
import { CATALOG_STYLES, LINKED_STYLES, PAGED_STYLES } from './catalog.ts';
import {
  EVENTS_FAULT_KINDS,
  FAULT_KINDS,
  FAULT_ROUTES,
  type FaultRoute,
  JOURNAL_FAULT_KINDS,
  LIST_FAULT_KINDS,
  MAX_DELAY_MS,
  MAX_EXTRA_ITEMS,
  MAX_FAULT_BODY_LENGTH,
  MAX_OVERSIZE_BYTES,
  MAX_PAGE_FAULT_BYTES,
  READ_ROUTES,
  SUBMISSIONS_FAULT_KINDS,
} from './fault-kinds.ts';
import { JOURNAL_ACTIONS } from './journal.ts';
import { MAX_REFERENCE_LENGTH, SUBMISSION_ACTIONS } from './submissions.ts';

/** True for an http(s) origin: scheme, host and port, nothing after them but an optional `/`. */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.username === '' &&
      url.password === '' &&
      url.pathname === '/' &&
      url.search === '' &&
      url.hash === '' &&
      !text.includes('?') &&
      !text.includes('#')
    );
  } catch {
    return false;
  }
}

const isEffectRoute = (route: FaultRoute | undefined) => route === 'submissions' || route === 'journal';
const isReadRoute = (route: FaultRoute | undefined) => READ_ROUTES.includes(route ?? 'records');

/** The shape of a valid `FaultSpec`, each refinement a readable reason a spec is refused. */
export const faultSpecSchema = z
  .strictObject({
    route: z.enum(FAULT_ROUTES).optional(),
    sourceId: z.string().min(1).optional(),
    date: z.string().min(1).optional(),
    cursor: z.string().min(1).nullable().optional(),
    startingAfter: z.string().min(1).nullable().optional(),
    style: z.enum(CATALOG_STYLES).optional(),
    position: z.string().min(1).nullable().optional(),
    aggregateId: z.string().min(1).optional(),
    eventId: z.string().min(1).max(200).optional(),
    action: z.enum([...SUBMISSION_ACTIONS, ...JOURNAL_ACTIONS]).optional(),
    reference: z.string().min(1).max(MAX_REFERENCE_LENGTH).optional(),
    phase: z.enum(['before', 'after']).optional(),
    afterRequests: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    kind: z.enum(FAULT_KINDS),
    status: z.int().min(400).max(599).optional(),
    retryAfter: z.string().min(1).max(200).optional(),
    rateLimitReset: z.int().min(0).optional(),
    rateLimitResetStyle: z.enum(['epoch', 'seconds']).optional(),
    url: z
      .string()
      .refine(isOrigin, '"url" must be an http(s) origin such as http://127.0.0.1:4011 (no path or query)')
      .optional(),
    delayMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    lateEffectMs: z.int().min(0).max(MAX_DELAY_MS).optional(),
    body: z.string().max(MAX_FAULT_BODY_LENGTH).optional(),
    bytes: z.int().min(1).max(MAX_OVERSIZE_BYTES).optional(),
    contentLength: z.boolean().optional(),
    extraItems: z.int().min(1).max(MAX_EXTRA_ITEMS).optional(),
    page: z
      .json()
      .refine((p) => JSON.stringify(p).length <= MAX_PAGE_FAULT_BYTES, {
        message: `"page" must be at most ${MAX_PAGE_FAULT_BYTES} bytes of JSON`,
      })
      .optional(),
  })
  .refine((s) => (s.kind === 'page') === (s.page !== undefined), {
    message: 'kind "page" needs a "page" (any JSON value), and only it takes one',
    path: ['page'],
  })
  .refine((s) => s.kind !== 'page' || isReadRoute(s.route), {
    message: 'kind "page" is only valid on the read routes ("records", "rates", "catalog")',
    path: ['kind'],
  })
  .refine((s) => s.kind !== 'status' || s.status !== undefined, {
    message: 'kind "status" needs a "status" (400..599)',
    path: ['status'],
  })
  .refine((s) => s.kind === 'status' || s.status === undefined, {
    message: '"status" is only valid with kind "status"',
    path: ['status'],
  })
  .refine((s) => s.kind === 'status' || s.body === undefined, {
    message: '"body" is only valid with kind "status"',
    path: ['body'],
  })
  .refine((s) => isReadRoute(s.route) || s.body === undefined, {
    message: '"body" is only valid on the read routes ("records", "rates", "catalog")',
    path: ['body'],
  })
  .refine((s) => s.rateLimitReset === undefined || (s.kind === 'status' && isReadRoute(s.route)), {
    message:
      '"rateLimitReset" is only valid with kind "status" on the read routes ("records", "rates", "catalog")',
    path: ['rateLimitReset'],
  })
  .refine((s) => s.rateLimitResetStyle === undefined || s.rateLimitReset !== undefined, {
    message: '"rateLimitResetStyle" needs a "rateLimitReset" (seconds from now)',
    path: ['rateLimitResetStyle'],
  })
  .refine((s) => s.kind !== 'oversize' || s.bytes !== undefined, {
    message: `kind "oversize" needs a "bytes" (1..${MAX_OVERSIZE_BYTES})`,
    path: ['bytes'],
  })
  .refine((s) => s.kind === 'oversize' || (s.bytes === undefined && s.contentLength === undefined), {
    message: '"bytes" and "contentLength" are only valid with kind "oversize"',
    path: ['kind'],
  })
  .refine((s) => s.kind === 'overfull' || s.extraItems === undefined, {
    message: '"extraItems" is only valid with kind "overfull"',
    path: ['extraItems'],
  })
  .refine((s) => s.kind !== 'delay' || s.delayMs !== undefined, {
    message: 'kind "delay" needs a "delayMs"',
    path: ['delayMs'],
  })
  .refine(
    (s) => s.delayMs === undefined || s.kind === 'delay' || (s.kind === 'status' && isReadRoute(s.route)),
    {
      message:
        '"delayMs" is only valid with kind "delay", or kind "status" on the read routes (a slow error)',
      path: ['delayMs'],
    },
  )
  .refine((s) => s.route !== 'events' || EVENTS_FAULT_KINDS.includes(s.kind), {
    message: 'route "events" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route !== 'submissions' || SUBMISSIONS_FAULT_KINDS.includes(s.kind), {
    message: 'route "submissions" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route !== 'journal' || JOURNAL_FAULT_KINDS.includes(s.kind), {
    message: 'route "journal" takes only kinds "status", "reset" and "delay"',
    path: ['kind'],
  })
  .refine((s) => s.route === 'rates' || !LIST_FAULT_KINDS.includes(s.kind), {
    message: 'kinds "empty_page" and "overfull" need route "rates"',
    path: ['kind'],
  })
  .refine((s) => s.kind !== 'loop' || s.route === 'rates' || s.route === 'catalog', {
    message: 'kind "loop" needs route "rates" or "catalog"',
    path: ['kind'],
  })
  .refine((s) => s.kind !== 'off_origin' || (s.route === 'catalog' && s.url !== undefined), {
    message: 'kind "off_origin" needs route "catalog" and a "url" (the other origin)',
    path: ['kind'],
  })
  .refine((s) => s.kind === 'off_origin' || s.url === undefined, {
    message: '"url" is only valid with kind "off_origin"',
    path: ['url'],
  })
  .refine(
    (s) =>
      (s.route ?? 'records') === 'records' ||
      (s.sourceId === undefined &&
        s.cursor === undefined &&
        (s.route === 'rates' || s.route === 'catalog' || s.date === undefined)),
    {
      message:
        '"sourceId" and "cursor" match records requests only, "date" records, rates and catalog requests',
      path: ['route'],
    },
  )
  .refine((s) => s.route === 'catalog' || (s.style === undefined && s.position === undefined), {
    message: '"style" and "position" need route "catalog"',
    path: ['route'],
  })
  .refine((s) => s.style !== 'none' || (s.position ?? null) === null, {
    message: 'style "none" has no pages: its "position" is always null',
    path: ['position'],
  })
  .refine((s) => s.kind !== 'loop' || s.style === undefined || PAGED_STYLES.includes(s.style), {
    message: 'kind "loop" cannot change style "none" (it has no pages)',
    path: ['style'],
  })
  .refine((s) => s.kind !== 'off_origin' || s.style === undefined || LINKED_STYLES.includes(s.style), {
    message:
      'kind "off_origin" changes only styles "next-url" and "link-header" (their pages link the next one)',
    path: ['style'],
  })
  .refine((s) => s.route === 'rates' || s.startingAfter === undefined, {
    message: '"startingAfter" needs route "rates"',
    path: ['startingAfter'],
  })
  .refine((s) => s.route === 'events' || (s.aggregateId === undefined && s.eventId === undefined), {
    message: '"aggregateId" and "eventId" need route "events"',
    path: ['route'],
  })
  .refine((s) => isEffectRoute(s.route) || (s.action === undefined && s.reference === undefined), {
    message: '"action" and "reference" need route "submissions" or "journal"',
    path: ['route'],
  })
  .refine(
    (s) =>
      s.action === undefined ||
      (s.route === 'journal'
        ? (JOURNAL_ACTIONS as readonly string[]).includes(s.action)
        : (SUBMISSION_ACTIONS as readonly string[]).includes(s.action)),
    {
      message: `"action" on route "journal" is one of ${JOURNAL_ACTIONS.join(', ')}; else one of ${SUBMISSION_ACTIONS.join(', ')}`,
      path: ['action'],
    },
  )
  .refine((s) => isEffectRoute(s.route) || s.phase === undefined, {
    message: '"phase" needs route "submissions" or "journal"',
    path: ['phase'],
  })
  .refine(
    (s) =>
      s.lateEffectMs === undefined ||
      (isEffectRoute(s.route) && s.kind === 'delay' && (s.phase ?? 'before') === 'before'),
    {
      message: '"lateEffectMs" needs route "submissions" or "journal", kind "delay" and phase "before"',
      path: ['lateEffectMs'],
    },
  )
  .refine((s) => s.phase !== 'after' || s.action !== 'lookup', {
    message: 'phase "after" is not valid with action "lookup" (a lookup has no effect)',
    path: ['phase'],
  });
