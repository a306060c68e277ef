// Drives lossless-claw 1.0.0-beta.4's pending-summary coordinator on a file, to record the goldens of
// test_publisher.py. Copy it into a checkout of the tag and bundle it there (see record_goldens.py).
import { DatabaseSync } from "node:sqlite";
import { runLcmMigrations } from "./src/db/migration.js";
import { ConversationStore } from "./src/store/conversation-store.js";
import { SummaryStore } from "./src/store/summary-store.js";
import { PendingSummaryStore } from "./src/store/pending-summary-store.js";
import { PendingCompactionCoordinator } from "./src/pending-summary-coordinator.js";

const [, , mode, dbPath, arg1, arg2] = process.argv;
const db = new DatabaseSync(dbPath);
db.exec("PRAGMA foreign_keys = ON");
runLcmMigrations(db, { fts5Available: true });
const conversationStore = new ConversationStore(db, { fts5Available: true });
const summaryStore = new SummaryStore(db, { fts5Available: true });
const pendingSummaryStore = new PendingSummaryStore(db);

function words(i: number): string {
  const out: string[] = [];
  for (let k = 0; k < 20 + (i % 15); k++) out.push(`word${(i * 7 + k) % 97}`);
  return `msg ${i}: ${out.join(" ")}`;
}
function stamp(i: number): string {
  const d = new Date(Date.UTC(2026, 6, 1, 9, 0, 0) + i * 30_000);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

async function main(): Promise<void> {
  if (mode === "add") {
    // add <db> <start> <count>: append messages (and context items) to conversation "sess-1"
    const start = Number(arg1), count = Number(arg2);
    const conv = await conversationStore.getOrCreateConversation("sess-1", { sessionKey: "agent:main:pending" } as never);
    const last = db.prepare("SELECT COALESCE(MAX(seq), 0) AS s FROM messages WHERE conversation_id = ?").get(conv.conversationId) as { s: number };
    const ids: number[] = [];
    for (let i = start; i < start + count; i++) {
      const content = words(i);
      const rec = await conversationStore.createMessage({
        conversationId: conv.conversationId, seq: last.s + 1 + (i - start), role: i % 2 === 0 ? "user" : "assistant",
        content, tokenCount: Math.ceil(content.length / 4), createdAt: stamp(i),
      });
      ids.push(rec.messageId);
    }
    await summaryStore.appendContextMessages(conv.conversationId, ids);
    console.log(JSON.stringify({ conversationId: conv.conversationId, added: ids.length }));
    return;
  }
  const conversationId = Number(arg1);
  const coordinator = new PendingCompactionCoordinator({
    conversationStore, summaryStore, pendingSummaryStore,
    summarize: async (text, _aggressive, options) =>
      `1.0 ${options?.isCondensed ? `d${options.depth}` : "leaf"} summary of ${text.length} chars: ${text.replace(/\s+/g, " ").slice(0, 200)}`,
    model: "stub-model", leaseOwner: "engine:driver",
    config: {
      freshTailCount: 16, leafChunkTokens: 1500, condensedMinFanout: 3,
      condensedMinSourceTokens: 150, condensedChunkTokens: 1500, leaseMs: 60_000,
    },
  });
  const results: unknown[] = [];
  const policy = mode === "publish" ? "publish-ready-only" : "prepare-only";
  for (let step = 0; step < 200; step++) {
    const r = await coordinator.runOnce({ conversationId, sessionKey: "agent:main:pending", publishPolicy: policy });
    results.push(r);
    if (mode === "publish" || !["planned", "prepared"].includes(r.status)) break;
  }
  console.log(JSON.stringify(results));
}
main().then(() => db.close(), (e) => { console.error(e); process.exit(1); });
