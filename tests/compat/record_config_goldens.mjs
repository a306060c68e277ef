// Records the config goldens of tests/compat/test_config_goldens.py from lossless-claw's own
// config resolver, resolveLcmConfigWithDiagnostics(env, pluginConfig) in src/db/config.ts.
//
// Run by hand, like the engine goldens (docs/compat.md, "Engine goldens"); nothing of
// lossless-claw is kept in this repository. From the lcm checkout:
//
//   M=/path/to/lossless-claw.git          # any clone; a bare one is enough
//   for TAG in v0.15.3 v1.0.0-beta.4; do
//     D=/tmp/lossless-claw-$TAG
//     mkdir -p $D && git --git-dir=$M archive $TAG | tar -x -C $D
//     (cd $D && npm ci --ignore-scripts)  # its own package-lock.json; esbuild comes with it
//   done
//   .venv/bin/python -m tests.compat.record_config_goldens inputs /tmp/config-inputs.json
//   for TAG in v0.15.3 v1.0.0-beta.4; do
//     node tests/compat/record_config_goldens.mjs /tmp/lossless-claw-$TAG /tmp/config-inputs.json \
//       tests/compat/goldens/config/$TAG.json.gz $TAG $(git --git-dir=$M rev-parse $TAG^{commit})
//   done
//
// Node 20 or later. The inputs (tests/compat/record_config_goldens.py) are several hundred
// seeded plugin-config and environment values per key of lcm's key table. This script
// bundles the checkout's src/db/config.ts with the checkout's own esbuild, then resolves:
//
// - the baseline: only the base environment (a fixed OPENCLAW_STATE_DIR), no plugin config;
// - "full": a plugin config setting every optional field, whose effective config gives the
//   version's fields in output order;
// - every case: the base environment plus the case's variables, and the case's plugin config.
//
// A case whose key feeds no field of this version (keys 1.0 dropped) is left out. Each
// recorded case keeps `key`, `plugin`, `env` (when it sets any) and `effective`: the
// effective fields, by dot path, that differ from the baseline, plus the key's own field,
// each as JSON prints it (Infinity prints null); `unset`: those of them the runtime leaves
// undefined (omitted from its JSON); `diagnostics` when they differ from the baseline's;
// `error` (the message) when the resolver throws.
//
// The process's HOME and TZ are set from the inputs, so the two runtime fallbacks that
// depend on the machine (a blank state dir means ~/.openclaw; no timezone means the
// system zone) are recorded against fixed values the test replays.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [checkoutArg, inputsPath, outPath, tag = null, commit = null] = process.argv.slice(2);
if (!checkoutArg || !inputsPath || !outPath) {
  console.error("usage: node record_config_goldens.mjs CHECKOUT INPUTS.json OUT.json.gz [TAG COMMIT]");
  process.exit(2);
}
const checkout = resolve(checkoutArg);
const inputs = JSON.parse(readFileSync(inputsPath, "utf8"));

process.env.HOME = inputs.home;
process.env.TZ = inputs.systemTimeZone;
const systemTimeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
if (systemTimeZone !== inputs.systemTimeZone) {
  throw new Error(`process time zone is ${systemTimeZone}, wanted ${inputs.systemTimeZone}`);
}

const esbuild = await import(pathToFileURL(join(checkout, "node_modules", "esbuild", "lib", "main.js")).href);
const scratch = mkdtempSync(join(tmpdir(), "lcm-config-goldens-"));
const bundle = join(scratch, "config.mjs");
await esbuild.build({
  entryPoints: [join(checkout, "src", "db", "config.ts")],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outfile: bundle,
  logLevel: "error",
});
const { resolveLcmConfigWithDiagnostics } = await import(pathToFileURL(bundle).href);
rmSync(scratch, { recursive: true, force: true });

/** Effective leaves by dot path: nested objects are walked, arrays are leaves; unset fields skipped. */
function flatten(value, prefix = "", out = {}) {
  for (const [name, child] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${name}` : name;
    if (child === undefined) continue;
    if (child !== null && typeof child === "object" && !Array.isArray(child)) flatten(child, path, out);
    else out[path] = child;
  }
  return out;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const baseEnv = inputs.baseEnv;
const baseline = resolveLcmConfigWithDiagnostics({ ...baseEnv }, {});
const baseFlat = flatten(baseline.config);
const full = resolveLcmConfigWithDiagnostics({ ...baseEnv }, inputs.full);
const fields = Object.keys(flatten(full.config));
const ownFields = (field) => fields.filter((f) => f === field || f.startsWith(`${field}.`));

const cases = [];
for (const input of inputs.cases) {
  const own = ownFields(input.field);
  if (own.length === 0) continue; // a key this version no longer reads
  const out = { key: input.key, plugin: input.plugin };
  if (input.env) out.env = input.env;
  let result;
  try {
    result = resolveLcmConfigWithDiagnostics({ ...baseEnv, ...(input.env ?? {}) }, input.plugin);
  } catch (error) {
    out.error = String(error?.message ?? error);
    cases.push(out);
    continue;
  }
  const flat = flatten(result.config);
  const effective = {};
  const unset = [];
  for (const field of fields) {
    const has = field in flat;
    const changed = has !== field in baseFlat || (has && !same(flat[field], baseFlat[field]));
    if (!changed && !own.includes(field)) continue;
    if (has) effective[field] = flat[field];
    else unset.push(field);
  }
  out.effective = effective;
  if (unset.length > 0) out.unset = unset;
  if (!same(result.diagnostics, baseline.diagnostics)) out.diagnostics = result.diagnostics;
  cases.push(out);
}

const pkg = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8"));
const header = {
  reference: { package: pkg.name, version: pkg.version, tag, commit },
  node: process.version,
  resolver: "resolveLcmConfigWithDiagnostics(env, pluginConfig) in src/db/config.ts",
  seed: inputs.seed,
  baseEnv,
  home: inputs.home,
  systemTimeZone,
  fields,
  baseline: { config: baseline.config, diagnostics: baseline.diagnostics },
  full: { plugin: inputs.full, config: full.config },
};
// The header as indented JSON, then one case a line.
const head = JSON.stringify(header, null, 1).replace(/\n}$/, "");
const body = cases.map((c) => JSON.stringify(c)).join(",\n");
// Compressed (mtime-free): the cases are megabytes of repetitive JSON.
writeFileSync(outPath, gzipSync(`${head},\n "cases": [\n${body}\n ]\n}\n`, { level: 9 }));
console.log(`${outPath}: ${cases.length} cases (${pkg.name} ${pkg.version}, node ${process.version})`);
