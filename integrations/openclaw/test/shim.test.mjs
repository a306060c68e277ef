// Drives the shim against a real `lcm serve --stdio` (LCM_BIN names the lcm executable).
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import plugin, { LcmServeClient, createEngine, stripTrailingAssistant } from "../index.js";

const LCM = process.env.LCM_BIN ?? "lcm";

function fakeApi(config) {
  const api = { pluginConfig: config, handlers: {}, engines: {}, actions: {} };
  api.registerContextEngine = (id, factory) => (api.engines[id] = factory());
  api.on = (event, handler) => (api.handlers[event] = handler);
  api.session = { controls: { registerSessionAction: (action) => (api.actions[action.id] = action) } };
  return api;
}

function freshDb() {
  return join(mkdtempSync(join(tmpdir(), "lcm-shim-")), "lcm.db");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(predicate, ms = 20000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await sleep(20);
  }
}

test("lifecycle calls reach lcm serve and come back in the host's shapes", async () => {
  const api = fakeApi({ command: [LCM, "serve", "--stdio"], databasePath: freshDb() });
  const { client } = plugin.register(api);
  const engine = api.engines.lcm;
  try {
    const batch = await engine.ingestBatch({
      sessionId: "s-1",
      sessionKey: "agent:main:shim",
      messages: [
        { role: "user", content: "please fix the flaky test in ci.yml" },
        { role: "assistant", content: [{ type: "text", text: "Looking at ci.yml now." }] },
      ],
    });
    assert.deepEqual(batch, { ingestedCount: 2 });
    const single = await engine.ingest({ sessionId: "s-1", sessionKey: "agent:main:shim", message: { role: "user", content: "thanks" } });
    assert.deepEqual(single, { ingested: true });
    const heartbeat = await engine.ingest({ sessionId: "s-1", sessionKey: "agent:main:shim", message: { role: "user", content: "x" }, isHeartbeat: true });
    assert.deepEqual(heartbeat, { ingested: false });
    // afterTurn stores only the messages after prePromptMessageCount (a missing transcript is skipped).
    const live = [
      { role: "user", content: "please fix the flaky test in ci.yml" },
      { role: "assistant", content: [{ type: "text", text: "Looking at ci.yml now." }] },
      { role: "user", content: "thanks" },
      { role: "user", content: "and the lint step?" },
      { role: "assistant", content: "Fixed as well." },
    ];
    const after = await engine.afterTurn({
      sessionId: "s-1", sessionKey: "agent:main:shim", sessionFile: join(tmpdir(), "no-such-transcript.jsonl"),
      messages: live, prePromptMessageCount: 3, tokenBudget: 128000, currentTokenCount: 50,
    });
    assert.equal(after, undefined);

    const status = await api.actions["lcm-control"].handler({ payload: { operation: "status" }, sessionKey: "agent:main:shim" });
    assert.deepEqual(status, { ok: true, result: { operation: "status", active: true, messageCount: 5 } });
    const rotate = await api.actions["lcm-control"].handler({ payload: { operation: "bogus" }, sessionKey: "agent:main:shim" });
    assert.equal(rotate.ok, false);
    assert.equal(rotate.code, "unsupported_operation");
  } finally {
    await client.close();
  }
  assert.equal(client.running, false);
});

test("a dead child is restarted with backoff; calls in between fall back", async () => {
  // The restart waits 2 s: long enough that the calls below surely land before it on a loaded
  // machine (they must fall back), short enough for the test.
  const client = new LcmServeClient({ command: [LCM, "--db", freshDb(), "serve", "--stdio"], restartBaseMs: 2000 });
  client.start();
  const engine = createEngine(client, { callTimeoutMs: 10000 });
  const live = [
    { role: "user", content: "hello" },
    { role: "assistant", content: "prefill" },
  ];
  try {
    await engine.ingest({ sessionId: "s-2", message: { role: "user", content: "before the crash" } });
    client.child.kill("SIGKILL");
    await waitFor(() => !client.running);
    const fallback = await engine.assemble({ sessionId: "s-2", messages: live });
    assert.deepEqual(fallback, { messages: [live[0]], estimatedTokens: 0 });
    assert.deepEqual(await engine.ingest({ sessionId: "s-2", message: { role: "user", content: "lost?" } }), { ingested: false });
    await waitFor(() => client.running);
    assert.ok(client.restarts >= 1);
    let answer;
    for (let i = 0; i < 100 && !answer?.ingested; i++) {
      answer = await engine.ingest({ sessionId: "s-2", message: { role: "user", content: `after the restart ${i}` } });
      if (!answer.ingested) await sleep(50);
    }
    assert.deepEqual(answer, { ingested: true });
  } finally {
    await client.close();
  }
});

