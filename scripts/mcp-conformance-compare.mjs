// Compares two conformance result folders (direct run vs through the gateway) and prints a table.
// Usage: node mcp-conformance-compare.mjs <direct dir> <gateway dir>. Each folder holds the suite's
// server-<scenario>-<timestamp>/checks.json. Exit 1 when the gateway passes fewer checks than the direct run,
// or fails a check the direct run passes.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

function load(dir) {
  const checks = new Map(); // "scenario / check id" -> status
  const scenarios = new Map(); // scenario -> {passed, failed}
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const m = entry.isDirectory() && entry.name.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
    if (!m) continue;
    const list = JSON.parse(readFileSync(join(dir, entry.name, "checks.json"), "utf8"));
    const tally = { passed: 0, failed: 0 };
    for (const c of list) {
      if (c.status !== "SUCCESS" && c.status !== "FAILURE") continue;
      checks.set(`${m[1]} / ${c.id}`, c.status);
      c.status === "SUCCESS" ? tally.passed++ : tally.failed++;
    }
    scenarios.set(m[1], tally);
  }
  return { checks, scenarios };
}

const [directDir, gatewayDir] = process.argv.slice(2);
const direct = load(directDir);
const gateway = load(gatewayDir);
const names = [...new Set([...direct.scenarios.keys(), ...gateway.scenarios.keys()])];
const cell = (t) => (t ? (t.failed === 0 ? `pass (${t.passed})` : `FAIL (${t.passed}/${t.passed + t.failed})`) : "-");
console.log(`${"scenario".padEnd(34)} ${"direct".padEnd(12)} gateway`);
for (const n of names) console.log(`${n.padEnd(34)} ${cell(direct.scenarios.get(n)).padEnd(12)} ${cell(gateway.scenarios.get(n))}`);
const passed = (r) => [...r.checks.values()].filter((s) => s === "SUCCESS").length;
const regressions = [...direct.checks].filter(([k, s]) => s === "SUCCESS" && gateway.checks.get(k) !== "SUCCESS").map(([k]) => k);
console.log(`\nchecks passed: direct ${passed(direct)}/${direct.checks.size}, gateway ${passed(gateway)}/${gateway.checks.size}`);
if (direct.checks.size === 0) {
  console.log("FAIL: the direct run produced no results");
  process.exit(1);
}
if (regressions.length || passed(gateway) < passed(direct)) {
  console.log(`FAIL: the gateway fails checks the everything server passes directly: ${regressions.join(", ")}`);
  process.exit(1);
}
console.log("OK: the gateway passes every check the everything server passes directly");
