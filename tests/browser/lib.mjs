// Shared by the browser test files: the settings, helpers that drive the chat page, and the
// runner (one chromium, steps in order, a screenshot of the page when a step fails).
//
// Environment: PALGRAPH_URL (or the first argument), PALGRAPH_SCREENSHOTS (default
// <repo>/artifacts/screenshots), CHROMIUM (default /usr/bin/chromium), PALGRAPH_AUTH_URL (a
// second server started with PALGRAPH_API_KEYS=browser-key=<user>), PALGRAPH_BROWSER_ONLY
// (run only the steps whose name has it).

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BASE = (process.env.PALGRAPH_URL || process.argv[2] || '').replace(/\/$/, '');
export const AUTH_BASE = (process.env.PALGRAPH_AUTH_URL || '').replace(/\/$/, '');
export const SHOTS = process.env.PALGRAPH_SCREENSHOTS || path.resolve(here, '../../artifacts/screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 40_000;

if (!BASE) {
  console.error('usage: node <file>.test.mjs <server url>   (or set PALGRAPH_URL)');
  process.exit(2);
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)`);
  process.exit(2);
}
fs.mkdirSync(SHOTS, { recursive: true });

export const DOC_Q = 'What is the data retention period for customer records?';
export const AMBIGUOUS = 'Summarize the policy';
export const COMPARE_ONE = 'compare the capital requirements regulation';
export const LONG = 'Summarize the AML policy'; // ~140 streamed words: several seconds at 40 ms a word

// ------------------------------------------------------------------ helpers

export class Failure extends Error {}

export function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}

export function eq(actual, expected, msg) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Failure(`${msg}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** A JSON request to the main server (or to `base`, with `token` as a bearer token). */
export async function api(method, p, body, { base = BASE, token = null } = {}) {
  const headers = body === undefined ? {} : { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(base + p, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (_) {
    json = text;
  }
  return { status: r.status, json };
}

export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, name) });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every text the streaming answer bubble showed, every PalReasoning line with its time, and
// the line shown when the answer's first text appeared.
export async function record(page) {
  await page.evaluate(() => {
    const log = { statuses: [], answers: [], t0: performance.now(), firstTextAt: Infinity, statusAtFirstText: null };
    window.__rec = log;
    let lastStatus = null;
    const look = () => {
      const reasoning = [...document.querySelectorAll('.turn .reasoning')].filter((r) => !r.hidden);
      const s = reasoning.length ? reasoning[reasoning.length - 1].querySelector('.status-text').textContent : '<cleared>';
      if (s !== lastStatus) {
        log.statuses.push({ text: s, t: performance.now() });
        lastStatus = s;
      }
      for (const a of document.querySelectorAll('.turn .msg.assistant .content')) {
        const t = a.textContent;
        if (log.answers[log.answers.length - 1] !== t) log.answers.push(t);
        if (t && log.statusAtFirstText === null) {
          log.firstTextAt = performance.now();
          log.statusAtFirstText = s;
        }
      }
    };
    new MutationObserver(look).observe(document.getElementById('messages'), {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ['hidden'],
    });
    look();
  });
}

export async function recorded(page) {
  return page.evaluate(() => window.__rec);
}

/**
 * A new tab on the page, once it is ready: `hash` (e.g. `#/c/<id>`), on `base` (the main
 * server by default), signed in with `token` when given.
 */
export async function open(ctx, hash = '', { base = BASE, token = null } = {}) {
  const page = await ctx.newPage();
  page.__errors = [];
  page.on('pageerror', (e) => page.__errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|ERR_/.test(m.text())) page.__errors.push(m.text());
  });
  if (token) await page.addInitScript((t) => localStorage.setItem('palgraph_token', t), token);
  await page.goto(`${base}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

export async function type(page, text) {
  await page.locator('#editor').click();
  await page.keyboard.type(text);
}

export async function send(page, text) {
  await type(page, text);
  await page.keyboard.press('Enter');
}

// Waits until no run is followed: no Stop button, nothing streams, PalReasoning is cleared.
export async function settled(page) {
  await page.waitForFunction(
    () =>
      document.getElementById('stop').hidden &&
      !document.querySelector('.msg.streaming') &&
      !document.querySelector('.reasoning:not([hidden])'),
    null,
    { timeout: 20_000 },
  );
}

export async function finalAnswer(page) {
  const a = page.locator('.msg.assistant:not(.streaming)').last();
  await a.waitFor();
  return a;
}

export function threadOf(page) {
  const m = /#\/c\/([0-9a-f-]{36})$/.exec(page.url());
  check(m, `the page URL names its conversation: ${page.url()}`);
  return m[1];
}

export async function history(thread) {
  const r = await api('GET', `/chat/history/${thread}`);
  eq(r.status, 200, 'history status');
  return r.json;
}

export async function noSpinner(page) {
  const spinning = await page.evaluate(
    () => [...document.querySelectorAll('.reasoning')].filter((r) => !r.hidden && r.isConnected).length,
  );
  eq(spinning, 0, 'visible PalReasoning spinners');
}

// ------------------------------------------------------------------ runner

/**
 * Runs `steps` ([{name, fn(ctx)}]) in one chromium and exits the process with their result.
 * `suite` names the file: its failure screenshots are `failure-<suite>-<step>.png`.
 */
export async function run(suite, steps) {
  for (const f of fs.readdirSync(SHOTS)) if (f.startsWith(`failure-${suite}-`)) fs.rmSync(path.join(SHOTS, f));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'palgraph-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 860 },
  });

  let passed = 0;
  let failed = 0;
  const started = Date.now();
  const only = process.env.PALGRAPH_BROWSER_ONLY; // run only the steps whose name has this
  for (const s of steps.filter((x) => !only || x.name.includes(only))) {
    const t0 = Date.now();
    const before = new Set(browser.pages());
    try {
      let timer;
      await Promise.race([
        s.fn(browser),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Failure(`timed out after ${STEP_TIMEOUT_MS / 1000} s`)), STEP_TIMEOUT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      const errors = browser.pages().flatMap((p) => p.__errors || []);
      check(errors.length === 0, `errors in the page: ${errors.join(' | ')}`);
      passed += 1;
      console.log(`ok   ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (e) {
      failed += 1;
      console.log(`FAIL ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)\n     ${e.stack || e}`);
      const open = browser.pages().filter((p) => !before.has(p));
      const slug = s.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 50);
      if (open.length) await open[open.length - 1].screenshot({ path: path.join(SHOTS, `failure-${suite}-${slug}.png`) }).catch(() => {});
    } finally {
      for (const p of browser.pages()) if (!before.has(p)) await p.close().catch(() => {});
    }
  }
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
  console.log(`browser: ${((Date.now() - started) / 1000).toFixed(1)} s, screenshots in ${SHOTS}`);
  console.log(failed ? `browser steps: ${failed} FAILED, ${passed} ok` : `browser steps: all ${passed} ok`);
  process.exit(failed ? 1 : 0);
}