test("a server that does not answer in time: assemble returns the host's messages", async () => {
  // A child that reads stdin and never answers stands in for a stuck server.
  const client = new LcmServeClient({ command: [process.execPath, "-e", "process.stdin.resume(); setInterval(() => {}, 1000)"] });
  client.start();
  const engine = createEngine(client, { callTimeoutMs: 200 });
  try {
    const live = [{ role: "user", content: "still here" }];
    const started = Date.now();
    assert.deepEqual(await engine.assemble({ sessionId: "s-3", messages: live }), { messages: live, estimatedTokens: 0 });
    assert.ok(Date.now() - started < 5000);
    assert.equal(client.pending.size, 0);
  } finally {
    await client.close(500);
  }
});

test("stripTrailingAssistant keeps everything up to the last non-assistant message", () => {
  assert.deepEqual(stripTrailingAssistant([{ role: "user" }, { role: "assistant" }, { role: "assistant" }]), [{ role: "user" }]);
  assert.deepEqual(stripTrailingAssistant(undefined), []);
});

function commitPayload(n) {
  const common = { agentId: "main", sessionId: "s-c", sessionKey: "agent:main:explicit:s-c", storePath: "/nowhere.sqlite", generation: "g" };
  return {
    advancementKey: `k-${n}`,
    admission: { ...common, entryId: `u${n}`, rawSeq: 4 + 2 * n, activeMessagePosition: 2 * n, logicalTurnId: `k-${n}`, role: "user" },
    terminal: { ...common, entryId: `a${n}`, rawSeq: 5 + 2 * n, activeMessagePosition: 2 * n + 1 },
    messages: [
      { role: "user", content: `question ${n}` },
      { role: "assistant", content: [{ type: "text", text: `answer ${n}` }] },
    ],
    sessionId: "s-c",
    sessionKey: "agent:main:explicit:s-c",
    isHeartbeat: false,
    runtimeSettings: { limits: { promptTokenBudget: 32000 } },
    runtimeContext: { tokenBudget: 32000, llm: { complete: () => {} } },
  };
}

test("the durable-turn contract: declared, committed once, a retry is a duplicate", async () => {
  const api = fakeApi({ command: [LCM, "serve", "--stdio"], databasePath: freshDb() });
  const { client } = plugin.register(api);
  const engine = api.engines.lcm;
  try {
    assert.deepEqual(engine.info.transcriptSemantics, {
      currentTurnFence: "before-current-turn-entry-v1",
      turnAdvancementIdempotency: "atomic-idempotent-v1",
    });
    assert.deepEqual(await engine.commitTurn(commitPayload(0)), { status: "committed" });
    assert.deepEqual(await engine.commitTurn(commitPayload(0)), { status: "duplicate" });
    const clash = commitPayload(0);
    clash.messages[1].content = "another answer";
    await assert.rejects(engine.commitTurn(clash), (err) => err.code === "TURN_ADVANCEMENT_CONFLICT");
    // The child dies; the commit waits for a fresh one instead of losing the turn.
    client.child.kill("SIGKILL");
    await waitFor(() => !client.running);
    assert.deepEqual(await engine.commitTurn(commitPayload(1)), { status: "committed" });
    const shown = await client.request("messages.tail", { sessionKey: "agent:main:explicit:s-c", count: 10 });
    assert.deepEqual(shown.data.messages.map((m) => m.content), ["question 0", "answer 0", "question 1", "answer 1"]);
  } finally {
    await client.close();
  }
});

test("however often register() runs, one lcm serve starts, and only when first called", async () => {
  const config = { command: [LCM, "serve", "--stdio"], databasePath: freshDb() };
  const apis = [fakeApi(config), fakeApi(config), fakeApi(config)];
  const clients = apis.map((api) => plugin.register(api).client);
  try {
    assert.ok(clients.every((c) => c === clients[0]));
    assert.equal(clients[0].running, false);
    await apis[2].engines.lcm.assemble({ sessionId: "s-r", messages: [{ role: "user", content: "hi" }] });
    assert.equal(clients[0].running, true);
    assert.equal(clients[0].restarts, 0);
  } finally {
    await clients[0].close();
  }
});

test("lcm that cannot be spawned: every call falls back at once, commitTurn fails for a host retry", async () => {
  const api = fakeApi({ command: ["/nonexistent/lcm-binary", "serve", "--stdio"] });
  const { client } = plugin.register(api);
  const engine = api.engines.lcm;
  const live = [{ role: "user", content: "hello" }];
  const started = Date.now();
  for (let i = 0; i < 5; i++) {
    assert.deepEqual(await engine.assemble({ sessionId: "s-x", messages: live }), { messages: live, estimatedTokens: 0 });
  }
  await assert.rejects(engine.commitTurn(commitPayload(0)));
  assert.deepEqual(await engine.maintain({ sessionId: "s-x" }).then((r) => r.changed), false);
  assert.ok(Date.now() - started < 3000, `fallbacks took ${Date.now() - started} ms`);
  assert.equal(client.pending.size, 0);
  await client.close();
});

