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
  const client = new LcmServeClient({ command: [LCM, "--db", freshDb(), "serve", "--stdio"], restartBaseMs: 50 });
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
