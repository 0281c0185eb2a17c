#!/bin/sh
# The namespace durable-fetch uses (run by temporalio/admin-tools in deploy/compose.yaml, whose
# `temporal` CLI it uses): the server creates none by itself.
set -eu
namespace="${DEFAULT_NAMESPACE:-default}"
tries=0
until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "Temporal at $TEMPORAL_ADDRESS is not healthy"; exit 1; }
  sleep 2
done
temporal operator namespace describe -n "$namespace" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1 ||
  temporal operator namespace create -n "$namespace" --address "$TEMPORAL_ADDRESS"
echo "namespace '$namespace' ready"
