// OpenClaw context-engine plugin that forwards every lifecycle call to a warm
// `lcm serve --stdio` child process (newline-delimited JSON: {id, method, params} in,
// {id, result} or {id, error} out). No dependencies beyond Node's standard library.
//
// One child per host process, started on the first call however often the host calls
// register(), and unreferenced: it never keeps a one-shot `openclaw agent --local` alive
// (the host exiting closes the pipe, and the server finishes what is in flight).
//
// Failure behaviour: when the child is down, slow or answers with an error, each call
// degrades the way the host can live with: assemble returns the host's own messages
// (trailing assistant prefill stripped), ingest reports nothing ingested, bootstrap /
// compact / maintain report that nothing happened and why. commitTurn instead throws, so
// the host keeps the turn in its durable outbox and retries it (idempotent by key). A
// child that cannot be spawned fails calls at once; spawning is retried with backoff.

import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

// The manifest is generated from lcm's key table (scripts/gen_cli_docs.py): the plugin's own
// settings and their defaults are declared there once.
const MANIFEST = JSON.parse(readFileSync(new URL("./openclaw.plugin.json", import.meta.url), "utf8"));
// The model's recall tools, generated from lcm's own declarations (lcm_cli/engine/recall/tools.py).
const TOOLS = JSON.parse(readFileSync(new URL("./tools.json", import.meta.url), "utf8"));
const SETTINGS = MANIFEST.configSchema.properties;
const DEFAULT_COMMAND = SETTINGS.command.default;
const DEFAULT_CALL_TIMEOUT_MS = SETTINGS.callTimeoutMs.default;
const DEFAULT_COMPACT_TIMEOUT_MS = SETTINGS.compactTimeoutMs.default;
const COMMIT_ATTEMPTS = 3;
// session_end reasons that change nothing in lcm (the host sends "shutdown" after gateway_stop).
const QUIET_END_REASONS = new Set(["restart", "shutdown"]);

export class LcmUnavailableError extends Error {
  constructor(message, code = "LCM_UNAVAILABLE") {
    super(message);
    this.name = "LcmUnavailableError";
    this.code = code;
  }
}

/** A client for one `lcm serve --stdio` child, restarted with backoff when it dies. */
export class LcmServeClient {
  constructor({ command, env, restartBaseMs = 100, restartMaxMs = 10000, logger } = {}) {
    this.command = command && command.length ? command : [...DEFAULT_COMMAND];
    this.env = env ?? process.env;
    this.restartBaseMs = restartBaseMs;
    this.restartMaxMs = restartMaxMs;
    this.logger = logger ?? { warn: () => {}, info: () => {} };
    this.child = null;
    this.pending = new Map();
    this.nextId = 0;
    this.failures = 0;
    this.restarts = 0;
    this.disposed = false;
    this.restartTimer = null;
    this.retryAt = 0;
    this.lastError = null;
  }

  /** Start the child (idempotent; a no-op while a failed spawn is backing off). */
  start() {
    if (this.disposed || this.child || Date.now() < this.retryAt) return;
    const [file, ...args] = this.command;
    let child;
    try {
      child = spawn(file, args, { env: this.env, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      this.#spawnFailed(err);
      return;
    }
    this.child = child;
    const startedAt = Date.now();
    // Never keep the host's event loop alive for the child's sake: a pending request's own
    // timer does that while it waits for its answer.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.unref?.();
    child.stdin.on("error", () => {}); // a dead child: handled by "exit"
    child.stderr.on("data", (chunk) => this.logger.warn(`[lcm serve] ${String(chunk).trimEnd()}`));
    createInterface({ input: child.stdout }).on("line", (line) => this.#answer(line));
    child.on("error", (err) => {
      // ENOENT/EACCES: there is no "exit" to wait for; fail fast and back off.
      if (this.child === child) this.child = null;
      this.#spawnFailed(err);
    });
    child.on("exit", (code, signal) => {
      if (this.child === child) this.child = null;
      this.#failAll(new LcmUnavailableError(`lcm serve exited (${signal ?? code})`));
      if (this.disposed) return;
      // A child that ran for a while resets the backoff; one that dies at once grows it.
      this.failures = Date.now() - startedAt > 5000 ? 1 : this.failures + 1;
      const delay = this.#backoff();
      this.retryAt = Date.now() + delay; // calls before the restart fall back at once
      this.logger.warn(`[lcm] serve exited (${signal ?? code}); restarting in ${delay} ms`);
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        this.restarts += 1;
        // A timer may fire a millisecond before Date.now() reaches retryAt; start() would
        // then do nothing and no restart would ever come.
        this.retryAt = 0;
        this.start();
      }, delay);
      this.restartTimer.unref?.();
    });
  }

  #backoff() {
    return Math.min(this.restartMaxMs, this.restartBaseMs * 2 ** Math.max(0, this.failures - 1));
  }

