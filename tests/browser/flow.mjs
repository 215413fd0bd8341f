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
//   STEWARD_ARTIFACTS        directory for screenshots (run-desktop.png, run-phone.png,
//                            approval.png, conversation.png, start-phone.png, failure-*.png)
//   STEWARD_TEST_CHROMIUM    the Chromium binary (default /usr/bin/chromium)
//   STEWARD_TEST_PLAYWRIGHT  directory holding node_modules/playwright-core and axe-core
//                            (.ci/peers.sh prints it)
//
//   node tests/browser/flow.mjs
//
// Steps: (a) sign in and start a run; (b) the run waits for the owner: "waiting for you" in
// the run's badge, the runs list, the navigation and the tab title; approve with the keyboard,
// deny, let one expire; (c) the run ends as one timeline, screenshots at 1280x800 and 390x844;
// (g) a conversation: Enter sends, its approval is answered with the keyboard in place; (d+e)
// a second run, probed from a second browser (another owner) and then cancelled; (f) memory
// kept live across two tabs; (h) axe-core finds no serious accessibility fault on any page,
// and no page is wider than a 390 px phone.

import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
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
let axeSource;
try {
  const require = createRequire(path.join(path.resolve(PLAYWRIGHT_DIR), 'package.json'));
  ({ chromium } = require('playwright-core'));
  axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
} catch (e) {
  fail(`cannot load playwright-core and axe-core from ${PLAYWRIGHT_DIR}: ${e.message}`);
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
    const status = await page.locator('.run-status').first().textContent({ timeout: 500 }).catch(() => null);
    const error = await page.locator('#error').first().textContent({ timeout: 500 }).catch(() => null);
    const shown = [status != null ? `.run-status=${JSON.stringify(status.trim())}` : null,
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
  await visible(page, '#run .run-status', 'run view');
  return id;
}

// Waits for a pending approval whose id is not in `seen`; returns its id.
async function nextPendingApproval(page, seen, what) {
  const handle = await waitIn(
    page,
    (seen) => {
      for (const el of document.querySelectorAll('div.approval[data-approval-id]')) {
        const id = el.getAttribute('data-approval-id');
        if (!seen.includes(id) && el.dataset.state === 'pending' && el.querySelector('button.approve')) return id;
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

// A decided, expired or closed approval keeps no buttons to press.
async function noButtons(page, id, what) {
  await waitIn(
    page,
    (sel) => {
      const node = document.querySelector(sel);
      return node && node.dataset.state !== 'pending' &&
        [...node.querySelectorAll('button.approve, button.deny')].every((b) => b.disabled);
    },
    approvalSel(id),
    `${what}: approval ${id} still offers enabled Approve/Deny buttons`,
  );
}

// Waits for the run page's status (data-status: queued, running, completed, failed, cancelled,
// interrupted) to be one of `wanted`; returns the badge's words.
async function runStatusIs(page, wanted, what) {
  await waitIn(
    page,
    (wanted) => wanted.includes(document.querySelector('#run .run-status')?.dataset.status),
    wanted,
    `${what}: the run's status never became ${wanted.join(' or ')}`,
  );
  return text(page, '#run .run-status');
}

// Runs axe-core on the page and fails on any serious or critical violation.
async function accessible(page, what) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help}; at ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
  });
  expect(violations.length === 0, `${what}: axe-core found ${violations.length} serious violation(s):\n  ${violations.join('\n  ')}`);
}

// Fails when the page is wider than its viewport (a table or heading that overflows).
async function fitsWidth(page, what) {
  const [scroll, view] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  expect(scroll <= view + 1, `${what}: the page is ${scroll} px wide in a ${view} px viewport`);
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
    const owner = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await owner.newPage();
    pages.push(page);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

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
    const icon = await page.request.get(`${BASE}/favicon.ico`);
    expect(icon.ok(), `/favicon.ico answered HTTP ${icon.status()}`);
    passed('a1 login URL signs in and lands on /; /favicon.ico is served');
    const run1 = await startRun(page, 'Write three short notes');
    passed(`a2 start form submitted, run view /runs/${run1}`);
    await waitIn(
      page,
      () => [...document.querySelectorAll('#run .model-text[data-stage="planner"] .stage-text')].some((e) => e.textContent.trim().length > 0),
      null,
      'no streamed planner text in the timeline (.model-text[data-stage=planner] .stage-text)',
    );
    passed('a3 streamed planner text shown in the timeline');

    // --- b. the run waits for its owner ------------------------------------------------------
    current = 'b. approvals';
    const seen = [];
    const a1 = await nextPendingApproval(page, seen, 'approval 1');
    seen.push(a1);
    // In place: the approval sits in the step of the call it is about, after the model's text.
    const order = await page.evaluate((sel) => {
      const approval = document.querySelector(sel);
      const entry = approval?.closest('li.entry');
      const before = entry ? [...entry.parentElement.children].slice(0, [...entry.parentElement.children].indexOf(entry)) : [];
      return { inCall: !!approval?.closest('.entry-call'), textBefore: before.some((e) => e.classList.contains('entry-text')) };
    }, approvalSel(a1));
    expect(order.inCall && order.textBefore, `approval 1 is not in its call's step after the model's text: ${JSON.stringify(order)}`);
    const args1 = await text(page, `${approvalSel(a1)} >> xpath=ancestor::div[contains(@class,"step")] >> .args`);
    expect(args1.includes('notes/one.txt'), `approval 1's step does not show the arguments: ${JSON.stringify(args1)}`);
    const tool1 = await text(page, `${approvalSel(a1)} .approval-tool`).catch(() => '');
    expect(tool1.includes('create'), `approval 1 .approval-tool is ${JSON.stringify(tool1)}, not create`);
    const summary = await text(page, `${approvalSel(a1)} >> xpath=ancestor::div[contains(@class,"step")] >> .diff-summary`);
    expect(summary === '1 file, +1 −0', `approval 1's diff summary is ${JSON.stringify(summary)}`);
    // Waiting is said everywhere: the badge, the tab title, the icon, the navigation, the runs list.
    await waitIn(page, () => document.querySelector('#run .run-status')?.textContent.trim() === 'waiting for you', null,
      'the run badge does not say "waiting for you"');
    await waitIn(page, () => document.title.includes('Waiting for you'), null, async () => `the tab title is ${JSON.stringify(await page.title())}`);
    const iconHref = await page.locator('link[rel="icon"]').getAttribute('href');
    expect(iconHref.includes('waiting'), `the tab icon is ${iconHref}, not the waiting one`);
    await waitIn(page, () => /1 waiting for you/.test(document.querySelector('#nav-waiting')?.textContent || ''), null,
      'the navigation does not say "1 waiting for you"');
    const list = await owner.newPage();
    pages.push(list);
    await list.goto(`${BASE}/`, { timeout: WAIT });
    const listed = await text(list, `li.run-row[data-run-id="${run1}"] .status`);
    expect(listed === 'waiting for you', `the runs list shows run 1 as ${JSON.stringify(listed)}`);
    const linked = await text(list, `li.run-row[data-run-id="${run1}"] a.run-task`);
    expect(linked === 'Write three short notes', `the runs list links run 1 by ${JSON.stringify(linked)}, not its task`);
    await list.close();
    pages.pop();
    passed('b1 "waiting for you" on the run, in the tab title and icon, the navigation and the runs list');
    // The countdown reads MM:SS and goes down.
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
    passed(`b2 approval 1 shows its arguments, its diff and a MM:SS countdown going down from ${shown}`);
    await page.locator(approvalSel(a1)).screenshot({ path: path.join(ARTIFACTS, 'approval.png') });
    // The approval has the focus (nobody was typing): `a` approves it.
    await page.keyboard.press('a');
    await approvalStateIs(page, a1, 'approved', 'approval 1 (key a)');
    await noButtons(page, a1, 'approval 1 after approving');
    await waitIn(page, (sel) => /approved by local:\S+ \(this call only\)/.test(document.querySelector(`${sel} .decided`)?.textContent || ''),
      approvalSel(a1), 'approval 1 does not read "approved by OWNER (this call only)"');
    expect(await page.locator(`${approvalSel(a1)} .countdown`).count() === 0, 'approval 1 still shows a countdown after it was approved');
    passed('b3 approval 1 approved with the key a; it reads "approved by … (this call only) at …"');

    const a2 = await nextPendingApproval(page, seen, 'approval 2');
    seen.push(a2);
    const args2 = await text(page, `${approvalSel(a2)} >> xpath=ancestor::div[contains(@class,"step")] >> .args`);
    expect(args2.includes('notes/two.txt'), `approval 2's step does not show the arguments: ${JSON.stringify(args2)}`);
    await page.click(`${approvalSel(a2)} button.deny`);
    await approvalStateIs(page, a2, 'denied', 'approval 2');
    await noButtons(page, a2, 'approval 2 after denying');
    passed('b4 approval 2 denied');

    const a3 = await nextPendingApproval(page, seen, 'approval 3');
    seen.push(a3);
    await approvalStateIs(page, a3, 'expired', 'approval 3 left unanswered');
    await noButtons(page, a3, 'approval 3 after expiry');
    passed('b5 approval 3 expired');

    // --- c. the run ends: one timeline, in order, nothing twice ------------------------------
    current = 'c. run end';
    const final = await runStatusIs(page, TERMINAL, 'run 1');
    expect(final === 'completed — 2 calls refused', `run 1 ended as ${JSON.stringify(final)}, not "completed — 2 calls refused"`);
    await waitIn(page, () => document.querySelector('button#cancel')?.hasAttribute('disabled'), null,
      'button#cancel is not disabled after the run ended');
    const answer = await text(page, '#run .answer .final').catch(() => '');
    expect(answer.includes('notes were proposed'), `the answer does not show the final text: ${JSON.stringify(answer)}`);
    const kinds = await page.evaluate(() => [...document.querySelectorAll('#run ol.timeline > li.entry')].map((li) =>
      li.className.replace(/.*entry-(\w+).*/, '$1')));
    const calls = kinds.filter((k) => k === 'call').length;
    expect(calls === 3 && kinds[kinds.length - 1] === 'answer' && kinds.filter((k) => k !== 'note')[0] === 'text',
      `the timeline reads ${kinds.join(' → ')}, not text first, three calls, the answer last`);
    const answers = await page.evaluate(() => document.body.innerText.split('All three notes were proposed.').length - 1);
    expect(answers === 1, `the answer is shown ${answers} times`);
    const changed = await text(page, '#run .run-end');
    expect(changed.includes('notes/one.txt'), `"Files changed" does not list notes/one.txt: ${JSON.stringify(changed)}`);
    expect(!(await page.title()).includes('Waiting'), `the tab title still says waiting: ${await page.title()}`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'run-desktop.png'), fullPage: true });
    passed(`c1 run 1 ended "${final}": text → calls → answer, the answer once, files changed listed`);
    expect(errors.length === 0, `script errors on the page: ${errors.join('; ')}`);

    // The same run on a phone.
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const phonePage = await phone.newPage();
    pages.push(phonePage);
    await phone.addCookies(await owner.cookies());
    for (const [url, shot] of [[`${BASE}/runs/${run1}`, 'run-phone.png'], [`${BASE}/`, 'start-phone.png']]) {
      await phonePage.goto(url, { timeout: WAIT });
      await fitsWidth(phonePage, `${url} at 390 px`);
      await phonePage.screenshot({ path: path.join(ARTIFACTS, shot), fullPage: true });
    }
    passed('c2 the run and start pages fit a 390 px phone; screenshots taken');

    // --- g. a conversation: Enter sends, the approval is answered in place ---------------------
    current = 'g. conversation';
    await page.goto(`${BASE}/conversations`, { timeout: WAIT });
    await selectIfPresent(page, 'select#provider', 'fake');
    await selectIfPresent(page, 'select#planner', 'model');
    await Promise.all([
      page.waitForURL(/\/conversations\/[^/?#]+$/, { timeout: WAIT }),
      page.click('#conversation-form button[type=submit]'),
    ]);
    const conversationPath = new URL(page.url()).pathname;
    await page.waitForTimeout(300); // the conversation's event stream connects
    await page.fill('#message', 'Write the notes in this conversation');
    await page.press('#message', 'Enter');
    const c1 = await nextPendingApproval(page, [], 'conversation approval');
    await waitIn(page, () => document.title.includes('Waiting for you'), null, 'the conversation tab title does not say waiting');
    // The focus stays in the message box (a key typed there never answers); Escape goes to the
    // question, and `a` approves it (keys answer a question once it has been shown a moment).
    await page.waitForTimeout(1000);
    await page.keyboard.press('a');
    expect(await page.inputValue('#message') === 'a', 'a key typed in the message box did not stay there');
    await page.fill('#message', '');
    await page.focus('#message');
    await page.keyboard.press('Escape');
    await page.keyboard.press('a');
    await approvalStateIs(page, c1, 'approved', 'conversation approval (key a)');
    await waitIn(page, (sel) => /approved by/.test(document.querySelector(`${sel} .decided`)?.textContent || ''),
      approvalSel(c1), 'the conversation approval does not say who approved it');
    // The next one is denied with `d`; then the answer arrives in the turn.
    const c2 = await nextPendingApproval(page, [c1], 'second conversation approval');
    await page.waitForTimeout(1000);
    await page.focus('#message');
    await page.keyboard.press('Escape');
    await page.keyboard.press('d');
    await approvalStateIs(page, c2, 'denied', 'conversation approval (key d)');
    await waitIn(page, () => [...document.querySelectorAll('#turns .answer .final')].some((e) => e.textContent.includes('notes were proposed')),
      null, 'the conversation turn never showed its answer');
    await page.screenshot({ path: path.join(ARTIFACTS, 'conversation.png'), fullPage: true });
    passed('g1 conversation: Enter sent the message; a key typed in the box stays there; Escape, then a approved and d denied in place; the answer is in the turn');

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
    const stillPending = await page.locator(approvalSel(b1)).getAttribute('data-state');
    expect(stillPending === 'pending', `approval ${b1} of run 2 is ${stillPending} before cancelling (is approval_timeout_seconds too short?)`);
    await page.click('button#cancel');
    await runStatusIs(page, ['cancelled'], 'run 2 after button#cancel');
    await noButtons(page, b1, 'run 2 pending approval after cancel');
    await approvalStateIs(page, b1, 'closed', 'run 2 approval after cancel (closed, not expired)');
    await waitIn(page, () => document.querySelector('button#cancel')?.hasAttribute('disabled'), null,
      'button#cancel is not disabled after cancelling');
    passed('d2 run 2 cancelled; its approval reads closed, with no buttons');

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

    // --- h. accessibility of every page ---------------------------------------------------------
    current = 'h. accessibility';
    const checked = [];
    for (const url of ['/', `/runs/${run1}`, `/runs/${run1}/trace`, '/conversations', conversationPath,
      '/compare', '/memory', '/tools', '/grants', '/tokens', '/ledger']) {
      await tab1.goto(`${BASE}${url}`, { timeout: WAIT });
      await accessible(tab1, url);
      checked.push(url);
    }
    passed(`h1 axe-core: no serious or critical violation on ${checked.length} pages`);

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
