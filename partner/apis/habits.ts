// Switching an imitated API's hostile habits on for a test: which habit, for which requests, how
// often, and its counters. The admin API (`/_admin/apis/habits`) drives the same book.
import { z } from 'zod';
import { isValidDate } from '../records.ts';
import { API_NAMES, type ApiName } from './names.ts';

/** A habit to switch on, as `POST /_admin/apis/habits` and `HabitBook.add` take it. */
export interface HabitSpec {
  api: ApiName;
  /** One of the API's habits (`GET /_admin/apis` lists them). */
  habit: string;
  /** Only requests naming this scope: a date `YYYY-MM-DD` (absent = any). */
  date?: string;
  /** Let the first n requests that reach the habit through untouched. Default 0. */
  afterRequests?: number;
  /** How many requests it shapes before it is spent: a count (default 1), or `always`. */
  times?: number | 'always';
  /** For the habits that serve pages of their own size: that size. */
  pageSize?: number;
  /** For the rate-limit habits: the seconds the API asks to wait (default 1). */
  waitS?: number;
}

/** A habit as kept, with its id and live counters. */
export interface ActiveHabit extends HabitSpec {
  id: string;
  /** Requests that reached it since it was switched on. */
  seen: number;
  /** Requests it shapes still, or `always`. */
  remaining: number | 'always';
}

/** Thrown by `HabitBook.add` for a spec it refuses; `message` says why. */
export class InvalidHabitError extends Error {
  override readonly name = 'InvalidHabitError';
}

const habitSpecSchema = z.strictObject({
  api: z.enum(API_NAMES),
  habit: z.string().min(1).max(60),
  date: z.string().refine(isValidDate, 'a calendar date written YYYY-MM-DD').optional(),
  afterRequests: z.int().min(0).max(100_000).optional(),
  times: z.union([z.int().min(1).max(100_000), z.literal('always')]).optional(),
  pageSize: z.int().min(1).max(10_000).optional(),
  waitS: z.int().min(0).max(600).optional(),
});

/** The habits each API has, to refuse a name it does not (see each API's `habits`). */
export type HabitNames = Readonly<Record<ApiName, readonly string[]>>;

/** The switched-on habits of every imitated API. */
export class HabitBook {
  readonly #habits: ActiveHabit[] = [];
  readonly #names: HabitNames;
  #nextId = 1;

  constructor(names: HabitNames) {
    this.#names = names;
  }

  /** Validates and switches on a habit; returns its id (`h1`, `h2`, …). Throws `InvalidHabitError`. */
  add(input: unknown): string {
    const parsed = habitSpecSchema.safeParse(input);
    if (!parsed.success) throw new InvalidHabitError(z.prettifyError(parsed.error));
    const spec = parsed.data;
    const known = this.#names[spec.api];
    if (!known.includes(spec.habit)) {
      throw new InvalidHabitError(`${spec.api} has no habit "${spec.habit}" (it has: ${known.join(', ')})`);
    }
    const id = `h${this.#nextId++}`;
    this.#habits.push({ ...spec, id, seen: 0, remaining: spec.times ?? 1 });
    return id;
  }

  /** Switches every habit off (of one API, when named); returns how many. */
  clear(api?: ApiName): number {
    let cleared = 0;
    for (let i = this.#habits.length - 1; i >= 0; i--) {
      if (api === undefined || this.#habits[i]?.api === api) {
        this.#habits.splice(i, 1);
        cleared++;
      }
    }
    return cleared;
  }

  /** The habits still on, oldest first (copies). */
  list(): ActiveHabit[] {
    return this.#habits.map((h) => ({ ...h }));
  }

  /**
   * The habit `habit` of `api` that shapes this request, consumed. Every such habit whose `date`
   * fits counts the request; the oldest past its `afterRequests` fires, loses one of its `times`,
   * and is switched off when none are left. A request naming no scope fits only habits without a
   * `date`. Returns undefined when none fires.
   */
  take(api: ApiName, habit: string, scope: string | undefined): ActiveHabit | undefined {
    let fired: ActiveHabit | undefined;
    for (const h of this.#habits) {
      if (h.api !== api || h.habit !== habit || (h.date !== undefined && h.date !== scope)) continue;
      h.seen++;
      if (!fired && h.seen > (h.afterRequests ?? 0)) fired = h;
    }
    if (!fired) return undefined;
    if (fired.remaining !== 'always') {
      fired.remaining--;
      if (fired.remaining === 0) this.#habits.splice(this.#habits.indexOf(fired), 1);
    }
    return { ...fired };
  }
}
