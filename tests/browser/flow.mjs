// Browser test of `steward serve`: drives the web UI in headless Chromium through Playwright
// (playwright-core, launched on Debian's /usr/bin/chromium) and exits non-zero with a message
// on the first expectation that fails. One line is printed per step passed.
//
// The server must be started with the fake provider and tests/browser/scenario.toml (three
// rounds, each one `create` call that needs an approval, then a final answer), a workspace in
// which notes/ does not exist yet, and `[policy] approval_timeout_seconds` of a few seconds
// (about 6: long enough to read a countdown tick and click, short enough to wait out).
//
// Environment:
//   STEWARD_BASE_URL         http://127.0.0.1:PORT (no trailing slash needed)
//   STEWARD_LOGIN_URL        the one-time login URL the server printed
//   STEWARD_ARTIFACTS        directory for screenshots (run-view.png, approval.png, failure-*.png)
//   STEWARD_TEST_CHROMIUM    the Chromium binary (default /usr/bin/chromium)
//   STEWARD_TEST_PLAYWRIGHT  directory holding node_modules/playwright-core (.ci/peers.sh prints it)
//
//   node tests/browser/flow.mjs
//
// Steps: (a) sign in and start a run; (b) approve, deny and let expire its three approvals;
// (c) the run ends and screenshots are taken; (d+e) a second run, probed from a second
// browser (another owner) and then cancelled; (f) memory kept live across two tabs.

import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

const WAIT = 15_000;

function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (!v) fail(`environment variable ${name} is not set`);
  return v;
}

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

class Expectation extends Error {}

function expect(cond, message) {
  if (!cond) throw new Expectation(message);
}

const BASE = env('STEWARD_BASE_URL').replace(/\/+$/, '');
const LOGIN = env('STEWARD_LOGIN_URL');
const ARTIFACTS = env('STEWARD_ARTIFACTS');
const CHROMIUM = env('STEWARD_TEST_CHROMIUM', '/usr/bin/chromium');
const PLAYWRIGHT_DIR = env('STEWARD_TEST_PLAYWRIGHT');

let chromium;
try {
  const require = createRequire(path.join(path.resolve(PLAYWRIGHT_DIR), 'package.json'));
  ({ chromium } = require('playwright-core'));
} catch (e) {
  fail(`cannot load playwright-core from ${PLAYWRIGHT_DIR}: ${e.message}`);
}
mkdirSync(ARTIFACTS, { recursive: true });

const TERMINAL = ['completed', 'failed', 'cancelled', 'interrupted'];
const pages = [];
let current = 'setup';

function passed(line) {
  console.log(`ok - ${line}`);
}

// Waits for `fn(arg)` to be truthy in the page; on timeout throws `message` (a string, or an
// async function giving one) plus the run status and error the page shows.
async function waitIn(page, fn, arg, message) {
  try {
    return await page.waitForFunction(fn, arg, { timeout: WAIT, polling: 100 });
  } catch (e) {
    if (e instanceof Expectation) throw e;
    const status = await page.locator('#run-status').first().textContent({ timeout: 500 }).catch(() => null);
    const error = await page.locator('#error').first().textContent({ timeout: 500 }).catch(() => null);
    const shown = [status != null ? `#run-status=${JSON.stringify(status.trim())}` : null,
      error ? `#error=${JSON.stringify(error.trim())}` : null].filter(Boolean).join(', ');
    if (typeof message === 'function') message = await message().catch(() => 'expectation failed');
    throw new Expectation(`${message} (after ${WAIT / 1000} s; page ${page.url()}${shown ? `; ${shown}` : ''})`);
  }
}

// Waits for `selector` to be shown (or, with state 'attached', merely present: an empty list
// has no size).
async function visible(page, selector, message, state = 'visible') {
  try {
    await page.locator(selector).first().waitFor({ state, timeout: WAIT });
  } catch {
    throw new Expectation(`${message}: no ${state} ${selector} on ${page.url()} within ${WAIT / 1000} s`);
  }
}

async function text(page, selector) {
  return ((await page.locator(selector).first().textContent({ timeout: WAIT })) ?? '').trim();
}

// Selects `value` in `select` when the select offers it; returns whether it did.
async function selectIfPresent(page, select, value) {
  const sel = page.locator(select);
  if ((await sel.count()) === 0) return false;
  const has = await sel.locator(`option[value="${value}"]`).count();
  if (!has) return false;
  await sel.selectOption(value);
  return true;
}