  #spawnFailed(err) {
    this.failures += 1;
    const delay = this.#backoff();
    this.retryAt = Date.now() + delay;
    this.lastError = `cannot start ${this.command[0]}: ${err.message}`;
    this.logger.warn(`[lcm] ${this.lastError}; retrying in ${delay} ms`);
    this.#failAll(new LcmUnavailableError(this.lastError, "LCM_SPAWN_FAILED"));
  }

  get running() {
    return this.child !== null;
  }

  #answer(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      this.logger.warn(`[lcm] unreadable answer: ${line.slice(0, 200)}`);
      return;
    }
    const waiter = this.pending.get(message.id);
    if (!waiter) return; // timed out already: the late answer is dropped
    this.pending.delete(message.id);
    clearTimeout(waiter.timer);
    if (message.error) {
      const err = new LcmUnavailableError(message.error.message, message.error.code);
      err.details = message.error.details;
      waiter.reject(err);
    } else {
      waiter.resolve(message.result);
    }
  }

  #failAll(err) {
    for (const [id, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.reject(err);
      this.pending.delete(id);
    }
  }

  /**
   * Send one request; resolves with the result envelope or rejects (error, timeout, child
   * down). The child is started on the first request; the wait for the answer keeps the
   * host process alive, the idle child does not.
   */
  request(method, params = {}, timeoutMs = DEFAULT_CALL_TIMEOUT_MS) {
    if (!this.child) this.start();
    if (!this.child) {
      return Promise.reject(new LcmUnavailableError(this.lastError ?? "lcm serve is not running", "LCM_UNAVAILABLE"));
    }
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LcmUnavailableError(`lcm serve did not answer ${method} within ${timeoutMs} ms`, "TIMEOUT"));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.child.stdin.write(JSON.stringify({ id, method, params }) + "\n");
    });
  }

  /** Stop for good: ask the server to finish what is in flight, then make sure it exits. */
  async close(graceMs = 5000) {
    this.disposed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.ref(); // an explicit close waits for the exit
    child.stdin.end(); // EOF: the server answers what is in flight and exits
    const timer = setTimeout(() => child.kill("SIGTERM"), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Trailing assistant messages are a prefill the host adds; a fallback must not keep them. */
export function stripTrailingAssistant(messages) {
  const out = Array.isArray(messages) ? [...messages] : [];
  while (out.length && out[out.length - 1]?.role === "assistant") out.pop();
  return out;
}

function pick(source, keys) {
  const out = {};
  for (const key of keys) {
    if (source?.[key] !== undefined && source[key] !== null) out[key] = source[key];
  }
  return out;
}

/** A JSON-safe copy of a host value (a Set becomes a sorted array; functions are dropped). */
function jsonable(value) {
  if (value instanceof Set) return [...value].map(String).sort();
  return value;
}

const positive = (n) => (typeof n === "number" && Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined);

/**
 * The prompt budget of each session's current turn, as the host framed it.
 *
 * On OpenClaw 2026.8+ only a turn's first assemble carries the host's own accounting
 * (runtimeSettings.limits: promptTokenBudget = window - output reserve - system prompt -
 * pending prompt, with maxOutputTokens set). The tool-loop assemble that follows, whose
 * output the model actually receives, and commitTurn and maintain get the whole window.
 * Remembering the framed budget keeps every call of the turn within what the model can
 * take, so compaction starts before the window overflows.
 */
export class TurnBudgets {
  constructor() {
    this.bySession = new Map();
  }

  static key(p) {
    return p?.sessionKey ?? p?.sessionId ?? "";
  }

  /** Note the framed budget an assemble carries (when it carries one). */
  observe(p) {
    const limits = p?.runtimeSettings?.limits;
    const framed = positive(limits?.promptTokenBudget);
    if (framed !== undefined && positive(limits?.maxOutputTokens) !== undefined) {
      this.bySession.set(TurnBudgets.key(p), framed);
    }
  }

  /** The budget to give lcm: the host's, never more than the session's framed budget. */
  budget(p, given) {
    const framed = this.bySession.get(TurnBudgets.key(p));
    const host = positive(given);
    if (framed === undefined) return host;
    return host === undefined ? framed : Math.min(host, framed);
  }
}

/** The context engine the host calls; every method forwards to `lcm serve`. */
export function createEngine(client, options = {}) {
  const callTimeout = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const compactTimeout = options.compactTimeoutMs ?? DEFAULT_COMPACT_TIMEOUT_MS;
  const log = options.logger ?? { warn: () => {} };
  const trace = options.tracePath ?? process.env.LCM_SHIM_TRACE;
  const call = async (method, params, timeoutMs = callTimeout) => {
    const started = performance.now();
    let ok = false;
    try {
      const data = (await client.request(method, params, timeoutMs)).data;
      ok = true;
      return data;
    } finally {
      if (trace) {
        const ms = Math.round((performance.now() - started) * 1000) / 1000;
        try {
          appendFileSync(trace, JSON.stringify({ method, ms, ok }) + "\n");
        } catch {
          // tracing is diagnostics only
        }
      }
    }
  };
  const session = (p) => pick(p, ["sessionId", "sessionKey"]);
  // Shared by every engine instance of this client (the host may register several).
  const budgets = (client.turnBudgets ??= new TurnBudgets());
  // The prompt budget the host gives this call (runtimeSettings on 2026.8+, else runtimeContext),
  // capped by the turn's framed budget.
  const budgetOf = (p) =>
    budgets.budget(p, p?.tokenBudget ?? p?.runtimeSettings?.limits?.promptTokenBudget ?? p?.runtimeContext?.tokenBudget);
  const withBudget = (p, params) => {
    const tokenBudget = budgetOf(p);
    return tokenBudget === undefined ? params : { ...params, tokenBudget };
  };

  return {
    info: {
      id: "lcm",
      name: "Lossless Context Management (Python lcm)",
      ownsCompaction: true,
      turnMaintenanceMode: "background",
      // OpenClaw 2026.8+ runs a non-legacy engine only when it declares these and
      // implements commitTurn; older hosts ignore them.
      transcriptSemantics: {
        currentTurnFence: "before-current-turn-entry-v1",
        turnAdvancementIdempotency: "atomic-idempotent-v1",
      },
    },

    async bootstrap(params) {
      try {
        // 2026.7.2+ hosts name the session, not a file, in sessionFile; lcm then reads the
        // host's SQLite store (found from the agent dir or the session key).
        const hostStore = params.sessionTarget?.storePath ?? params.runtimeContext?.agentDir;
        const data = await call(
          "session.bootstrap",
          { ...session(params), sessionFile: params.sessionFile, ...pick({ hostStore }, ["hostStore"]) },
          compactTimeout,
        );
        return { bootstrapped: Boolean(data.bootstrapped), importedMessages: data.importedMessages ?? 0, reason: data.reason };
      } catch (err) {
        log.warn(`[lcm] bootstrap fell back: ${err.message}`);
        return { bootstrapped: false, importedMessages: 0, reason: `lcm unavailable: ${err.message}` };
      }
    },

    async ingest(params) {
      try {
        const data = await call("session.ingest", { ...session(params), message: params.message, isHeartbeat: Boolean(params.isHeartbeat) });
        return { ingested: (data.ingested ?? 0) > 0 };
      } catch (err) {
        log.warn(`[lcm] ingest fell back: ${err.message}`);
        return { ingested: false };
      }
    },

    async ingestBatch(params) {
      if (!params.messages?.length) return { ingestedCount: 0 };
      try {
        const data = await call("session.ingest", { ...session(params), messages: params.messages, isHeartbeat: Boolean(params.isHeartbeat) });
        return { ingestedCount: data.ingested ?? 0 };
      } catch (err) {
        log.warn(`[lcm] ingestBatch fell back: ${err.message}`);
        return { ingestedCount: 0 };
      }
    },

    async afterTurn(params) {
      try {
        await call(
          "session.after_turn",
          withBudget(
            params,
            pick(params, [
              "sessionId", "sessionKey", "sessionFile", "messages", "prePromptMessageCount",
              "autoCompactionSummary", "isHeartbeat", "currentTokenCount",
            ]),
          ),
          compactTimeout,
        );
      } catch (err) {
        log.warn(`[lcm] afterTurn fell back: ${err.message}`);
      }
    },

    async commitTurn(params) {
      // Failing here is right: the host keeps the turn queued and retries the same key,
      // which lcm answers "duplicate" if an earlier attempt did land.
      const payload = withBudget(
        params,
        pick(params, ["advancementKey", "admission", "terminal", "messages", "sessionId", "sessionKey", "isHeartbeat"]),
      );
      for (let attempt = 1; ; attempt++) {
        try {
          const data = await call("session.commit_turn", payload, compactTimeout);
          return { status: data.status === "duplicate" ? "duplicate" : "committed" };
        } catch (err) {
          // The child died under the call or is restarting: try a fresh one, briefly.
          if (err.code !== "LCM_UNAVAILABLE" || attempt >= COMMIT_ATTEMPTS) throw err;
          await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
        }
      }
    },

    async assemble(params) {
      budgets.observe(params);
      try {
        // Everything the host says about the turn: the prompt and the tools it delivers
        // separately (so a real last reply is not taken for a prefill), the model (threshold
        // overrides) and its own accounting (runtimeSettings).
        const request = withBudget(params, {
          ...pick(params, ["sessionId", "sessionKey", "messages", "prompt", "model", "runtimeSettings"]),
          ...pick({ availableTools: jsonable(params.availableTools) }, ["availableTools"]),
        });
        const data = await call("context.assemble", request);
        const result = { messages: data.messages, estimatedTokens: data.estimatedTokens ?? 0 };
        if (data.systemPromptAddition) result.systemPromptAddition = data.systemPromptAddition;
        return result;
      } catch (err) {
        // The host's own stored messages: the turn goes on without LCM's context.
        log.warn(`[lcm] assemble fell back to the host's messages: ${err.message}`);
        return { messages: stripTrailingAssistant(params.messages), estimatedTokens: 0 };
      }
    },

    async compact(params) {
      try {
        return await call(
          "session.compact",
          withBudget(params, {
            ...pick(params, ["sessionId", "sessionKey", "currentTokenCount", "compactionTarget", "force"]),
            apply: true,
          }),
          compactTimeout,
        );
      } catch (err) {
        log.warn(`[lcm] compact fell back: ${err.message}`);
        return { ok: false, compacted: false, reason: `lcm unavailable: ${err.message}` };
      }
    },

    async maintain(params) {
      try {
        return await call("session.maintain", withBudget(params, pick(params, ["sessionId", "sessionKey"])), compactTimeout);
      } catch (err) {
        log.warn(`[lcm] maintain fell back: ${err.message}`);
        return { changed: false, bytesFreed: 0, rewrittenEntries: 0, reason: `lcm unavailable: ${err.message}` };
      }
    },

    async control(params) {
      return call("control", pick(params, ["operation", "sessionKey", "sessionId"]));
    },

    async dispose() {
      // The client is shared by every engine instance; the plugin closes it on gateway stop.
    },
  };
}

export { TOOLS };

/**
 * One agent tool (lcm_grep, lcm_describe, lcm_expand or lcm_expand_query, as TOOLS declares
 * it) as a host tool object for one tool context: each call is answered by `lcm serve`
 * (`recall.tool`) for the calling session, within the tool's own caps.
 */
export function createTool(client, spec, toolContext = {}, options = {}) {
  const timeoutMs = options.compactTimeoutMs ?? DEFAULT_COMPACT_TIMEOUT_MS;
  return {
    ...spec,
    async execute(toolCallId, args) {
      // lcm_expand_query carries its own deadline; lcm answers before it.
      const deadline = spec.name === "lcm_expand_query" ? positive(args?.timeoutMs) ?? timeoutMs : timeoutMs;
      try {
        const { data } = await client.request(
          "recall.tool",
          { tool: spec.name, arguments: args ?? {}, ...pick(toolContext, ["sessionKey", "sessionId"]) },
          deadline + 5000,
        );
        return { content: [{ type: "text", text: data.text }], details: data.details ?? {}, isError: Boolean(data.isError) };
      } catch (err) {
        const text = JSON.stringify({ error: `lcm is unavailable: ${err.message}`, hint: "Try again later." }, null, 2);
        return { content: [{ type: "text", text }], details: { error: err.message }, isError: true };
      }
    },
  };
}

function commandFrom(config, env) {
  if (env.LCM_COMMAND) return env.LCM_COMMAND.split(" ").filter(Boolean);
  const command = Array.isArray(config.command) && config.command.length ? [...config.command] : [...DEFAULT_COMMAND];
  if (config.databasePath) command.splice(1, 0, "--db", config.databasePath);
  return command;
}

// The host may call register() several times in one process (3 times on 2026.9.6): every
// registration shares one client per command line, so one `lcm serve` runs per process.
const CLIENTS = Symbol.for("lcm.openclaw.clients");

/** The process-wide client for `command` (created on first use). */
export function sharedClient(command, logger) {
  const clients = (globalThis[CLIENTS] ??= new Map());
  const key = JSON.stringify(command);
  let client = clients.get(key);
  if (!client || client.disposed) {
    client = new LcmServeClient({ command, logger });
    clients.set(key, client);
  }
  return client;
}

const plugin = {
  id: "lcm",
  name: "Lossless Context Management (Python lcm)",
  description: "Forwards the context-engine lifecycle to a warm `lcm serve --stdio` process.",
  configSchema: {
    parse(value) {
      return value && typeof value === "object" && !Array.isArray(value) ? value : {};
    },
  },

  register(api) {
    const config = plugin.configSchema.parse(api.pluginConfig);
    const logger = api.logger ?? { warn: () => {}, info: () => {} };
    const client = sharedClient(commandFrom(config, process.env), logger);
    const engine = createEngine(client, { ...config, logger });
    api.registerContextEngine("lcm", () => engine);
    // The model's recall tools, one registration each (the host asks the factory per turn).
    if (typeof api.registerTool === "function") {
      for (const spec of TOOLS) {
        api.registerTool((toolContext) => createTool(client, spec, toolContext, config), { name: spec.name });
      }
    }
    // Hooks are (event, ctx): the session's ids are in ctx for before_reset (event holds the
    // messages and the reason), in event for session_end; each side fills what the other lacks.
    const ids = (event, ctx) => ({ ...pick(ctx, ["sessionId", "sessionKey"]), ...pick(event, ["sessionId", "sessionKey"]) });
    api.on?.("before_reset", async (event, ctx) => {
      const method = event?.reason === "reset" ? "session.reset" : event?.reason === "new" ? "session.new" : null;
      if (!method) return;
      await client.request(method, ids(event, ctx)).catch((err) => logger.warn(`[lcm] ${method}: ${err.message}`));
    });
    api.on?.("session_end", async (event, ctx) => {
      if (QUIET_END_REASONS.has(event?.reason)) return; // nothing to do, and lcm serve may be closing
      await client
        .request("session.end", { ...ids(event, ctx), ...pick(event, ["reason", "nextSessionId", "nextSessionKey"]) })
        .catch((err) => logger.warn(`[lcm] session.end: ${err.message}`));
    });
    api.on?.("gateway_stop", () => client.close());
    api.session?.controls?.registerSessionAction?.({
      id: "lcm-control",
      description: "Run an LCM control operation (status | doctor | rotate) for a session.",
      schema: { type: "object", properties: { operation: { enum: ["status", "doctor", "rotate"] } }, required: ["operation"] },
      handler: async (ctx) => {
        try {
          return { ok: true, result: await engine.control({ operation: ctx.payload?.operation, sessionKey: ctx.sessionKey }) };
        } catch (err) {
          return { ok: false, error: err.message, code: err.details?.reasonCode ?? "unavailable" };
        }
      },
    });
    return { client, engine };
  },
};

export default plugin;
