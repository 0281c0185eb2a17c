/**
 * Temporal histories to and from proto JSON (the format `temporal workflow show --output json` and
 * the Web UI's download use), for the replay gate's fixtures.
 *
 * Be very careful: the SDK's own `historyToJSON` / `historyFromJSON` (@temporalio/common's
 * proto-utils) throw "type must be a Type" with this project's lockfile. npm keeps one copy of
 * protobufjs 8 under @temporalio/common and another under @temporalio/proto (the hoisted copy is
 * grpc's protobufjs 7), and protobufjs's JSON codec only accepts message types built by its own
 * copy. So the codec here is loaded from the copy @temporalio/proto resolves, whatever the layout.
 * Worker.runReplayHistory also calls historyFromJSON for JSON input: pass it decoded histories.
 */
import { createRequire } from 'node:module';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root.js';

interface ProtoType {
  fromObject(value: unknown): unknown;
}
interface ProtoJson {
  toJson(type: ProtoType, message: unknown): unknown;
  fromJson(type: ProtoType, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
}

const require = createRequire(import.meta.url);
// Through require, as the SDK loads it: an ESM namespace object is not a protobufjs root.
const proto = require('@temporalio/proto') as Record<string, unknown>;
const requireFromProto = createRequire(require.resolve('@temporalio/proto'));
const protojson = requireFromProto('protobufjs/ext/protojson') as ProtoJson;
const historyType = (
  patchProtobufRoot(proto) as unknown as { lookupType(name: string): ProtoType }
).lookupType('temporal.api.history.v1.History');

/** A history (as `WorkflowHandle.fetchHistory()` returns it) as indented proto JSON. Pure. */
export function historyToJson(history: History, indent = 1): string {
  return JSON.stringify(protojson.toJson(historyType, historyType.fromObject(history)), null, indent);
}

/**
 * A proto-JSON history (as {@link historyToJson} writes it, with full enum names) decoded for
 * replay. Unknown fields (a newer server's) are ignored. Throws TypeError on a malformed history.
 */
export function historyFromJson(json: unknown): History {
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true });
  if (history === null || typeof history !== 'object') throw new TypeError('not a history');
  return history;
}
