/**
 * The steps a fetched workflow history ran, whether regular activities (their scheduled events)
 * or local ones (the database steps, workflows/db-steps.ts: one marker each, naming its type).
 */
import type { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;

/** The type and attempt of a local activity's marker (its last attempt), else undefined. */
export function localActivity(e: Event): { type: string; attempt: number } | undefined {
  const marker = e.markerRecordedEventAttributes;
  const data =
    marker?.markerName === 'core_local_activity' ? marker.details?.data?.payloads?.[0]?.data : null;
  if (!data) return undefined;
  const { activity_type, attempt } = JSON.parse(Buffer.from(data).toString()) as {
    activity_type: string;
    attempt: number;
  };
  return { type: activity_type, attempt };
}

/** The activity type of a local activity's marker, else undefined. */
export const localActivityType = (e: Event) => localActivity(e)?.type;

/** Every activity type the history ran, regular or local, in order (repeats kept). */
export function stepTypes(events: Event[]): string[] {
  return events.flatMap((e) => {
    const type = e.activityTaskScheduledEventAttributes?.activityType?.name ?? localActivityType(e);
    return type ? [type] : [];
  });
}