test("a one-shot host process exits by itself with the child still running", async () => {
  const { spawnSync } = await import("node:child_process");
  const script = `
    import plugin from ${JSON.stringify(new URL("../index.js", import.meta.url).href)};
    const api = { pluginConfig: { command: ${JSON.stringify([LCM, "serve", "--stdio"])}, databasePath: ${JSON.stringify(freshDb())} } };
    api.registerContextEngine = (id, factory) => (api.engine = factory());
    plugin.register(api);
    const result = await api.engine.commitTurn(${JSON.stringify(commitPayload(0))});
    await api.engine.maintain({ sessionId: "s-c", sessionKey: "agent:main:explicit:s-c" });
    console.log(result.status);
  `;
  const started = Date.now();
  const done = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20000 });
  assert.equal(done.status, 0, done.stderr);
  assert.equal(done.stdout.trim(), "committed");
  assert.ok(Date.now() - started < 15000);
});

test("the recall tools are registered with lossless-claw's names and answered by lcm serve", async () => {
  const api = fakeApi({ command: [LCM, "serve", "--stdio"], databasePath: freshDb() });
  api.tools = {};
  api.registerTool = (factory, { name }) => (api.tools[name] = factory);
  const { client, engine } = plugin.register(api);
  try {
    assert.deepEqual(Object.keys(api.tools).sort(), ["lcm_describe", "lcm_expand", "lcm_expand_query", "lcm_grep"]);
    const context = { sessionId: "s-t", sessionKey: "agent:main:tools" };
    await engine.ingestBatch({ ...context, messages: [{ role: "user", content: "the okapi lives in the Ituri forest" }] });
    const grep = api.tools.lcm_grep(context);
    assert.equal(grep.name, "lcm_grep");
    assert.deepEqual(grep.parameters.required, ["pattern"]);
    const found = await grep.execute("call-1", { pattern: "okapi", mode: "full_text" });
    assert.equal(found.isError, false);
    assert.match(found.content[0].text, /okapi lives/);
    const missing = await api.tools.lcm_describe(context).execute("call-2", { id: "sum_nope" });
    assert.equal(missing.isError, true);
    // Another session's tools search that session's conversations only.
    const other = await api.tools.lcm_grep({ sessionId: "s-o", sessionKey: "agent:main:other" }).execute("call-3", { pattern: "okapi", mode: "full_text" });
    assert.doesNotMatch(other.content[0].text, /okapi lives/);
  } finally {
    await client.close();
  }
});

test("before_reset takes the session from the hook's context argument", async () => {
  const api = fakeApi({ command: [LCM, "serve", "--stdio"], databasePath: freshDb() });
  const { client, engine } = plugin.register(api);
  try {
    const ids = { sessionId: "s-n", sessionKey: "agent:main:new" };
    await engine.ingestBatch({ ...ids, messages: [{ role: "user", content: "before /new" }] });
    await api.handlers.before_reset({ sessionFile: "x", messages: [], reason: "new" }, { agentId: "main", ...ids });
    const shown = await client.request("context.assemble", { ...ids, messages: [] });
    assert.equal(shown.data.messages.length, 0);
    // A shutdown's session_end needs no server (the host sends it after gateway_stop).
    await api.handlers.session_end({ ...ids, reason: "shutdown" }, ids);
  } finally {
    await client.close();
  }
});

test("every call of a turn stays within the budget the host framed for the turn", async () => {
  const sent = [];
  const client = { request: async (method, params) => (sent.push({ method, params }), { data: { messages: [], status: "committed" } }) };
  const engine = createEngine(client);
  const ids = { sessionId: "s-b", sessionKey: "agent:main:budget" };
  const framed = { schemaVersion: 1, limits: { promptTokenBudget: 17834, maxOutputTokens: 8000 } };
  await engine.assemble({ ...ids, messages: [], tokenBudget: 17834, runtimeSettings: framed, availableTools: new Set(["b", "a"]), model: "stub-1", prompt: "hi" });
  // The tool-loop assemble, commitTurn and maintain get the whole window from the host.
  await engine.assemble({ ...ids, messages: [], tokenBudget: 31966, runtimeSettings: { limits: { promptTokenBudget: 32000, maxOutputTokens: null } }, availableTools: new Set(["a"]), prompt: "hi" });
  await engine.commitTurn({ ...ids, advancementKey: "k", messages: [{ role: "user", content: "hi" }], runtimeContext: { tokenBudget: 32000 } });
  await engine.maintain({ ...ids, runtimeContext: { tokenBudget: 32000 } });
  assert.deepEqual(sent.map((s) => s.params.tokenBudget), [17834, 17834, 17834, 17834]);
  assert.deepEqual(sent[0].params.availableTools, ["a", "b"]);
  assert.equal(sent[0].params.model, "stub-1");
  assert.deepEqual(sent[0].params.runtimeSettings, framed);
  // Another session is not capped by this one's budget.
  await engine.assemble({ sessionId: "s-other", messages: [], tokenBudget: 31000 });
  assert.equal(sent.at(-1).params.tokenBudget, 31000);
});