// Fills the start form and submits it; returns the run id from the /runs/{id} URL.
async function startRun(page, task) {
  await page.goto(`${BASE}/`, { timeout: WAIT });
  await visible(page, 'form#start-form', 'start page');
  await page.fill('#task', task);
  await selectIfPresent(page, 'select#provider', 'fake');
  await selectIfPresent(page, 'select#planner', 'model');
  await Promise.all([
    page.waitForURL(/\/runs\/[^/?#]+$/, { timeout: WAIT }).catch(() => {
      throw new Expectation(`submitting the start form did not lead to /runs/{id} (at ${page.url()})`);
    }),
    page.click('button#start'),
  ]);
  const id = new URL(page.url()).pathname.split('/').pop();
  await visible(page, '#run-status', 'run view');
  return id;
}

// Waits for a pending approval whose id is not in `seen`; returns its id.
async function nextPendingApproval(page, seen, what) {
  const handle = await waitIn(
    page,
    (seen) => {
      for (const el of document.querySelectorAll('div.approval[data-approval-id]')) {
        const id = el.getAttribute('data-approval-id');
        const state = el.querySelector('.approval-state')?.textContent.trim();
        if (!seen.includes(id) && state === 'pending') return id;
      }
      return null;
    },
    seen,
    `${what}: no new pending div.approval appeared`,
  );
  return handle.jsonValue();
}

const approvalSel = (id) => `div.approval[data-approval-id="${id}"]`;

async function approvalStateIs(page, id, want, what) {
  await waitIn(
    page,
    ([sel, want]) => document.querySelector(`${sel} .approval-state`)?.textContent.trim() === want,
    [approvalSel(id), want],
    async () => `${what}: .approval-state of approval ${id} never became "${want}" (it is "${await text(page, `${approvalSel(id)} .approval-state`)}")`,
  );
}

async function buttonsDisabled(page, id, what) {
  await waitIn(
    page,
    (sel) => {
      const b = [...document.querySelectorAll(`${sel} button.approve, ${sel} button.deny`)];
      return b.length === 2 && b.every((x) => x.hasAttribute('disabled'));
    },
    approvalSel(id),
    `${what}: button.approve and button.deny of approval ${id} are not both disabled`,
  );
}

async function runStatusIs(page, wanted, what) {
  await waitIn(
    page,
    (wanted) => wanted.includes(document.querySelector('#run-status')?.textContent.trim()),
    wanted,
    `${what}: #run-status never became ${wanted.join(' or ')}`,
  );
  return text(page, '#run-status');
}

async function csrfToken(page) {
  const token = await page.locator('meta[name="csrf-token"]').getAttribute('content', { timeout: WAIT }).catch(() => null);
  expect(token, `no <meta name="csrf-token"> on ${page.url()}`);
  return token;
}

