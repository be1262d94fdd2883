#!/usr/bin/env bash
# Check docs/grafana/atlaso.json against Grafana's own dashboard schema: the TypeScript types
# Grafana generates from it (npm @grafana/schema), with the JSON written as an object literal
# that must `satisfy` their `Dashboard` (a missing, misspelt or mistyped field fails tsc). A
# string enum of those types (ThresholdsMode) is written in JSON as its value ("absolute"),
# which TypeScript accepts only as the enum's member: `AsJson` reads each one as its values.
# Needs node and npm (the npm registry); installs into a temporary folder, removed after.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund @grafana/schema@13.2.3 typescript@5.9.3 >/dev/null
{
  echo "import type { Dashboard } from '@grafana/schema';"
  echo 'type AsJson<T> = T extends string ? `${T}` : T extends (infer U)[] ? AsJson<U>[] : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;'
  printf 'export const dashboard = %s satisfies AsJson<Dashboard>;\n' "$(cat "$here/atlaso.json")"
} > check.ts
npx tsc --noEmit --strict --skipLibCheck --target es2022 --moduleResolution node check.ts
echo "docs/grafana/atlaso.json satisfies @grafana/schema 13.2.3's Dashboard"
