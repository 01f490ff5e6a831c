// The JS SDK scripts' checks: each prints one `ok N - what` line, and the first that fails
// throws (the script exits non-zero). The twin of checks.py.

import assert from "node:assert/strict";

let checks = 0;

/** Checks `cond`, named `what`. */
export function ok(cond, what) {
  assert.ok(cond, what);
  checks += 1;
  console.log(`ok ${checks} - ${what}`);
}

/** How many checks passed so far. */
export function passed() {
  return checks;
}