async function main() {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright gives every launch a fresh, empty user-data-dir of its own.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const owner = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await owner.newPage();
    pages.push(page);

    // --- a. sign in, start a run, see streamed planner text --------------------------------
    current = 'a. sign in and start a run';
    const login = await page.goto(LOGIN, { timeout: WAIT });
    expect(login && login.ok(), `login URL answered HTTP ${login?.status()}`);
    expect(new URL(page.url()).pathname === '/', `login did not land on / (at ${page.url()})`);
    // The page names the signed-in owner in #owner (where it shows one): the login URL signs
    // in as local:<user>, not as a fresh random web: owner.
    if ((await page.locator('#owner').count()) > 0) {
      const who = await text(page, '#owner');
      expect(who.startsWith('local:'), `after the login URL the page shows owner ${JSON.stringify(who)}, not local:<user>`);
    }
    passed('a1 login URL signs in and lands on /');
    const run1 = await startRun(page, 'Write three short notes');
    passed(`a2 start form submitted, run view /runs/${run1}`);
    await waitIn(
      page,
      () => [...document.querySelectorAll('.stage[data-stage="planner"] .stage-text')].some((e) => e.textContent.trim().length > 0),
      null,
      'no streamed planner text in .stage[data-stage=planner] .stage-text',
    );
    passed('a3 streamed planner text shown');

    // --- b. approvals: approve, deny, expire -----------------------------------------------
    current = 'b. approvals';
    const seen = [];
    const a1 = await nextPendingApproval(page, seen, 'approval 1');
    seen.push(a1);
    const args1 = await text(page, `${approvalSel(a1)} pre.approval-args`);
    expect(args1.includes('notes/one.txt'), `approval 1 .approval-args does not show the arguments: ${JSON.stringify(args1)}`);
    const tool1 = await text(page, `${approvalSel(a1)} .approval-tool`).catch(() => '');
    expect(tool1.includes('create'), `approval 1 .approval-tool is ${JSON.stringify(tool1)}, not create`);
    // The countdown reads MM:SS.
    const shown = await text(page, `${approvalSel(a1)} .countdown`);
    const mmss = /^(\d{2}):(\d{2})$/.exec(shown.trim());
    const first = mmss ? Number(mmss[1]) * 60 + Number(mmss[2]) : NaN;
    expect(Number.isFinite(first) && first > 0, `approval 1 .countdown shows no positive MM:SS time: ${JSON.stringify(shown)}`);
    await waitIn(
      page,
      ([sel, first]) => {
        const m = /^(\d{2}):(\d{2})$/.exec((document.querySelector(`${sel} .countdown`)?.textContent ?? '').trim());
        return m !== null && Number(m[1]) * 60 + Number(m[2]) < first;
      },
      [approvalSel(a1), first],
      `approval 1 .countdown did not go down from ${first} s`,
    );
    passed(`b1 approval 1 shows its arguments and a MM:SS countdown going down from ${shown}`);
    await page.locator(approvalSel(a1)).screenshot({ path: path.join(ARTIFACTS, 'approval.png') });
    await page.click(`${approvalSel(a1)} button.approve`);
    await approvalStateIs(page, a1, 'approved', 'approval 1');
    await buttonsDisabled(page, a1, 'approval 1 after approving');
    expect(await page.locator(`${approvalSel(a1)} .countdown`).count() === 0, 'approval 1 still shows a countdown after it was approved');
    passed('b2 approval 1 approved');

    const a2 = await nextPendingApproval(page, seen, 'approval 2');
    seen.push(a2);
    const args2 = await text(page, `${approvalSel(a2)} pre.approval-args`);
    expect(args2.includes('notes/two.txt'), `approval 2 .approval-args does not show the arguments: ${JSON.stringify(args2)}`);
    await page.click(`${approvalSel(a2)} button.deny`);
    await approvalStateIs(page, a2, 'denied', 'approval 2');
    await buttonsDisabled(page, a2, 'approval 2 after denying');
    passed('b3 approval 2 denied');

    const a3 = await nextPendingApproval(page, seen, 'approval 3');
    seen.push(a3);
    const args3 = await text(page, `${approvalSel(a3)} pre.approval-args`);
    expect(args3.includes('notes/three.txt'), `approval 3 .approval-args does not show the arguments: ${JSON.stringify(args3)}`);
    await approvalStateIs(page, a3, 'expired', 'approval 3 left unanswered');
    await buttonsDisabled(page, a3, 'approval 3 after expiry');
    passed('b4 approval 3 expired with both buttons disabled');

    // --- c. the run ends ---------------------------------------------------------------------
    current = 'c. run end';
    const final = await runStatusIs(page, TERMINAL, 'run 1');
    expect(final === 'completed', `run 1 ended ${final}, not completed`);
    await waitIn(page, () => document.querySelector('button#cancel')?.hasAttribute('disabled'), null,
      'button#cancel is not disabled after the run ended');
    const answer = await text(page, '#final').catch(() => '');
    expect(answer.includes('notes were proposed'), `#final does not show the final answer: ${JSON.stringify(answer)}`);
    const decisions = await page.locator('#tool-calls li.tool-call .decision').allTextContents();
    expect(decisions.length >= 3, `#tool-calls lists ${decisions.length} calls, expected 3`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'run-view.png'), fullPage: true });
    passed(`c1 run 1 completed, cancel disabled, final answer shown; screenshots in ${ARTIFACTS}`);

    // A second browser (no login: its own random owner), ready before run 2 starts so that
    // its request reaches a still-pending approval.
    const other = await browser.newContext();
    const stranger = await other.newPage();
    pages.push(stranger);
    await stranger.goto(`${BASE}/`, { timeout: WAIT });
    const strangerCsrf = await csrfToken(stranger);

    // --- d/e. a second run: another owner is refused, then the owner cancels ------------------
    current = 'd. second run';
    const run2 = await startRun(page, 'Write the notes again');
    const b1 = await nextPendingApproval(page, [], 'run 2');
    passed(`d1 run 2 (/runs/${run2}) waits on approval ${b1}`);

    current = 'e. another owner';
    const refused = await stranger.evaluate(
      async ([url, token]) => {
        const r = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': token },
          body: JSON.stringify({ decision: 'approve' }),
        });
        return { status: r.status, body: await r.text() };
      },
      [`${BASE}/api/approvals/${encodeURIComponent(b1)}`, strangerCsrf],
    );
    let cls = null;
    try {
      cls = JSON.parse(refused.body)?.error?.class ?? null;
    } catch {}
    expect(refused.status === 403 && cls === 'not_owner',
      `another owner's POST /api/approvals/${b1} answered ${refused.status} ${refused.body.slice(0, 200)}, expected 403 not_owner`);
    passed("e1 another owner's approval POST is refused: 403 not_owner");

    current = 'd. cancel';
    const stillPending = await text(page, `${approvalSel(b1)} .approval-state`);
    expect(stillPending === 'pending', `approval ${b1} of run 2 is ${stillPending} before cancelling (is approval_timeout_seconds too short?)`);
    await page.click('button#cancel');
    await runStatusIs(page, ['cancelled'], 'run 2 after button#cancel');
    await buttonsDisabled(page, b1, 'run 2 pending approval after cancel');
    await waitIn(page, () => document.querySelector('button#cancel')?.hasAttribute('disabled'), null,
      'button#cancel is not disabled after cancelling');
    passed('d2 run 2 cancelled; its pending approval buttons disabled');

    current = 'e. another owner';
    const view = await stranger.goto(`${BASE}/runs/${run1}`, { timeout: WAIT });
    expect(view && view.status() === 403, `another owner opening /runs/${run1} got HTTP ${view?.status()}, expected 403`);
    await visible(stranger, '#error', "another owner's view of run 1");
    const err = await text(stranger, '#error');
    expect(err.includes('not_owner'), `#error for another owner says ${JSON.stringify(err)}, not not_owner`);
    passed("e2 another owner opening run 1's URL sees #error not_owner (HTTP 403)");
    await other.close();

    // --- f. memory, live in two tabs -----------------------------------------------------------
    current = 'f. memory';
    const tab1 = await owner.newPage();
    const tab2 = await owner.newPage();
    pages.push(tab1, tab2);
    await tab1.goto(`${BASE}/memory`, { timeout: WAIT });
    await tab2.goto(`${BASE}/memory`, { timeout: WAIT });
    await visible(tab1, 'form#fact-form', 'memory page (tab 1)');
    await visible(tab2, 'ol#facts', 'memory page (tab 2)', 'attached');
    // Let tab 2's event stream connect before anything changes.
    await tab2.waitForTimeout(500);
    const fact = `the browser test fact ${Date.now()}`;
    const hasFact = (fact) =>
      [...document.querySelectorAll('ol#facts li[data-fact-id]')].some((li) => li.textContent.includes(fact));
    await tab1.fill('#fact-text', fact);
    await tab1.click('button#remember');
    await waitIn(tab1, hasFact, fact, 'the remembered fact is not listed in tab 1');
    await waitIn(tab2, hasFact, fact, 'the fact remembered in tab 1 did not appear in tab 2 without a reload');
    passed('f1 fact remembered in tab 1 appears live in tab 2');
    const item = tab2.locator('ol#facts li[data-fact-id]', { hasText: fact });
    await item.locator('button.forget').click({ timeout: WAIT });
    await waitIn(tab2, (fact) => !(document.querySelector('ol#facts') &&
      [...document.querySelectorAll('ol#facts li[data-fact-id]')].some((li) => li.textContent.includes(fact))),
      fact, 'the forgotten fact is still listed in tab 2');
    await waitIn(tab1, (fact) => ![...document.querySelectorAll('ol#facts li[data-fact-id]')].some((li) => li.textContent.includes(fact)),
      fact, 'the fact forgotten in tab 2 is still listed in tab 1');
    passed('f2 fact forgotten in tab 2 disappears live from tab 1');

    await owner.close();
  } catch (e) {
    // Screenshots of whatever was open, to see what the pages showed at the failure.
    for (const [i, p] of pages.entries()) {
      await p.screenshot({ path: path.join(ARTIFACTS, `failure-${i + 1}.png`), fullPage: true, timeout: 5000 }).catch(() => {});
    }
    throw e;
  } finally {
    await browser.close().catch(() => {});
  }
}

try {
  await main();
  console.log('all browser flows passed');
} catch (e) {
  fail(`[${current}] ${e instanceof Expectation ? e.message : e.stack || e}`);
}
